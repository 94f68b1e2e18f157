"""The credit viewer's page: the dataclasses of :mod:`psgrpo.credit_views` → one HTML string.

Pure and model-free (``psgrpo/commands/inspect_credit.py`` fills those dataclasses from a real trainer),
so the page can be tested on hand-made data. The output is self-contained: inline CSS, no
script, no external URL; every text from the data goes through :func:`html.escape`.

Colours use one diverging scale, symmetric around 0 and clipped at ±vmax, where vmax is the
largest magnitude of that quantity on the page (one vmax for the process signal, one for
advantages)::

    −vmax  red  ────  near-white at 0  ────  blue  +vmax

Exact values are in each element's tooltip (``title`` attribute).
"""

from __future__ import annotations

import html
import math
from collections.abc import Iterable

from psgrpo.credit_views import CompletionView, InspectPage, PromptView, SegmentView, TokenView

__all__ = ["CompletionView", "InspectPage", "PromptView", "SegmentView", "TokenView", "render_html"]


def __getattr__(name: str) -> object:  # the former table, now each method's InspectView.legend
    if name == "METHOD_LEGENDS":
        from psgrpo.methods import all_methods

        return {spec.name: spec.inspect.legend for spec in all_methods()}
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


NEGATIVE_RGB = (214, 96, 77)
NEUTRAL_RGB = (247, 247, 247)
POSITIVE_RGB = (67, 147, 195)
"""Anchors of the diverging scale (ColorBrewer RdBu, readable with black text, colour-blind safe)."""


# --------------------------------------------------------------------------------------------
# numbers and colours


def diverging_color(value: float, vmax: float) -> str:
    """``#rrggbb`` of ``value`` on the symmetric scale [−vmax, vmax]: red < 0, near-white at 0, blue > 0.

    Values beyond ±vmax get the end colours; NaN / inf or ``vmax <= 0`` give the neutral colour.
    Along the scale, blue − red of the colour increases with ``value`` (monotone).
    """
    if not math.isfinite(value) or not vmax > 0:
        return _hex(NEUTRAL_RGB)
    x = max(-1.0, min(1.0, value / vmax))
    end = POSITIVE_RGB if x > 0 else NEGATIVE_RGB
    return _hex(tuple(round(n + abs(x) * (e - n)) for n, e in zip(NEUTRAL_RGB, end, strict=True)))


def _hex(rgb: Iterable[int]) -> str:
    return "#" + "".join(f"{c:02x}" for c in rgb)


def _num(value: float | None, signed: bool = False, digits: int = 4) -> str:
    """Fixed-point for display (``digits`` decimals); ``n/a`` for None / NaN."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "n/a"
    return f"{value:+.{digits}f}" if signed else f"{value:.{digits}f}"


def _exact(value: float | None, signed: bool = False) -> str:
    """Six significant digits for tooltips, so that tiny values (C_k ~ 1e-9) stay readable."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "n/a"
    return f"{value:+.6g}" if signed else f"{value:.6g}"


def _vmax(values: Iterable[float | None]) -> float:
    finite = [abs(v) for v in values if v is not None and math.isfinite(v)]
    return max(finite, default=0.0)


def page_scales(page: InspectPage) -> tuple[float, float]:
    """(vmax of the process signal, vmax of the advantages A_i and A_t) over the whole page."""
    completions = [c for p in page.prompts for c in p.completions]
    signal = _vmax(s.signal for c in completions for s in c.segments)
    advantage = _vmax(
        [c.outcome_advantage for c in completions] + [t.advantage for c in completions for t in c.tokens]
    )
    return signal, advantage


# --------------------------------------------------------------------------------------------
# HTML


def _e(text: object) -> str:
    return html.escape(str(text), quote=True)


def _attr_title(lines: Iterable[str]) -> str:
    """A ``title`` attribute (the tooltip), one line per item; newlines inside items are kept."""
    return f' title="{_e(chr(10).join(lines)).replace(chr(10), "&#10;")}"'


