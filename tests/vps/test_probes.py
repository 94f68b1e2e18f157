"""GRPO-VPS confidence probes: the packed one-pass engine equals the one-forward-per-probe reference."""

from __future__ import annotations

from dataclasses import replace
from types import SimpleNamespace

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from transformers import Qwen2ForCausalLM

from psgrpo.data.arith import make_arith_dataset
from psgrpo.tiny.model import tiny_qwen2_config
from psgrpo.vps.cached import cached_confidence
from psgrpo.vps.packed import packed_confidence
from psgrpo.vps.probes import (
    ProbeBatch,
    ProbeResult,
    attention_mask_for,
    build_probe_ids,
    check_probe_fits,
    naive_confidence,
    num_chunks,
)

TEMPERATURE = 0.7
ATOL = 1e-5


def tiny_qwen2(vocab_size: int, attn_implementation: str) -> Qwen2ForCausalLM:
    """A random 2-layer Qwen2 with grouped-query attention; a wide init makes attention far from uniform."""
    torch.manual_seed(0)
    config = tiny_qwen2_config(
        vocab_size,
        hidden_size=32,
        intermediate_size=64,
        num_layers=2,
        tie_word_embeddings=False,
        initializer_range=0.1,
        attn_implementation=attn_implementation,
    )
    return Qwen2ForCausalLM(config).eval()


@pytest.fixture(scope="module", params=["eager", "sdpa"])
def model(request, char_tokenizer):
    model = tiny_qwen2(len(char_tokenizer), request.param)
    assert model.config._attn_implementation == request.param
    return model


@pytest.fixture(scope="module")
def batch(char_tokenizer) -> ProbeBatch:
    """Four arith rows as TRL has them: prompts left-padded, completions right-padded."""
    rows = make_arith_dataset("test", n=4)
    encode = lambda text: char_tokenizer(text, add_special_tokens=False)["input_ids"]  # noqa: E731
    prompts = [encode(p) for p in rows["prompt"]]
    completions = [encode(c)[: 40 + 9 * i] for i, c in enumerate(rows["completion"])]  # distinct lengths
    assert len(set(map(len, prompts))) > 1 and len(set(map(len, completions))) == 4
    return ProbeBatch.from_lists(prompts, completions, *build_probe_ids(char_tokenizer, rows["answer"]))


@pytest.fixture(scope="module")
def boundaries(batch) -> list[list[int]]:
    """0–4 boundaries per row, the last completion token included."""
    n = batch.completion_mask.sum(1).tolist()
    return [[], [0, n[1] - 1], [5, 17, 30, n[2] - 1], [12]]


def test_from_lists_pads_like_trl():
    batch = ProbeBatch.from_lists([[7], [5, 6]], [[1, 2, 3], [4]], [[9], [9]], [0, 0])
    assert batch.prompt_ids.tolist() == [[0, 7], [5, 6]] and batch.prompt_mask.tolist() == [[0, 1], [1, 1]]
    assert batch.completion_ids.tolist() == [[1, 2, 3], [4, 0, 0]]
    assert batch.completion_mask.tolist() == [[1, 1, 1], [1, 0, 0]]
    assert batch.prompt_ids.dtype == batch.completion_mask.dtype == torch.long
    second = batch[1:]
    assert len(batch) == 2 and len(second) == 1
    assert second.prompt_ids.tolist() == [[5, 6]] and second.completion_ids.tolist() == [[4, 0, 0]]
    assert second.probe_ids == [[9]] and second.score_from == [0]


def assert_same(a: ProbeResult, b: ProbeResult, atol: float = ATOL) -> None:
    torch.testing.assert_close(a.log_confidence, b.log_confidence, atol=atol, rtol=0, equal_nan=True)
    torch.testing.assert_close(a.confidence, b.confidence, atol=atol, rtol=0, equal_nan=True)


