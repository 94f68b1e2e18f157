"""Does the GRPO-VPS probe point at the wrong step? ΔC on gold solutions and one-wrong-step copies.

The measurement behind ``psgrpo diagnose`` (:mod:`psgrpo.commands.diagnose`)::

    psgrpo diagnose [--model_name_or_path PATH] [--dataset arith] [--problems 200]
        [--corruptions 3] [--seed 0] [--alpha 1.2] [--output FILE.json]

For each of the first ``--problems`` held-out (test) problems of ``--dataset``, the group is the
gold solution plus ``--corruptions`` copies with exactly one wrong step result (off by ±1..3,
later steps recomputed from it; :func:`psgrpo.data.arith_probe.random_wrong_step`). Every
completion is probed with the trainer's own code (:mod:`psgrpo.vps.probes`, temperature 1, the
default probe ``</reasoning>\\n<answer>`` + gold + ``</answer>``) at three kinds of boundaries:

* ``step_end``: after the newline that ends each step line (all steps, the last included);
* ``entropy``: the trainer's default adaptive cuts (K=4, quantile 0.8, at least 4 tokens, never
  in the answer), from the same trajectory forward (:func:`~psgrpo.vps.cached.cached_confidence`);
* ``entropy_snapped``: the same cuts moved back out of numbers
  (:func:`psgrpo.diagnostics.measures.number_safe_cuts` as ``snap_positions``);
* ``gold_suffix``: step ends, probed with the *rest of the gold worked solution* instead of the
  answer alone (:func:`gold_suffix_confidence`): an extension that needs gold solutions, not
  GRPO-VPS. A model that copies earlier results should find the gold continuation unlikely after
  a wrong step, even if it cannot compute the remaining operations in its head.

Ground truth comes from the arithmetic verifier (:func:`psgrpo.diagnostics.measures.judge_steps`):
a step is wrong when one of its equations fails. A segment is wrong when it holds the last character
of a wrong step's result, correct when it holds only right steps' results, and left out of the AUCs
when it holds none (:func:`psgrpo.diagnostics.measures.segment_labels`). For each
boundary kind and each form of ΔC, it reports the AUC of ΔC for ranking wrong segments below
correct ones (:func:`psgrpo.diagnostics.measures.signal_quality`), also over intermediate segments only
(those a trainer with step boundaries probes: it never probes after the last step), the mean ΔC
at wrong and correct segments, the median C, where the cuts fall
(:func:`psgrpo.diagnostics.measures.boundary_places`) and the size of ``|α·ΔC|`` against ``|A_i|``
(correctness 2.0 / 0 + format 0.8 rewards of the group; ``A_i`` group-scaled as TRL does, and
unscaled ``r_i − mean``, the paper's form), with the share of Σ|A_t| that α·ΔC carries
(:func:`psgrpo.diagnostics.measures.process_share`; ΔC on every segment but the last step's). ΔC forms:

* ``prob``: C_k − C_{k−1}, clipped to [−1, 1] (the paper's; the trainer's default);
* ``log``: log C_k − log C_{k−1}, clipped to [−1, 1] (``--vps_log_form``);
* ``gnorm_log``: log-form ΔC normalised over all segments of the group, (ΔC − mean) / (std + 1e-4),
  as PS-GRPO normalises step scores (an extension, not the paper's method).
"""

from __future__ import annotations

import random
import statistics
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import torch

from psgrpo.advantages import confidence_progress
from psgrpo.config.options import ProbeBoundaries, allowed
from psgrpo.data.arith import ArithProblem
from psgrpo.data.arith_probe import PROBE_CLOSE, PROBE_OPEN, random_wrong_step
from psgrpo.data.prompts import format_prompt
from psgrpo.diagnostics.measures import (
    JudgedSteps,
    boundary_places,
    judge_steps,
    number_safe_cuts,
    place_shares,
    process_share,
    segment_labels,
    signal_quality,
)
from psgrpo.eval.generation import prompt_ids
from psgrpo.ps.segmentation import token_offsets
from psgrpo.ps.signal import normalize_step_scores
from psgrpo.rewards.functions import correctness_reward, format_reward
from psgrpo.techniques.reward_norm import group_advantages
from psgrpo.vps.boundaries import answer_marker_token, segment_index_from_boundaries, select_boundaries
from psgrpo.vps.cached import cached_confidence
from psgrpo.vps.gold_suffix import gold_suffix_texts, suffix_confidence
from psgrpo.vps.packed import packed_confidence
from psgrpo.vps.probes import ProbeBatch, ProbeResult, build_probe_ids

