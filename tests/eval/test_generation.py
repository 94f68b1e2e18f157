"""Evaluation on crafted completions, batched generation on a tiny model, and the vLLM backend's plumbing."""

from __future__ import annotations

import copy
import re
import sys
import types

import pytest
import torch
from datasets import Dataset

from psgrpo.data.validation import DatasetValidationError
from psgrpo.eval.generation import (
    check_sampling,
    evaluate_model,
    evaluate_samples,
    generate_completions,
    prompt_ids,
    score_completions,
    score_samples,
)
from psgrpo.eval.vllm_backend import sampling_params_kwargs

GOOD = "<reasoning>\nStep 1: 2 + 3 = 5\n</reasoning>\n<answer>5</answer>"
WRONG = "<reasoning>\nStep 1: 2 + 3 = 6\n</reasoning>\n<answer>6</answer>"
NO_FORMAT = "the answer is <answer>5</answer>"
NO_ANSWER = "<reasoning>\nI give up"


def test_score_completions_hand_computed():
    metrics = score_completions([GOOD, WRONG, NO_FORMAT, NO_ANSWER], [10, 20, 30, 41], ["5", "5", "5", "5"])
    assert metrics["accuracy"] == 2 / 4  # GOOD and NO_FORMAT carry the right answer
    assert metrics["format_rate"] == 2 / 4  # GOOD and WRONG have all four tags
    assert metrics["answer_rate"] == 3 / 4
    assert metrics["mean_tokens"] == 25.25 and metrics["median_tokens"] == 25.0 and metrics["n"] == 4


def test_close_answers_do_not_count_as_accurate():
    assert score_completions(["<answer>99.5</answer>"], [3], ["100"])["accuracy"] == 0.0
    assert score_completions(["<answer>1,000</answer>"], [3], ["1000"])["accuracy"] == 1.0


def test_empty_split_is_an_error():
    with pytest.raises(ValueError, match="empty"):
        score_completions([], [], [])


def test_generate_stops_at_eos_and_respects_limit(tiny_model, char_tokenizer):
    texts, lengths = generate_completions(
        tiny_model,
        char_tokenizer,
        ["Question: a\n", "Question: longer prompt\n"],
        max_new_tokens=7,
        show_progress=False,
    )
    assert len(texts) == 2 and all(1 <= n <= 7 for n in lengths)


def test_evaluate_model_on_tiny_model(tiny_model, char_tokenizer):
    data = Dataset.from_dict({"prompt": ["Question: 1+1\n"] * 3, "answer": ["2"] * 3})
    metrics = evaluate_model(tiny_model, char_tokenizer, data, max_new_tokens=5, show_progress=False)
    assert metrics["n"] == 3 and 0.0 <= metrics["accuracy"] <= 1.0


def test_evaluate_model_without_answer_column(tiny_model, char_tokenizer):
    with pytest.raises(DatasetValidationError, match="answer"):
        evaluate_model(tiny_model, char_tokenizer, Dataset.from_dict({"prompt": ["x"]}), show_progress=False)


# --------------------------------------------------------------------------- several samples, records


def test_score_samples_records_match_the_summary():
    texts = [GOOD, WRONG, NO_ANSWER, GOOD]  # 2 prompts x 2 samples, prompt-major
    result = score_samples(
        texts, [5, 6, 7, 8], ["5", "5"], num_samples=2, pass_k=[1, 2], prompts=["p0", "p1"]
    )
    assert [(r["prompt_index"], r["sample_index"], r["prompt"]) for r in result.samples] == [
        (0, 0, "p0"),
        (0, 1, "p0"),
        (1, 0, "p1"),
        (1, 1, "p1"),
    ]
    assert [r["error_type"] for r in result.samples] == ["correct", "calculation", "format", "correct"]
    assert result.samples[1] | {"completion": None} == {
        "prompt_index": 0,
        "sample_index": 1,
        "prompt": "p0",
        "completion": None,
        "answer": "6",
        "gold": "5",
        "correct": False,
        "error_type": "calculation",
        "format_ok": True,
        "tokens": 6,
        "steps": 1,
        "steps_checked": 1,
        "steps_verified": 0,
        "step_complete": False,
        "step_verdicts": [False],
    }
    summary = result.summary
    assert summary["accuracy"] == 0.5  # sample 0 of prompt 1 has no answer
    assert summary["pass@1"] == 0.5 and summary["pass@2"] == 1.0
    assert summary["n"] == 2 and summary["n_completions"] == 4
    assert summary["error_type/correct"] == sum(r["correct"] for r in result.samples) / 4


