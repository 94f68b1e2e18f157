"""Rows of ``psgrpo compare``'s curves for the report and table tests: two seeds of three methods."""

# Held-out accuracy per evaluation step (0, 10, 20) for two seeds of three methods.
ACCURACY = {
    ("grpo", 0): [0.4, 0.5, 0.6],
    ("grpo", 1): [0.4, 0.6, 0.7],  # seed mean: 0.4, 0.55, 0.65 → final 0.65
    ("vps", 0): [0.4, 0.7, 0.8],
    ("vps", 1): [0.4, 0.6, 0.6],  # seed mean: 0.4, 0.65, 0.7 → reaches 0.65 at step 10
    ("ps", 0): [0.4, 0.5, 0.6],
    ("ps", 1): [0.4, 0.5, 0.6],  # never reaches 0.65
}


def compare_rows() -> list[dict]:
    rows = []
    for (method, seed), accs in ACCURACY.items():
        for i, acc in enumerate(accs):
            rows.append(
                {
                    "method": method,
                    "seed": seed,
                    "step": 10 * i,
                    "accuracy": acc,
                    "mean_tokens": 80.0 - i - seed,
                    "wall_seconds": 12.0 * i,
                    "train_seconds": 10.0 * i + seed,
                    "completion_tokens": 1000.0 * i + 100 * seed,
                }
            )
    return rows
