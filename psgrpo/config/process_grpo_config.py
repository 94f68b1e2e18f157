"""``ProcessGRPOConfig``: TRL's ``GRPOConfig`` plus the credit-assignment fields.

Every TRL/transformers option (``learning_rate``, ``num_generations``, ``beta``, ``use_vllm`` …)
works unchanged. The CLI parses it with ``TaskConfig`` (:mod:`psgrpo.data.tasks`) and TRL's
``ModelConfig`` through TRL's parser, so a YAML file and command-line flags set the same fields::

    psgrpo train --config configs/demo.yaml --learning_rate 1e-4 --method grpo
"""

from __future__ import annotations

from dataclasses import dataclass, field

from trl import GRPOConfig

from psgrpo.config.checks import check_config, named_batch_errors
from psgrpo.config.options import (
    Curriculum,
    KLSchedule,
    PsAdvantageMode,
    ScorerErrorPolicy,
    TruncatedMode,
    VpsBoundaries,
    VpsProbe,
    ZeroVarianceMode,
    parameter_sections,
)
from psgrpo.config.precision import resolve_bf16, resolve_use_cpu
from psgrpo.methods import all_methods, method_help, method_names
from psgrpo.ps.scorers import STEP_SCORERS
from psgrpo.ps.segmentation import SEGMENTERS
from psgrpo.tree.options import TreeOptions
from psgrpo.vps.boundaries import DEFAULT_ENTROPY_TOLERANCE


