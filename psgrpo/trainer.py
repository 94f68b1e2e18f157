"""``ProcessGRPOTrainer``: TRL's ``GRPOTrainer`` with pluggable, token-level credit assignment.

The subclass is thin glue. One training step reads top to bottom in
:meth:`ProcessGRPOTrainer._generate_and_score_completions`::

    rollout + rewards + A_i (B,)          TRL (after psgrpo's training techniques)
    method's process signal               built by the method's spec (psgrpo/<method>/spec.py); none for grpo
    token advantages A_t (B, T)           psgrpo/advantages.py, a registry of pure estimators
    → TRL's unchanged clipped policy loss

The trainer names no method: it looks the configured one up (:func:`psgrpo.methods.get_method`).
Where a configuration has no process term (``method="grpo"``, a process weight of 0), TRL
receives the 1-D A_i, so training and every logged metric are those of ``trl.GRPOTrainer`` (tested);
with token credit, the hooks of :mod:`psgrpo.loss_hooks` keep TRL's sequence-level loss pieces from
undoing it (docs/compatibility.md). Formulas: docs/design.md.
"""

from __future__ import annotations

import functools
import inspect
import itertools
import logging
import os
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from torch import nn
from trl import GRPOTrainer
from trl.import_utils import is_vllm_available
from trl.trainer.utils import get_callable_name

from psgrpo.advantages import ADVANTAGE_ESTIMATORS
from psgrpo.checkpoints.trainer_mixin import CheckpointMixin
from psgrpo.compatibility import has_token_credit
from psgrpo.config.kernel_caches import bound_kernel_caches
from psgrpo.config.precision import log_precision
from psgrpo.config.process_grpo_config import ProcessGRPOConfig
from psgrpo.credit import CreditRecord, ProcessSignal, SignalOutput, StepRecord, process_term_metrics
from psgrpo.data.validation import (
    STREAM_ROWS_CHECKED,
    check_prompts_fit_context,
    require_chat_template,
    validate_gold_answers,
    validate_prompts,
)
from psgrpo.diagnostics.step_logger import StepDiagnostics
from psgrpo.eval.generation import prompt_ids
from psgrpo.eval.heldout import chat_template_kwargs
from psgrpo.eval.vllm_backend import VLLM_INSTALL
from psgrpo.generation import (
    CompileWatch,
    check_compiled_generation,
    enable_compiled_generation,
    tidy_input_grad_hooks,
)
from psgrpo.guards import (
    check_finite,
    check_loss_and_gradients,
    check_rewards,
    diverged_sampling,
    nan_as_infinite,
)
from psgrpo.hub import looks_like_local_path
from psgrpo.loading import checkpoint_path
from psgrpo.loss_hooks import TokenCreditLossMixin, row_advantages
from psgrpo.methods import all_methods, estimator_for, estimator_options, get_method
from psgrpo.metrics_log import METRICS_FILE, JsonlMetricsCallback
from psgrpo.preflight import check_generation_options, output_dir_removed_on_failure, output_dir_state
from psgrpo.rewards.functions import REWARD_FUNCS, get_reward_funcs
from psgrpo.techniques.trainer_mixin import TechniquesMixin
from psgrpo.timing import PhaseTimingMixin, timed
from psgrpo.tiny import EMBEDDED_PREFIX
from psgrpo.tree.sampling import TreeSamplingMixin
from psgrpo.trl_warnings import ignore_trl_deprecations
from psgrpo.vps.probes import model_max_positions

logger = logging.getLogger(__name__)


def model_argument(model: Any) -> Any:
    """``model`` as TRL takes it: a path, Hub id or model object; ``embedded:NAME`` → the committed checkpoint, and
    a local path that does not exist refused before TRL reads it as a Hub id."""
    if model is None:
        raise TypeError(
            "model is required: a checkpoint folder, a Hub id, 'embedded:arith' (the committed tiny model) or a "
            "loaded PreTrainedModel"
        )
    model = os.fspath(model) if isinstance(model, os.PathLike) else model
    if isinstance(model, str) and (model.startswith(EMBEDDED_PREFIX) or looks_like_local_path(model)):
        return checkpoint_path(model, option="model")
    return model


