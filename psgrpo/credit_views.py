"""What ``psgrpo inspect`` shows of a batch's credit: groups, completions, segments and tokens, as plain data.

A method's spec fills a completion's segments from its credit record (``InspectView.fill``);
:mod:`psgrpo.commands.inspect_html` turns the page into HTML. No torch, no trainer: pages can be
built by hand in tests.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class SegmentView:
    """One step (ps) or segment (vps) of a completion.

    Attributes:
        text: its text.
        tokens: ``(start, end)`` completion-token span, end exclusive.
        signal: the value that colours it (ps: normalised step score r̃; vps: ΔC_k); ``None``
            when it carries no process signal (vps: after the last boundary; a failed scorer).
        probe: vps: C_k measured at the boundary that ends this segment; ``None`` otherwise.
        details: extra ``name → value`` lines for the tooltip, in order.
    """

    text: str
    tokens: tuple[int, int]
    signal: float | None = None
    probe: float | None = None
    details: dict[str, float | str] = field(default_factory=dict)


@dataclass
class TokenView:
    """One completion token: its text and its token advantage A_t (the value the loss uses)."""

    text: str
    advantage: float
    special: bool = False  # EOS / pad: shown dimmed, has no text of its own


@dataclass
class CompletionView:
    """One sampled completion with its rewards, outcome advantage and process credit.

    Attributes:
        text: the decoded completion.
        rewards: each reward function's value (unweighted), by name.
        reward: the weighted total r_i that A_i normalises.
        outcome_advantage: A_i.
        segments: steps / segments tiling ``text`` (grpo: one segment, no signal).
        tokens: per-token advantages (empty: no token row).
        probe0: vps: C_0, the confidence right after the prompt.
        notes: short remarks shown on the card (e.g. "truncated: ΔC not applied").
    """

    text: str
    rewards: dict[str, float]
    reward: float
    outcome_advantage: float
    segments: list[SegmentView]
    tokens: list[TokenView] = field(default_factory=list)
    probe0: float | None = None
    notes: list[str] = field(default_factory=list)


@dataclass
class PromptView:
    """A prompt, its gold answer and its group of completions."""

    prompt: str
    answer: str
    completions: list[CompletionView]


@dataclass
class InspectPage:
    """The whole page.

    Attributes:
        method: the method's name (the page's title).
        prompts: the groups, in order.
        settings: ``name → value`` shown in the header (checkpoint, dataset, α …).
        signal_label: what colours the segments, e.g. ``"ΔC_k"``; ``None`` = no process signal.
        legend: the method's explanation under the colour scales (``InspectView.legend``).
        unit: what one coloured piece is called in tooltips ("step", "segment").
        probe_note: the legend explains the probe markers C_k (vps).
    """

    method: str
    prompts: list[PromptView]
    settings: dict[str, str] = field(default_factory=dict)
    signal_label: str | None = None
    legend: str = ""
    unit: str = "step"
    probe_note: bool = False