BOUNDARY_KINDS = allowed(ProbeBoundaries)
DELTA_FORMS = ("prob", "log", "gnorm_log")


@dataclass
class Case:
    """One completion to probe: a gold solution or a copy with one wrong step, and its labels.

    Attributes:
        prompt, completion, answer: texts (``answer`` is the problem's gold answer).
        gold: the problem's gold solution (the ``gold_suffix`` probe's source).
        steps: the verifier's verdict on each step line (:func:`psgrpo.diagnostics.measures.judge_steps`).
        ids: token ids of ``prompt`` and ``completion`` (+ EOS), filled by :func:`measure`.
    """

    prompt: str
    completion: str
    answer: str
    steps: JudgedSteps
    gold: str = ""
    ids: dict[str, list[int]] = field(default_factory=dict)

    @property
    def step_ends(self) -> list[int]:
        """Character index just past each step line's newline."""
        return self.steps.ends

    @property
    def wrong_steps(self) -> list[bool]:
        return [bool(w) for w in self.steps.wrong]

    @property
    def error_chars(self) -> list[int]:
        """Character index of the last digit of each wrong step's result."""
        return [c for c, w in zip(self.steps.result_chars, self.steps.wrong, strict=True) if w]


def make_case(prompt: str, shown: ArithProblem, gold: ArithProblem) -> Case:
    """Label ``shown`` (gold or a wrong copy of ``gold``) with the arithmetic verifier."""
    return Case(prompt, shown.solution, str(gold.answer), judge_steps(shown.solution), gold.solution)


def build_cases(problems: Sequence[ArithProblem], corruptions: int, rng: random.Random) -> list[Case]:
    """Groups of ``1 + corruptions`` cases per problem: gold, then wrong copies (distinct wrong steps
    while there are enough used steps); a problem without enough valid copies is skipped."""
    cases: list[Case] = []
    for problem in problems:
        prompt = format_prompt(problem.question, "compact")
        used = [i for i, step in enumerate(problem.chain) if step.used]
        order = rng.sample(used, len(used))
        copies: list[ArithProblem] = []
        for attempt in range(corruptions * 5):
            if len(copies) == corruptions:
                break
            wrong = random_wrong_step(problem, rng, steps=[order[attempt % len(order)]])
            if wrong is not None:
                copies.append(wrong[1])
        if len(copies) == corruptions:
            cases += [make_case(prompt, shown, problem) for shown in (problem, *copies)]
    return cases


def _tokenize(tokenizer, cases: Sequence[Case]) -> None:
    """Fill ``case.ids``: prompt and completion (+ EOS) token ids."""
    for case in cases:
        completion = tokenizer(case.completion, add_special_tokens=False)["input_ids"] + [
            tokenizer.eos_token_id
        ]
        case.ids = {
            "prompt": prompt_ids(tokenizer, case.prompt),  # as training and evaluation tokenize it
            "completion": completion,
        }


def _probe_batch(tokenizer, cases: Sequence[Case], device) -> ProbeBatch:
    probe_ids, score_from = build_probe_ids(tokenizer, [c.answer for c in cases], PROBE_OPEN, PROBE_CLOSE)
    return ProbeBatch.from_lists(
        [c.ids["prompt"] for c in cases], [c.ids["completion"] for c in cases], probe_ids, score_from, device
    )