def resolve_reward_funcs(reward_funcs: Any, args: ProcessGRPOConfig) -> tuple[list[Any], bool]:
    """The reward functions TRL gets, and whether psgrpo's ``correctness`` reward (which reads the ``answer``
    column) is one of them.

    ``None`` → ``args.reward_funcs``; a registered name (``"correctness"``, ``"format"``, alone or in a list)
    → that function, configured by ``args`` (TRL would take the name for a reward model's Hub id); anything
    else (a callable, a reward model or its Hub id) is passed on as given.
    """
    correctness = {
        "exact": args.correctness_exact,
        "close": args.correctness_close,
        "rel_tol": args.correctness_rel_tol,
    }
    if reward_funcs is None:  # names or import paths (my_rewards.accuracy)
        given, named = get_reward_funcs(args.reward_funcs, **correctness), list(args.reward_funcs)
    else:
        given = list(reward_funcs) if isinstance(reward_funcs, list | tuple) else [reward_funcs]
        named = [f for f in given if isinstance(f, str) and f in REWARD_FUNCS]
        if named:
            funcs = iter(get_reward_funcs(named, **correctness))  # refuses a name given twice
            given = [next(funcs) if isinstance(f, str) and f in REWARD_FUNCS else f for f in given]
    return given, "correctness" in named


TRL_REWARD_KEYWORDS = ("prompts", "completions", "completion_ids", "trainer_state", "log_extra", "log_metric")
"""What TRL 1.16 passes every reward function besides the dataset's columns (and ``environments`` with an
``environment_factory``)."""


def check_reward_signature(func: Any, columns: Sequence[str] | None) -> None:
    """A reward function must accept what TRL passes it: :data:`TRL_REWARD_KEYWORDS` and every dataset column
    (``columns``; ``None``: unknown, not checked), by name or through ``**kwargs``. One that did not failed at the
    first step with an "unexpected keyword argument"."""
    if columns is None or isinstance(func, str | nn.Module) or not callable(func):
        return
    try:
        signature = inspect.signature(func)
    except (TypeError, ValueError):  # a builtin without a signature: TRL's call decides
        return
    passed = [
        *TRL_REWARD_KEYWORDS,
        *(c for c in columns if c not in ("prompt", "completion", "completion_ids")),
    ]
    try:
        signature.bind(**dict.fromkeys(passed))
    except TypeError as err:
        name = get_callable_name(func)
        raise TypeError(
            f"reward function {name!r} cannot take what TRL passes it ({err}): TRL calls it as "
            f"f({', '.join(f'{k}=...' for k in passed)}) and it must return one number (or None) per completion; "
            f"define it as def {name}(completions, **kwargs)"
        ) from None


def named_datasets(train: Any, evaluation: Any) -> dict[str, Any]:
    """The trainer's datasets by the names messages give them: ``train_dataset``, and ``eval_dataset`` or, for a
    dict of eval sets, ``eval_dataset['<key>']`` each."""
    named = {"train_dataset": train}
    if isinstance(evaluation, dict):
        return named | {f"eval_dataset[{key!r}]": value for key, value in evaluation.items()}
    return named | {"eval_dataset": evaluation}


def check_datasets(
    train: Any, evaluation: Any, gold_column: str | None, prompts_from_environment: bool = False
) -> None:
    """Refuse, naming the dataset, row and field, a prompt TRL cannot render and a gold answer that can match
    nothing (``gold_column``: checked when the correctness reward reads it). A stream is read once, in its first
    :data:`~psgrpo.data.validation.STREAM_ROWS_CHECKED` rows. ``prompts_from_environment``: TRL's
    ``environment_factory`` writes the prompts, so a dataset may have none."""
    for name, dataset in named_datasets(train, evaluation).items():
        if dataset is None or not hasattr(dataset, "column_names"):  # TRL refuses other types itself
            continue
        if not hasattr(dataset, "__len__"):  # a stream: its first rows, read once
            dataset = list(itertools.islice(dataset, STREAM_ROWS_CHECKED))
        if not prompts_from_environment:
            validate_prompts(dataset, name)
        if gold_column is not None:
            validate_gold_answers(dataset, gold_column, name, numeric=False)


