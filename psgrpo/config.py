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

METHODS = ("grpo", "ps", "vps")


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

    def __post_init__(self) -> None:
        super().__post_init__()
        for name in ("segmenter_kwargs", "step_scorer_kwargs"):
            value = getattr(self, name)
            if isinstance(value, str):
                try:
                    setattr(self, name, json.loads(value))
                except json.JSONDecodeError as err:
                    raise ValueError(f"{name} must be a JSON object, got {value!r}: {err}") from None
            if getattr(self, name) is None:
                setattr(self, name, {})
        if self.ps_advantage_mode not in ("reward_to_go", "step", "min"):
            raise ValueError(
                f"ps_advantage_mode must be reward_to_go, step or min, got {self.ps_advantage_mode!r}"
            )
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