def render_html(page: InspectPage) -> str:
    """The complete, self-contained HTML document for ``page``."""
    vmax_signal, vmax_adv = page_scales(page)
    settings = "".join(f'<span class="chip"><b>{_e(k)}</b> {_e(v)}</span>' for k, v in page.settings.items())
    sections = "".join(_prompt_section(i, p, page, vmax_signal, vmax_adv) for i, p in enumerate(page.prompts))
    show_tokens = page.signal_label is not None
    toggle = '<input type="checkbox" id="show-tokens" class="toggle" checked>' if show_tokens else ""
    toggle_label = (
        '<label for="show-tokens" class="switch">per-token advantages A_t</label>' if show_tokens else ""
    )
    return (
        "<!DOCTYPE html>\n"
        '<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>psgrpo inspect · {_e(page.method)}</title><style>{_CSS}</style></head><body>"
        f'{toggle}<header><h1>psgrpo inspect <span class="method">{_e(page.method)}</span></h1>'
        f'<div class="chips">{settings}</div>'
        f"{_legend(page, vmax_signal, vmax_adv)}{toggle_label}</header>"
        f"<main>{sections}</main></body></html>\n"
    )


def _scale_bar(label: str, vmax: float, note: str) -> str:
    stops = ", ".join(diverging_color(v * vmax, vmax) for v in (-1.0, -0.5, 0.0, 0.5, 1.0))
    return (
        f'<div class="scale"><div class="scale-name">{_e(label)}</div>'
        f'<div class="bar" style="background: linear-gradient(to right, {stops})"></div>'
        f'<div class="ticks"><span>{_num(-vmax, True, 3)}</span><span>0</span>'
        f"<span>{_num(vmax, True, 3)}</span></div>"
        f'<div class="scale-note">{_e(note)}</div></div>'
    )


def _legend(page: InspectPage, vmax_signal: float, vmax_adv: float) -> str:
    scales = []
    if page.signal_label is not None:
        scales.append(
            _scale_bar(f"segments: {page.signal_label}", vmax_signal, "colours each step / segment")
        )
    scales.append(
        _scale_bar("advantages: A_i and A_t", vmax_adv, "A_i: card edge and badge; A_t: per-token row")
    )
    text = page.legend
    probe = (
        ' <span class="cut">C<sub>k</sub> 0.42</span> marks a boundary and the confidence measured there.'
        if page.probe_note
        else ""
    )
    return (
        f'<div class="legend"><div class="scales">{"".join(scales)}</div>'
        f'<p class="explain">{_e(text)}{probe} Hover any coloured piece for exact numbers.</p></div>'
    )


def _prompt_section(
    index: int, prompt: PromptView, page: InspectPage, vmax_signal: float, vmax_adv: float
) -> str:
    rewards = [c.reward for c in prompt.completions]
    mean = sum(rewards) / len(rewards) if rewards else math.nan
    std = math.sqrt(sum((r - mean) ** 2 for r in rewards) / (len(rewards) - 1)) if len(rewards) > 1 else 0.0
    flat = " · all rewards equal (A_i ≈ 0)" if len(set(rewards)) <= 1 else ""
    cards = "".join(_card(j, c, page, vmax_signal, vmax_adv) for j, c in enumerate(prompt.completions))
    return (
        f'<section class="group"><div class="group-head"><h2>prompt {index + 1}</h2>'
        f'<span class="gold">gold answer <b>{_e(prompt.answer)}</b></span>'
        f'<span class="stats">{len(rewards)} completions · reward {_num(mean, digits=2)} ± '
        f"{_num(std, digits=2)}{flat}</span></div>"
        f'<pre class="prompt">{_e(prompt.prompt)}</pre><div class="cards">{cards}</div></section>'
    )


