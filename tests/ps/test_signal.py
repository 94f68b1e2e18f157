"""psgrpo.ps.signal: the PS metrics, the scorer's counts, the ``auto`` advantage mode, and the step-score
normalisation, which follows TRL's outcome scaling (``scale`` = group or batch std)."""

from __future__ import annotations

import math

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from psgrpo.ps.scorers import STEP_SCORERS, build_step_scorer
from psgrpo.ps.scorers.arithmetic import ArithmeticVerifier, VerifierCounts
from psgrpo.ps.signal import normalize_step_scores, resolve_process_mode, scorer_counts, step_metrics


def test_step_metrics_without_counts_keep_the_old_keys():
    metrics = step_metrics([[1.0, 0.0], None, [0.5]], wrong_threshold=0.5)
    assert metrics == pytest.approx(
        {
            "ps/steps_per_completion": 1.5,
            "ps/step_score_mean": 0.5,
            "ps/frac_steps_wrong": 1 / 3,
            "ps/scorer_fallbacks": 1.0,
        }
    )


def test_step_metrics_tokens_per_step_and_verifier_shares():
    counts = [
        {"steps": 6, "no_equation": 1, "noop": 1, "unnecessary": 2, "garbled": 1, "unparsed_equations": 3},
        None,  # a process whose scorer counts nothing is skipped
        {"steps": 4, "no_equation": 1, "noop": 0, "unnecessary": 0, "garbled": 1, "unparsed_equations": 0},
    ]
    metrics = step_metrics(
        [[1.0] * 3, [1.0] * 2], 0.5, step_tokens=[[10, 20, 30], [5, 5]], counts=counts,
        count_metrics=VerifierCounts.metrics,
    )  # fmt: skip
    assert metrics["ps/tokens_per_step"] == pytest.approx(70 / 5)
    assert metrics["ps/frac_steps_no_equation"] == pytest.approx(0.2)
    assert metrics["ps/frac_steps_noop"] == pytest.approx(0.1)
    assert metrics["ps/frac_steps_unnecessary"] == pytest.approx(0.2)
    assert metrics["ps/frac_steps_garbled"] == pytest.approx(0.2)
    assert metrics["ps/unparsed_equations"] == 3.0
    empty = step_metrics(
        [[]],
        0.5,
        step_tokens=[[]],
        counts=[
            {"steps": 0, "no_equation": 0, "noop": 0, "unnecessary": 0, "garbled": 0, "unparsed_equations": 0}
        ],
        count_metrics=VerifierCounts.metrics,
    )
    assert math.isnan(empty["ps/tokens_per_step"]) and math.isnan(empty["ps/frac_steps_noop"])


def test_scorer_counts_come_from_the_verifier_only():
    verifier = ArithmeticVerifier()
    verifier(
        ["Q"], [["Step 1: 7 + 5 = 12\n", "Step 2: 12 * 1 = 12\n", "Step 3: 12 - 3 = 9\n<answer>9</answer>"]]
    )
    assert scorer_counts(verifier) == {
        "steps": 3,
        "no_equation": 0,
        "noop": 1,
        "unnecessary": 1,
        "garbled": 0,
        "unparsed_equations": 0,
    }
    assert (
        scorer_counts(build_step_scorer(lambda prompts, steps, **kw: [[1.0] * len(s) for s in steps])) is None
    )


@pytest.mark.parametrize(
    ("scorer", "expected"),
    [
        (ArithmeticVerifier(), "step"),
        (build_step_scorer("arithmetic"), "step"),
        (build_step_scorer(ArithmeticVerifier()), "step"),  # a verifier instance passed as a callable
        (build_step_scorer(lambda prompts, steps, **kw: []), "min"),
        (STEP_SCORERS.get("reference"), "step"),  # a class, as experiments/ps_sweep.py passes it
        (STEP_SCORERS.get("prm"), "min"),
    ],
)
def test_auto_mode_depends_on_the_scorer(scorer, expected):
    assert resolve_process_mode("auto", scorer) == expected
    assert resolve_process_mode("reward_to_go", scorer) == "reward_to_go"


# ---- step-score normalisation follows scale_rewards ------------------------------------------

SCORE = st.integers(0, 20).map(lambda k: k / 20)  # verifier-like scores in [0, 1]


@st.composite
def grouped_scores(draw):
    """(scores of G·n completions, G): 1–4 steps each, some completions failed (None)."""
    generations, groups = draw(st.integers(2, 4)), draw(st.integers(1, 3))
    rows = [draw(st.none() | st.lists(SCORE, min_size=1, max_size=4)) for _ in range(generations * groups)]
    return rows, generations


def _flat(rows):
    return [s for row in rows if row is not None for s in row]


@given(grouped_scores(), st.sampled_from(["group", "batch"]), st.floats(0.1, 10.0))
def test_normalised_scores_do_not_depend_on_the_score_scale(case, scale, factor):
    """Multiplying every step score by c leaves r̃ unchanged (up to the 1e-4 in the std): λ weighs unitless terms."""
    rows, generations = case
    scaled = [None if row is None else [factor * s for s in row] for row in rows]
    out = normalize_step_scores(rows, generations, eps=0.0, scale=scale)
    out_scaled = normalize_step_scores(scaled, generations, eps=0.0, scale=scale)
    assert _flat(out_scaled) == pytest.approx(_flat(out), rel=1e-6, abs=1e-6)


