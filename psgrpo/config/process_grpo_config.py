"""``ProcessGRPOConfig``: TRL's ``GRPOConfig`` plus the credit-assignment fields.

Every TRL/transformers option (``learning_rate``, ``num_generations``, ``beta``, ``use_vllm`` …)
works unchanged. The CLI parses it with ``TaskConfig`` (:mod:`psgrpo.data.tasks`) and TRL's
``ModelConfig`` through TRL's parser, so a YAML file and command-line flags set the same fields::

    psgrpo train --config configs/demo.yaml --learning_rate 1e-4 --method grpo
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from trl import GRPOConfig

from psgrpo.config.checks import check_before_trl, check_config, named_batch_errors
from psgrpo.config.options import (
    Curriculum,
    KLSchedule,
    parameter_sections,
)
from psgrpo.config.precision import cpu_fell_back, resolve_bf16, resolve_use_cpu
from psgrpo.methods import all_methods, method_help, method_names
from psgrpo.ps.options import PsOptions
from psgrpo.tree.options import TreeOptions
from psgrpo.vps.options import VpsOptions


@dataclass
class ProcessGRPOConfig(PsOptions, VpsOptions, TreeOptions, GRPOConfig):
    """``trl.GRPOConfig`` plus the process-supervision fields of psgrpo.

    Every field of ``trl.GRPOConfig`` / ``transformers.TrainingArguments`` works unchanged. The
    parameter sections below (method, rewards, each method's options, training techniques) are
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
            "0.01; from a gold of 100 on, an answer off by one is 'close'). Set 0 to give credit to exact answers only."
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
            "arithmetic verifier can label steps, the AUC of the method's process signal for ranking wrong steps "
            "below correct ones and (vps) where boundaries fall. No extra forward pass."
        },
    )
    # ---- speed (psgrpo.timing, psgrpo.generation; docs/scaling.md) ----
    phase_times: bool = field(
        default=False,
        metadata={
            "help": "Log where each training step's time goes, as time/<phase>_s: generation, logprobs (reference "
            "and old policy), rewards, rollout_other, process_signal, advantages, loss_forward, backward, guards, "
            "optimizer, other, and time/step_s (psgrpo/timing.py). Default False (nothing is timed). Turn it on to "
            "find a slow phase; on a GPU it synchronizes at each phase edge, so steps get slightly slower."
        },
    )
    compiled_generation: bool = field(
        default=False,
        metadata={
            "help": "Decode rollouts with a static KV cache through a torch.compile'd forward (transformers' "
            "generate, which TRL builds with disable_compile=True; psgrpo/generation.py), for every method, "
            "tree's per-level generations included. Default False: TRL's dynamic cache. Turn it on on a GPU "
            "for long completions (H200, GSM8K recipe's shape: 16.0 → 3.8 ms per token; the first steps pay "
            "about 30 s of compiling). On a CPU only the cache changes. Not with use_vllm."
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
        user_bf16 = self.bf16
        self.bf16 = resolve_bf16(self.bf16, self.fp16, self.use_cpu)  # before TRL turns None into True
        # not a field: read by psgrpo.config.precision.log_precision once the trainer is built
        self.bf16_fell_back = cpu_fell_back(user_bf16, self.fp16, self.bf16, self.use_cpu)
        # on a CPU-only machine the CPU is the device anyway; transformers (bf16) and accelerate (several
        # processes) need to be told
        self.use_cpu = resolve_use_cpu(self.use_cpu, self.bf16, self.bf16_full_eval, self.deepspeed)
        adopt_activation_checkpointing(self)
        check_before_trl(self)  # what TRL's and transformers' __post_init__ would turn into a traceback
        with named_batch_errors(self):  # TRL names its derived generation_batch_size, not the options set
            super().__post_init__()
        check_config(self)


def adopt_activation_checkpointing(config: Any) -> None:
    """Copy TRL's ``gradient_checkpointing*`` values to their transformers-5 names where those are unset.

    transformers (from about 5.20) renames ``gradient_checkpointing`` to ``activation_checkpointing`` and
    warns (FutureWarning) for every config whose new name is unset and old name set. TRL's GRPOConfig
    sets the old name (``True``) by default, so every config warned although its user set nothing.
    transformers adopts the old value the same way; doing it first only spares the warning. A no-op where
    transformers has no ``activation_checkpointing`` field.
    """
    for old, new in (
        ("gradient_checkpointing", "activation_checkpointing"),
        ("gradient_checkpointing_kwargs", "activation_checkpointing_kwargs"),
    ):
        if hasattr(config, new) and getattr(config, new) is None and getattr(config, old) is not None:
            setattr(config, new, getattr(config, old))


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
    "Speed (docs/scaling.md)": ("phase_times", "compiled_generation"),
}
"""Docstring sections of :class:`ProcessGRPOConfig`: field names, or prefixes ending in ``_``."""


def config_sections() -> dict[str, tuple[str, ...]]:
    """:data:`CONFIG_SECTIONS` and the sections of methods registered from outside (``psgrpo.methods.config_class``)."""
    extra = {
        s.section: s.section_fields for s in all_methods() if s.section and s.section not in CONFIG_SECTIONS
    }
    return {**CONFIG_SECTIONS, **extra}


ProcessGRPOConfig.__doc__ = (ProcessGRPOConfig.__doc__ or "") + parameter_sections(
    ProcessGRPOConfig, CONFIG_SECTIONS
)
