"""psgrpo.vps.gold_suffix: the scored texts, and one probe's value whatever else shares its forward."""

from __future__ import annotations

import pytest
import torch

from psgrpo.tiny.model import build_tiny_model
from psgrpo.vps.gold_suffix import distinct_probes, gold_suffix_texts, suffix_confidence

SOLUTION = "Step 1: 2 + 3 = 5\nStep 2: 5 * 2 = 10\n<answer>10</answer>"


def test_texts_are_the_solution_then_its_rest_after_each_step():
    ends = [SOLUTION.index("Step 2")]  # one boundary between the two steps
    assert gold_suffix_texts(SOLUTION, ends, 1) == [SOLUTION, SOLUTION[ends[0] :]]
    # a completion with more steps than the gold: the suffix stays the gold's last step and answer
    assert gold_suffix_texts(SOLUTION, ends, 3)[1:] == [SOLUTION[ends[0] :]] * 3
    assert gold_suffix_texts(SOLUTION, [], 2) == [SOLUTION] * 3  # a one-step gold solution


@pytest.fixture(scope="module")
def model(char_tokenizer):
    return build_tiny_model(char_tokenizer, seed=0, hidden_size=32, num_layers=2, intermediate_size=64).eval()


def _ids(tokenizer, text):
    return tokenizer(text, add_special_tokens=False)["input_ids"]


def test_a_probe_does_not_depend_on_padding_or_chunking(model, char_tokenizer):
    pad = char_tokenizer.pad_token_id
    short = ([_ids(char_tokenizer, "Q: 1+1\n")], [_ids(char_tokenizer, "2")])
    long = (
        [
            _ids(char_tokenizer, "Question: what is 2 + 3, times 2?\n"),
            _ids(char_tokenizer, "Q\nStep 1: 2 + 3 = 5\n"),
        ],
        [_ids(char_tokenizer, SOLUTION), _ids(char_tokenizer, "Step 2: 5 * 2 = 10\n")],
    )
    together = suffix_confidence(model, [short[0], long[0]], [short[1], long[1]], pad, chunk_size=None)
    alone = [suffix_confidence(model, [c], [s], pad) for c, s in (short, long)]
    assert together.confidence.shape == (2, 2) and torch.isnan(together.confidence[0, 1])
    torch.testing.assert_close(together.log_confidence[0, :1], alone[0].log_confidence[0], atol=1e-5, rtol=0)
    torch.testing.assert_close(together.log_confidence[1], alone[1].log_confidence[0], atol=1e-5, rtol=0)
    # by hand: one unpadded forward, the mean log-prob of the suffix tokens
    context, suffix = long[0][1], long[1][1]
    with torch.no_grad():
        logits = model(input_ids=torch.tensor([context + suffix])).logits[0].float()
    logps = torch.log_softmax(logits[len(context) - 1 : -1], -1).gather(1, torch.tensor(suffix)[:, None])
    assert together.log_confidence[1, 1].item() == pytest.approx(logps.mean().item(), abs=1e-5)
    halved = suffix_confidence(model, [long[0]], [long[1]], pad, temperature=2.0)
    assert not torch.allclose(halved.log_confidence, alone[1].log_confidence)  # temperature divides logits


def test_min_chunks_runs_dummy_forwards_and_empty_suffixes_are_refused(model, char_tokenizer):
    calls = []
    hook = model.register_forward_hook(lambda *_: calls.append(1))
    try:
        suffix_confidence(model, [[[1, 2]]], [[[3]]], char_tokenizer.pad_token_id, chunk_size=4, min_chunks=3)
    finally:
        hook.remove()
    assert len(calls) == 3  # one real forward, two dummies: every process makes the same collective calls
    with pytest.raises(ValueError, match="at least one token"):
        suffix_confidence(model, [[[1, 2]]], [[[]]], char_tokenizer.pad_token_id)


