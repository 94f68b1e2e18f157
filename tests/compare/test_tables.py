"""psgrpo.compare.tables: the error, length and process-signal tables (hand-computed values)."""

from __future__ import annotations

from compare_rows import compare_rows

from psgrpo.compare.report import markdown_report, reference_accuracy, summarize
from psgrpo.compare.tables import error_table, length_table, signal_table, step_table


def test_length_table_relative_length_and_absolute_unneeded_share():
    rows = compare_rows()  # final held-out mean_tokens (step 20): 78 for seed 0, 77 for seed 1, every method
    unneeded = {("grpo", 0): 0.2, ("grpo", 1): 0.3, ("vps", 0): 0.1, ("vps", 1): 0.1}
    for row in rows:
        if row["step"] == 20:
            row["train/mean_tokens"] = {"grpo": 100.0, "vps": 90.0, "ps": 110.0}[row["method"]] + row["seed"]
            if (row["method"], row["seed"]) in unneeded:
                row["train/unnecessary_step_frac"] = unneeded[row["method"], row["seed"]]
    lines = length_table(rows)
    assert lines[0] == "## Length and unneeded steps"
    assert (
        "| method | held-out tokens | training tokens, last window | unneeded steps, last window |" in lines
    )
    vps = next(line for line in lines if line.startswith("| vps |"))
    # held-out: the same length as grpo on both seeds → +0.0 % with a zero-width interval
    assert "| 77.500 ± 6.353 (+0.0% [+0.0, +0.0]) |" in vps
    # training: 90/100 − 1 = −10 %, 91/101 − 1 = −9.90 % → mean −9.95 %; stdev 0.0701 · 12.706 / √2 = 0.63
    assert "(-10.0% [-10.6, -9.3] *)" in vps
    # unneeded share: −0.1, −0.2 → −0.150, half-width 12.706 · 0.0707 / √2 = 0.635
    assert vps.endswith("| 0.100 ± 0.000 (-0.150 [-0.785, +0.485]) |")
    assert next(line for line in lines if line.startswith("| ps |")).endswith("| — |")
    assert length_table([{"method": "grpo", "seed": 0, "step": 0, "accuracy": 0.5}]) == []


def test_signal_table_process_columns_without_a_reference_delta_where_grpo_has_none():
    rows = compare_rows()
    final = {("grpo", 0): (None, None, 0.6), ("grpo", 1): (None, None, 0.8),
             ("vps", 0): (0.5, 0.1, 0.5), ("vps", 1): (0.6, 0.2, 0.6)}  # fmt: skip
    for row in rows:
        if row["step"] == 20 and (row["method"], row["seed"]) in final:
            auc, share, equal = final[row["method"], row["seed"]]
            row["train/all_equal_correct_frac"] = equal
            if auc is not None:
                row["train/process_auc"], row["train/process_share"] = auc, share
    lines = signal_table(rows)
    assert lines[0] == "## The process signal while training (last window)"
    assert "| method | process AUC | process share of |A_t| | groups all-equal in correctness |" in lines
    grpo = next(line for line in lines if line.startswith("| grpo |"))
    assert grpo.startswith("| grpo | — | — | 0.700 ± 1.271 |")  # stdev 0.1414 · 12.706 / √2
    vps = next(line for line in lines if line.startswith("| vps |"))
    # AUC and share: grpo has none, so no paired Δ; all-equal: −0.1, −0.2 → −0.150 [−0.785, +0.485]
    assert vps == "| vps | 0.550 ± 0.635 | 0.150 ± 0.635 | 0.550 ± 0.635 (-0.150 [-0.785, +0.485]) |"
    assert next(line for line in lines if line.startswith("| ps |")) == "| ps | — | — | — |"
    assert signal_table(compare_rows()) == []  # no run logged diagnostics: no section


def test_error_table_final_shares_with_paired_differences():
    rows = compare_rows()
    logic = {("grpo", 0): 0.5, ("grpo", 1): 0.3, ("vps", 0): 0.2, ("vps", 1): 0.2}  # ps has none logged
    for row in rows:
        if row["step"] == 20 and (row["method"], row["seed"]) in logic:
            row["error_type/logic"] = logic[row["method"], row["seed"]]
    lines = error_table(rows)
    assert lines[0] == "## Where the errors are (final evaluation)"
    assert "| method | logic errors |" in lines  # only the columns some run logged
    # grpo: mean 0.4, half-width 12.706·stdev(0.5, 0.3)/√2 = 1.271; vps − grpo per seed: −0.3, −0.1
    assert "| grpo | 0.400 ± 1.271 |" in lines
    assert "| vps | 0.200 ± 0.000 (-0.200 [-1.471, +1.071]) |" in lines
    assert "| ps | — |" in lines
    assert error_table(compare_rows()) == []  # no error columns: no section
    text = markdown_report(summarize(rows), "psgrpo compare", reference_accuracy(rows), sections=lines)
    assert text.index("## Where the errors are") < text.index("Command:")


def test_step_table_paired_difference_at_every_evaluation_after_step_0():
    lines = step_table(compare_rows())
    assert lines[0] == "## Paired Δ against `grpo` at each evaluation step"
    assert "| method | step 10 | step 20 |" in lines  # step 0 is the shared start: left out
    # vps − grpo: step 10 +0.2, 0.0 → +0.100, half-width 12.706 · 0.1414 / √2 = 1.271;
    # step 20 +0.2, −0.1 → +0.050, half-width 12.706 · 0.2121 / √2 = 1.906
    assert "| vps | +0.100 [-1.171, +1.371] | +0.050 [-1.856, +1.956] |" in lines
    assert "| ps | -0.050 [-0.685, +0.585] | -0.050 [-0.685, +0.585] |" in lines
    assert not any(line.startswith("| grpo |") for line in lines)


def test_step_table_marks_an_early_lead_and_pairs_only_common_seeds():
    rows = [
        {"method": method, "seed": seed, "step": step, "accuracy": accuracy}
        for method, seed, step, accuracy in [
            ("grpo", 0, 10, 0.50), ("grpo", 1, 10, 0.60), ("grpo", 0, 20, 0.70), ("grpo", 1, 20, 0.70),
            ("bin", 0, 10, 0.60), ("bin", 1, 10, 0.71), ("bin", 0, 20, 0.70), ("bin", 1, 20, 0.71),
            ("bin", 2, 10, 0.99),  # no grpo run with seed 2: not paired
        ]
    ]  # fmt: skip
    lines = step_table(rows)
    # step 10: +0.10, +0.11 → +0.105, half-width 12.706 · 0.00707 / √2 = 0.0635 → excludes 0
    assert "| bin | +0.105 [+0.041, +0.169] * | +0.005 [-0.059, +0.069] |" in lines


def test_step_table_is_empty_without_a_reference_or_a_second_evaluation():
    rows = compare_rows()
    assert step_table([row for row in rows if row["method"] != "grpo"]) == []
    assert step_table([row for row in rows if row["step"] in (0, 20)]) == []  # one evaluation after 0
    assert step_table([row for row in rows if row["method"] == "grpo"]) == []  # no arm to compare