def test_score_samples_checks_the_layout():
    with pytest.raises(ValueError, match="3 completions"):
        score_samples([GOOD] * 3, [1] * 3, ["5", "5"], num_samples=2)


@pytest.mark.parametrize(
    ("num_samples", "do_sample", "match"),
    [(4, False, "needs sampled decoding.*--do_sample true"), (0, True, "positive integer")],
)
def test_check_sampling(num_samples, do_sample, match):
    with pytest.raises(ValueError, match=match):
        check_sampling(num_samples, do_sample)


def test_several_samples_are_prompt_major(tiny_model, char_tokenizer):
    """top_k=1 sampling is greedy: each prompt's samples repeat its greedy completion, in prompt order."""
    prompts = ["Question: 12\n", "Question: 34\n", "Question: 56\n"]  # same length: no padding effects
    greedy, _ = generate_completions(
        tiny_model, char_tokenizer, prompts, max_new_tokens=6, show_progress=False
    )
    for batch_size in (2, 4, 64):  # 1, 2 and all prompts per generate call
        texts, lengths = generate_completions(
            tiny_model,
            char_tokenizer,
            prompts,
            max_new_tokens=6,
            batch_size=batch_size,
            do_sample=True,
            top_k=1,
            num_samples=2,
            show_progress=False,
        )
        assert texts == [t for t in greedy for _ in range(2)] and len(lengths) == 6


def test_generate_refuses_several_greedy_samples(tiny_model, char_tokenizer):
    with pytest.raises(ValueError, match="sampled decoding"):
        generate_completions(
            tiny_model, char_tokenizer, ["Question: 1\n"], num_samples=2, show_progress=False
        )


def test_evaluate_samples_on_tiny_model(tiny_model, char_tokenizer):
    data = Dataset.from_dict({"prompt": ["Question: 1+1\n", "Question: 2+2\n"], "answer": ["2", "4"]})
    result = evaluate_samples(
        tiny_model,
        char_tokenizer,
        data,
        num_samples=3,
        pass_k=[1, 3],
        max_new_tokens=5,
        do_sample=True,
        temperature=1.0,
        seed=0,
        show_progress=False,
    )
    assert len(result.samples) == 6 and result.summary["num_samples"] == 3
    assert result.summary["pass@3"] >= result.summary["pass@1"]
    assert result.summary["mean_tokens"] == sum(r["tokens"] for r in result.samples) / 6
    assert all(1 <= r["tokens"] <= 5 for r in result.samples)


def test_evaluate_model_keeps_its_keys_and_accepts_new_options(tiny_model, char_tokenizer):
    data = Dataset.from_dict({"prompt": ["Question: 1+1\n"] * 2, "answer": ["2"] * 2})
    metrics = evaluate_model(
        tiny_model, char_tokenizer, data, max_new_tokens=4, show_progress=False, num_samples=2, do_sample=True
    )
    assert {"accuracy", "format_rate", "answer_rate", "mean_tokens", "median_tokens", "n"} <= set(metrics)
    assert metrics["n"] == 2 and metrics["n_completions"] == 4
    assert all(isinstance(v, float) for v in metrics.values())


def test_evaluate_rejects_bad_options_before_generating(tiny_model, char_tokenizer):
    data = Dataset.from_dict({"prompt": ["x"], "answer": ["1"]})
    with pytest.raises(ValueError, match="unknown backend 'jax'"):
        evaluate_samples(tiny_model, char_tokenizer, data, backend="jax")
    with pytest.raises(ValueError, match="needs at least 4 samples"):
        evaluate_samples(tiny_model, char_tokenizer, data, num_samples=2, pass_k=[4], do_sample=True)
    with pytest.raises(DatasetValidationError, match="empty"):
        evaluate_samples(tiny_model, char_tokenizer, Dataset.from_dict({"prompt": [], "answer": []}))