def test_a_probe_asked_by_several_rows_is_scored_once(model, char_tokenizer):
    prompt = _ids(char_tokenizer, "Q: 2 + 3, times 2?\n")
    step = _ids(char_tokenizer, "Step 1: 2 + 3 = 5\n")
    wrong = _ids(char_tokenizer, "Step 1: 2 + 3 = 6\n")
    rest = _ids(char_tokenizer, "Step 2: 5 * 2 = 10\n")
    whole = _ids(char_tokenizer, SOLUTION)
    # a group of three: all share C_0, and the first two also their C_1 (the same first step)
    contexts = [[prompt, prompt + step], [prompt, prompt + step], [prompt, prompt + wrong]]
    suffixes = [[whole, rest]] * 3
    owners = distinct_probes(contexts, suffixes)
    assert list(owners.values()) == [[(0, 0), (1, 0), (2, 0)], [(0, 1), (1, 1)], [(2, 1)]]
    calls = []
    hook = model.register_forward_hook(
        lambda _module, args, kwargs, _out: calls.append(kwargs["input_ids"].shape[0]), with_kwargs=True
    )
    try:
        shared = suffix_confidence(model, contexts, suffixes, char_tokenizer.pad_token_id, chunk_size=None)
    finally:
        hook.remove()
    assert calls == [3]  # one forward over the three distinct probes, not six
    one_by_one = [
        suffix_confidence(model, [c], [s], char_tokenizer.pad_token_id)
        for c, s in zip(contexts, suffixes, strict=True)
    ]
    for i, alone in enumerate(one_by_one):
        torch.testing.assert_close(shared.log_confidence[i], alone.log_confidence[0], atol=1e-5, rtol=0)
    assert shared.log_confidence[2, 1] != shared.log_confidence[0, 1]  # the wrong step is its own probe


def test_the_forwards_run_on_the_rollouts_device_when_given(char_tokenizer):
    """With CPU-offloaded parameters the parameters' device is not where the forward runs: VpsSignal
    passes the rollout's device. Here the first parameter says ``meta`` and the rollout is on the CPU."""
    contexts = [[_ids(char_tokenizer, "Q: 2 + 3?\n"), _ids(char_tokenizer, "Q: 2 + 3?\nStep 1: ")]]
    suffixes = [[_ids(char_tokenizer, "2 + 3 = 5"), _ids(char_tokenizer, "= 5")]]
    pad = char_tokenizer.pad_token_id
    model = build_tiny_model(
        char_tokenizer, seed=0, hidden_size=32, num_layers=2, intermediate_size=64
    ).eval()
    reference = suffix_confidence(model, contexts, suffixes, pad)
    model.register_parameter("offloaded", torch.nn.Parameter(torch.empty(1, device="meta")))
    assert next(model.parameters()).device.type == "meta"
    got = suffix_confidence(model, contexts, suffixes, pad, chunk_size=1, min_chunks=3, device="cpu")
    assert got.log_confidence.device.type == "cpu"
    torch.testing.assert_close(got.log_confidence, reference.log_confidence, atol=1e-5, rtol=0)


@pytest.mark.skipif(
    not torch.cuda.is_available(), reason="needs a CUDA GPU (runs in benchmarks/device_check.sh)"
)
def test_on_a_gpu_the_confidences_stay_beside_the_rollout(model, char_tokenizer):
    """VpsSignal combines them with the rollout's CUDA tensors: a CPU result crashed the first step there."""
    contexts = [[_ids(char_tokenizer, "Q: 2 + 3?\n"), _ids(char_tokenizer, "Q: 2 + 3?\nStep 1: ")]]
    suffixes = [[_ids(char_tokenizer, "2 + 3 = 5"), _ids(char_tokenizer, "2 + 3 = 5")]]
    on_cpu = suffix_confidence(model, contexts, suffixes, char_tokenizer.pad_token_id)
    try:
        on_gpu = suffix_confidence(model.to("cuda"), contexts, suffixes, char_tokenizer.pad_token_id)
    finally:
        model.cpu()  # the module's other tests share this model
    assert on_gpu.log_confidence.device.type == on_gpu.confidence.device.type == "cuda"
    torch.testing.assert_close(on_gpu.log_confidence.cpu(), on_cpu.log_confidence, atol=1e-4, rtol=0)
