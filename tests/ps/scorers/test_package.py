"""psgrpo.ps.scorers as a package: the pure text scorers import without torch; prm is imported when asked for."""

from __future__ import annotations

import subprocess
import sys

BLOCK_TORCH = """
import sys
class Block:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in ("torch", "transformers", "trl", "accelerate"):
            raise ImportError(f"blocked: {name}")
sys.meta_path.insert(0, Block())
"""


def _run(code: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", BLOCK_TORCH + code], capture_output=True, text=True, timeout=120
    )


def test_the_text_scorers_import_and_score_with_torch_absent():
    run = _run(
        "from psgrpo.ps.scorers.arithmetic import ArithmeticVerifier\n"
        "from psgrpo.ps.scorers import STEP_SCORERS\n"
        "print(STEP_SCORERS.names(), ArithmeticVerifier()(['q'], [['Step 1: 2 + 3 = 5', 'Step 2: 5 * 2 = 11']]))"
    )
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == "['arithmetic', 'prm', 'reference'] [[0.6, 0.0]]"  # holds; false


def test_asking_for_the_prm_scorer_is_what_imports_torch():
    run = _run("from psgrpo.ps.scorers import STEP_SCORERS\nSTEP_SCORERS.get('prm')")
    assert run.returncode != 0 and "blocked: torch" in run.stderr
    from psgrpo.ps.scorers import STEP_SCORERS, PRMScorer
    from psgrpo.ps.scorers.prm import PRMScorer as Direct

    assert STEP_SCORERS.get("prm") is PRMScorer is Direct