@pytest.mark.parametrize("scoring", ["answer", "whole_probe"])
def test_packed_equals_naive(model, batch, boundaries, scoring):
    if scoring == "whole_probe":  # the first scored token is predicted from the trajectory's last token
        batch = replace(batch, score_from=[0] * 4)
    naive = naive_confidence(model, batch, boundaries, temperature=TEMPERATURE)
    packed = packed_confidence(model, batch, boundaries, temperature=TEMPERATURE)
    assert packed.confidence.shape == packed.log_confidence.shape == (4, 5)
    assert_same(packed, naive)

    padding = torch.tensor([[k > len(b) for k in range(5)] for b in boundaries])
    for result in (naive, packed):
        assert torch.equal(result.confidence.isnan(), padding)
        assert torch.equal(result.log_confidence.isnan(), padding)
        real_c, real_log = result.confidence[~padding], result.log_confidence[~padding]
        assert torch.isfinite(real_log).all() and (real_log <= 0).all()
        assert ((real_c > 0) & (real_c <= 1)).all()
        torch.testing.assert_close(real_c, real_log.exp(), atol=1e-12, rtol=1e-5)


def test_equality_is_a_sharp_check(model, batch, boundaries):
    """Control: the probes really depend on the prefix and the temperature, so equality above means something."""
    result = naive_confidence(model, batch, boundaries, temperature=TEMPERATURE)
    row2 = result.log_confidence[2]
    assert (row2[1:] - row2[:-1]).abs().min() > 1e-3  # each boundary moves the confidence
    hotter = packed_confidence(model, batch, boundaries, temperature=1.0)
    assert (hotter.log_confidence - result.log_confidence).nan_to_num().abs().max() > 1e-2


@pytest.mark.parametrize("chunk_size", [1, 3, 100])
def test_chunk_size_gives_same_result(model, batch, boundaries, chunk_size):
    whole = packed_confidence(model, batch, boundaries, temperature=TEMPERATURE)
    chunked = packed_confidence(model, batch, boundaries, temperature=TEMPERATURE, chunk_size=chunk_size)
    # Batch shape changes the float32 reduction order (SDPA, thread count): equal up to rounding.
    assert_same(chunked, whole, atol=1e-5)


def test_probe_past_context_raises_naming_row(model, batch, boundaries, monkeypatch):
    used = [int(batch.prompt_mask[i].sum()) + (b[-1] + 1 if b else 0) for i, b in enumerate(boundaries)]
    fits = [u + len(p) for u, p in zip(used, batch.probe_ids, strict=True)]
    monkeypatch.setattr(model.config, "max_position_embeddings", max(fits) - 1)
    worst = fits.index(max(fits))
    for run in (naive_confidence, packed_confidence):
        with pytest.raises(ValueError, match=f"row {worst}: .*exceed the model's context"):
            run(model, batch, boundaries)


def test_check_probe_fits():
    check_probe_fits([3, 4], [5, 6], [2, 2], max_positions=12)
    check_probe_fits([300], [300], [30], max_positions=None)
    with pytest.raises(ValueError, match=r"row 1: prompt \(4\) \+ completion \(6\) \+ probe \(3\) = 13"):
        check_probe_fits([3, 4], [5, 6], [2, 3], max_positions=12)


def test_build_probe_ids_structure(char_tokenizer):
    probes, score_from = build_probe_ids(char_tokenizer, ["42", "7"])
    ids = lambda text: char_tokenizer(text, add_special_tokens=False)["input_ids"]  # noqa: E731
    open_ids, close_ids = ids("</reasoning>\n<answer>"), ids("</answer>")
    assert len(open_ids) == 3 and len(close_ids) == 1  # the tags are single tokens
    assert probes == [open_ids + ids("42") + close_ids, open_ids + ids("7") + close_ids]
    assert score_from == [3, 3]
    assert char_tokenizer.decode(probes[0][score_from[0] :]) == "42</answer>"

    custom, start = build_probe_ids(char_tokenizer, ["5"], open_text="", close_text="")
    assert custom == [ids("5")] and start == [0]


@pytest.mark.parametrize("answer", ["", "   ", None])
def test_build_probe_ids_rejects_empty_answer(char_tokenizer, answer):
    with pytest.raises(ValueError, match="row 1: gold answer is missing or empty"):
        build_probe_ids(char_tokenizer, ["3", answer])