def gold_suffix_confidence(model, tokenizer, cases: Sequence[Case], chunk_size: int = 32) -> ProbeResult:
    """C_0..C_K of the ``gold_suffix`` kind at every step end (:mod:`psgrpo.vps.gold_suffix`, temperature 1):
    the per-token geometric mean of P(the gold solution's text after its k-th step | prompt + the
    case's completion up to its k-th step end); C_0: the whole gold solution after the prompt.

    Raises:
        ValueError when a case has not as many steps as its gold solution (its steps do not line up).
    """

    def ids_of(text: str) -> list[int]:
        return tokenizer(text, add_special_tokens=False)["input_ids"]

    contexts, suffixes = [], []
    for i, case in enumerate(cases):
        gold_ends = judge_steps(case.gold).ends
        if len(gold_ends) != len(case.step_ends):
            raise ValueError(
                f"case {i}: {len(case.step_ends)} steps against {len(gold_ends)} in its gold solution; "
                "the gold_suffix probe needs the same steps (a gold solution or a one-wrong-step copy)"
            )
        prefixes = ["", *(case.completion[:end] for end in case.step_ends)]
        contexts.append([case.ids["prompt"] + ids_of(prefix) for prefix in prefixes])
        suffixes.append([ids_of(text) for text in gold_suffix_texts(case.gold, gold_ends, len(gold_ends))])
    pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else 0
    return suffix_confidence(model, contexts, suffixes, pad, temperature=1.0, chunk_size=chunk_size)


@dataclass
class Probed:
    """One boundary kind over all cases: per case its cut tokens, cut characters, C_0..C_K and labels."""

    boundaries: list[list[int]]
    cut_chars: list[list[int]]
    confidence: torch.Tensor  # (N, K_max + 1), NaN padded
    log_confidence: torch.Tensor
    wrong: list[list[bool | None]]  # per case, per probed segment (those with a ΔC); None: no judged result
    last: list[list[bool]]  # per case, per probed segment: it ends the last step


def probe(model, tokenizer, cases: Sequence[Case], kind: str, chunk_size: int = 32) -> Probed:
    """Boundaries of ``kind`` for every case, C at each, and each segment's wrong/correct label."""
    decoded = [token_offsets(tokenizer, c.ids["completion"]) for c in cases]
    offsets = [spans for _, spans in decoded]
    batch = _probe_batch(tokenizer, cases, model.device)
    if kind in ("step_end", "gold_suffix"):
        ends = [[o[1] for o in off] for off in offsets]
        boundaries = [[ends_i.index(e) for e in c.step_ends] for c, ends_i in zip(cases, ends, strict=True)]
        if kind == "gold_suffix":
            result = gold_suffix_confidence(model, tokenizer, cases, chunk_size)
        else:
            result = packed_confidence(model, batch, boundaries, temperature=1.0, chunk_size=chunk_size)
    elif kind in ("entropy", "entropy_snapped"):

        def choose(entropies: torch.Tensor, row: int) -> list[int]:
            case = cases[row]
            snap = number_safe_cuts(case.completion, offsets[row]) if kind == "entropy_snapped" else None
            protect = answer_marker_token(*decoded[row], "<answer>")
            return select_boundaries(entropies.float().cpu(), protect_from=protect, snap_positions=snap)

        traj = cached_confidence(model, batch, choose, temperature=1.0, chunk_size=chunk_size)
        boundaries, result = traj.boundaries, traj.probes
    else:
        raise ValueError(f"unknown boundary kind {kind!r}; expected one of {BOUNDARY_KINDS}")
    cut_chars = [[off[b][1] for b in cuts] for cuts, off in zip(boundaries, offsets, strict=True)]
    wrong = [segment_labels(chars, case.steps) for case, chars in zip(cases, cut_chars, strict=True)]
    last = [
        [c >= case.step_ends[-1] - 1 for c in chars] for case, chars in zip(cases, cut_chars, strict=True)
    ]
    return Probed(boundaries, cut_chars, result.confidence, result.log_confidence, wrong, last)