@pytest.mark.parametrize(
    ("column", "value", "refused"),
    [
        ("answer", 7, False),  # a number is read as its text, as the correctness reward reads it
        ("answer", 2.5, False),
        ("answer", None, True),
        ("answer", "  ", True),
        ("answer", True, True),
        ("prompt", None, True),
        ("prompt", "", True),
        ("prompt", [], True),
        ("prompt", 3, True),
    ],
)
def test_bad_prompts_and_answers_are_refused_before_generating(
    monkeypatch, char_tokenizer, column, value, refused
):
    """An int or None answer failed with `'int' object has no attribute 'strip'` after all generation; a None or
    empty prompt with a misleading chat-template error (a bad-input sweep, F17)."""
    rows = [{"prompt": "Question: 1+1\n", "answer": "2"} for _ in range(3)]
    rows[1][column] = value
    generated = []

    def fake_generate(model, tokenizer, prompts, **kwargs):
        generated.append(prompts)
        return ["<answer>7</answer>"] * len(prompts), [3] * len(prompts)

    monkeypatch.setattr("psgrpo.eval.generation.generate_completions", fake_generate)
    model = torch.nn.Linear(1, 1)  # never generates: generate_completions is faked
    if not refused:
        result = evaluate_samples(model, char_tokenizer, rows, show_progress=False)
        assert [r["gold"] for r in result.samples] == ["2", str(value), "2"]
        assert [r["correct"] for r in result.samples] == [False, value == 7, False]
        return
    with pytest.raises(DatasetValidationError) as info:
        evaluate_samples(model, char_tokenizer, rows, show_progress=False)
    assert f"dataset 'evaluation dataset': row 1, field '{column}': " in str(info.value)
    assert repr(value) in str(info.value) and (info.value.row, info.value.field) == (1, column)
    assert generated == []


def test_a_list_of_rows_and_a_dict_of_columns_are_evaluated_as_a_dataset(tiny_model, char_tokenizer):
    """A list of row dicts passed the column check, then failed with a TypeError at `dataset["prompt"]`."""
    rows = [{"prompt": f"Question: {i}+1\n", "answer": str(i + 1)} for i in range(3)]
    options = {"max_new_tokens": 5, "show_progress": False, "seed": 0}
    expected = evaluate_samples(tiny_model, char_tokenizer, Dataset.from_list(rows), **options).samples
    assert evaluate_samples(tiny_model, char_tokenizer, rows, **options).samples == expected
    columns = {"prompt": [r["prompt"] for r in rows], "answer": [r["answer"] for r in rows]}
    assert evaluate_samples(tiny_model, char_tokenizer, columns, **options).samples == expected


@pytest.mark.parametrize("model", ["outputs/demo", None])
def test_the_hf_backend_needs_a_loaded_model(char_tokenizer, model):
    """A path as `model` failed with `'str' object has no attribute 'training'` inside generation."""
    data = Dataset.from_dict({"prompt": ["x"], "answer": ["1"]})
    loaded = re.escape(
        f"load_model_and_tokenizer({'outputs/demo'!r})" if model else "load_model_and_tokenizer(path)"
    )
    with pytest.raises(
        TypeError,
        match=rf"backend 'hf' generates with a loaded model \(a torch.nn.Module\), got {re.escape(repr(model))} of "
        rf"type {type(model).__name__}; load it first: .*{loaded}.*, or pass backend='vllm'",
    ):
        evaluate_model(model, char_tokenizer, data, show_progress=False)


# --------------------------------------------------------------------------- vLLM backend (not installed here)


def test_vllm_backend_without_vllm_says_how_to_install(monkeypatch, char_tokenizer):
    monkeypatch.setitem(sys.modules, "vllm", None)  # import vllm → ImportError
    data = Dataset.from_dict({"prompt": ["x"], "answer": ["1"]})
    with pytest.raises(ImportError, match=re.escape("pip install -e '.[vllm]'")):
        evaluate_samples("some/model", char_tokenizer, data, backend="vllm", show_progress=False)


class _FakeVLLM(types.ModuleType):
    """A stand-in ``vllm`` module recording what psgrpo passes to ``LLM`` and ``SamplingParams``."""

    def __init__(self) -> None:
        super().__init__("vllm")
        self.calls: dict[str, object] = {}
        fake = self

        class SamplingParams:
            def __init__(self, **kwargs):
                fake.calls["sampling_params"] = kwargs
                self.n = kwargs["n"]

        class LLM:
            def __init__(self, **kwargs):
                fake.calls["llm"] = kwargs

            def generate(self, requests, sampling_params, use_tqdm):
                fake.calls["generate"] = {"requests": requests, "use_tqdm": use_tqdm}
                return [
                    types.SimpleNamespace(
                        outputs=[
                            types.SimpleNamespace(text=f"<answer>{p}{s}</answer>", token_ids=[0] * (s + 1))
                            for s in range(sampling_params.n)
                        ]
                    )
                    for p in range(len(requests))
                ]

        self.LLM, self.SamplingParams = LLM, SamplingParams