def test_build_probe_ids_rejects_answer_without_tokens():
    def tokenizer(text, add_special_tokens):
        return {"input_ids": [] if text == "?" else [1, 2]}

    with pytest.raises(ValueError, match="row 2: gold answer '\\?' tokenizes to no tokens"):
        build_probe_ids(tokenizer, ["1", "2", "?"])


@pytest.mark.parametrize(
    "boundaries, message",
    [
        ([[], [3, 3], [], []], "row 1: boundaries \\[3, 3\\] are not strictly increasing"),
        ([[], [], [], [500]], "row 3: boundaries \\[500\\] fall outside the completion"),
    ],
)
def test_invalid_boundaries_raise(model, batch, boundaries, message):
    with pytest.raises(ValueError, match=message):
        packed_confidence(model, batch, boundaries)


@pytest.mark.parametrize("field", ["boundaries", "probe_ids", "score_from"])
def test_per_row_input_of_wrong_length_raises(model, batch, boundaries, field):
    if field == "boundaries":
        boundaries = boundaries[:3]
    else:
        batch = replace(batch, **{field: getattr(batch, field)[:3]})
    with pytest.raises(ValueError, match=f"^{field} has 3 rows, the batch has 4$"):
        packed_confidence(model, batch, boundaries)


def test_mismatched_tensors_raise_at_construction(batch):
    with pytest.raises(ValueError, match=r"^prompt_mask has shape \(4, 2\), prompt_ids has shape \(4, \d+\)"):
        replace(batch, prompt_mask=batch.prompt_mask[:, :2])
    with pytest.raises(ValueError, match="^completion_mask has shape"):
        replace(batch, completion_mask=batch.completion_mask[:3])
    with pytest.raises(
        ValueError, match="^completion_ids has 3 rows, prompt_ids has 4; each completion needs"
    ):
        replace(batch, completion_ids=batch.completion_ids[:3], completion_mask=batch.completion_mask[:3])


def test_unsupported_attention_raises(batch, boundaries):
    flash = SimpleNamespace(config=SimpleNamespace(_attn_implementation="flash_attention_2"))
    with pytest.raises(ValueError, match="attn_implementation in \\('eager', 'sdpa'\\)"):
        packed_confidence(flash, batch, boundaries)


# --------------------------------------------------------------------------------------------
# Cached path: one trajectory forward, probes over its KV cache


@pytest.mark.parametrize("scoring", ["after_open", "first_token"])
@pytest.mark.parametrize("chunk_size", [None, 3])
def test_cached_equals_naive_and_returns_entropies(model, batch, boundaries, scoring, chunk_size):
    from psgrpo.vps.boundaries import token_entropies

    if scoring == "first_token":
        batch = replace(batch, score_from=[0] * len(boundaries))
    seen = []

    def choose(entropies, row):
        seen.append((entropies.clone(), row))
        return boundaries[row]

    ref = naive_confidence(model, batch, boundaries, temperature=TEMPERATURE)
    got = cached_confidence(model, batch, choose, temperature=TEMPERATURE, chunk_size=chunk_size)
    assert_same(got.probes, ref)
    assert got.boundaries == boundaries
    # the entropies handed to the chooser are those of an ordinary unpadded forward of row 0
    prompt = batch.prompt_ids[0][batch.prompt_mask[0].bool()]
    completion = batch.completion_ids[0][batch.completion_mask[0].bool()]
    logits = model(input_ids=torch.cat([prompt, completion])[None]).logits[:, len(prompt) - 1 : -1]
    assert [row for _, row in seen] == list(range(len(boundaries)))  # one call per row, in order
    assert seen[0][0].shape == (len(completion),)  # the row's real tokens only
    torch.testing.assert_close(seen[0][0], token_entropies(logits, TEMPERATURE)[0], atol=ATOL, rtol=ATOL)
    torch.testing.assert_close(got.entropies[0, : len(completion)], seen[0][0])


