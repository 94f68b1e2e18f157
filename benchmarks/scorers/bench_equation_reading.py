"""How well the step verifier reads equations from natural text, measured on GSM8K's gold lines.

    python benchmarks/scorers/bench_equation_reading.py [--gsm8k-dir DIR] [--splits test train]
        [--show 20] [--limit N] [--whole]

GSM8K's gold solutions state their arithmetic twice: in words (``She has 16 - 3 = 13 eggs``) and in
calculator annotations (``<<16-3=13>>``). The annotations are the labels; the text is what a model
writes. Each reasoning line (before ``####``) is read with the annotations removed (``16 - 3 =
<<16-3=13>>13`` becomes ``16 - 3 = 13``, as a policy writes it) by the project's equation reader,
:func:`psgrpo.ps.scorers.equations.extract_step`, and what it read is compared with the line's
annotations. Definitions (per line, then summed over lines):

* An annotation's **value** is the number right of its ``=`` (``<<16-3=13>>`` → 13).
* An annotation is **stated by an equation in the text** when the text right before it ends with
  ``=`` (an optional ``$`` or sign between them): ``16 - 3 = <<16-3=13>>13``, ``9 * 2 =
  $<<9*2=18>>18``. Otherwise the text only names the value (``So she has <<16-3=13>>13 left``,
  ``half of 30 is <<30/2=15>>15``): there is no ``=`` equation to read, and such annotations are
  **left out of the recall denominator** and counted apart (``without '='``); how many of them the
  reader still finds (from words: ``of``, ``is``) is reported too.
* **Recall** = annotations stated by an equation in the text whose value is the result (right side)
  of an equation read from the line / annotations stated by an equation in the text. Each read
  equation is matched to at most one annotation of the same value (so two annotations of value 6
  need two equations stating 6).
* **Precision** = equations read whose result is the value of one of the line's annotations /
  all equations read from lines that carry at least one annotation. A **false read** is an
  equation read there whose result is no annotation's value in its line: prose read as
  arithmetic (``5 days a week for 3 weeks``), or a wrong cut of a real equation.
* Lines **without any annotation** have no labels (GSM8K's annotators left some equations
  unannotated: ``24/3 = 8.``): equations read there are counted apart, with how many of them hold
  (a true equation in a gold line is arithmetic the text states, not prose read as arithmetic;
  one that fails is most likely a false read). They are not in the precision.

``--whole`` also reads each gold solution whole, as one multi-line step with its annotations removed
(a model's step may hold several lines, and display math several rows): how many equations the reader
finds and how many of them fail. A gold solution's arithmetic holds, so each failure is a misread (or
a typo in the gold text); ``--show`` lists them.

``--show N`` lists N false reads, N reads on unannotated lines and N misses of each split.

A result written as a percentage matches the annotation's value as written or as hundredths
(``50% = <<50/100=0.5>>``). The output is a markdown table on stdout, one row per split.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path

from psgrpo.data.gsm8k import solution_steps
from psgrpo.ps.scorers.equations import Equation, extract_step
from psgrpo.rewards.numbers import parse_number

REPO = Path(__file__).resolve().parents[2]
ANNOTATION_RE = re.compile(r"<<(?P<expr>[^<>]*)=(?P<result>[^<>=]*)>>")
_EQUALS_BEFORE_RE = re.compile(r"=\s*[-−]?\s*\$?\s*[-−]?$")


def default_data_dir() -> Path:
    """``$PSGRPO_GSM8K_DIR`` if set, else the shared copy next to the repository."""
    return Path(os.environ.get("PSGRPO_GSM8K_DIR") or REPO.parent / "shared" / "data" / "gsm8k")


@dataclass(frozen=True)
class Annotation:
    """One ``<<expr=value>>`` of a gold line: its value, and whether the text states it after ``=``."""

    value: Fraction
    after_equals: bool


def annotations(line: str) -> list[Annotation]:
    """The annotations of ``line`` whose value is a number (others, if any, are skipped)."""
    found = []
    for match in ANNOTATION_RE.finditer(line):
        value = parse_number(match["result"])
        if value is not None:
            found.append(Annotation(value, bool(_EQUALS_BEFORE_RE.search(line[: match.start()]))))
    return found


def strip_annotations(line: str) -> str:
    """The line as a model writes it: every ``<<...>>`` removed, the visible result kept."""
    return ANNOTATION_RE.sub("", line)


def _values(equation: Equation) -> set[Fraction]:
    """The values an equation's result may stand for: as evaluated, and for a percentage also as
    written or as hundredths."""
    if equation.rhs_value is None:
        return set()
    if "%" not in equation.rhs_text:
        return {equation.rhs_value}
    return {equation.rhs_value, equation.rhs_value * 100, equation.rhs_value / 100}


@dataclass
class Counts:
    """Sums over the lines of one split (see the module docstring for the definitions)."""

    lines: int = 0
    annotations: int = 0
    with_equals: int = 0
    hits: int = 0
    without_equals: int = 0
    hits_without_equals: int = 0
    reads: int = 0
    true_reads: int = 0
    false_reads: list[tuple[str, str]] = field(default_factory=list)
    unlabelled_reads: list[tuple[str, str, bool]] = field(default_factory=list)
    misses: list[str] = field(default_factory=list)

    @property
    def recall(self) -> float:
        return self.hits / self.with_equals if self.with_equals else float("nan")

    @property
    def precision(self) -> float:
        return self.true_reads / self.reads if self.reads else float("nan")


def measure_line(line: str, counts: Counts) -> None:
    """Read one gold line without its annotations and add what was read to ``counts``."""
    labels = annotations(line)
    text = strip_annotations(line)
    equations = extract_step(text).equations
    counts.lines += 1
    counts.annotations += len(labels)
    counts.with_equals += sum(a.after_equals for a in labels)
    counts.without_equals += sum(not a.after_equals for a in labels)
    label_values = {a.value for a in labels}
    unmatched = list(equations)
    missed = False
    for label in sorted(labels, key=lambda a: not a.after_equals):  # '=' annotations claim first
        match = next((eq for eq in unmatched if label.value in _values(eq)), None)
        if match is not None:
            unmatched.remove(match)
            counts.hits += label.after_equals
            counts.hits_without_equals += not label.after_equals
        elif label.after_equals:
            missed = True
    if missed:
        counts.misses.append(text)
    if not labels:
        counts.unlabelled_reads += [(f"{eq.lhs_text} = {eq.rhs_text}", text, eq.holds) for eq in equations]
        return
    counts.reads += len(equations)
    for equation in equations:
        if _values(equation) & label_values:
            counts.true_reads += 1
        else:
            counts.false_reads.append((f"{equation.lhs_text} = {equation.rhs_text}", text))


def measure(solutions: Iterable[str]) -> Counts:
    """:class:`Counts` over every reasoning line of the given GSM8K gold solutions."""
    counts = Counts()
    for solution in solutions:
        for line in solution_steps(solution):
            measure_line(line, counts)
    return counts


@dataclass
class WholeCounts:
    """Equations read from gold solutions read whole (``--whole``), and those that fail."""

    solutions: int = 0
    equations: int = 0
    failures: list[tuple[str, str]] = field(default_factory=list)  # (equation read, solution)


def measure_whole(solutions: Iterable[str]) -> WholeCounts:
    """Read each solution's reasoning (before ``####``), annotations removed, as one step."""
    counts = WholeCounts()
    for solution in solutions:
        text = strip_annotations("\n".join(solution_steps(solution)))
        equations = extract_step(text).equations
        counts.solutions += 1
        counts.equations += len(equations)
        counts.failures += [(f"{eq.lhs_text} = {eq.rhs_text}", text) for eq in equations if not eq.holds]
    return counts