def delta_forms(probed: Probed, cases: Sequence[Case], group_size: int) -> dict[str, list[list[float]]]:
    """Per case, ΔC of each probed segment in every form of :data:`DELTA_FORMS`."""
    counts = [len(b) for b in probed.boundaries]
    prob = confidence_progress(probed.confidence)
    log = confidence_progress(probed.log_confidence.exp(), log_form=True)
    forms = {
        "prob": [prob[i, :k].tolist() for i, k in enumerate(counts)],
        "log": [log[i, :k].tolist() for i, k in enumerate(counts)],
    }
    forms["gnorm_log"] = [list(v or []) for v in normalize_step_scores(forms["log"], group_size)]
    return forms


def summarize(
    probed: Probed,
    cases: Sequence[Case],
    group_size: int,
    alpha: float,
    outcome: dict[str, torch.Tensor],
    tokenizer,
) -> dict[str, Any]:
    """AUCs, means, C medians, boundary places, |α·ΔC| and the process share of |A_t| for one boundary kind."""
    flat_wrong = [w for row in probed.wrong for w in row]
    flat_last = [x for row in probed.last for x in row]
    labelled = [w for w in flat_wrong if w is not None]
    out: dict[str, Any] = {
        "segments": len(flat_wrong),
        "labelled_segments": len(labelled),
        "wrong_segments": sum(labelled),
    }
    for form, values in delta_forms(probed, cases, group_size).items():
        flat = [v for row in values for v in row]
        stats: dict[str, Any] = {}
        pairs = [(v, w) for v, w in zip(flat, flat_wrong, strict=True) if w is not None]
        if 0 < sum(w for _, w in pairs) < len(pairs):
            quality = signal_quality([v for v, _ in pairs], [w for _, w in pairs])
            stats.update(auc=quality.auc, mean_wrong=quality.mean_wrong, mean_correct=quality.mean_correct)
        mid = [(v, w) for v, w, x in zip(flat, flat_wrong, flat_last, strict=True) if not x]
        mid_pairs = [(v, w) for v, w in mid if w is not None]
        if 0 < sum(w for _, w in mid_pairs) < len(mid_pairs):
            stats["auc_intermediate"] = signal_quality(
                [v for v, _ in mid_pairs], [w for _, w in mid_pairs]
            ).auc
        used = [abs(alpha * v) for v, _ in mid] or [0.0]  # the segments a trainer gives ΔC (not the last)
        stats["mean_abs_alpha_delta"] = statistics.fmean(used)
        for name, advantages in outcome.items():
            stats[f"ratio_to_{name}_A"] = stats["mean_abs_alpha_delta"] / mean_abs_varied(
                advantages, group_size
            )
            stats[f"process_share_{name}"] = share_of_process(probed, values, cases, advantages, alpha)
        out[form] = stats
    gold = [i for i, c in enumerate(cases) if not any(c.wrong_steps)]
    c_mid = [
        float(probed.confidence[i, k + 1])
        for i in gold
        for k, is_last in enumerate(probed.last[i])
        if not is_last
    ]
    out["median_c0"] = statistics.median(float(probed.confidence[i, 0]) for i in gold)
    out["median_c_intermediate_gold"] = statistics.median(c_mid) if c_mid else float("nan")
    places = [
        p
        for case, cuts in zip(cases, probed.boundaries, strict=True)
        for p in boundary_places(
            case.completion, token_offsets(tokenizer, case.ids["completion"])[1], cuts, case.step_ends
        )
    ]
    out["places"] = place_shares(places)
    out["segments_per_completion"] = len(flat_wrong) / len(cases) + 1
    return out


def outcome_advantages(cases: Sequence[Case], group_size: int) -> dict[str, torch.Tensor]:
    """A_i of every case, ``scaled`` (TRL's group std) and ``unscaled`` (r_i − mean, the paper's), from
    correctness (2 / 0) + format rewards."""
    texts = [c.completion for c in cases]
    correctness = correctness_reward(texts, answer=[c.answer for c in cases])
    rewards = torch.tensor(
        [c + f for c, f in zip(correctness, format_reward(texts), strict=True)], dtype=torch.float64
    )
    return {
        name: group_advantages(rewards, group_size, scale)
        for name, scale in (("scaled", "group"), ("unscaled", "none"))
    }