@dataclass
class ProcessGRPOConfig(TreeOptions, GRPOConfig):
    """``trl.GRPOConfig`` plus the process-supervision fields of psgrpo.

    Every field of ``trl.GRPOConfig`` / ``transformers.TrainingArguments`` works unchanged. The
    parameter sections below (method, rewards, PS-GRPO, GRPO-VPS, training techniques) are
    generated from the fields' help texts, which are also what ``psgrpo train --help`` prints, so
    the two cannot drift. Every value is checked in ``__post_init__``, wherever it came from
    (CLI flag, YAML, Python): allowed values (:mod:`psgrpo.config.options`), finite numbers, ranges,
    registered names and the segmenter / step scorer keyword arguments.
    """

    bf16: bool | None = field(
        default=None,
        metadata={
            "help": "bf16 mixed precision (autocast). Default None = decided by the hardware: on a CUDA GPU, bf16 "
            "when it supports it; on CPU, bf16 only when the CPU has native bf16 (x86 avx512_bf16/amx_bf16, ARM "
            "bf16), else fp32 (emulated bf16 is several times slower), logged once. "
            "--bf16 true / false forces it (psgrpo.config.precision)."
        },
    )
    method: str = field(  # every registered method (psgrpo/methods.py)
        default="grpo", metadata={"help": method_help(), "choices": method_names()}
    )
    advantage_estimator: str | None = field(
        default=None,
        metadata={
            "help": "Name of the token-advantage estimator in psgrpo.advantages.ADVANTAGE_ESTIMATORS. Default "
            "None: the method's own, of the same name ('grpo', 'ps', 'vps', 'tree'). Set it only to try a custom registered estimator."
        },
    )
    reward_funcs: list[str] = field(
        default_factory=lambda: ["correctness", "format"],
        metadata={
            "help": "Names of built-in reward functions (psgrpo.rewards.functions.REWARD_FUNCS): 'correctness', 'format', "
            "'strict_format', or import paths of your own, as in `trl grpo` (my_rewards.accuracy: the function "
            "accuracy of my_rewards.py in the current directory). Default: correctness + format. Weights come from TRL's `reward_weights`. Ignored "
            "when reward functions are passed to the trainer directly."
        },
    )
    correctness_exact: float = field(
        default=2.0, metadata={"help": "Correctness reward for an exactly right answer (default 2.0)."}
    )
    correctness_close: float = field(
        default=1.5,
        metadata={"help": "Correctness reward for a numerically close answer (default 1.5; 0 disables)."},
    )
    correctness_rel_tol: float = field(
        default=1e-2,
        metadata={
            "help": "Relative tolerance for 'numerically close' answers: |pred-gold| <= tol*max(1,|gold|) (default "
            "0.01). Set 0 to give credit to exact answers only."
        },
    )

    # ---- PS-GRPO (method="ps") --------------------------------------------------------------
    segmenter: str = field(
        default="markers",
        metadata={
            "help": "How completions split into steps (method 'ps'): 'markers' (a regex, default 'Step N:'), "
            "'newline', 'paragraph' or 'single'. Change it when your prompt asks for another step format.",
            "choices": sorted(SEGMENTERS),  # the built-ins; Python users may register more
        },
    )
    segmenter_kwargs: dict | str | None = field(
        default=None,
        metadata={
            "help": "Keyword arguments of the segmenter, a dict (YAML) or JSON string (CLI), e.g. "
            '{"pattern": "(?m)^[0-9]+[.]"} to split on numbered lines. Default: none.'
        },
    )
    step_scorer: str = field(
        default="arithmetic",
        metadata={
            "help": "Step scorer (method 'ps'): 'arithmetic' (default; verifier: equation correctness and necessity), "
            "'reference' (the verifier + the gold solution's intermediate values, so it also sees logic errors; needs a "
            "'solution' column) or 'prm' (a process reward model, path in step_scorer_kwargs). Or a callable `step_scorer=`.",
            "choices": list(STEP_SCORERS),
        },
    )
    step_scorer_kwargs: dict | str | None = field(
        default=None,
        metadata={
            "help": "Keyword arguments of the step scorer as a dict or JSON, e.g. "
            '\'{"correct_weight": 0.6, "necessary_weight": 0.4}\' or \'{"model": "path/to/prm", "style": '
            '"token_classification"}\'.'
        },
    )
    ps_advantage_mode: PsAdvantageMode = field(
        default="auto",
        metadata={
            "help": "Token advantage from normalised step scores: 'auto' (default: 'step' for the arithmetic "
            "verifier, 'min' for a PRM or your own scorer; the modes no gamed solution beats the honest one with, "
            "docs/robustness.md), 'step' (each token gets its own step's score), 'min' (soft minimum over the "
            "current and later steps), 'pure_min' (PURE's min-form: softmax(-r/T) weights over the trajectory, "
            "then the sum over later steps) or 'reward_to_go' (sum over the current and later steps, DeepSeekMath; "
            "padding and splitting steps pay).",
        },
    )
    ps_outcome_weight: float = field(
        default=1.0,
        metadata={
            "help": "Weight of the outcome advantage A_i in A_t = w·A_i + λ·A_proc_t (default 1.0; 0 gives pure "
            "process supervision as in DeepSeekMath)."
        },
    )
    ps_lambda: float = field(
        default=1.0,
        metadata={
            "help": "λ, weight of the process advantage (default 1.0). Step scores are centred per group and "
            "divided by the step-score std of the group or, when TRL divides A_i by a batch std (scale_rewards "
            "'batch', normalize_then_sum), of the batch, so λ weighs two unitless terms; scale_rewards 'none' "
            "is refused unless reward_norm_momentum is set (docs/compatibility.md)."
        },
    )
    ps_min_temperature: float = field(
        default=0.1,
        metadata={
            "help": "Temperature of the soft minimum in 'min' and 'pure_min' modes, in units of the normalised "
            "step scores (default 0.1; smaller → closer to min)."
        },
    )
    ps_on_scorer_error: ScorerErrorPolicy = field(
        default="raise",
        metadata={
            "help": "When the step scorer fails on a completion (raises, wrong number of scores, NaN): 'raise' "
            "(default, error names the scorer and sample) or 'outcome' (that completion falls back to the outcome "
            "advantage; counted in the metric ps/scorer_fallbacks).",
        },
    )
    ps_wrong_step_threshold: float = field(
        default=0.5,
        metadata={
            "help": "A step whose raw score is below this counts as wrong in the logged metrics (default 0.5)."
        },
    )

    # ---- GRPO-VPS (method="vps") ------------------------------------------------------------
    vps_boundaries: VpsBoundaries = field(
        default="entropy",
        metadata={
            "help": "Where segments end (method 'vps'): 'entropy' (adaptive: tokens whose policy entropy is in the "
            "top quantile, default) or 'markers' (the PS segmenter's steps, e.g. 'Step N:').",
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
            "help": "α in Ã_k = A_i + α·ΔC_k (default 1.2, the paper's setting; 0 = outcome GRPO). "
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

    # ---- Training techniques (docs/techniques.md); all off by default ------------------------
    kl_schedule: KLSchedule = field(
        default="none",
        metadata={
            "help": "Decay the KL coefficient during training: 'none' (constant `beta`, default), 'linear' "
            "(β_t = max(beta_min, beta·(1 − step/max_steps))) or 'cosine' (β_t = max(beta_min, "
            "beta·½(1 + cos(π·step/max_steps)))). Needs beta > 0. Use it to keep the policy near the reference "
            "early and let it move later; logged as `beta`.",
        },
    )
    beta_min: float = field(
        default=0.0, metadata={"help": "Floor of the scheduled β (default 0.0); only with kl_schedule."}
    )
    reward_norm_momentum: float | None = field(
        default=None,
        metadata={
            "help": "Running reward normalisation: momentum m of the exponential moving mean/std of the summed "
            "reward (e.g. 0.99); rewards become (r − μ)/σ before the group advantages. Default None (off). It "
            "only changes the advantages with scale_rewards='none' (group/batch scaling divides σ out again)."
        },
    )
    curriculum: Curriculum = field(
        default="none",
        metadata={
            "help": "Sample training prompts easy → hard: 'none' (uniform, default) or 'linear' (the easiest "
            "curriculum_start_fraction of the rows at step 0, growing linearly to all rows at curriculum_steps). "
            "Difficulty comes from curriculum_difficulty_column.",
        },
    )
    curriculum_start_fraction: float = field(
        default=0.3,
        metadata={"help": "Share of the dataset (the easiest rows) sampled at step 0 (default 0.3)."},
    )
    curriculum_steps: int | None = field(
        default=None,
        metadata={"help": "Optimizer steps until the whole dataset is sampled (default None: max_steps)."},
    )
    curriculum_difficulty_column: str = field(
        default="difficulty",
        metadata={
            "help": "Numeric dataset column, higher = harder (default 'difficulty': the arith and GSM8K loaders "
            "add it as steps / gold solution lines)."
        },
    )
    memory_bank: bool = field(
        default=False,
        metadata={
            "help": "Memory bank of good trajectories (default False): remember each prompt's best correct "
            "completion (exact answer, highest reward, then shortest) and replay it, with its behaviour "
            "log-probs as old log-probs, into groups whose completions are all wrong. Needs an 'answer' column."
        },
    )
    memory_bank_size: int = field(
        default=10000,
        metadata={"help": "Most prompts the memory bank keeps (least recently used evicted; default 10000)."},
    )
    warmup_lr: float | None = field(
        default=None,
        metadata={
            "help": "Flat warm-up: learning rate for the first warmup_steps optimizer steps, after which "
            "lr_scheduler_type runs without warm-up (e.g. 1e-6 then learning_rate 5e-6, as the GSM8K recipe). "
            "Default None: transformers' usual warm-up (a ramp from 0)."
        },
    )
    # ---- diagnostics (psgrpo.diagnostics.step_logger) ----
    diagnostics: bool = field(
        default=False,
        metadata={
            "help": "Log signal-quality metrics every step as diag/* (default False; docs/learning.md): the share "
            "of groups whose correctness is all equal, which reward A_i comes from, unneeded steps, and where the "
            "arithmetic verifier can label steps, the AUC of the ps/vps process signal for ranking wrong steps "
            "below correct ones and (vps) where boundaries fall. No extra forward pass."
        },
    )
    # ---- checkpoints (psgrpo.checkpoints): only the help changes; the trainer resolves the value ----
    resume_from_checkpoint: str | None = field(
        default=None,
        metadata={
            "help": "Resume training: 'true' = the newest complete checkpoint-N in output_dir (incomplete "
            "ones, left by a run killed while saving, are skipped with a warning), or a checkpoint directory, "
            "which must be complete. The run then continues exactly as it would have without the break."
        },
    )

    def __post_init__(self) -> None:
        self.bf16 = resolve_bf16(self.bf16, self.fp16, self.use_cpu)  # before TRL turns None into True
        # before transformers refuses bf16 without a GPU: on a CPU-only machine the CPU is the device anyway
        self.use_cpu = resolve_use_cpu(self.use_cpu, self.bf16, self.bf16_full_eval)
        with named_batch_errors(self):  # TRL names its derived generation_batch_size, not the options set
            super().__post_init__()
        check_config(self)


CONFIG_SECTIONS: dict[str, tuple[str, ...]] = {
    "Method and precision": ("method", "advantage_estimator", "bf16"),
    "Rewards": ("reward_funcs", "correctness_exact", "correctness_close", "correctness_rel_tol"),
    **{spec.section: spec.section_fields for spec in all_methods() if spec.section},
    "Training techniques (docs/techniques.md; all off by default)": (
        "kl_schedule",
        "beta_min",
        "reward_norm_",
        "curriculum",
        "curriculum_",
        "memory_bank",
        "memory_bank_",
        "warmup_lr",
    ),
    "Diagnostics": ("diagnostics",),
}
"""Docstring sections of :class:`ProcessGRPOConfig`: field names, or prefixes ending in ``_``."""


ProcessGRPOConfig.__doc__ = (ProcessGRPOConfig.__doc__ or "") + parameter_sections(
    ProcessGRPOConfig, CONFIG_SECTIONS
)