def check_enough_rows(args: ProcessGRPOConfig, train: Any) -> None:
    """A training set smaller than one generation's prompts: TRL's sampler would yield no batch, and training
    stop after 0 steps with a loss of 0.0, silently."""
    per_generation = args.generation_batch_size // args.num_generations
    rows = len(train) if train is not None and hasattr(train, "__len__") else None
    if rows is not None and rows < per_generation:
        processes = f" × {args.world_size} processes" if args.world_size > 1 else ""
        raise ValueError(
            f"train_dataset has {rows} row{'' if rows == 1 else 's'}, fewer than the {per_generation} prompts each "
            f"generation draws (generation_batch_size {args.generation_batch_size}, per_device_train_batch_size × "
            f"steps_per_generation{processes}, / num_generations {args.num_generations}): no batch would fill, "
            "and training would stop after 0 steps; give more rows, or lower per_device_train_batch_size, "
            "steps_per_generation or generation_batch_size"
        )


def check_chat_prompts(dataset: Any, processing_class: Any) -> None:
    """Chat-message prompts need a chat template: TRL fails at the first rollout otherwise."""
    if not hasattr(dataset, "__getitem__") or not hasattr(dataset, "__len__") or not len(dataset):
        return
    first = dataset[0]
    if isinstance(first, dict) and isinstance(first.get("prompt"), list):
        require_chat_template(processing_class, "train_dataset")


def check_context(trainer: ProcessGRPOTrainer, datasets: dict[str, Any]) -> None:
    """Every prompt of ``datasets`` (name → dataset) leaves the model's context room for a completion
    (:func:`~psgrpo.data.validation.check_prompts_fit_context`): one that fills it is refused, naming the row;
    prompts that leave less than ``max_completion_length`` are warned about, and refused under ``vps``, whose
    probe after a full-length completion would run past the context and stop training at that step."""
    args = trainer.args
    max_positions = model_max_positions(trainer.model)
    if max_positions is None or args.use_vllm:  # vLLM: its own max_model_len, checked by vLLM
        return

    # as TRL renders a conversation: its tools' schemas and the training chat template too
    rendering = {
        **chat_template_kwargs(args),
        "tools": getattr(trainer, "tools", None) or None,
        "chat_template": getattr(trainer, "chat_template", None),
    }

    def count_tokens(prompt: Any) -> int:
        return len(prompt_ids(trainer._tokenizer, prompt, rendering))

    for name, dataset in datasets.items():
        if dataset is None or not hasattr(dataset, "column_names"):
            continue
        tight = check_prompts_fit_context(
            dataset, name, count_tokens, max_positions, args.max_completion_length
        )
        if tight and get_method(args.method).probes_past_completion:
            raise ValueError(
                f"{tight} (method {args.method!r} probes after the completion, which would then run past the "
                "context and stop training at that step: refused)"
            )
        if tight and args.process_index == 0:
            logger.warning(tight)


def check_tokenizer_fits(tokenizer: Any, model: Any) -> None:
    """The tokenizer pads (TRL fills padding with ``pad_token_id``, else EOS) and has no id past the model's
    embedding table (the forward would fail with torch's bare ``index out of range in self``)."""
    if tokenizer.pad_token_id is None and tokenizer.eos_token_id is None:
        raise ValueError(
            f"the tokenizer ({type(tokenizer).__name__}) has neither a pad nor an EOS token: TRL pads completions "
            "with one of them; set tokenizer.pad_token (e.g. to the token that ends a completion) before building "
            "the trainer"
        )
    vocab_size = getattr(getattr(model, "config", None), "vocab_size", None)
    if isinstance(vocab_size, int) and len(tokenizer) > vocab_size:
        raise ValueError(
            f"the tokenizer has {len(tokenizer)} tokens but the model's embedding table only {vocab_size}: ids from "
            f"{vocab_size} on would index past it; pair the model with its own tokenizer, or resize the embeddings "
            "(model.resize_token_embeddings(len(tokenizer))) and train them"
        )


