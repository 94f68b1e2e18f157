"""Report driver of the credit-gaming suite: the relative-credit tables of docs/robustness.md.

``python experiments/credit_gaming.py`` prints, for every scorer of
:data:`psgrpo.ps.credit_gaming.SCORERS`, a table of gamed variants × ``ps_advantage_mode`` whose
cells are the variant's mean token advantage minus the honest solution's in the same group
(deterministic, no training, CPU, a few seconds); ``--problem 1`` the second problem; ``--raw`` the
arithmetic verifier's raw step scores of each variant instead. The variants and the credit path
live in the package (:mod:`psgrpo.ps.credit_gaming`), which tests/ps/test_credit_gaming.py runs.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence

from psgrpo.ps.credit_gaming import PROBLEMS, CreditRow, Problem, credit_table, gamed_variants
from psgrpo.ps.scorers.arithmetic import ArithmeticVerifier
from psgrpo.ps.segmentation import get_segmenter
from psgrpo.tiny.tokenizer import build_char_tokenizer


def markdown_tables(rows: Sequence[CreditRow], problem: int = 0) -> str:
    """One table per scorer: variants × modes, the relative credit of ``problem``'s variants
    (bold when gaming pays more than 0.001)."""
    out = []
    modes = list(dict.fromkeys(row.mode for row in rows))
    for scorer in dict.fromkeys(row.scorer for row in rows):
        cells = {(r.variant, r.mode): r.relative for r in rows if r.scorer == scorer and r.problem == problem}
        variants = list(dict.fromkeys(variant for variant, _ in cells))
        out.append(f"**{scorer}**\n")
        out.append("| variant | " + " | ".join(f"`{mode}`" for mode in modes) + " |")
        out.append("|---|" + "---:|" * len(modes))
        for variant in variants:
            values = [cells[variant, mode] for mode in modes]
            out.append(
                f"| {variant} | "
                + " | ".join(f"**{v:+.3f}**" if v > 1e-3 else f"{v:+.3f}" for v in values)
                + " |"
            )
        out.append("")
    return "\n".join(out)


def raw_scores_table(problem: Problem = PROBLEMS[0]) -> str:
    """A markdown table: each variant's steps (``markers`` segmenter) and the verifier's raw scores."""
    verifier, segmenter = ArithmeticVerifier(), get_segmenter("markers")
    lines = ["| variant | steps | raw step scores (arithmetic verifier) |", "|---|---:|---|"]
    for name, text in gamed_variants(problem).items():
        steps = [text[start:end] for start, end in segmenter(text)]
        scores = verifier([problem.question], [steps], answer=[str(problem.answer)])[0]
        lines.append(f"| {name} | {len(steps)} | {', '.join(f'{s:.1f}' for s in scores)} |")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> None:
    """Print the relative-credit tables (``python experiments/credit_gaming.py``), or ``--raw`` step scores."""
    parser = argparse.ArgumentParser(description="Relative credit of gamed variants of honest solutions.")
    parser.add_argument(
        "--problem", type=int, default=0, choices=range(len(PROBLEMS)), help="index into PROBLEMS (default 0)"
    )
    parser.add_argument("--temperature", type=float, default=0.1, help="ps_min_temperature (default 0.1)")
    parser.add_argument("--raw", action="store_true", help="print the verifier's raw step scores instead")
    args = parser.parse_args(argv)
    if args.raw:
        print(raw_scores_table(PROBLEMS[args.problem]))
        return
    rows = credit_table(build_char_tokenizer(), temperature=args.temperature)
    print(markdown_tables(rows, args.problem))
    worst = max(rows, key=lambda row: row.relative)
    print(
        f"largest relative credit over all problems: {worst.relative:+.3f} ({worst.scorer}, {worst.mode}, {worst.variant})"
    )


if __name__ == "__main__":
    main()