def test_the_mask_is_bool_for_sdpa_and_additive_for_eager(model):
    """SDPA applies a bool mask in the queries' dtype (autocast's bf16 over fp32 weights included); an
    additive mask in the weights' dtype beside bf16 queries is what SDPA's CUDA kernels do not take."""
    keep = torch.tensor([[[True, False, False], [True, True, False], [False, True, True]]])
    mask = attention_mask_for(model, keep)
    assert mask.shape == (1, 1, 3, 3)
    if model.config._attn_implementation == "sdpa":
        assert mask.dtype == torch.bool and torch.equal(mask[:, 0], keep)
    else:  # eager adds the mask to the scores: 0 where kept, the dtype's minimum elsewhere
        assert mask.dtype == model.dtype
        assert (
            torch.equal(mask[:, 0] == 0, keep) and (mask[:, 0][~keep] == torch.finfo(model.dtype).min).all()
        )


def on_device(batch: ProbeBatch, device: str) -> ProbeBatch:
    tensors = ("prompt_ids", "prompt_mask", "completion_ids", "completion_mask")
    return replace(batch, **{name: getattr(batch, name).to(device) for name in tensors})


@pytest.mark.skipif(
    not torch.cuda.is_available(), reason="needs a CUDA GPU (runs in benchmarks/device_check.sh)"
)
@pytest.mark.parametrize("attn_implementation", ["eager", "sdpa"])
def test_on_a_gpu_under_bf16_autocast_over_fp32_weights_the_fast_probes_equal_naive(
    char_tokenizer, batch, boundaries, attn_implementation
):
    """What ``--bf16 true`` over fp32 weights gives on a GPU: SDPA's CUDA kernels with bf16 queries and the
    4-D probe mask. A misread mask moves the confidences far more than bf16's rounding does."""
    model = tiny_qwen2(len(char_tokenizer), attn_implementation).to("cuda")
    batch = on_device(batch, "cuda")
    for autocast in (False, True):
        with torch.autocast("cuda", dtype=torch.bfloat16, enabled=autocast):
            naive = naive_confidence(model, batch, boundaries, temperature=TEMPERATURE)
            packed = packed_confidence(model, batch, boundaries, temperature=TEMPERATURE)
            cached = cached_confidence(
                model, batch, lambda _entropies, row: boundaries[row], temperature=TEMPERATURE, chunk_size=3
            )
        atol = 0.05 if autocast else 1e-4  # bf16 rounds each of ~10 scored log-probs to ~1e-2
        assert packed.log_confidence.device.type == cached.probes.log_confidence.device.type == "cuda"
        assert_same(packed, naive, atol=atol)
        assert_same(cached.probes, naive, atol=atol)


@pytest.mark.parametrize("mode", ["packed", "cached"])
def test_the_probes_run_on_the_rollouts_device_not_the_parameters(char_tokenizer, batch, boundaries, mode):
    """With CPU-offloaded parameters (FSDP / ZeRO offload) ``model.device`` says CPU while the rollout and
    the forwards are on the GPU. Here the first parameter says ``meta`` and the rollout is on the CPU: the
    probes (idle forwards included) must follow the rollout."""
    model = tiny_qwen2(len(char_tokenizer), "sdpa")
    reference = naive_confidence(model, batch, boundaries, temperature=TEMPERATURE)
    model.register_parameter("offloaded", torch.nn.Parameter(torch.empty(1, device="meta")))
    assert model.device.type == "meta"  # the root's own parameter comes first
    kwargs = {"temperature": TEMPERATURE, "chunk_size": 3, "min_chunks": 3}  # 2 chunks + idle forwards
    seen: list[torch.device] = []  # every forward's input device (an idle forward's output is discarded)
    model.register_forward_pre_hook(lambda _m, _a, kw: seen.append(kw["input_ids"].device), with_kwargs=True)
    if mode == "packed":
        got = packed_confidence(model, batch, boundaries, **kwargs)
    else:
        got = cached_confidence(model, batch, lambda _entropies, row: boundaries[row], **kwargs).probes
    assert len(seen) == {"packed": 3, "cached": 6}[mode]  # cached: trajectory + probes, per chunk
    assert set(seen) == {batch.prompt_ids.device} and got.log_confidence.device == batch.prompt_ids.device
    assert_same(got, reference)