def _card(index: int, c: CompletionView, page: InspectPage, vmax_signal: float, vmax_adv: float) -> str:
    adv_color = diverging_color(c.outcome_advantage, vmax_adv)
    rewards = "".join(
        f'<span class="reward"{_attr_title([f"{name} = {_exact(value)}"])}>{_e(name)} '
        f"<b>{_num(value, digits=2)}</b></span>"
        for name, value in c.rewards.items()
    )
    notes = "".join(f'<div class="note">{_e(n)}</div>' for n in c.notes)
    tokens = (
        f'<div class="tokens"><div class="row-label">A_t per token</div>'
        f'<div class="text">{_tokens_html(c, vmax_adv)}</div></div>'
        if c.tokens and page.signal_label is not None
        else ""
    )
    reward_title = _attr_title([f"r_i = {_exact(c.reward)}"])
    adv_title = _attr_title([f"A_i = {_exact(c.outcome_advantage, True)}"])
    return (
        f'<article class="card" style="border-left-color: {adv_color}">'
        f'<div class="card-head"><span class="idx">#{index + 1}</span>'
        f'<span class="total"{reward_title}>r = <b>{_num(c.reward, digits=2)}</b></span>'
        f'<span class="adv" style="background: {adv_color}"{adv_title}>'
        f"A<sub>i</sub> {_num(c.outcome_advantage, True, 3)}</span></div>"
        f'<div class="rewards">{rewards}</div>{notes}'
        f'<div class="segments"><div class="text">{_segments_html(c, page, vmax_signal)}</div></div>'
        f"{tokens}</article>"
    )


def _probe_marker(k: int, value: float, where: str) -> str:
    title = _attr_title([f"C_{k} = {_exact(value)}", where])
    return f'<span class="cut"{title}>C<sub>{k}</sub> {value:.2g}</span>'


def _segments_html(c: CompletionView, page: InspectPage, vmax_signal: float) -> str:
    parts = []
    if c.probe0 is not None:
        parts.append(_probe_marker(0, c.probe0, "right after the prompt"))
    for k, seg in enumerate(c.segments, start=1):
        lines = [f"{page.unit} {k} · tokens {seg.tokens[0]}–{seg.tokens[1] - 1}"]
        if page.signal_label is not None:
            lines.append(
                f"{page.signal_label} = {_exact(seg.signal, True)}"
                if seg.signal is not None
                else f"{page.signal_label}: none"
            )
        lines += [
            f"{name} = {_exact(v, True) if isinstance(v, float) else v}" for name, v in seg.details.items()
        ]
        if seg.signal is None:
            style, cls = "", "seg nosig" if page.signal_label is not None else "seg plain"
        else:
            style, cls = f' style="background: {diverging_color(seg.signal, vmax_signal)}"', "seg"
        parts.append(f'<span class="{cls}"{style}{_attr_title(lines)}>{_e(seg.text)}</span>')
        if seg.probe is not None:
            parts.append(_probe_marker(k, seg.probe, f"after token {seg.tokens[1] - 1} (boundary b_{k})"))
    return "".join(parts)


def _tokens_html(c: CompletionView, vmax_adv: float) -> str:
    parts = []
    for t, tok in enumerate(c.tokens):
        title = _attr_title([f"token {t} {tok.text!r}", f"A_t = {_exact(tok.advantage, True)}"])
        color = diverging_color(tok.advantage, vmax_adv)
        cls = "tok special" if tok.special else "tok"
        parts.append(f'<span class="{cls}" style="background: {color}"{title}>{_e(tok.text)}</span>')
    return "".join(parts)


