"""Tests for psgrpo.ps.scorers.prm on tiny random Qwen2 PRMs (token classification and causal LM)."""

from __future__ import annotations

import logging

import pytest
import torch
from transformers import Qwen2Config, Qwen2ForCausalLM, Qwen2ForTokenClassification

from psgrpo.ps.scorers.prm import PRMScorer
from psgrpo.tiny.model import tiny_qwen2_config
from psgrpo.tiny.tokenizer import train_bpe_tokenizer

SEP, TAG = "<extra_0>", " ки"
QUESTION = "Tom has 3 apples and buys 4 more. How many apples does he have?"
PROMPTS = [QUESTION, "What is 6 times 7?", "Add 10 and 5."]
STEPS = [
    ["Step 1: 3 + 4 = 7", "Step 2: he has 7 apples.", "So the answer is 7."],
    ["6 * 7 = 42"],
    ["10 + 5 = 15", "The answer is 15."],
]


@pytest.fixture(scope="module")
def tokenizer():
    corpus = [QUESTION, *PROMPTS, *(s for sample in STEPS for s in sample)] * 4
    tok = train_bpe_tokenizer(corpus, vocab_size=300)
    tok.add_tokens([SEP, TAG])
    return tok


def tiny_config(tokenizer, vocab_size: int, **kwargs) -> Qwen2Config:
    return tiny_qwen2_config(
        vocab_size,
        hidden_size=32,
        intermediate_size=64,
        num_layers=2,
        max_position_embeddings=256,
        pad_token_id=tokenizer.pad_token_id,
        tie_word_embeddings=False,
        **kwargs,
    )


def build(model_class, tokenizer, **kwargs):
    """A random tiny model built for the base vocabulary, then resized for the added tokens."""
    torch.manual_seed(0)
    model = model_class(tiny_config(tokenizer, vocab_size=len(tokenizer) - 2, **kwargs))
    model.resize_token_embeddings(len(tokenizer))
    return model


@pytest.fixture(scope="module")
def tc_model(tokenizer):
    return build(Qwen2ForTokenClassification, tokenizer, num_labels=2)


@pytest.fixture(scope="module")
def lm_model(tokenizer):
    return build(Qwen2ForCausalLM, tokenizer)


@pytest.fixture(scope="module")
def tc_scorer(tc_model, tokenizer):
    return PRMScorer(tc_model, tokenizer, style="token_classification", batch_size=8)


@pytest.fixture(scope="module")
def lm_scorer(lm_model, tokenizer):
    return PRMScorer(lm_model, tokenizer, style="causal_lm", batch_size=8)


def manual_ids(tokenizer, question, steps, separator_id, joiner):
    """Question part + each step + separator, built independently of the scorer; also the separator positions."""
    ids = tokenizer(f"{question}\n\n")["input_ids"]
    for j, step in enumerate(steps):
        ids += tokenizer.encode(step if j == 0 else joiner + step, add_special_tokens=False) + [separator_id]
    positions = [p for p, i in enumerate(ids) if i == separator_id]
    return torch.tensor([ids]), positions


@pytest.mark.parametrize("scorer_name", ["tc_scorer", "lm_scorer"])
def test_one_score_per_step_in_unit_interval(scorer_name, request):
    scorer = request.getfixturevalue(scorer_name)
    scores = scorer(PROMPTS, STEPS)
    assert [len(s) for s in scores] == [len(s) for s in STEPS]
    assert all(type(x) is float and 0.0 <= x <= 1.0 for row in scores for x in row)
    assert not scorer.model.training


@pytest.mark.parametrize("scorer_name", ["tc_scorer", "lm_scorer"])
def test_batched_equals_unbatched(scorer_name, request):
    scorer = request.getfixturevalue(scorer_name)
    batched = scorer(PROMPTS, STEPS)
    for prompt, steps, expected in zip(PROMPTS, STEPS, batched, strict=True):
        assert scorer([prompt], [steps])[0] == pytest.approx(expected, abs=1e-5)


def test_token_classification_score_is_softmax_at_separator(tc_model, tokenizer, tc_scorer):
    sep_id = tokenizer.convert_tokens_to_ids(SEP)
    input_ids, positions = manual_ids(tokenizer, QUESTION, STEPS[0], sep_id, joiner="")
    with torch.no_grad():
        probs = tc_model(input_ids).logits[0, positions].softmax(-1)
    assert len(positions) == 3
    assert tc_scorer([QUESTION], [STEPS[0]])[0] == pytest.approx(probs[:, 1].tolist(), abs=1e-6)
    label_0 = PRMScorer(tc_model, tokenizer, positive_label=0)
    assert label_0([QUESTION], [STEPS[0]])[0] == pytest.approx(probs[:, 0].tolist(), abs=1e-6)


