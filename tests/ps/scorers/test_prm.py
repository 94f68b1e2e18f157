"""Tests for psgrpo.ps.scorers.prm on tiny random Qwen2 PRMs (token classification and causal LM)."""

from __future__ import annotations

import logging
import re

import pytest
import torch
from transformers import Qwen2Config, Qwen2ForCausalLM, Qwen2ForTokenClassification

from psgrpo.ps.scorers.prm import PRMScorer
from psgrpo.ps.scorers.prm_formats import QWEN_PRM_TEMPLATE
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
DUCKS = "Janet's ducks lay 16 eggs per day. She eats 3 and bakes with 4. She sells each egg for $2. How much?"
DUCKS_STEPS = [
    "ducks lay 16 eggs and she uses 3 + 4 = 7 of them.",  # ' d' is a token: the join with the question matters
    "She sells 16 - 7 = 9 eggs.",
    "She makes 9 * 2 = $18 every day.",
]


@pytest.fixture(scope="module")
def tokenizer():
    corpus = [
        QUESTION,
        *PROMPTS,
        *(s for sample in STEPS for s in sample),
        QWEN_PRM_TEMPLATE,
        DUCKS,
        *DUCKS_STEPS,
    ] * 4
    tok = train_bpe_tokenizer(corpus, vocab_size=300)
    tok.add_tokens([SEP, TAG])
    return tok


