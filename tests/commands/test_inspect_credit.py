"""``psgrpo inspect`` end to end on the embedded checkpoint: the page's numbers are the trainer's credit."""

from __future__ import annotations

import html
import math
import re

import pytest

from psgrpo.commands.cli import main
from psgrpo.commands.inspect_credit import inspect
from psgrpo.data.arith import make_arith_dataset

pytestmark = pytest.mark.slow  # each test samples groups with the trainer: `make test-fast` skips it

TINY = [
    "--num_prompts", "2",
    "--num_generations", "4",
    "--per_device_train_batch_size", "4",  # one prompt per rollout call: two calls
    "--max_completion_length", "112",  # the warm-started model's answers take 60-110 tokens
]  # fmt: skip


def _run(tmp_path, method: str):
    out = tmp_path / f"{method}.html"
    page = inspect([*TINY, "--method", method, "--output_dir", str(tmp_path), "--output_file", str(out)])
    return page, out.read_text(encoding="utf-8")


def _check_groups(page) -> None:
    """Two groups of four; segments tile each completion; A_i is the group-normalised weighted reward."""
    assert len(page.prompts) == 2 and all(len(p.completions) == 4 for p in page.prompts)
    for prompt in page.prompts:
        rewards = [c.reward for c in prompt.completions]
        mean = sum(rewards) / 4
        std = math.sqrt(sum((r - mean) ** 2 for r in rewards) / 3)
        for c in prompt.completions:
            assert c.reward == pytest.approx(sum(c.rewards.values()))  # reward weights are 1
            assert c.outcome_advantage == pytest.approx((c.reward - mean) / (std + 1e-4), abs=1e-3)
            assert "".join(s.text for s in c.segments) == c.text
            spans = [s.tokens for s in c.segments]
            assert spans[0][0] == 0 and spans[-1][1] == len(c.tokens)
            assert all(a[1] == b[0] for a, b in zip(spans, spans[1:], strict=False))


def _token_advantages(c, segment):
    return [t.advantage for t in c.tokens[segment.tokens[0] : segment.tokens[1]]]


def test_vps_page_shows_confidence_and_the_hybrid_advantage(tmp_path):
    page, doc = _run(tmp_path, "vps")
    _check_groups(page)
    alpha = 1.2
    for c in (c for p in page.prompts for c in p.completions):
        assert c.probe0 is not None and 0 < c.probe0 <= 1
        previous = c.probe0
        for seg in c.segments:
            applied = seg.signal if seg.signal is not None and not c.notes else 0.0  # truncated: A_i only
            assert _token_advantages(c, seg) == pytest.approx(
                [c.outcome_advantage + alpha * applied] * (seg.tokens[1] - seg.tokens[0]), abs=1e-5
            )
            if seg.probe is not None:  # ΔC_k = C_k − C_{k−1}
                assert seg.signal == pytest.approx(seg.probe - previous, abs=1e-6)
                previous = seg.probe
        assert c.segments[-1].signal is None and len(c.segments) <= 4  # vps_max_segments
    assert any(not c.notes for p in page.prompts for c in p.completions)  # the hybrid formula was checked
    assert doc.count('<article class="card"') == 8 and doc.count("C<sub>0</sub>") == 8  # one C_0 per card
    assert not re.search(r"https?://", doc)


def test_ps_page_shows_step_scores_and_their_credit(tmp_path):
    page, doc = _run(tmp_path, "ps")
    _check_groups(page)
    for c in (c for p in page.prompts for c in p.completions):
        scores = [s.signal for s in c.segments]
        assert None not in scores
        for j, seg in enumerate(c.segments):
            assert 0.0 <= seg.details["raw score"] <= 1.0  # arithmetic verifier
            expected = c.outcome_advantage + scores[j]  # w = λ = 1; mode 'auto' is 'step' for the verifier
            assert _token_advantages(c, seg) == pytest.approx(
                [expected] * len(_token_advantages(c, seg)), abs=1e-4
            )
    assert doc.count('<article class="card"') == 8 and "r̃ (normalised step score)" in doc


def test_tree_page_shows_each_level_and_its_value_gain(tmp_path):
    """Default tree for G = 4: [2, 2], 112 // 2 = 56-token segments; siblings share their root's segment."""
    page, doc = _run(tmp_path, "tree")
    _check_groups(page)
    for prompt in page.prompts:
        cards = prompt.completions
        assert cards[0].segments[0].text == cards[1].segments[0].text  # one root, two leaves
        assert cards[2].segments[0].text == cards[3].segments[0].text
        for c in cards:
            assert 1 <= len(c.segments) <= 2 and c.segments[0].tokens[1] <= 56
            for seg in c.segments:  # w = 0, λ = 1: each token gets its segment's (V(node) − V(parent)) / σ
                assert _token_advantages(c, seg) == pytest.approx(
                    [seg.signal] * len(_token_advantages(c, seg))
                )
            root, leaf = c.segments[0].details, c.segments[-1].details
            assert root["V(parent)"] == pytest.approx(sum(x.reward for x in cards) / 4, abs=1e-4)
            assert leaf["V(node)"] == pytest.approx(c.reward, abs=1e-4)
    assert doc.count('<article class="card"') == 8 and "ΔV_k / σ (tree value gain)" in doc


def test_cli_inspect_grpo_writes_the_default_file(tmp_path, capsys):
    argv = ["inspect", *TINY, "--method", "grpo", "--first_prompt", "3", "--output_dir", str(tmp_path)]
    assert main(argv) == 0
    # the default file may sit in a trained run's folder: the line says the embedded checkpoint was sampled
    assert (
        f"wrote {tmp_path / 'inspect.html'} (2 prompts × 4 completions, grpo, sampled from the embedded"
        in (capsys.readouterr().out)
    )
    doc = (tmp_path / "inspect.html").read_text(encoding="utf-8")
    assert doc.count('<article class="card"') == 8 and "A_t per token" not in doc
    assert doc.count("A<sub>i</sub>") == 8
    rows = make_arith_dataset("test", n=5)  # --first_prompt 3: rows 3 and 4 of the held-out split
    assert html.escape(rows[3]["prompt"]) in doc and html.escape(rows[4]["prompt"]) in doc
    assert html.escape(rows[2]["prompt"]) not in doc


def test_bad_prompt_range_is_a_clear_error(tmp_path):
    with pytest.raises(ValueError, match="first_prompt"):
        inspect(["--first_prompt", "-1", "--output_dir", str(tmp_path)])