def load_solutions(path: Path, limit: int | None = None) -> list[str]:
    """The ``answer`` fields of a GSM8K JSONL file (the first ``limit`` rows)."""
    rows = []
    with path.open() as handle:
        for line in handle:
            if line.strip():
                rows.append(json.loads(line)["answer"])
            if limit is not None and len(rows) == limit:
                break
    return rows


def markdown_table(results: Sequence[tuple[str, Counts]]) -> str:
    """One row per split: lines, annotations, the recall denominator, recall, reads, precision,
    and the equations read on lines without annotations (how many hold)."""
    head = (
        "| split | lines | annotations | stated after '=' (recall denominator) | recall (hits) | "
        "without '=' (left out) | of those read anyway | equations read (annotated lines) | false reads | "
        "precision | read on unannotated lines (hold) |\n|---|---|---|---|---|---|---|---|---|---|---|"
    )
    rows = [
        f"| {name} | {c.lines} | {c.annotations} | {c.with_equals} | {c.recall:.4f} ({c.hits}) | "
        f"{c.without_equals} | {c.hits_without_equals} | {c.reads} | {len(c.false_reads)} | "
        f"{c.precision:.4f} | {len(c.unlabelled_reads)} ({sum(r[2] for r in c.unlabelled_reads)}) |"
        for name, c in results
    ]
    return "\n".join([head, *rows])


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--gsm8k-dir", type=Path, default=None, help="directory with test.jsonl / train.jsonl"
    )
    parser.add_argument("--splits", nargs="+", default=["test", "train"])
    parser.add_argument("--limit", type=int, default=None, help="first N solutions of each split")
    parser.add_argument("--show", type=int, default=0, help="list N false reads and N misses per split")
    parser.add_argument(
        "--whole", action="store_true", help="also read each solution whole, as one multi-line step"
    )
    args = parser.parse_args(argv)
    directory = args.gsm8k_dir or default_data_dir()
    results = []
    for split in args.splits:
        path = directory / f"{split}.jsonl"
        if not path.is_file():
            sys.exit(f"bench_equation_reading: GSM8K {split} split not found at {path}; pass --gsm8k-dir DIR")
        counts = measure(load_solutions(path, args.limit))
        results.append((split, counts))
        if args.show:
            print(f"## {split}: false reads (equation read | line)")
            for read, line in counts.false_reads[: args.show]:
                print(f"- `{read}` | {line}")
            print(f"## {split}: reads on lines without annotations (equation read | holds | line)")
            for read, line, holds in counts.unlabelled_reads[: args.show]:
                print(f"- `{read}` | {holds} | {line}")
            print(f"## {split}: misses (lines with an '=' annotation whose value no equation read states)")
            for line in counts.misses[: args.show]:
                print(f"- {line}")
    print(markdown_table(results))
    if args.whole:
        print(
            "\n| split | solutions read whole | equations read | fail (misreads or gold typos) |\n|---|---|---|---|"
        )
        for split, _ in results:
            whole = measure_whole(load_solutions(directory / f"{split}.jsonl", args.limit))
            print(f"| {split} | {whole.solutions} | {whole.equations} | {len(whole.failures)} |")
            for read, text in whole.failures[: args.show]:
                print(f"- `{read}` | {text[:200]!r}")
    flags = " --whole" if args.whole else ""
    print(f"\n`python benchmarks/scorers/bench_equation_reading.py --splits {' '.join(args.splits)}{flags}`")


if __name__ == "__main__":
    main()
