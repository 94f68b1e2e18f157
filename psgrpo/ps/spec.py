"""``method='ps'``: PS-GRPO (DeepSeekMath §4.1.3), a score per step from a verifier, a PRM or your function.

Everything the package needs to know about ``ps`` is registered here: its option checks, how its
signal is built (:class:`psgrpo.ps.signal.PsSignal`), when it gives token credit, how ``psgrpo
inspect`` colours it and what ``--diagnostics`` measures. The estimator is
:func:`psgrpo.advantages.ps_token_advantages`. Its options are the ``ps_*`` fields of the config plus
``segmenter`` and ``step_scorer`` (and their ``*_kwargs``), which ``vps_boundaries='markers'`` and
``psgrpo score-steps`` share.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from psgrpo.config.options import (
    PsAdvantageMode,
    ScorerErrorPolicy,
    check_choice,
    check_keyword_arguments,
    check_number,
    check_registered,
    json_object_option,
)
from psgrpo.methods import InspectView, MethodSpec, register_method
from psgrpo.ps.options import PsOptions
from psgrpo.ps.scorers import STEP_SCORERS
from psgrpo.ps.scorers.arithmetic import ArithmeticVerifier
from psgrpo.ps.segmentation import SEGMENTERS, get_segmenter


def check_step_scorer(step_scorer: str, step_scorer_kwargs: dict[str, Any], hint: str = "") -> None:
    """``step_scorer`` is a registered name and ``step_scorer_kwargs`` bind to it (``psgrpo train`` and
    ``psgrpo score-steps``): unknown names, non-finite numbers and values the scorer refuses (a ``blame_stop``
    it has no rule for, a PRM ``style`` or ``format`` it does not know) fail before any model loads."""
    check_registered("step_scorer", step_scorer, STEP_SCORERS, hint=hint)
    check_keyword_arguments("step_scorer_kwargs", STEP_SCORERS.get(step_scorer), step_scorer_kwargs)
    prm: dict[str, Any] = {}
    try:
        if step_scorer == "prm":
            from psgrpo.ps.scorers.prm_formats import BUILT_IN_DEFAULTS, prm_settings

            settings = ("format", "batch_size", "max_length", *BUILT_IN_DEFAULTS)
            prm = prm_settings(**{k: v for k, v in step_scorer_kwargs.items() if k in settings})
        elif issubclass(scorer := STEP_SCORERS.get(step_scorer), ArithmeticVerifier):
            scorer(**step_scorer_kwargs)  # a rule-based verifier, built in microseconds: its checks run
    except ValueError as err:
        raise ValueError(
            f"step_scorer_kwargs={step_scorer_kwargs!r} do not fit step_scorer {step_scorer!r}: {err}"
        ) from None
    if step_scorer == "prm" and isinstance(step_scorer_kwargs.get("model"), str):
        from psgrpo.loading import checkpoint_path

        # a missing local PRM fails here, before the policy loads (and is never sent to the Hub);
        # an unreachable Hub is one line at once, not a minute of retries
        path = checkpoint_path(
            step_scorer_kwargs["model"],
            option="step_scorer_kwargs['model']",
            hub_example="Qwen/Qwen2.5-Math-PRM-7B (docs/scorers.md)",
        )
        if (Path(path) / "config.json").is_file():
            from psgrpo.ps.scorers.prm_formats import auto_class

            # its config.json only: a causal LM read as a token classifier (a random head) or remote code
            # without trust_remote_code is refused before the policy loads
            try:
                auto_class(path, prm["style"], bool(step_scorer_kwargs.get("trust_remote_code", False)))
            except ValueError as err:
                raise ValueError(f"step_scorer_kwargs['model']: {err}") from None


def check_ps_options(config: Any) -> None:
    """Refuse bad ``ps_*``, segmenter and step-scorer values, whatever the method (before anything loads).

    Builds the segmenter (cheap), and checks the step scorer's keyword arguments against its
    signature: unknown names and numbers that are not finite fail here, not after the model loaded.
    """
    check_choice("ps_advantage_mode", config.ps_advantage_mode, PsAdvantageMode)
    check_choice("ps_on_scorer_error", config.ps_on_scorer_error, ScorerErrorPolicy)
    check_number("ps_lambda", config.ps_lambda, low=0.0)
    check_number("ps_outcome_weight", config.ps_outcome_weight, low=0.0)
    check_number("ps_min_temperature", config.ps_min_temperature, low=0.0, low_open=True)
    own_estimator = getattr(config, "method", None) == "ps" and getattr(
        config, "advantage_estimator", None
    ) in (None, "ps")
    if own_estimator and config.ps_lambda == 0 and config.ps_outcome_weight == 0:
        raise ValueError(
            "--ps_lambda 0 with --ps_outcome_weight 0 gives every token an advantage of 0 (only a KL term would "
            "train): keep one above 0 (--ps_lambda 0 --ps_outcome_weight 1 is outcome GRPO)"
        )
    for name in ("segmenter_kwargs", "step_scorer_kwargs"):
        setattr(config, name, json_object_option(name, getattr(config, name)))
    check_registered("segmenter", config.segmenter, SEGMENTERS)
    try:
        get_segmenter(config.segmenter, **config.segmenter_kwargs)
    except (TypeError, ValueError, re.error) as err:
        raise ValueError(
            f"segmenter_kwargs={config.segmenter_kwargs!r} do not fit segmenter {config.segmenter!r}: {err}"
        ) from None
    if config.step_scorer == "prm" and "model" not in config.step_scorer_kwargs:
        raise ValueError(
            "step_scorer='prm' needs the process reward model to score with: set step_scorer_kwargs "
            """'{"model": "PATH_OR_HUB_ID"}' (e.g. --step_scorer_kwargs '{"model": "Qwen/Qwen2.5-Math-PRM-7B"}')"""
        )
    check_step_scorer(
        config.step_scorer, config.step_scorer_kwargs, hint=", or pass a callable to the trainer"
    )


def build_signal(trainer: Any, step_scorer: Any) -> Any:
    """The ``ps`` signal of ``trainer``: its segmenter and step scorer (``step_scorer``, a callable, wins
    over ``args.step_scorer``), checked against the columns of the training and evaluation datasets (TRL's
    evaluation scores its completions too)."""
    from psgrpo.ps.scorers import build_step_scorer, check_scorer_columns
    from psgrpo.ps.signal import PsSignal

    args = trainer.args
    segmenter = get_segmenter(args.segmenter, **args.segmenter_kwargs)
    scorer_kwargs = dict(args.step_scorer_kwargs)
    if args.step_scorer == "prm":
        scorer_kwargs.setdefault("device", trainer.accelerator.device)
    scorer = build_step_scorer(step_scorer or args.step_scorer, **scorer_kwargs)
    check_scorer_columns(scorer, trainer.train_dataset)
    evaluation = getattr(trainer, "eval_dataset", None)
    named = evaluation.items() if isinstance(evaluation, dict) else [(None, evaluation)]
    for name, dataset in named:
        check_scorer_columns(scorer, dataset, "evaluation" if name is None else f"evaluation {name!r}")
    return PsSignal(args, trainer._tokenizer, trainer.accelerator, segmenter, scorer)


def labelled_steps(decoded: Any, credit: Any, config: Any) -> tuple[list[tuple[float, bool]], list[str]]:
    """``(r̃_j, step is wrong)`` for every step the arithmetic verifier can judge (diag/process_auc)."""
    from psgrpo.diagnostics.step_logger import ps_segments

    pairs = [
        p
        for steps, scores in zip(credit.steps, credit.step_scores, strict=True)
        for p in ps_segments(steps, scores)
    ]
    return pairs, []


def show_steps(view: Any, credit: Any, i: int, token_adv: Any, offsets: Any, config: Any) -> None:
    """``psgrpo inspect``: one segment per step, coloured by r̃, raw score in the tooltip."""
    from psgrpo.credit_views import SegmentView

    raw, normalized = credit.raw_step_scores[i], credit.step_scores[i]
    view.segments = [
        SegmentView(
            text=step,
            tokens=(a, b),
            signal=None if normalized is None else normalized[j],
            details={} if raw is None else {"raw score": raw[j], "A_t on this step": float(token_adv[a])},
        )
        for j, (step, (a, b)) in enumerate(zip(credit.steps[i], credit.step_token_spans[i], strict=True))
    ]
    if normalized is None:
        view.notes.append("step scorer failed on this completion: it gets its outcome advantage A_i only")


SPEC = register_method(
    MethodSpec(
        name="ps",
        summary="PS-GRPO: a score per step from a verifier, a process reward model or your own function",
        estimator="ps",
        options=PsOptions,
        section="PS-GRPO (method='ps')",
        section_fields=("segmenter", "segmenter_kwargs", "step_scorer", "step_scorer_kwargs", "ps_"),
        check=check_ps_options,
        signal=build_signal,
        token_credit=lambda config: config.ps_lambda != 0,
        process_weight=lambda config: f"ps_lambda={config.ps_lambda}",
        inspect=InspectView(
            legend="PS-GRPO: the completion splits into steps; each step is coloured by its score normalised over "
            "all steps of the group, r̃ = (r − mean) / (std + 1e-4). Token advantages combine w·A_i with λ times "
            "the process term of the configured mode (reward-to-go: the sum of r̃ of this and later steps).",
            signal_label=lambda config: "r̃ (normalised step score)",
            unit="step",
            options=("segmenter", "step_scorer", "ps_advantage_mode", "ps_outcome_weight", "ps_lambda"),
            fill=show_steps,
        ),
        diagnostics=labelled_steps,
        colour="C1",
        scores_steps=True,
    )
)