def test_vllm_backend_plumbing(monkeypatch, char_tokenizer):
    fake = _FakeVLLM()
    monkeypatch.setitem(sys.modules, "vllm", fake)
    data = Dataset.from_dict({"prompt": ["Question: a\n", "Question: bb\n"], "answer": ["5", "10"]})
    result = evaluate_samples(
        "path/to/ckpt",
        char_tokenizer,
        data,
        backend="vllm",
        num_samples=2,
        pass_k=[1, 2],
        max_new_tokens=33,
        do_sample=True,
        temperature=0.7,
        top_p=0.9,
        seed=3,
        vllm_kwargs={"gpu_memory_utilization": 0.5},
        show_progress=False,
    )
    assert fake.calls["llm"] == {"model": "path/to/ckpt", "seed": 3, "gpu_memory_utilization": 0.5}
    assert fake.calls["sampling_params"] == {
        "n": 2,
        "max_tokens": 33,
        "temperature": 0.7,
        "top_p": 0.9,
        "seed": 3,
    }
    requests = fake.calls["generate"]["requests"]
    assert requests == [{"prompt_token_ids": char_tokenizer(p)["input_ids"]} for p in data["prompt"]]
    assert [r["answer"] for r in result.samples] == ["00", "01", "10", "11"]  # prompt-major
    assert [r["tokens"] for r in result.samples] == [1, 2, 1, 2]
    # prompt 0 (gold 5) has no right answer; prompt 1 (gold 10) has one, as sample 0
    assert result.summary["accuracy"] == 0.5
    assert result.summary["pass@1"] == 0.25 and result.summary["pass@2"] == 0.5


def test_vllm_greedy_is_temperature_zero():
    assert sampling_params_kwargs(1, 16, do_sample=False, temperature=0.7, top_k=5, seed=1) == {
        "n": 1,
        "max_tokens": 16,
        "temperature": 0.0,
    }


def test_vllm_backend_needs_a_checkpoint_path(monkeypatch, tiny_model, char_tokenizer):
    monkeypatch.setitem(sys.modules, "vllm", _FakeVLLM())
    data = Dataset.from_dict({"prompt": ["x"], "answer": ["1"]})
    with pytest.raises(TypeError, match="checkpoint path or hub id"):
        evaluate_samples(tiny_model, char_tokenizer, data, backend="vllm", show_progress=False)


def test_a_plain_prompt_is_tokenized_as_trl_trains_on_it():
    """TRL's rollout tokenizes a plain prompt with the tokenizer's special tokens (``processing_class(text=...)``):
    evaluation did without them, so a model whose tokenizer adds a BOS (Llama, Gemma) was evaluated on
    prompts it never saw in training."""
    from tokenizers.processors import TemplateProcessing

    from psgrpo.tiny.tokenizer import build_char_tokenizer

    tokenizer = build_char_tokenizer()
    bos = tokenizer.eos_token  # any special token: the char tokenizer has no BOS of its own
    tokenizer._tokenizer.post_processor = TemplateProcessing(
        single=f"{bos} $A", special_tokens=[(bos, tokenizer.convert_tokens_to_ids(bos))]
    )
    trl_training = tokenizer(text=["What is 2 + 3?"])["input_ids"][0]  # trl GRPOTrainer._generate_single_turn
    assert trl_training[0] == tokenizer.convert_tokens_to_ids(bos)
    assert prompt_ids(tokenizer, "What is 2 + 3?") == trl_training