class ProcessGRPOTrainer(
    PhaseTimingMixin, TokenCreditLossMixin, TechniquesMixin, CheckpointMixin, TreeSamplingMixin, GRPOTrainer
):
    """GRPO trainer whose per-token advantages come from a registered estimator.

    The training techniques (KL schedule, reward normalisation, curriculum, memory bank, flat LR
    warm-up; all off by default) come from :class:`~psgrpo.techniques.trainer_mixin.TechniquesMixin`;
    atomic checkpoints and the exact resume from :class:`~psgrpo.checkpoints.trainer_mixin.CheckpointMixin`;
    the loss hooks for token advantages from :class:`~psgrpo.loss_hooks.TokenCreditLossMixin`;
    ``method='tree'``'s sampling from :class:`~psgrpo.tree.sampling.TreeSamplingMixin`.

    Args are those of ``trl.GRPOTrainer``; ``args`` must be a :class:`ProcessGRPOConfig`. ``model`` may
    also name a committed tiny checkpoint, ``"embedded:arith"`` or ``"embedded:arith-hard"``
    (:func:`psgrpo.tiny.resolve_checkpoint`), which trains offline on a CPU.
    ``reward_funcs`` defaults to the built-ins named in ``args.reward_funcs``. ``step_scorer``
    (method ``ps``) overrides ``args.step_scorer`` with a callable
    ``(prompts, steps, **columns) -> list[list[float]]``.

    Attributes:
        method_spec: the configured method (:class:`psgrpo.methods.MethodSpec`).
        signal: the method's process signal stage (``None`` for ``grpo``).
        advantage_estimator: the registered estimator turning A_i and the signal into A_t (B, T), with the
            method's options bound (:func:`psgrpo.methods.estimator_options`).
        outcome_weight: w, the weight of A_i inside A_t (1 unless the method's options set it).
        token_credit: whether TRL's loss gets A_t (B, T), or the 1-D A_i because the configuration has
            no process term (:func:`psgrpo.compatibility.has_token_credit`).
        step_record: :class:`~psgrpo.credit.StepRecord` of the batch being scored: what the mixins and the
            signal hand each other (rollout rows, rewards per function, tree segment ends).
        last_credit: :class:`~psgrpo.credit.CreditRecord` of the last batch scored (local rows;
            read by ``psgrpo inspect``).
        completion_tokens_seen: training completion tokens over all processes (restored on resume);
            the held-out callback logs it as a cost axis.
    """

    def __init__(
        self,
        model: Any,
        reward_funcs: Any = None,
        args: ProcessGRPOConfig | None = None,
        step_scorer: Any = None,
        **kwargs: Any,
    ):
        ignore_trl_deprecations()  # transformers' FutureWarnings for TRL's own gradient checkpointing calls
        bound_kernel_caches()  # before training's first bf16 matmul on a CPU: memory stays flat (its module)
        if args is None:
            args = ProcessGRPOConfig(output_dir="psgrpo-output")
        if not isinstance(args, ProcessGRPOConfig):
            raise TypeError(
                f"ProcessGRPOTrainer needs a ProcessGRPOConfig, got {type(args).__name__}; build one with the "
                "same fields (it extends trl.GRPOConfig)."
            )
        if args.use_vllm and not is_vllm_available():  # TRL would only notice after loading everything
            raise ImportError(
                f"use_vllm=True needs vLLM, which is not installed: {VLLM_INSTALL} in psgrpo's folder "
                "(a CUDA machine), or drop --use_vllm to generate with transformers"
            )
        check_compiled_generation(args)
        check_generation_options(args.temperature, args.max_completion_length)  # as psgrpo train's preflight
        self.method_spec = get_method(args.method)  # everything about the method: psgrpo/<method>/spec.py
        if step_scorer is not None and self.method_spec.scores_steps is False:
            scoring = ", ".join(repr(m.name) for m in all_methods() if m.scores_steps)
            raise ValueError(
                f"step_scorer= is given, but method={args.method!r} never calls a step scorer (methods that do: "
                f"{scoring}): set method='ps' in the config, or leave step_scorer= out"
            )
        name = estimator_for(args)
        estimator = ADVANTAGE_ESTIMATORS.get(name)
        # the method's options (ps_lambda, vps_alpha …) bound once; the signal adds the batch's tensors
        bound = (
            estimator_options(self.method_spec, args, estimator) if name == self.method_spec.estimator else {}
        )
        self.advantage_estimator = functools.partial(estimator, **bound)
        self.outcome_weight = bound.get("outcome_weight", 1.0)  # w of A_t = w·A_i + …, for process_share
        self.token_credit = has_token_credit(args)
        reward_funcs, reads_answer = resolve_reward_funcs(reward_funcs, args)
        columns = getattr(kwargs.get("train_dataset"), "column_names", None)
        for func in reward_funcs:
            check_reward_signature(func, None if kwargs.get("environment_factory") else columns)
        self.step_record = StepRecord(inputs=[])  # made anew for every generation batch
        model = model_argument(model)
        # every row, before the model loads: tokenizers fail on a bad prompt only when training reaches its row
        check_datasets(
            kwargs.get("train_dataset"),
            kwargs.get("eval_dataset"),
            "answer" if reads_answer else None,
            prompts_from_environment=kwargs.get("environment_factory") is not None,
        )
        # transformers creates output_dir here: a run refused or failed before writing a file leaves none behind
        self._output_dir_at_build = output_dir_state(args.output_dir, args.should_save)
        with output_dir_removed_on_failure(args.output_dir, self._output_dir_at_build[1]):
            super().__init__(model=model, reward_funcs=reward_funcs, args=args, **kwargs)
            check_chat_prompts(self.train_dataset, self.processing_class)
            check_tokenizer_fits(self._tokenizer, self.model)
            check_context(self, named_datasets(self.train_dataset, kwargs.get("eval_dataset")))
            self.run_record = {"method": args.method}  # in every checkpoint; psgrpo train writes its task too
            # a NaN a reward function returns must not pass as TRL's "unscorable" (guards.check_rewards)
            self.reward_funcs = [
                f if isinstance(f, nn.Module) or not callable(f) else nan_as_infinite(f)
                for f in self.reward_funcs
            ]
            tidy_input_grad_hooks(self)  # TRL's rollouts would add a hook to the embeddings per step
            self.compile_watch: CompileWatch | None = None
            if args.compiled_generation:  # static cache + compiled decoding (psgrpo/generation.py)
                enable_compiled_generation(self)
                # psgrpo/compiled_graphs per rollout; warns if it never stops
                self.compile_watch = CompileWatch()
            if args.phase_times:  # time/<phase>_s metrics (psgrpo/timing.py)
                self.enable_phase_times()
            self.signal = self._build_signal(step_scorer)
            self.diagnostics = (  # --diagnostics: diag/* metrics (psgrpo/diagnostics/step_logger.py)
                StepDiagnostics(args, self._tokenizer, self.reward_func_names, self.reward_weights.tolist())
                if args.diagnostics
                else None
            )
            self.last_credit: CreditRecord | None = None
            self.completion_tokens_seen = 0  # restored on resume (CheckpointMixin)
            self.add_callback(JsonlMetricsCallback(Path(args.output_dir) / METRICS_FILE))
            if args.process_index == 0:  # last: every check of the input passed, so a refusal stays one line
                log_precision(args)

    def train(self, *args: Any, **kwargs: Any) -> Any:
        """``Trainer.train`` (resuming as :class:`CheckpointMixin` does), after :func:`check_enough_rows`: checked here,
        not when the trainer is built, which benchmarks do for single steps on a few rows. A run that fails before it
        writes a file removes the ``output_dir`` this trainer created (as ``psgrpo train`` does)."""
        path, existed = getattr(self, "_output_dir_at_build", (None, True))
        now, _ = output_dir_state(self.args.output_dir)
        # the flag holds for the folder the trainer was built with; another output_dir is looked at now
        with output_dir_removed_on_failure(self.args.output_dir, existed if now == path else None):
            check_enough_rows(self.args, self.train_dataset)
            return super().train(*args, **kwargs)

    def create_model_card(
        self,
        model_name: str | None = None,
        dataset_name: str | None = None,
        tags: str | list[str] | None = None,
    ) -> None:
        """TRL's draft card (``output_dir/README.md``), naming psgrpo's method and tagged ``psgrpo``; a run that
        started from a local checkpoint says so, where TRL's template writes ``[None](https://huggingface.co/None)``
        and ``pipeline(model="None")``."""
        method = self.method_spec
        tags = [*([tags] if isinstance(tags, str) else tags or []), "psgrpo", f"psgrpo-{method.name}"]
        super().create_model_card(model_name=model_name, dataset_name=dataset_name, tags=tags)
        card = Path(self.args.output_dir) / "README.md"
        if not self.is_world_process_zero() or not card.is_file():
            return
        text = card.read_text()
        text = text.replace(
            "a fine-tuned version of [None](https://huggingface.co/None)",
            "fine-tuned from a local checkpoint",
        )
        text = text.replace('model="None"', f'model="{self.hub_model_id or self.args.output_dir}"')
        text = text.replace(
            f"This model was trained with {self._name}",
            f"This model was trained with {self._name} and psgrpo's `{method.name}` credit ({method.summary})",
        )
        card.write_text(text)

    def _build_signal(self, step_scorer: Any) -> ProcessSignal | None:
        """The method's signal stage (``None`` without one, as for ``grpo``), built by its spec."""
        build = self.method_spec.signal
        return None if build is None else build(self, step_scorer)

    def _generate(self, prompts: list[Any]) -> tuple:
        """TRL's rollout (the techniques' and tree's included); a diverged model's NaN probabilities stop the step
        with :class:`~psgrpo.guards.NonFiniteError` instead of torch's sampling traceback."""
        with diverged_sampling(self.state.global_step):
            return super()._generate(prompts)

    @timed("advantages")  # psgrpo's own rollout code; TRL's rollout and the signal are their own phases
    def _generate_and_score_completions(self, inputs: list[dict[str, Any]]) -> dict[str, Any]:
        """TRL's rollout and outcome scoring, then the method's process signal, then token advantages (B, T).

        TRL's loss receives A_t (B, T) with token credit, else the rows' single value (B,), TRL's own form.
        """
        self.step_record = StepRecord(inputs)  # what the stages below hand each other for this batch
        # TechniquesMixin runs first (psgrpo/techniques): the memory bank may swap a banked completion into
        # an all-wrong group, and running reward normalisation may replace A_i. Then TRL: rollout, rewards, A_i.
        output = super()._generate_and_score_completions(
            inputs
        )  # completion_ids, completion_mask (B, T), A_i (B,)
        mode = "train" if self.model.training else "eval"
        if self.compile_watch is not None:
            self._metrics[mode]["psgrpo/compiled_graphs"].append(float(self.compile_watch()))
        if mode == "train":
            local_tokens = output["completion_mask"].sum().reshape(1)
            self.completion_tokens_seen += int(self.accelerator.gather(local_tokens).sum().item())
        num_generations = self.num_generations if mode == "train" else self.num_generations_eval
        with self.phase_timer.phase("process_signal"):
            signal = (  # the method's process signal: estimator inputs, ps/* or vps/* metrics, credit record
                self.signal(self.model, output, inputs, num_generations, self.state.global_step)
                if self.signal is not None
                else SignalOutput(estimator_kwargs={})
            )
        start = time.perf_counter()
        advantages = self.advantage_estimator(  # (B, T) token advantages A_t, 0 on padding
            outcome_advantages=output["advantages"],
            completion_mask=output["completion_mask"],
            **signal.estimator_kwargs,
        )
        step = self.state.global_step  # nothing non-finite goes on (psgrpo/guards.py)
        check_rewards(
            self.step_record.rewards_per_func, self.reward_func_names, step
        )  # (N, F), NaN = unscorable
        check_finite("the outcome advantages A_i", output["advantages"], step)
        check_finite("the token advantages A_t", advantages, step)
        metrics = self._metrics[mode]
        metrics["psgrpo/advantage_seconds"].append(time.perf_counter() - start)
        for key, value in signal.metrics.items():
            metrics[key].append(value)
        if self.signal is not None or self.token_credit:  # how much of A_t is not w·A_i: <method>/process_*
            process = process_term_metrics(
                advantages,
                output["advantages"],
                output["completion_mask"],
                self.outcome_weight,
                self.accelerator,
            )
            for key, value in process.items():
                metrics[f"{self.method_spec.name}/{key}"].append(value)
        if self.diagnostics is not None:
            diag = self.diagnostics(output, signal.credit, self.step_record.rewards_per_func, num_generations)
            for key, value in diag.items():
                metrics[key].append(value)
        self.last_credit = CreditRecord(output["advantages"].detach(), advantages.detach(), signal.credit)
        # no process term: TRL gets its own 1-D A_i, so its code paths and metrics hold
        if not self.token_credit:
            advantages = row_advantages(advantages, output["completion_mask"], empty=output["advantages"])
        output["advantages"] = advantages
        return output

    @timed("guards")  # the checks below; TRL's step is the backward phase (psgrpo/timing.py)
    def training_step(self, model: Any, inputs: dict[str, Any], num_items_in_batch: Any = None) -> Any:
        """TRL's forward and backward, then the loss and gradients must be finite before any optimizer step."""
        loss = super().training_step(model, inputs, num_items_in_batch)
        check_loss_and_gradients(loss, model, self.accelerator, self.state.global_step)
        return loss
