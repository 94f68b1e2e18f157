"""The options of ``method='ps'``: its step segmenter and scorer, and the ``ps_*`` fields.

:class:`PsOptions` is a dataclass base of :class:`~psgrpo.config.process_grpo_config.ProcessGRPOConfig`
(its fields are ordinary config fields: ``--ps_lambda 0.5`` on the command line, ``ps_lambda: 0.5`` in
YAML). The segmenter and step scorer are shared: ``vps_boundaries='markers'`` segments with the same
segmenter, and ``psgrpo score-steps`` scores with the same scorers. The checks are
:func:`psgrpo.ps.spec.check_ps_options`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from psgrpo.config.options import PsAdvantageMode, ScorerErrorPolicy
from psgrpo.ps.scorers import STEP_SCORERS
from psgrpo.ps.segmentation import SEGMENTERS


@dataclass
class PsOptions:
    """Fields of ``method='ps'`` (docs/training.md)."""

    segmenter: str = field(
        default="markers",
        metadata={
            "help": "How completions split into steps (method 'ps'): 'markers' (a regex, default a 'Step N:' label "
            "opening a line), 'newline' (a line, kept with the lines that go on with it: '= …' chains, display "
            "math), 'paragraph' or 'single'. Change it when your prompt asks for another step format.",
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
            "help": "Step scorer (method 'ps'): 'arithmetic' (a verifier: equation correctness and necessity), "
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
            "help": "Token advantage from normalised step scores: 'auto' (default: 'step' for the rule-based "
            "verifiers, 'arithmetic' and 'reference', 'min' for a PRM or your own scorer; pass 'step' for a scorer "
            "of your own that is an exact 0/1 check; the modes no gamed solution beats the honest one with, "
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
