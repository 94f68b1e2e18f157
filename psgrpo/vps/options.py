"""The ``vps_*`` options of ``method='vps'`` (GRPO-VPS).

:class:`VpsOptions` is a dataclass base of :class:`~psgrpo.config.process_grpo_config.ProcessGRPOConfig`
(its fields are ordinary config fields: ``--vps_alpha 0.6`` on the command line, ``vps_alpha: 0.6`` in
YAML). The checks are :func:`psgrpo.vps.spec.check_vps_options`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from psgrpo.config.options import TruncatedMode, VpsBoundaries, VpsProbe, ZeroVarianceMode
from psgrpo.vps.boundaries import DEFAULT_ENTROPY_TOLERANCE


@dataclass
class VpsOptions:
    """Fields of ``method='vps'`` (docs/training.md)."""

    vps_boundaries: VpsBoundaries = field(
        default="entropy",
        metadata={
            "help": "Where segments end (method 'vps'): 'entropy' (adaptive: tokens whose policy entropy is in the "
            "top quantile, default) or 'markers' (the PS segmenter's steps, e.g. 'Step N:' labels opening lines).",
        },
    )
    vps_probe: VpsProbe = field(
        default="answer",
        metadata={
            "help": "What C_k measures (method 'vps'): 'answer' (the paper: p(gold answer | prompt, completion so far, "
            "vps_probe_open); default) or 'gold_suffix' (an extension, not GRPO-VPS: the per-token geometric mean of "
            "p(the gold worked solution's text after its k-th step | prompt, completion up to its k-th step), "
            "psgrpo/vps/gold_suffix.py). Use 'gold_suffix' when the answer probe is flat on your model (psgrpo "
            "diagnose: AUC 0.5); it needs vps_boundaries 'markers' and a vps_solution_column, and costs K + 1 "
            "forwards of prompt + completion + gold per completion."
        },
    )
    vps_solution_column: str = field(
        default="solution",
        metadata={
            "help": "Dataset column holding the gold worked solution, for vps_probe 'gold_suffix' (default "
            "'solution', as the arith and GSM8K loaders write it)."
        },
    )
    vps_max_segments: int = field(
        default=4,
        metadata={"help": "K: at most K segments, i.e. K-1 probes after C_0 (default 4, as in the paper)."},
    )
    vps_entropy_quantile: float = field(
        default=0.8,
        metadata={"help": "Cut candidates: entropy ≥ this quantile of the completion's (default 0.8)."},
    )
    vps_min_segment_tokens: int = field(
        default=4,
        metadata={"help": "Minimum tokens per segment (default 4); short completions get fewer segments."},
    )
    vps_entropy_tolerance: float = field(
        default=DEFAULT_ENTROPY_TOLERANCE,
        metadata={
            "help": "Cut candidates are ranked on a logarithmic entropy grid whose cells are this wide (relative; "
            "default 0.01: one per cent); entropies in one cell tie and the earlier token wins. It makes boundaries a "
            "function of the trajectory, not of float noise (batch shape, thread count, CPU kind). 0 ranks raw "
            "values."
        },
    )
    vps_snap_to_whitespace: bool = field(
        default=False,
        metadata={"help": "Move each cut back to the nearest whitespace/newline token (default False)."},
    )
    vps_boundary_jitter: int = field(
        default=0,
        metadata={"help": "Shift each cut by a random ±N tokens (boundary noise; default 0 = off)."},
    )
    vps_alpha: float = field(
        default=1.2,
        metadata={
            "help": "α in Ã_k = A_i + α·ΔC_k (default 1.2, the paper's setting; 0 = outcome GRPO, except that "
            "vps_truncated 'zero' and vps_zero_variance 'drop' still zero their rows). "
            "ΔC is a probability difference, unitless like A_i scaled by scale_rewards 'group' or 'batch'; "
            "scale_rewards 'none' is refused unless reward_norm_momentum is set (docs/compatibility.md)."
        },
    )
    vps_log_form: bool = field(
        default=False,
        metadata={"help": "Use ΔC_k = log C_k − log C_{k−1} (clipped to [−1, 1]) instead of probabilities."},
    )
    vps_zero_variance: ZeroVarianceMode = field(
        default="keep",
        metadata={
            "help": "Groups whose outcome rewards are all equal (A_i = 0): 'keep' (learn from α·ΔC alone, default) "
            "or 'drop' (no update from them).",
        },
    )
    vps_truncated: TruncatedMode = field(
        default="outcome",
        metadata={
            "help": "Completions cut at max_completion_length: 'outcome' (A_i only, no ΔC; default), 'keep' "
            "(ΔC like any other) or 'zero' (no update).",
        },
    )
    vps_probe_open: str = field(
        default="</reasoning>\n<answer>",
        metadata={
            "help": "Probe text before the gold answer (default '</reasoning>\\n<answer>'); not scored."
        },
    )
    vps_probe_close: str = field(
        default="</answer>",
        metadata={"help": "Probe text after the gold answer (default '</answer>'); scored."},
    )
    vps_answer_column: str = field(
        default="answer", metadata={"help": "Dataset column holding the gold answer (default 'answer')."}
    )
    vps_answer_marker: str = field(
        default="<answer>",
        metadata={
            "help": "Never cut at or after the model's own first occurrence of this text (default '<answer>')."
        },
    )
    vps_probe_chunk_size: int | None = field(
        default=16,
        metadata={
            "help": "Rows per packed probe forward (default 16: rows of similar length are packed together, which "
            "cuts padding). None = all rows."
        },
    )
