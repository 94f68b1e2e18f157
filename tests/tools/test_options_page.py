"""docs/options.md is generated from the code's help texts (tools/options_page.py) and kept current."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

import pytest
from hypothesis import given
from hypothesis import strategies as st

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "options.md"


@pytest.fixture(scope="module")
def options_page(load_tool):
    """tools/options_page.py as a module."""
    return load_tool("options_page")


def test_docs_page_is_current(options_page):
    assert PAGE.read_text() == options_page.render(), (
        "docs/options.md is stale: run `python tools/options_page.py --write docs/options.md`"
    )


def test_page_lists_every_psgrpo_field_and_scorer_keyword(options_page):
    from psgrpo.config.process_grpo_config import ProcessGRPOConfig
    from psgrpo.data.tasks import TaskConfig

    page = options_page.render()
    for name in [*options_page.own_fields(ProcessGRPOConfig), *TaskConfig.__dataclass_fields__]:
        assert f"| `--{name}` |" in page, name
    assert "| `reference_weight` | `0.5` | weight of the step reaching a reference value (>= 0). |" in page
    assert "| `final_step_reaches_answer` | `True` |" in page
    assert str(ROOT) not in page, "the page must not depend on where the checkout is"


def test_page_has_a_section_for_every_subcommand(options_page):
    from psgrpo.commands.cli import SUBCOMMANDS

    page = options_page.render()
    missing = [name for name in SUBCOMMANDS if f"## `psgrpo {name}`" not in page]
    assert not missing, f"tools/options_page.py has no section for: {missing}"


@given(st.text())
def test_a_cell_is_one_line_whose_pipes_are_escaped(options_page, text):
    cell = options_page._cell(text)
    assert "\n" not in cell and "\r" not in cell
    assert cell.replace("\\|", "").count("|") == 0
    assert cell.replace("\\|", "|").replace("`", "") == " ".join(text.split()).replace("`", "")  # same words


@dataclass
class _Example:
    """An option class in the shape of ProcessGRPOConfig's."""

    mode: Literal["step", "min"] = field(default="step", metadata={"help": "Token credit | from ``steps``."})
    weights: list[float] = field(default_factory=lambda: [0.6, 0.4], metadata={"help": "Two\n   weights."})
    hidden: int = 3


def test_field_rows_render_literal_choices_factories_pipes_and_skip_fields_without_help(options_page):
    rows = options_page.field_rows(_Example)
    assert rows == [
        "| `--mode` | one of `step`, `min` | `'step'` | Token credit \\| from `steps`. |",
        "| `--weights` | list[float] | `[0.6, 0.4]` | Two weights. |",
    ]


def _gsm8k_scorer(prompts, steps, solution="", strict=True, **columns):
    """Scores each line of a GSM8K solution such as "Natalia sold 48/2 = 24 clips in May."

    Args:
        solution: the gold worked solution, e.g. "Natalia sold 48/2 = <<48/2=24>>24 clips in May.
            Natalia sold 48+24 = <<48+24=72>>72 clips altogether."
        strict: refuse a step whose equation does not parse.
        **columns: the other dataset columns.
    """


def test_signature_rows_read_defaults_and_google_style_args(options_page):
    assert options_page.signature_rows(_gsm8k_scorer) == [
        "| `prompts` | required |  |",
        "| `steps` | required |  |",
        "| `solution` | `''` | the gold worked solution, e.g. \"Natalia sold 48/2 = <<48/2=24>>24 clips in May. "
        'Natalia sold 48+24 = <<48+24=72>>72 clips altogether." |',
        "| `strict` | `True` | refuse a step whose equation does not parse. |",
        "| `**columns` | — | the other dataset columns. |",
    ]


def test_main_refuses_unknown_arguments(options_page, capsys):
    assert options_page.main(["--wrte", "docs/options.md"]) == 2
    assert "usage: python tools/options_page.py" in capsys.readouterr().err