@given(grouped_scores())
def test_batch_scale_centres_per_group_and_divides_by_the_batch_std(case):
    rows, generations = case
    out = normalize_step_scores(rows, generations, scale="batch")
    batch_std = torch.tensor(_flat(rows), dtype=torch.float64)
    batch_std = batch_std.std().item() if batch_std.numel() > 1 else 0.0
    for start in range(0, len(rows), generations):
        group, normalised = rows[start : start + generations], out[start : start + generations]
        flat = _flat(group)
        no_spread = len(flat) < 2 or max(flat) == min(flat)
        mean = sum(flat) / len(flat) if flat else 0.0
        for row, values in zip(group, normalised, strict=True):
            if row is None:
                assert values is None
            elif no_spread:
                assert values == [0.0] * len(row)
            else:
                assert values == pytest.approx([(s - mean) / (batch_std + 1e-4) for s in row], rel=1e-9)


def test_one_group_batch_equals_group():
    rows = [[1.0, 0.0], [1.0], [0.5, 0.25]]
    assert normalize_step_scores(rows, 3, scale="batch") == normalize_step_scores(rows, 3, scale="group")


def test_unknown_scale_is_refused():
    with pytest.raises(ValueError, match="scale='token' is not allowed; choose one of 'group', 'batch'"):
        normalize_step_scores([[1.0], [0.0]], 2, scale="token")


QWEN_STYLE = (
    "<reasoning>\nShe uses 3 + 4 = 7 eggs.\nShe sells 16 - 7 = 9 eggs.\n</reasoning>\n<answer>9</answer>"
)
"""How Qwen2.5-Instruct answers GSM8K's tags prompt: no 'Step N:' markers."""


@pytest.mark.parametrize(("segmenter", "warns"), [("markers", True), ("newline", False), ("single", False)])
def test_ps_warns_once_when_no_completion_splits_into_steps(caplog, segmenter, warns):
    """The GSM8K recipe's prompt asks for no step markers: with the default segmenter every completion is
    one step and ps silently trains as grpo, unless the user is told."""
    from types import SimpleNamespace

    from psgrpo.ps.segmentation import SEGMENTERS
    from psgrpo.ps.signal import PsSignal

    config = SimpleNamespace(ps_advantage_mode="auto", segmenter=segmenter)
    signal = PsSignal(
        config, tokenizer=None, accelerator=None, segmenter=None, step_scorer=ArithmeticVerifier()
    )
    steps = [len(SEGMENTERS.get(segmenter)()(QWEN_STYLE))] * 4  # the batch's completions, as step counts
    step_tokens = [[10] * n for n in steps]
    with caplog.at_level("WARNING", logger="psgrpo"):
        signal.warn_if_one_step(step_tokens, step=0)
        signal.warn_if_one_step(step_tokens, step=1)
    warnings = [r.getMessage() for r in caplog.records if "is one step with segmenter" in r.getMessage()]
    assert warnings == (
        [f"method ps: every completion of step 0 is one step with segmenter '{segmenter}', so all tokens of a "
         "completion get the same credit, as in grpo (its one step's score beside the outcome); choose a "
         "--segmenter that matches how the completions are written (e.g. 'newline'), or a prompt that asks "
         "for 'Step N:' lines"]
        if warns else []
    )  # fmt: skip


def _always_raises(prompts, steps, **columns):
    raise RuntimeError("no GPU for the PRM")


def _ps_signal(step_scorer):
    from types import SimpleNamespace

    from psgrpo.ps.signal import PsSignal

    config = SimpleNamespace(ps_advantage_mode="auto", segmenter="markers")
    return PsSignal(config, tokenizer=None, accelerator=None, segmenter=None, step_scorer=step_scorer)


def test_ps_warns_once_when_the_scorer_fails_on_every_completion(caplog):
    """ps_on_scorer_error='outcome' with a scorer that always raises trained as grpo with nothing but a metric
    to say so (a bad-input sweep, F11): one warning per run names the scorer and its first error."""
    from psgrpo.ps.signal import score_steps

    signal = _ps_signal(_always_raises)
    with caplog.at_level("WARNING", logger="psgrpo"):
        for step in range(3):
            errors = []
            raw = score_steps(_always_raises, ["q1", "q2"], [["a"], ["b"]], {}, fallback=True, errors=errors)
            assert raw == [None, None] and len(errors) == 2
            signal.warn_if_all_fell_back(raw, errors, step)
    warnings = [r.getMessage() for r in caplog.records if "failed on every completion" in r.getMessage()]
    assert warnings == [
        "method ps: step scorer '_always_raises' failed on every completion of step 0 (first error: step scorer "
        "'_always_raises' raised RuntimeError: no GPU for the PRM), so with ps_on_scorer_error='outcome' each got "
        "the outcome advantage only and the batch trained as grpo (counted in ps/scorer_fallbacks); fix the "
        "scorer, or set ps_on_scorer_error='raise' to stop at its first error. Warned once per run"
    ]


def test_ps_does_not_warn_while_some_completion_is_scored(caplog):
    """A scorer failing on some completions only is what ps/scorer_fallbacks counts: no warning."""
    from psgrpo.ps.signal import score_steps

    def fails_on_the_first(prompts, steps, **columns):
        if "q1" in prompts:
            raise RuntimeError("bad row")
        return [[1.0] * len(s) for s in steps]

    signal = _ps_signal(fails_on_the_first)
    errors = []
    raw = score_steps(fails_on_the_first, ["q1", "q2"], [["a"], ["b"]], {}, fallback=True, errors=errors)
    assert raw == [None, [1.0]] and [str(e) for e in errors] == [
        "step scorer 'fails_on_the_first' raised RuntimeError: bad row"
    ]
    with caplog.at_level("WARNING", logger="psgrpo"):
        signal.warn_if_all_fell_back(raw, errors, step=0)
        signal.warn_if_all_fell_back([], [], step=1)  # an empty batch is no failure either
    assert not [r for r in caplog.records if "failed on every completion" in r.getMessage()]
    assert signal.warned_all_fell_back is False
