"""LaTeX versions of labelled solutions: every equation of every step rewritten in LaTeX, in one of
several conventions, same steps, same labels (the LaTeX rows of docs/scorers.md).

Models write their arithmetic in LaTeX in many ways. This deterministic converter finds each plain
equation a step states (a number, operators with up to three unit words between the numbers, ``=``
and a result) and rewrites it in one of these conventions:

* ``inline``: ``\\(3 \\times \\$68 = \\$204\\)``, ``\\frac{a}{b}`` for a glued fraction, ``\\%``;
* ``dollars``: ``$\\frac{30}{100} \\cdot 180 = 54$``, ``\\dfrac``, thousands as ``{,}``;
* ``display``: ``\\[ 50 \\text{ km/hr} \\times 3 \\text{ days} = 150 \\text{ km} \\]``, ``\\div``;
* ``double``: ``$$ 2 \\cdot 3 = 6 $$``, thousands as ``\\,``, a closing ``#### n`` as ``\\boxed{n}``;
* ``mixed`` (default): the convention of each row chosen by a hash of its id;
* ``plain``: no LaTeX (with ``--currency``, the steps in another currency only).

``--currency £`` (or ``€ ¥ ₹``) first writes every ``$`` amount of the steps in that currency; LaTeX keeps
the sign as written (``\\(3 \\times £68 = £204\\)``), where a dollar is ``\\$``.

``--markdown`` then writes each step the way a chat model formats it: its ``Step k:`` label in bold, each
equation on a bullet line of its own (``- 3 + 4 = 7``), and with ``plain`` the equation's result in bold
(``= **7**``); LaTeX equations keep their delimiters on the bullet line (``- \\(3 + 4 = 7\\)``).

Equations it cannot delimit (words for numbers, algebra) stay as written, as they would in a
model's LaTeX. Usage::

    python benchmarks/scorers/latex_versions.py --data ../shared/data/gsm8k_step_labels/wrong_dev.jsonl \\
        --convention mixed --output /tmp/wrong_dev_latex.jsonl
    python benchmarks/scorers/latex_versions.py --data /tmp/dev_all.jsonl --convention plain --currency £ \\
        --output /tmp/dev_pounds.jsonl
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
from pathlib import Path

from psgrpo.rewards.numbers import CURRENCY_PATTERN, CURRENCY_SIGNS

CONVENTIONS = ("inline", "dollars", "display", "double")
CURRENCIES = tuple(CURRENCY_SIGNS)

_NUM = rf"(?<![\d.]){CURRENCY_PATTERN}?(?:\d[\d,]*(?:\.\d+)?|\.\d+)%?"
_UNIT = r"(?:\s*(?!(?:x|X|times|is|and|of)\b)[A-Za-z]+(?:/[A-Za-z]+)?){0,3}"
_OP = r"\s*(?:[-+*/×÷]|\bx\b)\s*"
_EQUATION = re.compile(
    rf"(?P<eq>\(?{_NUM}\)?{_UNIT}(?:{_OP}\(?{_NUM}\)?{_UNIT})+\s*=\s*{_NUM})(?P<unit>\s*[A-Za-z]+(?:/[A-Za-z]+)?)?",
)
_TOKEN = re.compile(
    rf"(?P<num>{_NUM})|(?P<op>[-+*/×÷]|\bx\b)|(?P<word>[A-Za-z]+(?:/[A-Za-z]+)?)|(?P<other>\S)"
)


def _number(text: str, convention: str) -> str:
    """A number as LaTeX: ``\\$``, ``\\%``, thousands ``{,}`` or ``\\,``, glued fractions ``\\frac``."""
    sign = text[0] if text[0] in CURRENCIES else ""
    body, percent = text.removeprefix(sign).rstrip("%"), text.endswith("%")
    if convention == "double":
        body = body.replace(",", "\\,")
    elif convention in {"dollars", "display"}:
        body = body.replace(",", "{,}")
    return ("\\$" if sign == "$" else sign) + body + ("\\%" if percent else "")


def _math(equation: str, convention: str) -> str:
    """The equation's tokens rewritten as LaTeX math (without delimiters)."""
    times = {"inline": "\\times", "dollars": "\\cdot", "display": "\\times", "double": "\\cdot"}[convention]
    frac = "\\dfrac" if convention == "dollars" else "\\frac"
    tokens = [(m.lastgroup, m.group()) for m in _TOKEN.finditer(equation)]
    out: list[str] = []
    i = 0
    while i < len(tokens):
        kind, text = tokens[i]
        nxt = tokens[i + 1 : i + 3]
        glued_fraction = (
            kind == "num"
            and len(nxt) == 2
            and nxt[0] == ("op", "/")
            and nxt[1][0] == "num"
            and convention != "display"
            and not {text[0], nxt[1][1][0]} & set(CURRENCIES)
        )
        if glued_fraction:
            out.append(f"{frac}{{{_number(text, convention)}}}{{{_number(nxt[1][1], convention)}}}")
            i += 3
            continue
        if kind == "num":
            out.append(_number(text, convention))
        elif kind == "op":
            out.append(
                {
                    "*": times,
                    "×": times,
                    "x": times,
                    "÷": "\\div",
                    "/": "\\div" if convention == "display" else "/",
                }.get(text, text)
            )
        elif kind == "word":
            out.append(f"\\text{{ {text}}}")
        else:
            out.append(text)
        i += 1
    return " ".join(out)


