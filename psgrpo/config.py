"""Configuration: one dataclass for the trainer, one for the task (data + evaluation).

``ProcessGRPOConfig`` extends TRL's ``GRPOConfig``, so every TRL/transformers option
(``learning_rate``, ``num_generations``, ``beta``, ``use_vllm``, ``report_to`` …) works
unchanged; the fields below add the credit-assignment method. ``TaskConfig`` says which data
to train and evaluate on. The CLI parses both (plus TRL's ``ModelConfig``) with TRL's parser,
so a YAML file and command-line flags set the same fields::

    psgrpo train --config configs/demo.yaml --learning_rate 1e-4 --method grpo
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from trl import GRPOConfig

from psgrpo.techniques.options import check_technique_options

METHODS = ("grpo", "ps", "vps")


def json_object_option(name: str, value: dict | str | None) -> dict:
    """A dict option given as a dict (YAML), a JSON object string (CLI) or ``None`` (→ ``{}``).

    Raises:
        ValueError: naming the option, when the value is not a JSON object.
    """
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except json.JSONDecodeError as err:
            raise ValueError(f"{name} must be a JSON object, got {value!r}: {err}") from None
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise ValueError(f"{name} must be a JSON object, got {value!r}")
    return value


@dataclass
class ProcessGRPOConfig(GRPOConfig):
    """``trl.GRPOConfig`` plus the process-supervision fields of psgrpo."""

    method: str = field(
        default="grpo",
        metadata={
            "help": "Credit assignment: 'grpo' (outcome, identical to TRL's GRPOTrainer), 'ps' (PS-GRPO, step "
            "scores from a verifier or PRM) or 'vps' (GRPO-VPS, policy confidence in the gold answer at segment "
            "boundaries). Default 'grpo'.",
            "choices": list(METHODS),
        },
    )
    advantage_estimator: str | None = field(
        default=None,
        metadata={
            "help": "Name of the token-advantage estimator in psgrpo.advantages.ADVANTAGE_ESTIMATORS. Default "
            "None: the method's own ('grpo' → 'outcome'). Set it only to try a custom registered estimator."
        },
    )
    reward_funcs: list[str] = field(
        default_factory=lambda: ["correctness", "format"],
        metadata={
            "help": "Names of built-in reward functions (psgrpo.rewards.REWARD_FUNCS): 'correctness', 'format', "
            "'strict_format'. Default: correctness + format. Weights come from TRL's `reward_weights`. Ignored "
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
            "'newline', 'paragraph' or 'single'. Change it when your prompt asks for another step format."
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
            "help": "Step scorer (method 'ps'): 'arithmetic' (rule-based verifier: equation correctness and "
            "necessity, no extra model) or 'prm' (a Hugging Face process reward model; give its path in "
            "step_scorer_kwargs). A Python callable can be passed to the trainer as `step_scorer=` instead."
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
    ps_advantage_mode: str = field(
        default="reward_to_go",
        metadata={
            "help": "Token advantage from normalised step scores: 'reward_to_go' (sum over the current and later "
            "steps, DeepSeekMath; default), 'step' (each token gets its own step's score) or 'min' (soft minimum "
            "over the current and later steps, PURE-style).",
            "choices": ["reward_to_go", "step", "min"],
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
        default=1.0, metadata={"help": "λ, weight of the process advantage (default 1.0)."}
    )
    ps_min_temperature: float = field(
        default=0.1,
        metadata={
            "help": "Temperature of the soft minimum in 'min' mode (default 0.1; smaller → closer to min)."
        },
    )
    ps_on_scorer_error: str = field(
        default="raise",
        metadata={
            "help": "When the step scorer fails on a completion (raises, wrong number of scores, NaN): 'raise' "
            "(default, error names the scorer and sample) or 'outcome' (that completion falls back to the outcome "
            "advantage; counted in the metric ps/scorer_fallbacks).",
            "choices": ["raise", "outcome"],
        },
    )
    ps_wrong_step_threshold: float = field(
        default=0.5,
        metadata={
            "help": "A step whose raw score is below this counts as wrong in the logged metrics (default 0.5)."
        },
    )

    # ---- GRPO-VPS (method="vps") ------------------------------------------------------------
    vps_boundaries: str = field(
        default="entropy",
        metadata={
            "help": "Where segments end (method 'vps'): 'entropy' (adaptive: tokens whose policy entropy is in the "
            "top quantile, default) or 'markers' (the PS segmenter's steps, e.g. 'Step N:').",
            "choices": ["entropy", "markers"],
        },
    )
    vps_max_segments: int = field(
        default=4,
        metadata={"help": "K: at most K segments, i.e. K-1 probes after C_0 (default 4, the paper's best)."},
    )
    vps_entropy_quantile: float = field(
        default=0.8,
        metadata={"help": "Cut candidates: entropy ≥ this quantile of the completion's (default 0.8)."},
    )
    vps_min_segment_tokens: int = field(
        default=4,
        metadata={"help": "Minimum tokens per segment (default 4); short completions get fewer segments."},
    )
    vps_snap_to_whitespace: bool = field(
        default=False,
        metadata={"help": "Move each cut back to the nearest whitespace/newline token (default False)."},
    )
    vps_boundary_jitter: int = field(
        default=0,
        metadata={
            "help": "Shift each cut by a random ±N tokens (the seed's boundary noise; default 0 = off)."
        },
    )
    vps_alpha: float = field(
        default=1.2,
        metadata={
            "help": "α in Ã_k = A_i + α·ΔC_k (default 1.2; the paper's sweep peaked at 1.2, 0 = outcome GRPO)."
        },
    )
    vps_log_form: bool = field(
        default=False,
        metadata={"help": "Use ΔC_k = log C_k − log C_{k−1} (clipped to [−1, 1]) instead of probabilities."},
    )
    vps_zero_variance: str = field(
        default="keep",
        metadata={
            "help": "Groups whose outcome rewards are all equal (A_i = 0): 'keep' (learn from α·ΔC alone, default) "
            "or 'drop' (no update from them).",
            "choices": ["keep", "drop"],
        },
    )
    vps_truncated: str = field(
        default="outcome",
        metadata={
            "help": "Completions cut at max_completion_length: 'outcome' (A_i only, no ΔC; default), 'keep' "
            "(ΔC like any other) or 'zero' (no update).",
            "choices": ["outcome", "keep", "zero"],
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
            "cuts padding; 5.3x faster than one forward per boundary at K=8 on the tiny model). None = all rows."
        },
    )

    # ---- Training techniques (docs/techniques.md); all off by default ------------------------
    kl_schedule: str = field(
        default="none",
        metadata={
            "help": "Decay the KL coefficient during training: 'none' (constant `beta`, default), 'linear' "
            "(β_t = max(beta_min, beta·(1 − step/max_steps))) or 'cosine' (β_t = max(beta_min, "
            "beta·½(1 + cos(π·step/max_steps)))). Needs beta > 0. Use it to keep the policy near the reference "
            "early and let it move later; logged as `beta`.",
            "choices": ["none", "linear", "cosine"],
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
    curriculum: str = field(
        default="none",
        metadata={
            "help": "Sample training prompts easy → hard: 'none' (uniform, default) or 'linear' (the easiest "
            "curriculum_start_fraction of the rows at step 0, growing linearly to all rows at curriculum_steps). "
            "Difficulty comes from curriculum_difficulty_column.",
            "choices": ["none", "linear"],
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
            "lr_scheduler_type runs without warm-up (e.g. 1e-6 then learning_rate 5e-6, as the seed recipe). "
            "Default None: transformers' usual warm-up (a ramp from 0)."
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
        super().__post_init__()
        check_technique_options(self)
        for name in ("segmenter_kwargs", "step_scorer_kwargs"):
            setattr(self, name, json_object_option(name, getattr(self, name)))
        if self.ps_advantage_mode not in ("reward_to_go", "step", "min"):
            raise ValueError(
                f"ps_advantage_mode must be reward_to_go, step or min, got {self.ps_advantage_mode!r}"
            )
        if self.vps_max_segments < 1 or self.vps_min_segment_tokens < 1:
            raise ValueError("vps_max_segments and vps_min_segment_tokens must be at least 1")
        if self.ps_on_scorer_error not in ("raise", "outcome"):
            raise ValueError(
                f"ps_on_scorer_error must be 'raise' or 'outcome', got {self.ps_on_scorer_error!r}"
            )
        if self.method not in METHODS:
            raise ValueError(f"method must be one of {METHODS}, got {self.method!r}")
        if isinstance(self.reward_funcs, str):  # YAML/CLI may give "correctness,format"
            self.reward_funcs = [name.strip() for name in self.reward_funcs.split(",") if name.strip()]


@dataclass
class TaskConfig:
    """What to train and evaluate on, and the before/after report of ``psgrpo train``."""

    dataset: str = field(
        default="arith",
        metadata={
            "help": "'arith' (embedded synthetic task, default), 'gsm8k' (hub id openai/gsm8k), or a local GSM8K-style "
            "JSONL file / directory of {split}.jsonl with 'question' and 'answer' (gold after '####')."
        },
    )
    train_split: str = field(default="train", metadata={"help": "Split to train on (default 'train')."})
    eval_split: str = field(
        default="test", metadata={"help": "Held-out split for the before/after evaluation (default 'test')."}
    )
    prompt_template: str | None = field(
        default=None,
        metadata={
            "help": "Prompt template: 'seed', 'compact' or a pattern with {question}. Default: 'compact' for arith "
            "(character-level model), 'seed' otherwise."
        },
    )
    chat: bool = field(
        default=False,
        metadata={
            "help": "Format prompts as chat messages (use with instruct models, e.g. Qwen2.5-Instruct)."
        },
    )
    system_prompt: str | None = field(default=None, metadata={"help": "Optional system message (chat only)."})
    max_train_examples: int | None = field(
        default=None, metadata={"help": "Use only the first N training rows (default: all)."}
    )
    max_eval_examples: int | None = field(
        default=200, metadata={"help": "Evaluate on the first N held-out rows (default 200; None = all)."}
    )
    eval_before_after: bool = field(
        default=True,
        metadata={
            "help": "Evaluate held-out accuracy before and after training and print both (default True)."
        },
    )
    eval_batch_size: int = field(
        default=64, metadata={"help": "Generation batch size for evaluation (default 64)."}
    )
    eval_max_new_tokens: int | None = field(
        default=None,
        metadata={"help": "Max new tokens when evaluating. Default: the trainer's max_completion_length."},
    )
    heldout_eval_steps: int = field(
        default=0,
        metadata={
            "help": "Every N optimizer steps, also evaluate greedy accuracy on the held-out split (same rows and "
            "settings as the before/after report) and log it as heldout/* to TensorBoard and metrics.jsonl "
            "(psgrpo.heldout_eval). Default 0 = off. Set it to draw learning curves; each evaluation costs one "
            "pass of generation over max_eval_examples rows. `psgrpo compare` sets it from --eval_every."
        },
    )
    heldout_eval_on_start: bool = field(
        default=True,
        metadata={
            "help": "With heldout_eval_steps > 0: also evaluate at step 0, before the first update (default True), "
            "so curves start at the initial policy. The last step is always evaluated."
        },
    )
