#!/usr/bin/env bash
# One prepared device check (issue 35): on one CUDA GPU, within 8 minutes (16 cores, one H200), from the
# repository root of a bare machine whose image has torch, transformers and accelerate:
#   1. installs trl, datasets, math-verify (+ their missing needs, liger-kernel) from .cache/wheels, offline;
#   2. the fast test suite with pytest-xdist;
#   3. gpu_check at the GSM8K recipe's shape (Qwen2.5-0.5B, bf16, 8 prompts x 4 x 512 tokens): grpo, ps, vps,
#      tree with the compiled static cache, stock TRL at the same settings, grpo and stock TRL with TRL's
#      default dynamic cache, each step broken down by phase; then the Liger sections;
#   4. transformers' generate alone, dynamic vs compiled static cache;
# and writes device_check.json and device_check.md (benchmarks/device_check.py; docs/gpu_check.md).
#
#   bash benchmarks/device_wheels.sh                         # first, here, where PyPI is reachable (fills .cache/)
#   bash benchmarks/device_check.sh --report_dir "$OUT"       # on the GPU machine, .cache carried along
#   bash benchmarks/device_check.sh --cpu-smoke               # here: the whole script on CPU, small (~2.5 min)
#   bash benchmarks/device_check.sh --report_dir "$OUT" --parts gpu_check --sections grpo-static trl-static tree-static grpo trl
#                                                             # a second call: the sections a budget cut
#   bash benchmarks/device_check.sh --help                    # every option
set -euo pipefail
cd "$(dirname "$0")/.."
export DEVICE_CHECK_STARTED="${DEVICE_CHECK_STARTED:-$(date +%s.%N)}"  # the 8-minute budget counts from here
if [[ -z "${PYTHON:-}" ]]; then
    if [[ -x .venv/bin/python ]]; then PYTHON=.venv/bin/python; else PYTHON=python3; fi
fi
WHEELS="${PSGRPO_WHEELS:-.cache/wheels}"
if ! "$PYTHON" -c "import trl, datasets, math_verify" 2>/dev/null; then
    if ! compgen -G "$WHEELS/*.whl" >/dev/null; then
        echo "device_check: $PYTHON lacks trl, datasets or math-verify and $WHEELS holds no wheels:" \
            "run 'bash benchmarks/device_wheels.sh' where PyPI is reachable and carry .cache along" >&2
        exit 2
    fi
    SITE="${PSGRPO_SITE:-/tmp/psgrpo-site}"
    "$PYTHON" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target "$SITE" \
        "$WHEELS"/*.whl
    export PYTHONPATH="$SITE${PYTHONPATH:+:$PYTHONPATH}"
    echo "device_check: installed $(ls "$WHEELS" | wc -l) wheels from $WHEELS into $SITE"
fi
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
export TOKENIZERS_PARALLELISM=false
if [[ -f .cache/qwen.tiktoken && -z "${PSGRPO_CACHE:-}" ]]; then
    export PSGRPO_CACHE="$PWD/.cache"  # Qwen's ranks for the tests' qwen_tokenizer fixture, offline
fi
exec "$PYTHON" benchmarks/device_check.py "$@"