def mean_abs_varied(advantages: torch.Tensor, group_size: int) -> float:
    """Mean |A_i| over the groups whose rewards differ."""
    grouped = advantages.view(-1, group_size)
    return grouped[grouped.abs().sum(1) > 0].abs().mean().item()


def share_of_process(
    probed: Probed,
    values: Sequence[Sequence[float]],
    cases: Sequence[Case],
    advantages: torch.Tensor,
    alpha: float,
) -> float:
    """:func:`psgrpo.diagnostics.measures.process_share` of A_t = A_i + α·ΔC_k, ΔC on every segment but the last step's."""
    lengths = [len(c.ids["completion"]) for c in cases]
    segment_index = segment_index_from_boundaries(probed.boundaries, lengths, max(lengths))
    width = max(len(b) for b in probed.boundaries) + 1
    per_segment = torch.zeros(len(cases), width, dtype=torch.float64)
    for i, (row, last) in enumerate(zip(values, probed.last, strict=True)):
        for k, (value, is_last) in enumerate(zip(row, last, strict=True)):
            per_segment[i, k] = 0.0 if is_last else alpha * value
    mask = segment_index >= 0
    process = torch.gather(per_segment, 1, segment_index.clamp(min=0)) * mask
    return process_share(advantages.unsqueeze(1) * mask + process, advantages, mask)


def measure(
    model,
    tokenizer,
    cases: Sequence[Case],
    group_size: int,
    alpha: float = 1.2,
    kinds: Sequence[str] = BOUNDARY_KINDS,
    chunk_size: int = 32,
) -> dict[str, Any]:
    """All figures for ``cases`` (groups of ``group_size`` consecutive cases; ``chunk_size`` rows per probe forward)."""
    _tokenize(tokenizer, cases)
    outcome = outcome_advantages(cases, group_size)
    report: dict[str, Any] = {
        "completions": len(cases),
        "groups": len(cases) // group_size,
        "wrong_steps": sum(sum(c.wrong_steps) for c in cases),
        "mean_abs_A_scaled": mean_abs_varied(outcome["scaled"], group_size),
        "mean_abs_A_unscaled": mean_abs_varied(outcome["unscaled"], group_size),
    }
    for kind in kinds:
        report[kind] = summarize(
            probe(model, tokenizer, cases, kind, chunk_size), cases, group_size, alpha, outcome, tokenizer
        )
    return report


def markdown(report: dict[str, Any]) -> str:
    """One table row per boundary kind × ΔC form."""
    lines = [
        "| boundaries | ΔC form | AUC (all) | AUC (intermediate) | mean ΔC wrong / correct | median C mid-gold "
        "| mean abs(α·ΔC) | / abs(A_i) scaled | / abs(A_i) unscaled | process share of abs(A_t), scaled / unscaled "
        "| inside number | step end | line end | elsewhere |",
        "|" + "---|" * 14,
    ]
    for kind in BOUNDARY_KINDS:
        if kind not in report:
            continue
        part = report[kind]
        for form in DELTA_FORMS:
            s = part[form]
            places = part["places"]
            lines.append(
                f"| {kind} | {form} | {s.get('auc', float('nan')):.3f} | {s.get('auc_intermediate', float('nan')):.3f} "
                f"| {s.get('mean_wrong', float('nan')):+.3g} / {s.get('mean_correct', float('nan')):+.3g} "
                f"| {part['median_c_intermediate_gold']:.2g} | {s['mean_abs_alpha_delta']:.3g} "
                f"| {s['ratio_to_scaled_A']:.3f} | {s['ratio_to_unscaled_A']:.3f} "
                f"| {s['process_share_scaled']:.3f} / {s['process_share_unscaled']:.3f} | "
                + " | ".join(
                    f"{places[p]:.2f}" for p in ("inside_number", "step_end", "line_end", "elsewhere")
                )
                + " |"
            )
    return "\n".join(lines)