def _delimit(math: str, convention: str) -> str:
    return {
        "inline": f"\\({math}\\)",
        "dollars": f"${math}$",
        "display": f"\n\\[ {math} \\]\n",
        "double": f"$$ {math} $$",
    }[convention]


def to_latex(step: str, convention: str, bullets: bool = False) -> str:
    """One step with each plain equation rewritten in ``convention`` (starting a bullet line with ``bullets``)."""
    bullet = "\n- " if bullets else ""

    def rewrite(match: re.Match[str]) -> str:
        unit = match["unit"] or ""
        if convention == "display" and unit.strip():
            return bullet + _delimit(_math(match["eq"] + unit, convention), convention)
        return bullet + _delimit(_math(match["eq"], convention), convention) + unit

    text = _EQUATION.sub(rewrite, step)
    if convention == "double":
        text = re.sub(r"####\s*(\S+)", lambda m: f"The answer is $\\boxed{{{m.group(1)}}}$.", text)
    return text


_CHAIN = re.compile(  # an equation and what continues it: 58 - (20 * 2) = 58 - 40 = 18
    rf"(?P<eq>\(?{_NUM}\)?{_UNIT}(?:{_OP}\(?{_NUM}\)?{_UNIT})+\s*=\s*{_NUM}"
    rf"(?:(?:{_OP}\(?{_NUM}\)?{_UNIT})*\s*=\s*{_NUM})*)"
)


def bold_label(step: str) -> str:
    """``Step 2:`` opening a step in bold, as chat models write it."""
    return re.sub(r"^(\s*)(Step \d+:)", r"\1**\2**", step)


def to_markdown(step: str) -> str:
    """One plain step as a chat model formats it: bold label, each equation (a chain whole) starting a
    bullet line, its last result in bold (see the module)."""

    def bullet(match: re.Match[str]) -> str:
        lhs, rhs = match["eq"].rsplit("=", 1)
        return f"\n- {lhs}= **{rhs.strip()}**"

    return _CHAIN.sub(bullet, bold_label(step))


def convention_of(row_id: object, convention: str) -> str:
    """The convention of a row: ``convention``, or for ``mixed`` one chosen by a hash of the id."""
    if convention != "mixed":
        return convention
    digest = hashlib.sha256(str(row_id).encode()).digest()
    return CONVENTIONS[digest[0] % len(CONVENTIONS)]


def in_currency(step: str, sign: str) -> str:
    """``step`` with each dollar amount (``$`` before a digit or a minus and a digit) in ``sign`` instead."""
    return re.sub(r"\$(?=-?\d)", sign, step) if sign != "$" else step


def convert_rows(
    rows: list[dict], convention: str, currency: str = "$", markdown: bool = False
) -> list[dict]:
    """Each row with its steps in ``currency``, in Markdown if asked, then in LaTeX (not for ``plain``), and a
    ``latex_convention`` field."""
    out = []
    for row in rows:
        chosen = convention_of(row["id"], convention)
        steps = [in_currency(step, currency) for step in row["steps"]]
        if markdown and chosen == "plain":
            steps = [to_markdown(step) for step in steps]
        elif chosen != "plain":
            steps = [
                to_latex(bold_label(step) if markdown else step, chosen, bullets=markdown) for step in steps
            ]
        out.append({**row, "steps": steps, "latex_convention": chosen})
    return out


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", nargs="+", required=True, help="JSONL files in ProcessBench's format")
    parser.add_argument("--convention", default="mixed", choices=(*CONVENTIONS, "mixed", "plain"))
    parser.add_argument(
        "--currency", default="$", choices=CURRENCIES, help="write the steps' $ amounts in this"
    )
    parser.add_argument("--markdown", action="store_true", help="bold labels, equations on bullet lines")
    parser.add_argument("--output", required=True)
    args = parser.parse_args(argv)
    rows = [
        json.loads(line) for path in args.data for line in Path(path).read_text().splitlines() if line.strip()
    ]
    converted = convert_rows(rows, args.convention, args.currency, args.markdown)
    changed = sum(new["steps"] != old["steps"] for new, old in zip(converted, rows, strict=True))
    Path(args.output).write_text("".join(json.dumps(row, ensure_ascii=False) + "\n" for row in converted))
    style = f"{args.convention}, {args.currency}" + (", markdown" if args.markdown else "")
    print(f"{args.output}: {len(rows)} rows, {changed} changed ({style})")


if __name__ == "__main__":
    main()