@pytest.mark.parametrize(
    ("rows", "chunk_size", "expected"),
    [(0, 2, 0), (0, None, 0), (1, 2, 1), (4, 2, 2), (5, 2, 3), (5, None, 1)],
)
def test_num_chunks(rows, chunk_size, expected):
    assert num_chunks(rows, chunk_size) == expected


@given(rows=st.integers(1, 500), chunk_size=st.integers(1, 64))
def test_num_chunks_is_the_fewest_chunks_that_hold_every_row(rows, chunk_size):
    chunks = num_chunks(rows, chunk_size)
    assert (chunks - 1) * chunk_size < rows <= chunks * chunk_size


@pytest.mark.parametrize("mode", ["packed", "cached"])
def test_min_chunks_pads_with_idle_forwards_and_changes_nothing(model, batch, boundaries, mode):
    """A rank with fewer chunks than another runs idle forwards up to the common count (ZeRO-3/FSDP)."""
    forwards = []
    hook = model.register_forward_hook(lambda module, inputs, output: forwards.append(1))

    def run(**extra):
        forwards.clear()
        if mode == "packed":
            result = packed_confidence(
                model, batch, boundaries, temperature=TEMPERATURE, chunk_size=2, **extra
            )
        else:
            choose = lambda entropies, row: boundaries[row]  # noqa: E731
            result = cached_confidence(
                model, batch, choose, temperature=TEMPERATURE, chunk_size=2, **extra
            ).probes
        return result, len(forwards)

    try:
        plain, plain_forwards = run()
        padded, padded_forwards = run(min_chunks=5)
        fewer, fewer_forwards = run(min_chunks=1)  # below the own count: no padding
    finally:
        hook.remove()
    per_chunk = 1 if mode == "packed" else 2  # cached: trajectory forward + probe forward
    assert plain_forwards == fewer_forwards == 2 * per_chunk  # 4 rows, 2 per chunk
    assert padded_forwards == 5 * per_chunk
    assert_same(padded, plain, atol=0.0)
    assert_same(fewer, plain, atol=0.0)


# --------------------------------------------------------------------------------------------
# Qwen2.5's real vocabulary (skipped when its ranks file cannot be had)


@given(answer=st.integers(min_value=0, max_value=10**9))
@settings(max_examples=40, deadline=None)
def test_qwen_probe_is_the_canonical_tokenisation_of_its_text(qwen_tokenizer, answer):
    """Tokenised in three parts, a GSM8K-style probe still equals Qwen's tokens of the whole text.

    Digits are single tokens and ``>`` before a digit is never merged, so the answer's ids do not
    depend on its neighbours. (A negative answer would not hold: Qwen merges ``>-``.)
    """
    digits = str(answer)
    probes, score_from = build_probe_ids(qwen_tokenizer, [digits])
    text = f"</reasoning>\n<answer>{digits}</answer>"
    assert probes[0] == qwen_tokenizer(text, add_special_tokens=False)["input_ids"]
    assert probes[0][score_from[0] : score_from[0] + len(digits)] == [15 + int(d) for d in digits]
    assert qwen_tokenizer.decode(probes[0][score_from[0] :]) == f"{digits}</answer>"


def test_qwen_probe_of_gsm8k_gold_answers(qwen_tokenizer, gsm8k_dir):
    """The loader's gold answers carry no leading space; each probe is one token per answer character."""
    from psgrpo.data.gsm8k import load_gsm8k

    if not (gsm8k_dir / "test.jsonl").is_file():
        pytest.skip(f"no GSM8K copy at {gsm8k_dir} (set PSGRPO_GSM8K_DIR)")
    answers = load_gsm8k(str(gsm8k_dir), split="test", chat=True)["answer"]
    probes, score_from = build_probe_ids(qwen_tokenizer, answers)
    negative = 0
    for answer, probe, start in zip(answers, probes, score_from, strict=True):
        assert answer == answer.strip() != ""
        scored = probe[start : len(probe) - 3]  # "</answer>" is "</", "answer", ">"
        assert [qwen_tokenizer.decode([i]) for i in scored] == list(answer)
        if answer.startswith("-"):  # in running text Qwen merges ">-"; the probe keeps ">" and "-" apart
            negative += 1
            continue
        assert (
            probe
            == qwen_tokenizer(f"</reasoning>\n<answer>{answer}</answer>", add_special_tokens=False)[
                "input_ids"
            ]
        )
    assert negative < 0.01 * len(answers)


