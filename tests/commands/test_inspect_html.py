"""The credit viewer's renderer on hand-made data: escaping, colours, completeness, no external assets."""

from __future__ import annotations

import html
import math
import os
import re
import shutil
import subprocess

import pytest
from hypothesis import given
from hypothesis import strategies as st

from psgrpo.commands.inspect_html import (
    NEGATIVE_RGB,
    NEUTRAL_RGB,
    POSITIVE_RGB,
    CompletionView,
    InspectPage,
    PromptView,
    SegmentView,
    TokenView,
    diverging_color,
    page_scales,
    render_html,
)
from psgrpo.methods import get_method


def _rgb(color: str) -> tuple[int, int, int]:
    return tuple(int(color[i : i + 2], 16) for i in (1, 3, 5))


def _completion(parts: list[tuple[str, float | None]], adv: float, probes: bool = False) -> CompletionView:
    """A completion made of ``(text, signal)`` segments, one token per character (A_t = A_i + signal)."""
    segments, tokens, start = [], [], 0
    for k, (text, signal) in enumerate(parts, start=1):
        segments.append(
            SegmentView(
                text=text,
                tokens=(start, start + len(text)),
                signal=signal,
                probe=0.1 * k if probes and signal is not None else None,
                details={"raw score": 0.5},
            )
        )
        tokens += [TokenView(ch, adv + (signal or 0.0)) for ch in text]
        start += len(text)
    tokens.append(TokenView("<|endoftext|>", adv, special=True))
    return CompletionView(
        text="".join(t for t, _ in parts),
        rewards={"correctness": 2.0, "format": 0.8},
        reward=2.8,
        outcome_advantage=adv,
        segments=segments,
        tokens=tokens,
        probe0=0.05 if probes else None,
    )


def _page(method: str = "vps") -> InspectPage:
    probes = method == "vps"
    good = _completion(
        [("<reasoning>\nStep 1: 2 + 2 = 4\n", 0.3), ("</reasoning>\n", -0.1), ("<answer>4</answer>", None)],
        adv=1.0,
        probes=probes,
    )
    bad = _completion(
        [("<reasoning>\nStep 1: 2 + 2 = 5\n", -0.6), ('"x" & y', None)], adv=-1.0, probes=probes
    )
    bad.rewards, bad.reward = {"correctness": 0.0, "format": 0.2}, 0.2
    bad.notes = ["truncated (no EOS): <ΔC> not applied"]
    return InspectPage(
        method=method,
        prompts=[PromptView("Question: is 1 < 2 & 3 > 2?\n<script>alert(1)</script>", "4", [good, bad])],
        settings={"vps_alpha": "1.2", "checkpoint": "<embedded>"},
        signal_label={"vps": "ΔC_k", "ps": "r̃"}.get(method),
        legend=get_method(method).inspect.legend,
        unit=get_method(method).inspect.unit,
        probe_note=get_method(method).inspect.probe_note,
    )


# --------------------------------------------------------------------------------------------
# colours


def test_diverging_color_hand_values():
    assert diverging_color(0.0, 1.0) == "#f7f7f7"
    assert diverging_color(1.0, 1.0) == "#4393c3" and diverging_color(5.0, 1.0) == "#4393c3"  # clipped
    assert diverging_color(-2.0, 2.0) == "#d6604d"
    assert diverging_color(0.5, 1.0) == "#9dc5dd"  # halfway: 247 + 0.5·(67 − 247) = 157 = 0x9d …
    assert diverging_color(math.nan, 1.0) == diverging_color(1.0, 0.0) == "#f7f7f7"


@given(
    st.floats(-3, 3, allow_nan=False), st.floats(-3, 3, allow_nan=False), st.floats(0.01, 2, allow_nan=False)
)
def test_colour_is_monotone_in_the_value(a, b, vmax):
    low, high = sorted([a, b])
    blue_minus_red = [(rgb[2] - rgb[0]) for rgb in map(_rgb, (diverging_color(v, vmax) for v in (low, high)))]
    assert blue_minus_red[0] <= blue_minus_red[1]


def test_colour_scale_spans_the_anchors():
    values = [diverging_color(x / 10, 1.0) for x in range(-10, 11)]
    assert (
        _rgb(values[0]) == NEGATIVE_RGB
        and _rgb(values[10]) == NEUTRAL_RGB
        and _rgb(values[-1]) == POSITIVE_RGB
    )
    assert len(set(values)) == len(values)  # every step of 0.1 is a distinct colour


def test_page_scales_are_the_largest_magnitudes():
    signal, advantage = page_scales(_page())
    assert signal == pytest.approx(0.6) and advantage == pytest.approx(1.6)  # |−1 − 0.6|


# --------------------------------------------------------------------------------------------
# the document


