"""The per-method tables of ``psgrpo compare``: the paired Δ against grpo at each evaluation step,
and at each run's last evaluation where the errors are, how long the completions are, and what the
process signal was worth while training.

Each table is a pure function over the rows of :mod:`psgrpo.compare.report` (one row per
method, seed and evaluation step) and returns Markdown lines, empty when no run logged its columns.
A cell of the last-evaluation tables is the mean ± 95% CI over seeds, with the paired Δ against
``reference`` in brackets; a cell of the step table is the paired Δ alone.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from psgrpo.compare.intervals import mean_interval
from psgrpo.compare.report import REFERENCE_METHOD, difference_cell, final_values, paired_differences

# psgrpo eval's error breakdown (shares of held-out completions), the columns of error_table
ERROR_COLUMNS = (("error_type/calculation", "calculation errors"), ("error_type/logic", "logic errors"),
                 ("error_type/format", "format errors"), ("step_complete_rate", "every step checks"))  # fmt: skip


def final_table(
    rows: Sequence[dict[str, Any]],
    columns: Sequence[tuple[str, str]],
    reference: str = REFERENCE_METHOD,
    relative: Sequence[str] = (),
) -> list[str]:
    """Markdown table lines: per method, each ``(column, name)``'s value at each seed's last evaluation
    (mean ± 95% CI over seeds) with the paired Δ against ``reference`` in brackets, as a relative
    change in percent for the ``relative`` columns; only the columns some row has (none: ``[]``)."""
    present = [(c, name) for c, name in columns if any(row.get(c) is not None for row in rows)]
    if not present:
        return []
    lines = [
        "| method | " + " | ".join(name for _, name in present) + " |",
        "|---" * (len(present) + 1) + "|",
    ]
    for method in dict.fromkeys(row["method"] for row in rows):
        cells = [method]
        for column, _ in present:
            values = final_values(rows, method, column)
            cell = str(mean_interval(values)) if values else "—"
            differences = list(
                paired_differences(rows, method, reference, column, column in relative).values()
            )
            if method != reference and differences:
                if column in relative:
                    cell += f" ({difference_cell(mean_interval([100 * d for d in differences]), '.1f', '%')})"
                else:
                    cell += f" ({difference_cell(mean_interval(differences))})"
            cells.append(cell)
        lines.append("| " + " | ".join(cells) + " |")
    return lines


def error_table(rows: Sequence[dict[str, Any]], reference: str = REFERENCE_METHOD) -> list[str]:
    """Markdown lines: each method's final share of each :data:`ERROR_COLUMNS` kind (mean ± 95% CI
    over seeds, the paired Δ against ``reference`` in brackets); empty when no run logged them.

    It says *where* a method moved the errors: an arithmetic step scorer sees calculation errors
    only, not logic errors, so a process method can trade one for the other.
    """
    table = final_table(rows, ERROR_COLUMNS, reference)
    note = (
        "Shares of held-out completions at each run's last evaluation, mean ± 95% CI over seeds; in brackets "
        f"the paired Δ against `{reference}` (* excludes 0). Calculation: a written equation fails; logic: every "
        "equation holds and the answer is wrong; format: no parsable answer; every step checks: each step's "
        "arithmetic holds (docs/evaluation.md)."
    )
    return ["## Where the errors are (final evaluation)", "", *table, "", note, ""] if table else []


LENGTH_COLUMNS = (("mean_tokens", "held-out tokens"), ("train/mean_tokens", "training tokens, last window"),
                  ("train/unnecessary_step_frac", "unneeded steps, last window"))  # fmt: skip


def length_table(rows: Sequence[dict[str, Any]], reference: str = REFERENCE_METHOD) -> list[str]:
    """Markdown lines: does a method write less? Final held-out length, and the sampled training
    completions' length and share of unneeded steps over the last evaluation window, each with the
    paired Δ against ``reference`` (relative for lengths). Empty when no run has these columns."""
    table = final_table(rows, LENGTH_COLUMNS, reference, relative=("mean_tokens", "train/mean_tokens"))
    note = (
        "Mean tokens per completion: held-out (greedy) at the last evaluation, and training (sampled) averaged "
        "over the steps since the evaluation before it; unneeded steps: the share of written step equations "
        "whose result is never used (`diag/unnecessary_step_frac`, logged with `--diagnostics true`). Mean ± 95% "
        f"CI over seeds; in brackets the paired Δ against `{reference}`, in percent for lengths (* excludes 0)."
    )
    return ["## Length and unneeded steps", "", *table, "", note, ""] if table else []


SIGNAL_COLUMNS = (("train/process_auc", "process AUC"), ("train/process_share", "process share of |A_t|"),
                  ("train/all_equal_correct_frac", "groups all-equal in correctness"))  # fmt: skip


def signal_table(rows: Sequence[dict[str, Any]], reference: str = REFERENCE_METHOD) -> list[str]:
    """Markdown lines: what the process signal was worth while training, over the last evaluation
    window (``--diagnostics true``): how well it ranked wrong steps below correct ones, how much of
    the token advantage it made up, and how often a group had no correctness signal. It explains a
    result: a method whose signal ranks at chance (AUC ≈ 0.5) or weighs little cannot beat
    ``reference`` through it. Empty when no run logged these."""
    table = final_table(rows, SIGNAL_COLUMNS, reference)
    note = (
        "Means over the training steps since the evaluation before the last one (sampled completions). Process "
        "AUC: how well the per-step signal ranks the verifier's wrong steps below its correct ones (0.5 = chance, "
        "`diag/process_auc`); process share: Σ|process term| / (Σ|process term| + Σ|outcome term|) of the token "
        "advantages (`ps/process_share`, `vps/process_share`); groups all-equal in correctness: the share of "
        "prompts whose completions were all right or all wrong, which outcome GRPO gets no correctness signal "
        "from (`diag/all_equal_correct_frac`). Mean ± 95% CI over seeds; in brackets the paired Δ against "
        f'`{reference}` (* excludes 0); the README\'s "Signal quality" section lists these metrics.'
    )
    return ["## The process signal while training (last window)", "", *table, "", note, ""] if table else []


def step_table(rows: Sequence[dict[str, Any]], reference: str = REFERENCE_METHOD) -> list[str]:
    """Markdown lines: each arm's paired Δ in held-out accuracy against ``reference`` at every
    evaluation step after 0 (mean and 95% t interval over the seeds both evaluated at that step).

    It says *when* an arm is ahead: a lead early that shrinks by the last step is a speed-up, not a
    higher ceiling. Empty without ``reference``, without another arm, or with fewer than two
    evaluations after step 0 (the main table already has the final Δ)."""
    accuracy = {
        (row["method"], row["seed"], int(row["step"])): float(row["accuracy"])
        for row in rows
        if row.get("accuracy") is not None
    }
    steps = sorted({step for method, _, step in accuracy if method == reference and step > 0})
    methods = [method for method in dict.fromkeys(row["method"] for row in rows) if method != reference]
    if len(steps) < 2 or not methods:
        return []
    lines = [
        f"## Paired Δ against `{reference}` at each evaluation step",
        "",
        "| method | " + " | ".join(f"step {step}" for step in steps) + " |",
        "|---" * (len(steps) + 1) + "|",
    ]
    for method in methods:
        cells = [method]
        for step in steps:
            differences = [
                value - accuracy[reference, seed, s]
                for (m, seed, s), value in accuracy.items()
                if m == method and s == step and (reference, seed, step) in accuracy
            ]
            cells.append(difference_cell(mean_interval(differences)) if differences else "—")
        lines.append("| " + " | ".join(cells) + " |")
    note = (
        f"Held-out accuracy of each seed minus `{reference}`'s with the same seed at the same step, mean and 95% "
        "t interval over the seeds both evaluated there (* excludes 0). Each column is a separate test: a step "
        "picked after seeing this table needs the Bonferroni level over its columns, or fresh seeds, to be a claim."
    )
    return [*lines, "", note, ""]