def test_evaluation_stops_at_every_eos_id_the_model_declares(tiny_model, char_tokenizer):
    """TRL's training ends a completion at each id of generation_config.eos_token_id (Qwen2.5-Instruct declares
    <|im_end|> and <|endoftext|>); evaluation stopped at the tokenizer's EOS only and graded text past the end."""
    from psgrpo.eval.generation import stop_token_ids

    (newline,) = char_tokenizer("\n", add_special_tokens=False)["input_ids"]
    saved = tiny_model.generation_config.eos_token_id
    tiny_model.generation_config.eos_token_id = [char_tokenizer.eos_token_id, newline]
    try:
        assert stop_token_ids(tiny_model, char_tokenizer) == [char_tokenizer.eos_token_id, newline]
        texts, lengths = generate_completions(tiny_model, char_tokenizer, ["Q: 2 + 3?"], max_new_tokens=40)
    finally:
        tiny_model.generation_config.eos_token_id = saved
    assert "\n" not in texts[0][:-1] and lengths[0] <= 40  # nothing after the first stop id


def test_a_conversation_is_tokenized_with_the_runs_chat_template_kwargs(char_tokenizer):
    """TRL applies --chat_template_kwargs to training prompts; evaluation (held-out curves included) left them
    out, and scored a different prompt than the one trained on (a review, 2026-12-07)."""
    tokenizer = copy.deepcopy(char_tokenizer)
    tokenizer.chat_template = (
        "{% for m in messages %}{{ m['content'] }}{% endfor %}{% if not enable_thinking %}NT{% endif %}"
    )
    conversation = [{"role": "user", "content": "2+2"}]
    plain = tokenizer.decode(prompt_ids(tokenizer, conversation, {"enable_thinking": True}))
    assert (
        plain == "2+2"
        and tokenizer.decode(prompt_ids(tokenizer, conversation, {"enable_thinking": False})) == "2+2NT"
    )
    from psgrpo.eval.heldout import chat_template_kwargs

    assert chat_template_kwargs(types.SimpleNamespace(chat_template_kwargs=None)) == {}
    assert chat_template_kwargs(types.SimpleNamespace(chat_template_kwargs={"enable_thinking": False})) == {
        "enable_thinking": False
    }


@pytest.mark.parametrize(("name", "value"), [("batch_size", 0), ("max_new_tokens", 0), ("batch_size", 2.5)])
def test_batch_size_and_length_below_one_are_refused(tiny_model, char_tokenizer, name, value):
    """``batch_size=0`` was read as 1, silently."""
    from psgrpo.eval.generation import evaluate_model

    rows = [{"prompt": "Q: 1+1\n", "answer": "2"}]
    with pytest.raises(ValueError, match=f"{name} must be a positive integer, got {value}"):
        evaluate_model(tiny_model, char_tokenizer, rows, **{name: value})


def test_chat_prompts_without_a_chat_template_are_refused_before_generating(tiny_model, char_tokenizer):
    """transformers refused at the first prompt, in words naming neither the dataset nor a way out."""
    from psgrpo.data.validation import DatasetValidationError
    from psgrpo.eval.generation import evaluate_model

    rows = [{"prompt": [{"role": "user", "content": "1+1?"}], "answer": "2"}]
    with pytest.raises(
        DatasetValidationError, match="'evaluation dataset': the prompts are chat messages, but the"
    ):
        evaluate_model(tiny_model, char_tokenizer, rows)


def test_a_prompt_the_context_cannot_hold_is_refused_before_generating(
    monkeypatch, tiny_model, char_tokenizer, caplog
):
    """transformers warned while tokenizing and decoded past ``max_position_embeddings``, naming no row."""
    context = tiny_model.config.max_position_embeddings
    generated = []

    def fake_generate(model, tokenizer, prompts, **kwargs):
        generated.append(prompts)
        return ["<answer>2</answer>"] * len(prompts), [3] * len(prompts)

    monkeypatch.setattr("psgrpo.eval.generation.generate_completions", fake_generate)
    rows = [{"prompt": "Question: 1+1\n", "answer": "2"}, {"prompt": "1" * context, "answer": "2"}]
    with pytest.raises(
        DatasetValidationError, match=rf"row 1, field 'prompt': the prompt is {context} tokens"
    ):
        evaluate_samples(tiny_model, char_tokenizer, rows, show_progress=False)
    assert generated == []
    rows[1]["prompt"] = "1" * (context - 10)
    with caplog.at_level("WARNING", logger="psgrpo.eval.generation"):
        evaluate_samples(tiny_model, char_tokenizer, rows, max_new_tokens=20, show_progress=False)
    assert (
        "1 of 2 prompts leave fewer than max_new_tokens (20) positions" in caplog.text and len(generated) == 1
    )