def test_qwen_vocabulary_cached_probes_equal_naive(qwen_tokenizer):
    """Chat-template prompts, completions ending in <|im_end|>, 151,936 logits: cached == naive."""
    from psgrpo.tiny.qwen_tokenizer import QWEN2_5_VOCAB_SIZE

    tok = qwen_tokenizer
    rows = make_arith_dataset("test", n=2)
    encode = lambda text: tok(text, add_special_tokens=False)["input_ids"]  # noqa: E731
    chat = [[{"role": "user", "content": q}] for q in rows["question"]]
    prompts = [encode(tok.apply_chat_template(m, add_generation_prompt=True, tokenize=False)) for m in chat]
    completions = [[*encode(c)[: 20 + 5 * i], tok.eos_token_id] for i, c in enumerate(rows["completion"])]
    batch = ProbeBatch.from_lists(prompts, completions, *build_probe_ids(tok, rows["answer"]))
    boundaries = [[3, 11, len(completions[0]) - 1], [7]]
    model = tiny_qwen2(QWEN2_5_VOCAB_SIZE, "sdpa")
    choose = lambda entropies, row: boundaries[row]  # noqa: E731
    got = cached_confidence(model, batch, choose, temperature=TEMPERATURE)
    assert_same(got.probes, naive_confidence(model, batch, boundaries, temperature=TEMPERATURE))
    assert got.probes.confidence.shape == (2, 4)


# ---- the same calls on every transformers release the package admits (make test-min, make test) ----


def test_logits_only_at_gives_each_rows_logits_at_its_own_positions(model):
    """(B, N, V) at per-row positions, equal to the full forward's; the hook is gone afterwards."""
    from psgrpo.vps.probes import logits_only_at

    ids = torch.randint(1, model.config.vocab_size, (3, 12), generator=torch.Generator().manual_seed(1))
    index = torch.tensor([[0, 5, 11], [3, 3, 7], [11, 10, 9]])
    with torch.no_grad():
        full = model(input_ids=ids).logits  # (3, 12, V)
        with logits_only_at(model, index):
            picked = model(input_ids=ids, logits_to_keep=0).logits
        after = model(input_ids=ids).logits
    assert picked.shape == (3, 3, model.config.vocab_size)
    torch.testing.assert_close(picked, full.gather(1, index[..., None].expand(-1, -1, full.shape[-1])))
    torch.testing.assert_close(after, full)  # the hook was removed


def test_cache_keyword_is_the_models_own_name(model):
    """transformers 5.24 renamed past_key_values to cache; the wrong name is silently dropped before it."""
    import inspect

    from psgrpo.vps.probes import cache_keyword

    own = inspect.signature(type(model).forward).parameters
    assert cache_keyword(model) in own

    class OldForward(torch.nn.Module):
        def forward(self, input_ids=None, past_key_values=None, **kwargs): ...

    class NewForward(torch.nn.Module):
        def forward(self, input_ids=None, cache=None, **kwargs): ...

    class Wrapper(torch.nn.Module):  # PEFT's shape: the model under get_base_model()
        def __init__(self, inner):
            super().__init__()
            self.inner = inner

        def get_base_model(self):
            return self.inner

        def forward(self, *args, **kwargs): ...

    assert cache_keyword(OldForward()) == "past_key_values"
    assert cache_keyword(NewForward()) == "cache"
    assert cache_keyword(Wrapper(OldForward())) == "past_key_values"
    ddp_like = torch.nn.Module()
    ddp_like.module = NewForward()
    assert cache_keyword(ddp_like) == "cache"
