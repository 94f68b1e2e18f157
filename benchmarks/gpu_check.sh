#!/usr/bin/env bash
# GPU readiness check: the GSM8K recipe's code path (bf16, gradient checkpointing, 512-token completions)
# for grpo, ps and vps, 2 steps each, on a random Qwen2 with Qwen2.5-0.5B's shapes and Qwen's tokenizer;
# prints s/step and peak GPU memory per method and writes outputs/gpu_check/gpu_check.{json,md}.
# Then, apart, optional vLLM (colocate) and Liger sections for grpo, ps and vps, each only when its package
# imports ("[gpu_check] vllm-ps: skipped: <why>" otherwise).
#
#   bash benchmarks/gpu_check.sh                 # on a CUDA machine, ~5 min (it stops starting sections at 9 min)
#   bash benchmarks/gpu_check.sh --cpu-smoke     # tiny shapes on CPU: checks this script (~2.5 min, shared 2 cores)
#   bash benchmarks/gpu_check.sh --optional_only # only the vLLM / Liger sections (pip install -e '.[vllm]' liger-kernel)
#   bash benchmarks/gpu_check.sh --help          # every option (benchmarks/gpu_check.py)
#
# Needs, on the GPU machine: Python with torch (CUDA) and psgrpo's dependencies (trl 1.16, transformers,
# accelerate, datasets, math-verify) installed; psgrpo itself is imported from this working tree.
# Offline there, so Qwen's ranks file must come with the working tree: run `make qwen-vocab` beforehand
# where PyPI is reachable (it writes .cache/qwen.tiktoken, an ignored path: carry .cache/ along).
# A GSM8K copy in .cache/gsm8k (train.jsonl, test.jsonl) is used when present; otherwise synthetic rows.
set -euo pipefail
cd "$(dirname "$0")/.."
if [[ -z "${PYTHON:-}" ]]; then
    if [[ -x .venv/bin/python ]]; then PYTHON=.venv/bin/python; else PYTHON=python3; fi
fi
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
export TOKENIZERS_PARALLELISM=false
if ! "$PYTHON" -c "import torch, transformers, trl, accelerate, datasets, math_verify, yaml" 2>/dev/null; then
    echo "gpu_check: $PYTHON lacks psgrpo's dependencies; install them (pip install -e .) where PyPI is reachable" >&2
    "$PYTHON" -c "import torch, transformers, trl, accelerate, datasets, math_verify, yaml" >&2 || true
    exit 2
fi
exec "$PYTHON" benchmarks/gpu_check.py "$@"
