"""Configuration: one dataclass for the trainer, one for the task (data + evaluation).

``ProcessGRPOConfig`` extends TRL's ``GRPOConfig``, so every TRL/transformers option
(``learning_rate``, ``num_generations``, ``beta``, ``use_vllm``, ``report_to`` …) works
unchanged; the fields below add the credit-assignment method. ``TaskConfig`` says which data
to train and evaluate on. The CLI parses both (plus TRL's ``ModelConfig``) with TRL's parser,
so a YAML file and command-line flags set the same fields::

    psgrpo train --config configs/demo.yaml --learning_rate 1e-4 --method grpo
"""

from __future__ import annotations

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

    def __post_init__(self) -> None:
        super().__post_init__()
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