def test_causal_lm_score_is_good_over_good_plus_bad(lm_model, tokenizer, lm_scorer):
    tag_id = tokenizer.convert_tokens_to_ids(TAG)
    good, bad = (tokenizer.encode(t, add_special_tokens=False)[0] for t in ("+", "-"))
    input_ids, positions = manual_ids(tokenizer, QUESTION, STEPS[0], tag_id, joiner="\n")
    with torch.no_grad():
        probs = lm_model(input_ids).logits[0, positions].softmax(-1)
    expected = probs[:, good] / (probs[:, good] + probs[:, bad])
    assert lm_scorer([QUESTION], [STEPS[0]])[0] == pytest.approx(expected.tolist(), abs=1e-6)


def test_separator_that_is_not_one_token_is_rejected(tc_model, tokenizer):
    with pytest.raises(
        ValueError, match=rf"step separator '<extra_1>' must be a single token.*{type(tokenizer).__name__}"
    ):
        PRMScorer(tc_model, tokenizer, step_separator="<extra_1>")


def test_multi_token_label_is_rejected(lm_model, tokenizer):
    with pytest.raises(ValueError, match="good label token 'correct step' must be a single token"):
        PRMScorer(lm_model, tokenizer, style="causal_lm", good_token="correct step")
    with pytest.raises(ValueError, match="same token"):
        PRMScorer(lm_model, tokenizer, style="causal_lm", good_token="+", bad_token="+")


def test_other_bad_arguments(tc_model, tokenizer):
    with pytest.raises(ValueError, match="style"):
        PRMScorer(tc_model, tokenizer, style="reward_head")
    with pytest.raises(ValueError, match="positive_label 2"):
        PRMScorer(tc_model, tokenizer, positive_label=2)
    with pytest.raises(ValueError, match="end with"):
        PRMScorer(tc_model, tokenizer, template="{question}\n{steps}\nDone.")
    with pytest.raises(ValueError, match="tokenizer"):
        PRMScorer(tc_model)


def test_empty_steps(tc_scorer):
    assert tc_scorer([], []) == []
    scores = tc_scorer(["Q?", QUESTION, "Q2?"], [[], STEPS[0], []])
    assert scores[0] == [] and scores[2] == [] and len(scores[1]) == 3


def test_steps_beyond_context_repeat_last_score(tc_model, tokenizer, caplog):
    full = PRMScorer(tc_model, tokenizer)([QUESTION], [STEPS[0]])[0]
    needed = len(
        manual_ids(tokenizer, QUESTION, STEPS[0][:2], tokenizer.convert_tokens_to_ids(SEP), "")[0][0]
    )
    short = PRMScorer(tc_model, tokenizer, max_length=needed)
    with caplog.at_level(logging.WARNING, logger="psgrpo.ps.scorers.prm"):
        scores = short([QUESTION, "Q?"], [STEPS[0], ["1 + 1 = 2"]])
        short([QUESTION], [STEPS[0]])
    assert scores[0] == pytest.approx([full[0], full[1], full[1]], abs=1e-5)
    assert len(scores[1]) == 1
    assert short.num_truncated_steps == 2
    warnings = [r for r in caplog.records if "did not fit" in r.getMessage()]
    assert len(warnings) == 1 and "1 steps in 1 samples" in warnings[0].getMessage()


def test_question_longer_than_context_is_an_error(tc_model, tokenizer):
    with pytest.raises(ValueError, match="sample 1: the question part is"):
        PRMScorer(tc_model, tokenizer, max_length=8)(["Q?", QUESTION], [["a"], ["b"]])


def test_load_from_saved_directory(tc_model, lm_model, tokenizer, tmp_path):
    # Next to a qwen2 config, AutoTokenizer reloads the BPE tokenizer as Qwen2Tokenizer (Qwen's
    # pre-tokenizer, other ids), so the in-memory reference uses the reloaded tokenizer too.
    for name, model, style in [("tc", tc_model, "token_classification"), ("lm", lm_model, "causal_lm")]:
        model.save_pretrained(tmp_path / name)
        tokenizer.save_pretrained(tmp_path / name)
        loaded = PRMScorer(str(tmp_path / name), style=style, device="cpu", dtype=torch.float32)
        assert type(loaded.model) is type(model) and not loaded.model.training
        in_memory = PRMScorer(model, str(tmp_path / name), style=style)
        expected = in_memory(PROMPTS, STEPS)
        assert loaded(PROMPTS, STEPS) == [pytest.approx(s, abs=1e-5) for s in expected]


def test_runs_without_grad(tc_scorer):
    grad_enabled = []
    handle = tc_scorer.model.register_forward_hook(lambda *_: grad_enabled.append(torch.is_grad_enabled()))
    try:
        scores = tc_scorer(PROMPTS, STEPS)
    finally:
        handle.remove()
    assert grad_enabled == [False]
    assert all(type(x) is float for row in scores for x in row)


def test_chat_prompts_match_plain_prompts(tc_scorer):
    chat = [[{"role": "system", "content": "Be terse."}, {"role": "user", "content": p}] for p in PROMPTS]
    assert tc_scorer(chat, STEPS) == tc_scorer(PROMPTS, STEPS)


def test_extra_columns_are_ignored(lm_scorer):
    assert lm_scorer(PROMPTS, STEPS, answer=["7", "42", "15"]) == lm_scorer(PROMPTS, STEPS)