def tiny_config(tokenizer, vocab_size: int, **kwargs) -> Qwen2Config:
    kwargs.setdefault("max_position_embeddings", 256)
    return tiny_qwen2_config(
        vocab_size,
        hidden_size=32,
        intermediate_size=64,
        num_layers=2,
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


# --------------------------------------------------------------------------- the real PRMs' formats

REMOTE_CODE = '''
"""Stand-in for Qwen2.5-Math-PRM's remote code: Qwen2Model + a two-layer two-class score head."""
import torch.nn as nn
from transformers import Qwen2Model, Qwen2PreTrainedModel


class TinyProcessRewardModel(Qwen2PreTrainedModel):
    def __init__(self, config):
        super().__init__(config)
        self.model = Qwen2Model(config)
        self.score = nn.Sequential(
            nn.Linear(config.hidden_size, config.hidden_size), nn.ReLU(), nn.Linear(config.hidden_size, 2)
        )
        self.post_init()

    def forward(self, input_ids=None, attention_mask=None, use_cache=None, **kwargs):
        hidden = self.model(input_ids=input_ids, attention_mask=attention_mask, use_cache=use_cache)[0]
        return (self.score(hidden),)  # a tuple, read as outputs[0] like the model card does
'''


def save_remote_code_prm(tokenizer, directory):
    """A tiny random PRM saved as Qwen2.5-Math-PRM is: remote code registered for AutoModel only."""
    import importlib.util

    directory.mkdir(parents=True, exist_ok=True)
    (directory / "modeling_tiny_prm.py").write_text(REMOTE_CODE)
    spec = importlib.util.spec_from_file_location("modeling_tiny_prm", directory / "modeling_tiny_prm.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    torch.manual_seed(0)
    config = tiny_config(tokenizer, vocab_size=len(tokenizer), max_position_embeddings=1024)
    config.auto_map = {"AutoModel": "modeling_tiny_prm.TinyProcessRewardModel"}
    model = module.TinyProcessRewardModel(config)
    model.save_pretrained(directory)
    tokenizer.save_pretrained(directory)
    return model


def model_card_qwen_scores(model, tokenizer, question, steps):
    """Qwen2.5-Math-PRM's model card: chat messages, '<extra_0>' after each step, P(class 1) at each."""
    assistant = "<extra_0>".join(steps) + "<extra_0>"
    conversation = (
        QWEN_PRM_TEMPLATE.replace("{question}", question).replace("{steps}", assistant) + "<|im_end|>\n"
    )
    input_ids = torch.tensor([tokenizer.encode(conversation)])
    with torch.no_grad():
        logits = model(input_ids=input_ids)[0]
    mask = input_ids[0] == tokenizer.encode("<extra_0>")[0]
    return logits[0, mask].softmax(-1)[:, 1].tolist()


def test_qwen_math_prm_format_matches_its_model_card(tokenizer, tmp_path):
    saved = save_remote_code_prm(tokenizer, tmp_path / "qwen-prm")
    with pytest.raises(ValueError, match="remote code .*trust_remote_code"):
        PRMScorer(str(tmp_path / "qwen-prm"), format="qwen2.5-math-prm")
    scorer = PRMScorer(
        str(tmp_path / "qwen-prm"), format="qwen2.5-math-prm", trust_remote_code=True, device="cpu"
    )
    assert type(scorer.model).__name__ == "TinyProcessRewardModel"  # the remote class, with its head
    assert torch.equal(scorer.model.score[2].weight, saved.score[2].weight)
    prompts, steps = [DUCKS, QUESTION], [DUCKS_STEPS, STEPS[0]]
    scores = scorer(prompts, steps)
    for prompt, sample, got in zip(prompts, steps, scores, strict=True):
        expected = model_card_qwen_scores(scorer.model, scorer.tokenizer, prompt, sample)
        assert got == pytest.approx(expected, abs=1e-5)


def test_math_shepherd_format_matches_its_model_card(lm_model, tokenizer):
    scorer = PRMScorer(lm_model, tokenizer, format="math-shepherd")
    assert (scorer.style, scorer.step_separator, scorer.encoding) == ("causal_lm", TAG, "text")
    # The model card: f"{question} {output}", output = steps each ending in " ки", joined by newlines;
    # softmax over the logits of '+' and '-' at every tag token, probability of '+'.
    output = "\n".join(f"{step}{TAG}" for step in DUCKS_STEPS)
    input_ids = torch.tensor([tokenizer.encode(f"{DUCKS} {output}")])
    candidates = [tokenizer.encode(t, add_special_tokens=False)[0] for t in ("+", "-")]
    with torch.no_grad():
        scores = lm_model(input_ids).logits[:, :, candidates].softmax(-1)[:, :, 0]
    expected = scores[input_ids == tokenizer.convert_tokens_to_ids(TAG)].tolist()
    assert len(expected) == 3
    assert scorer([DUCKS], [DUCKS_STEPS])[0] == pytest.approx(expected, abs=1e-5)


def test_trl_format_matches_trls_prm_rows(tc_model, tokenizer):
    scorer = PRMScorer(tc_model, tokenizer, format="trl")
    # TRL's PRMTrainer.tokenize_row: prompt tokens (+ BOS if any), each step's tokens + the separator's tokens.
    ids = ([tokenizer.bos_token_id] if tokenizer.bos_token_id is not None else []) + tokenizer(
        DUCKS, add_special_tokens=False
    )["input_ids"]
    positions = []
    for step in DUCKS_STEPS:
        ids += tokenizer(step, add_special_tokens=False)["input_ids"] + tokenizer.encode(
            "\n", add_special_tokens=False
        )
        positions.append(len(ids) - 1)
    with torch.no_grad():
        expected = tc_model(torch.tensor([ids])).logits[0, positions].softmax(-1)[:, 1].tolist()
    assert scorer([DUCKS], [DUCKS_STEPS])[0] == pytest.approx(expected, abs=1e-5)


def test_explicit_arguments_override_the_format_and_bad_ones_are_refused(lm_model, tc_model, tokenizer):
    scorer = PRMScorer(lm_model, tokenizer, format="math-shepherd", encoding="tokens", step_joiner=" ")
    assert (scorer.encoding, scorer.step_joiner, scorer.template) == ("tokens", " ", "{question} {steps}")
    with pytest.raises(ValueError, match="format must be one of"):
        PRMScorer(tc_model, tokenizer, format="qwen")
    with pytest.raises(ValueError, match="encoding must be"):
        PRMScorer(tc_model, tokenizer, encoding="chars")


def test_text_encoding_truncates_like_tokens(tc_model, tokenizer):
    full = PRMScorer(tc_model, tokenizer, encoding="text")([QUESTION], [STEPS[0]])[0]
    assert full == pytest.approx(PRMScorer(tc_model, tokenizer)([QUESTION], [STEPS[0]])[0], abs=1e-5)
    text = f"{QUESTION}\n\n{STEPS[0][0]}{SEP}{STEPS[0][1]}{SEP}"
    short = PRMScorer(tc_model, tokenizer, encoding="text", max_length=len(tokenizer.encode(text)))
    assert short([QUESTION], [STEPS[0]])[0] == pytest.approx([full[0], full[1], full[1]], abs=1e-5)
    assert short.num_truncated_steps == 1


@pytest.mark.parametrize("prm_format", ["qwen2.5-math-prm", "math-shepherd", "trl"])
def test_score_steps_runs_each_format(prm_format, tokenizer, lm_model, tc_model, tmp_path, capsys):
    import json

    from psgrpo.commands.cli import main
    from psgrpo.ps.scorers.flags import first_flag

    model_dir = tmp_path / "prm"
    kwargs = {"model": str(model_dir), "format": prm_format, "device": "cpu"}
    if prm_format == "qwen2.5-math-prm":
        save_remote_code_prm(tokenizer, model_dir)
        kwargs["trust_remote_code"] = True
    else:
        (lm_model if prm_format == "math-shepherd" else tc_model).save_pretrained(model_dir)
        tokenizer.save_pretrained(model_dir)
    rows = [
        {"id": "ducks", "problem": DUCKS, "steps": DUCKS_STEPS, "label": -1},
        {
            "id": "apples",
            "problem": QUESTION,
            "steps": ["Tom has 3 + 4 = 8 apples.", "The answer is 8."],
            "label": 0,
        },
    ]
    data = tmp_path / "solutions.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in rows))
    out = tmp_path / "out"
    argv = [
        "score-steps",
        "--data",
        str(data),
        "--step_scorer",
        "prm",
        "--step_scorer_kwargs",
        json.dumps(kwargs),
    ]
    assert main([*argv, "--flag_below", "0.5", "--output_dir", str(out)]) == 0
    predictions = [json.loads(line) for line in (out / "predictions.jsonl").read_text().splitlines()]
    direct = PRMScorer(**{**kwargs, "model": str(model_dir)})(
        [r["problem"] for r in rows], [r["steps"] for r in rows]
    )
    for record, expected in zip(predictions, direct, strict=True):
        assert record["scores"] == pytest.approx(expected, abs=1e-5)
        assert record["prediction"] == first_flag([s < 0.5 for s in record["scores"]])
    summary = json.loads((out / "summary.json").read_text())
    assert summary["rows"] == 2 and summary["scorer"].startswith("PRMScorer(")
    assert "| prm | 2 (1 / 1) |" in capsys.readouterr().out


@pytest.mark.parametrize("prm_format", ["qwen2.5-math-prm", "math-shepherd", "trl"])
def test_steps_as_the_segmenters_cut_them_score_as_the_model_card_writes_them(
    prm_format, tokenizer, lm_model, tc_model, tmp_path
):
    """The segmenters keep each line's newline with its step; the cards join clean steps (`…=7<extra_0>Step 2`,
    `…=7 ки\\nStep 2`). A review found `…=7\\n<extra_0>` and `…=7\\n ки` fed to the PRM (2026-12-07)."""
    from psgrpo.ps.segmentation import get_segmenter

    if prm_format == "qwen2.5-math-prm":
        save_remote_code_prm(tokenizer, tmp_path / "qwen-prm")
        scorer = PRMScorer(
            str(tmp_path / "qwen-prm"), format=prm_format, trust_remote_code=True, device="cpu"
        )
    else:
        scorer = PRMScorer(
            lm_model if prm_format == "math-shepherd" else tc_model, tokenizer, format=prm_format
        )
    completion = "Step 1: 3 + 4 = 7\nStep 2: 7 * 2 = 14\nThe answer is 14."
    cut = [completion[a:b] for a, b in get_segmenter("newline")(completion)]
    assert cut[0].endswith("\n")  # as the segmenter hands steps over
    clean = [step.strip() for step in cut]
    assert scorer([QUESTION], [cut])[0] == pytest.approx(scorer([QUESTION], [clean])[0], abs=1e-6)


@pytest.mark.parametrize("encoding", ["tokens", "text"])
def test_both_encodings_count_the_steps_that_did_not_fit_alike(tc_model, tokenizer, encoding):
    """With even the first step cut short, every step of the sample counts (tokens counted n - 1)."""
    prefix = len(tokenizer(f"{QUESTION}\n\n", add_special_tokens=True)["input_ids"])
    short = PRMScorer(tc_model, tokenizer, encoding=encoding, max_length=prefix + 2)
    short([QUESTION], [STEPS[0]])
    assert short.num_truncated_steps == len(STEPS[0])


def test_prm_settings_are_checked_without_a_model():
    """The pure check ``psgrpo train`` runs on step_scorer_kwargs before anything loads, and the constructor's."""
    from psgrpo.ps.scorers.prm_formats import prm_settings

    settings = prm_settings("math-shepherd", step_joiner=" ")
    assert (settings["style"], settings["step_joiner"], settings["encoding"]) == ("causal_lm", " ", "text")
    assert prm_settings()["encoding"] == "tokens"
    for kwargs, message in [
        ({"positive_label": -1}, "positive_label must be an integer >= 0"),
        ({"positive_label": 0.5}, "positive_label must be an integer >= 0"),
        ({"batch_size": True}, "batch_size must be an integer >= 1"),
        ({"max_length": 1}, "max_length must be an integer >= 2"),
        ({"step_separator": 3}, "step_separator must be a string"),
        ({"template": "{question}\n{steps}\nDone."}, "end with '{steps}'"),
    ]:
        with pytest.raises(ValueError, match=re.escape(message)):
            prm_settings(**kwargs)


def test_a_checkpoint_without_the_head_its_style_reads_is_refused_before_its_weights_load(
    tc_model, lm_model, tokenizer, tmp_path, monkeypatch
):
    """transformers loads a causal LM as a token classifier (and back) with a random head and a load report
    only: every step score would be noise."""
    import transformers

    for name, model, style, head in [
        ("lm", lm_model, "token_classification", "token-classification head"),
        ("tc", tc_model, "causal_lm", "language-model head"),
    ]:
        model.save_pretrained(tmp_path / name)
        tokenizer.save_pretrained(tmp_path / name)
        for auto in (transformers.AutoModelForTokenClassification, transformers.AutoModelForCausalLM):
            monkeypatch.setattr(auto, "from_pretrained", pytest.fail)  # nothing loads
        with pytest.raises(ValueError, match=f"is a {type(model).__name__} checkpoint, which has no {head}"):
            PRMScorer(str(tmp_path / name), style=style, step_separator=SEP, device="cpu")
        monkeypatch.undo()


def test_a_loaded_prm_missing_saved_weights_is_refused(lm_model, tokenizer, tmp_path):
    """A config without ``architectures`` passes the config check; the load's missing keys then refuse it."""
    import json

    lm_model.save_pretrained(tmp_path / "prm")
    tokenizer.save_pretrained(tmp_path / "prm")
    config = json.loads((tmp_path / "prm" / "config.json").read_text())
    del config["architectures"]
    (tmp_path / "prm" / "config.json").write_text(json.dumps(config))
    with pytest.raises(ValueError, match=re.escape("lacks saved weights (score.bias, score.weight)")):
        PRMScorer(str(tmp_path / "prm"), step_separator=SEP, device="cpu")


@pytest.mark.parametrize(
    ("config", "style", "refused"),
    [
        ({"architectures": ["Qwen2ForTokenClassification"]}, "token_classification", False),
        ({"architectures": ["MistralForCausalLM"]}, "causal_lm", False),
        ({"architectures": ["GPT2LMHeadModel"]}, "causal_lm", False),
        ({"architectures": ["Qwen2ForCausalLM"]}, "token_classification", True),
        ({"architectures": ["Qwen2Model"]}, "token_classification", True),
        ({"architectures": ["Qwen2ForTokenClassification"]}, "causal_lm", True),
        ({"architectures": ["Qwen2ForProcessRewardModel"], "auto_map": {"AutoModel": "m.M"}}, "token_classification", False),
        ({}, "token_classification", False),
    ],
)  # fmt: skip
def test_the_architecture_check_reads_the_saved_class_names(config, style, refused):
    from psgrpo.ps.scorers.prm_formats import check_no_missing_weights, check_prm_architecture

    if refused:
        with pytest.raises(ValueError, match="randomly initialised head"):
            check_prm_architecture("prm", style, config)
    else:
        check_prm_architecture("prm", style, config)
    check_no_missing_weights("prm", style, [])
    with pytest.raises(ValueError, match=re.escape("(a, b, c, d and 1 more)")):
        check_no_missing_weights("prm", style, ["e", "d", "c", "b", "a"])