_CSS = """
:root { --ink: #1f2328; --muted: #656d76; --line: #d0d7de; --paper: #ffffff; --bg: #f3f4f6; }
* { box-sizing: border-box; }
body { margin: 0; font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif;
  color: var(--ink); background: var(--bg); }
header { background: var(--paper); border-bottom: 1px solid var(--line); padding: 16px 24px 12px; }
h1 { margin: 0 0 8px; font-size: 20px; }
h1 .method { font: 600 13px ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; background: #24292f;
  color: #fff; padding: 2px 8px; border-radius: 10px; vertical-align: middle; }
.chips { display: flex; flex-wrap: wrap; gap: 6px; margin-bottom: 10px; }
.chip { background: var(--bg); border: 1px solid var(--line); border-radius: 10px; padding: 1px 8px;
  font-size: 12px; color: var(--muted); }
.chip b { color: var(--ink); font-weight: 600; }
.legend { display: flex; gap: 24px; align-items: flex-start; flex-wrap: wrap; }
.scales { display: flex; gap: 20px; }
.scale { width: 230px; }
.scale-name { font-size: 12px; font-weight: 600; }
.bar { height: 12px; border-radius: 3px; border: 1px solid var(--line); margin: 3px 0 1px; }
.ticks { display: flex; justify-content: space-between; font: 11px ui-monospace, Menlo, Consolas, monospace;
  color: var(--muted); }
.scale-note { font-size: 11px; color: var(--muted); }
.explain { flex: 1; min-width: 320px; max-width: 760px; margin: 0; font-size: 12.5px; color: #3d444d; }
.toggle { position: absolute; opacity: 0; pointer-events: none; }
.switch { display: inline-block; margin-top: 8px; font-size: 12px; cursor: pointer; user-select: none;
  border: 1px solid var(--line); border-radius: 10px; padding: 1px 10px; background: var(--bg); }
#show-tokens:checked ~ header .switch::before { content: "☑ "; }
#show-tokens:not(:checked) ~ header .switch::before { content: "☐ "; }
#show-tokens:not(:checked) ~ main .tokens { display: none; }
main { padding: 8px 24px 32px; }
.group { background: var(--paper); border: 1px solid var(--line); border-radius: 8px; margin: 16px 0;
  padding: 12px 16px 16px; }
.group-head { display: flex; gap: 16px; align-items: baseline; flex-wrap: wrap; }
h2 { margin: 0; font-size: 16px; }
.gold b { font: 600 13px ui-monospace, Menlo, Consolas, monospace; background: #dafbe1; color: #116329;
  padding: 1px 6px; border-radius: 4px; }
.stats { color: var(--muted); font-size: 12.5px; }
pre, .text { font: 12.5px/1.6 ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; white-space: pre-wrap;
  overflow-wrap: anywhere; margin: 0; }
.prompt { background: var(--bg); border-radius: 6px; padding: 8px 10px; margin: 8px 0 12px; color: #3d444d; }
.cards { display: grid; grid-template-columns: repeat(auto-fill, minmax(360px, 1fr)); gap: 12px; }
.card { border: 1px solid var(--line); border-left: 6px solid var(--line); border-radius: 6px;
  padding: 8px 10px 10px; background: var(--paper); min-width: 0; }
.card-head { display: flex; gap: 10px; align-items: center; margin-bottom: 4px; }
.idx { font-weight: 700; color: var(--muted); }
.total { font-size: 13px; }
.adv { margin-left: auto; font: 600 12px ui-monospace, Menlo, Consolas, monospace; padding: 1px 8px;
  border-radius: 10px; border: 1px solid rgba(0,0,0,.15); }
.rewards { display: flex; flex-wrap: wrap; gap: 4px 10px; font-size: 12px; color: var(--muted);
  margin-bottom: 6px; }
.reward b { color: var(--ink); font-weight: 600; }
.note { font-size: 12px; color: #9a6700; background: #fff8c5; border-radius: 4px; padding: 1px 6px;
  margin-bottom: 6px; }
.seg, .tok { unicode-bidi: isolate; }  /* a bidi control in model text (U+202E) reorders its own span only */
.seg { border-radius: 3px; padding: 1px 0; box-decoration-break: clone; -webkit-box-decoration-break: clone; }
.seg.nosig { color: #6e7781; }
.cut { display: inline-block; font: 600 10.5px/1.3 system-ui, sans-serif; color: #fff; background: #24292f;
  border-radius: 8px; padding: 0 5px; margin: 0 2px; vertical-align: 1px; white-space: nowrap; }
.cut sub { font-size: 8px; }
.tokens { margin-top: 8px; padding-top: 6px; border-top: 1px dotted var(--line); }
.row-label { font-size: 11px; color: var(--muted); margin-bottom: 2px; }
.tokens .text { font-size: 11.5px; }
.tok { box-shadow: inset -1px 0 rgba(255,255,255,.45); }
.tok.special { font-style: italic; opacity: .8; }
"""