def test_text_is_escaped():
    doc = render_html(_page())
    assert "&lt;answer&gt;4&lt;/answer&gt;" in doc and "&lt;reasoning&gt;" in doc
    assert "<answer>" not in doc and "<reasoning>" not in doc
    assert "<script" not in doc and "&lt;script&gt;alert(1)&lt;/script&gt;" in doc
    assert "1 &lt; 2 &amp; 3 &gt; 2" in doc and "&quot;x&quot; &amp; y" in doc
    assert "&lt;ΔC&gt; not applied" in doc and "&lt;embedded&gt;" in doc
    assert "&lt;|endoftext|&gt;" in doc
    # model text may hold bidi controls (U+202E): each span isolates them, so they reorder that span only
    assert ".seg, .tok { unicode-bidi: isolate; }" in doc


def test_every_segment_token_and_probe_is_present_in_order():
    page = _page()
    doc = render_html(page)
    completions = page.prompts[0].completions
    spans = re.findall(r'<span class="seg[^"]*"[^>]*>(.*?)</span>', doc, flags=re.S)
    assert spans == [html.escape(s.text, quote=True) for c in completions for s in c.segments]
    assert len(re.findall(r'<span class="tok', doc)) == sum(len(c.tokens) for c in completions)
    probes = sum(1 for c in completions for s in c.segments if s.probe is not None)
    assert doc.count('<span class="cut"') == 1 + probes + len(completions)  # legend sample + C_k + C_0
    assert doc.count('<article class="card"') == 2 and "A<sub>i</sub> +1.000" in doc


def test_tooltips_carry_exact_numbers_and_colours_follow_the_signal():
    page = _page()
    doc = render_html(page)
    first = page.prompts[0].completions[0].segments[0]
    assert f'title="segment 1 · tokens 0–{first.tokens[1] - 1}&#10;ΔC_k = +0.3&#10;raw score = +0.5"' in doc
    assert 'title="token 0 &#x27;&lt;&#x27;&#10;A_t = +1.3"' in doc  # repr of the token, exact A_t
    assert "C_1 = 0.1&#10;after token" in doc and "A_i = -1&quot;" not in doc and 'A_i = -1"' in doc
    vmax = 0.6
    assert f"background: {diverging_color(-0.6, vmax)}" in doc and diverging_color(-0.6, vmax) == "#d6604d"
    assert f"background: {diverging_color(0.3, vmax)}" in doc
    assert 'class="seg nosig"' in doc  # the segment after the last boundary: no process signal


def test_no_external_resources():
    doc = render_html(_page())
    assert not re.search(r"https?://", doc)
    for value in re.findall(r"""(?:src|href)\s*=\s*["']?([^"'\s>]*)""", doc, flags=re.I):
        assert not value.startswith(("http:", "https:", "//")), value
    assert "<script" not in doc and "<link" not in doc and "@import" not in doc


def test_grpo_page_shows_only_the_outcome_advantage():
    page = _page("grpo")
    for c in page.prompts[0].completions:
        c.segments = [SegmentView(c.text, (0, len(c.tokens)))]
    doc = render_html(page)
    assert "A_t per token" not in doc and 'id="show-tokens"' not in doc and "segments:" not in doc
    assert doc.count('class="seg plain"') == 2 and not re.search(r'class="seg[^"]*" style=', doc)


def test_ps_page_labels_steps():
    doc = render_html(_page("ps"))
    assert "step 1 · tokens" in doc and "segments: r̃" in doc and "C<sub>0</sub>" not in doc


# --------------------------------------------------------------------------------------------
# a real browser: skipped where Chromium is not installed, except where PSGRPO_REQUIRE_CHROMIUM=1
# (.ci/run installs it and sets that, so CI never skips the render check)

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


def test_page_renders_in_headless_chromium(tmp_path):
    if CHROMIUM is None:
        if os.environ.get("PSGRPO_REQUIRE_CHROMIUM") == "1":
            pytest.fail("PSGRPO_REQUIRE_CHROMIUM=1 but no chromium on PATH (apt-get install chromium)")
        pytest.skip("headless Chromium not installed (apt-get install chromium)")
    page = tmp_path / "page.html"
    page.write_text(render_html(_page()), encoding="utf-8")
    shot = tmp_path / "shot.png"
    subprocess.run(
        [
            CHROMIUM,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--no-first-run",
            f"--user-data-dir={tmp_path / 'profile'}",
            f"--screenshot={shot}",
            "--window-size=1280,2000",
            page.resolve().as_uri(),
        ],
        check=True,
        capture_output=True,
        timeout=120,
    )
    data = shot.read_bytes()
    # a blank page's screenshot is about 12 kB, this one about 115 kB
    assert data.startswith(b"\x89PNG\r\n\x1a\n") and len(data) > 40_000
    try:
        from PIL import Image
    except ImportError:  # Pillow is optional: the byte checks above still apply
        return
    image = Image.open(shot).convert("RGB")
    assert image.size == (1280, 2000)
    colours = {rgb for _, rgb in image.getcolors(maxcolors=1 << 20)}
    assert len(colours) > 50  # text, cards, colour scales: not a blank page
    assert NEGATIVE_RGB in colours  # the strongest red segment was painted with the scale's end colour
