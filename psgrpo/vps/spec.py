"""``method='vps'``: GRPO-VPS (arXiv 2604.20659), the policy's own probability of the gold answer, probed
at segment boundaries.

Everything the package needs to know about ``vps`` is registered here: its option checks, how its
signal is built (:class:`psgrpo.vps.signal.VpsSignal`), when it gives token credit, how ``psgrpo
inspect`` colours it and what ``--diagnostics`` measures. The estimator is
:func:`psgrpo.advantages.vps_token_advantages`; its options are the ``vps_*`` fields of the config.
"""

from __future__ import annotations

from typing import Any

from psgrpo.config.options import (
    TruncatedMode,
    VpsBoundaries,
    VpsProbe,
    ZeroVarianceMode,
    check_choice,
    check_number,
)
from psgrpo.methods import InspectView, MethodSpec, register_method
from psgrpo.vps.options import VpsOptions


def check_vps_options(config: Any) -> None:
    """Refuse bad ``vps_*`` values and combinations, whatever the method (before anything loads)."""
    check_choice("vps_boundaries", config.vps_boundaries, VpsBoundaries)
    check_choice("vps_probe", config.vps_probe, VpsProbe)
    if config.vps_probe == "gold_suffix" and config.vps_boundaries != "markers":
        raise ValueError(
            "vps_probe='gold_suffix' compares the completion's k-th step with the gold solution's k-th step, "
            f"so it needs step boundaries: set vps_boundaries='markers' (got {config.vps_boundaries!r})"
        )
    check_choice("vps_zero_variance", config.vps_zero_variance, ZeroVarianceMode)
    check_choice("vps_truncated", config.vps_truncated, TruncatedMode)
    check_number("vps_alpha", config.vps_alpha, low=0.0)
    check_number("vps_max_segments", config.vps_max_segments, low=1)
    check_number("vps_min_segment_tokens", config.vps_min_segment_tokens, low=1)
    check_number("vps_entropy_quantile", config.vps_entropy_quantile, low=0.0, high=1.0)
    check_number("vps_entropy_tolerance", config.vps_entropy_tolerance, low=0.0, high=1.0, high_open=True)
    check_number("vps_boundary_jitter", config.vps_boundary_jitter, low=0)
    check_number("vps_probe_chunk_size", config.vps_probe_chunk_size, low=1, allow_none=True)


def build_signal(trainer: Any, step_scorer: Any) -> Any:
    """The ``vps`` signal of ``trainer`` (the PS segmenter for ``vps_boundaries='markers'``); the gold
    solution column is checked against the training dataset first."""
    from psgrpo.ps.segmentation import get_segmenter
    from psgrpo.vps.signal import VpsSignal

    args = trainer.args
    columns = getattr(trainer.train_dataset, "column_names", None)
    answer_probe = args.vps_probe != "gold_suffix"  # the gold-suffix probe reads the solution column instead
    if answer_probe and columns is not None and args.vps_answer_column not in columns:  # else fails at step 0
        raise ValueError(
            f"vps_answer_column={args.vps_answer_column!r}: the training dataset has no such column (it has: "
            f"{', '.join(columns)}); VPS probes the probability of each row's gold answer: name its column"
        )
    if (
        answer_probe and columns is not None
    ):  # a None or empty gold would probe nothing (row of the batch, later)
        from psgrpo.data.validation import validate_gold_answers

        validate_gold_answers(trainer.train_dataset, args.vps_answer_column, "train_dataset", numeric=False)
    if args.vps_probe == "gold_suffix" and columns is not None and args.vps_solution_column not in columns:
        raise ValueError(
            f"vps_probe='gold_suffix' probes the gold worked solution, but the training dataset has no "
            f"column {args.vps_solution_column!r} (it has: {', '.join(columns)}); set vps_solution_column"
        )
    markers = args.vps_boundaries == "markers"
    segmenter = get_segmenter(args.segmenter, **args.segmenter_kwargs) if markers else None
    return VpsSignal(
        args,
        trainer._tokenizer,
        trainer.accelerator,
        trainer.eos_token_ids,
        trainer.temperature,
        segmenter,
        lambda: trainer.step_record.rewards_per_func,  # this batch's record (psgrpo.credit.StepRecord)
    )


def labelled_segments(decoded: Any, credit: Any, config: Any) -> tuple[list[tuple[float, bool]], list[str]]:
    """``(ΔC_k, segment is wrong)`` where the arithmetic verifier can judge, and where each cut falls."""
    from psgrpo.advantages import confidence_progress
    from psgrpo.diagnostics.step_logger import vps_segments

    delta = confidence_progress(credit.confidence.float().cpu(), log_form=config.vps_log_form)
    pairs: list[tuple[float, bool]] = []
    places: list[str] = []
    for (text, offsets), cuts, row in zip(decoded, credit.boundaries, delta, strict=True):
        row_pairs, row_places = vps_segments(text, offsets, cuts, row[: len(cuts)].tolist())
        pairs += row_pairs
        places += row_places
    return pairs, places


def show_confidence(view: Any, credit: Any, i: int, token_adv: Any, offsets: Any, config: Any) -> None:
    """``psgrpo inspect``: segments between boundaries, coloured by ΔC_k, with C_k at each boundary."""
    from psgrpo.advantages import confidence_progress
    from psgrpo.credit_views import SegmentView
    from psgrpo.vps.boundaries import spans_from_boundaries

    boundaries = credit.boundaries[i]
    confidence = credit.confidence[i].float().cpu()
    delta = confidence_progress(confidence.unsqueeze(0), config.vps_log_form)[0].tolist()  # as the estimator
    c = confidence.tolist()
    view.probe0 = c[0]
    view.segments = []
    for j, (a, b) in enumerate(spans_from_boundaries(boundaries, len(offsets))):
        probed = j < len(boundaries)
        details = (
            {f"C_{j}": c[j], f"C_{j + 1}": c[j + 1], "α·ΔC": config.vps_alpha * delta[j]} if probed else {}
        )
        view.segments.append(
            SegmentView(
                text=view.text[offsets[a][0] : offsets[b - 1][1]],
                tokens=(a, b),
                signal=delta[j] if probed else None,
                probe=c[j + 1] if probed else None,
                details=details | {"A_t on this segment": float(token_adv[a])},
            )
        )
    if bool(credit.truncated[i]) and config.vps_truncated != "keep":
        effect = "gets A_i only" if config.vps_truncated == "outcome" else "gets no update"
        view.notes.append(
            f"truncated (no EOS): ΔC not applied, it {effect} (vps_truncated={config.vps_truncated})"
        )


SPEC = register_method(
    MethodSpec(
        name="vps",
        scores_steps=False,
        probes_past_completion=True,
        summary="GRPO-VPS: the policy's own probability of the gold answer, probed between segments",
        estimator="vps",
        options=VpsOptions,
        section="GRPO-VPS (method='vps')",
        section_fields=("vps_",),
        check=check_vps_options,
        signal=build_signal,
        token_credit=lambda config: config.vps_alpha != 0,
        process_weight=lambda config: f"vps_alpha={config.vps_alpha}",
        inspect=InspectView(
            legend="GRPO-VPS: C_k is the policy's probability of the gold answer when the completion is cut right "
            "after boundary b_k (C_0: right after the prompt). Segment k (tokens after b_{k−1} up to b_k) is "
            "coloured by ΔC_k = C_k − C_{k−1}; its tokens get A_i + α·ΔC_k. The segment after the last boundary "
            "(grey text, no colour) gets A_i alone.",
            signal_label=lambda config: "Δlog C_k" if config.vps_log_form else "ΔC_k",
            unit="segment",
            options=(
                "vps_boundaries",
                "vps_max_segments",
                "vps_alpha",
                "vps_log_form",
                "vps_truncated",
                "vps_zero_variance",
            ),
            fill=show_confidence,
            probe_note=True,
        ),
        diagnostics=labelled_segments,
        colour="C2",
    )
)
