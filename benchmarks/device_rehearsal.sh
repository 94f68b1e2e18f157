#!/usr/bin/env bash
# The device check's install step and --cpu-smoke, rehearsed here on a stand-in for the device image, before a
# GPU session spends its minutes finding that a wheel or a requirement is missing:
#   1. .venv-standin-py<X.Y>: on the image's Python 3.12 where this machine has one (python3.12 on PATH, or
#      tools/build_python.py's ~/.cache/psgrpo/python/3.12), else python3 (said); PYTHON= picks another:
#      the packages the image holds of what psgrpo needs (benchmarks/device_image.txt), at the
#      versions tools/versions/gpu_image.txt pins (torch 2.11.0, transformers 5.17.0, accelerate 1.15.0 …),
#      and neither trl, datasets nor math-verify (checked);
#   2. the carried wheels (benchmarks/device_wheels.txt) for that venv's Python, into .cache/wheels-<X.Y>
#      (.cache/wheels, for the image's Python 3.12, is left as it is);
#   3. benchmarks/device_check.sh --cpu-smoke through it: the offline install into a fresh site folder, the
#      requirements check, then every part small; its report must show every part ran and passed;
#   4. with --full_tests: the whole fast suite through the installed wheels (the device check's tests part,
#      less CUDA);
# and checks that .cache/wheels, the folder that travels to the GPU, holds exactly the pinned wheels.
#
#   make device-rehearsal                           # = bash benchmarks/device_rehearsal.sh (needs .venv)
#   bash benchmarks/device_rehearsal.sh --full_tests
#   PYTHON=python3 bash benchmarks/device_rehearsal.sh   # on this machine's own Python instead
# (a stand-in built with another Python than $PYTHON is rebuilt; on 3.12 its wheels are those that travel)
#
# torch 2.11.0 is PyPI's CUDA build (about 3 GB with its CUDA wheels; it runs on the CPU), so the first run
# downloads it. The report lands in outputs/device_rehearsal/ (docs/gpu_check.md).
set -euo pipefail
cd "$(dirname "$0")/.."
FULL=0
for arg in "$@"; do
    case "$arg" in
        --full_tests) FULL=1 ;;
        -h | --help) sed -n '2,23p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) echo "device_rehearsal: unknown argument '$arg': expected --full_tests or --help" >&2; exit 2 ;;
    esac
done
if [[ ! -x .venv/bin/python ]]; then
    echo "device_rehearsal: .venv is missing (it downloads the wheels): run 'make test-fast' or 'make device-rehearsal'" >&2
    exit 2
fi
IMAGE_PYTHON="${PSGRPO_CACHE:-$HOME/.cache/psgrpo}/python/3.12/bin/python3.12"  # tools/build_python.py 3.12
if [[ -z "${PYTHON:-}" ]]; then
    if python3.12 -c "" 2>/dev/null; then  # a pyenv shim can stand on PATH without the interpreter
        PYTHON=python3.12
    elif [[ -x "$IMAGE_PYTHON" ]]; then
        PYTHON="$IMAGE_PYTHON"
    else
        PYTHON=python3
        echo "device_rehearsal: no Python 3.12 (the image's) here, so the stand-in runs $(python3 --version 2>&1):" \
            "'python3 tools/build_python.py 3.12' builds one" >&2
    fi
fi
SET=tools/versions/gpu_image.txt
XY='import sys; print("%d.%d" % sys.version_info[:2])'
WANT=$("$PYTHON" -c "$XY" 2>/dev/null) || {
    echo "device_rehearsal: PYTHON='$PYTHON' does not run as a Python interpreter (e.g. PYTHON=python3.12)" >&2
    exit 2
}
"$PYTHON" tools/check_python.py || exit 2
VENV="${STANDIN_VENV:-.venv-standin-py$WANT}"
STAMP="$VENV/.standin-installed"
if [[ -e "$VENV" && ! -f "$STAMP" && ! -f "$VENV/.standin-building" ]]; then
    echo "device_rehearsal: $VENV exists and is not a stand-in this script built: set STANDIN_VENV to a new folder" >&2
    exit 2
fi
if [[ ! -f "$STAMP" || "$SET" -nt "$STAMP" || benchmarks/device_image.txt -nt "$STAMP" ]] \
    || [[ "$("$VENV/bin/python" -c "$XY" 2>/dev/null)" != "$WANT" ]]; then
    echo "device_rehearsal: building the image stand-in $VENV"
    rm -rf "$VENV"
    "$PYTHON" -m venv "$VENV"
    touch "$VENV/.standin-building"
    "$VENV/bin/pip" install -q --upgrade pip
    mapfile -t IMAGE < <(sed -e 's/#.*//' -e 's/[[:space:]]*$//' benchmarks/device_image.txt | grep -v '^$')
    [[ ${#IMAGE[@]} -gt 0 ]] || { echo "device_rehearsal: benchmarks/device_image.txt names no package" >&2; exit 2; }
    "$VENV/bin/pip" install -q -c "$SET" "${IMAGE[@]}"
    touch "$STAMP"
fi
for module in trl datasets math_verify; do
    if "$VENV/bin/python" -c "import $module" 2>/dev/null; then
        echo "device_rehearsal: $VENV imports $module, which the image lacks: the install step would not be rehearsed" >&2
        exit 1
    fi
done
PYVER="$WANT"
WHEELS=".cache/wheels-$PYVER"
DEVICE_PYTHON_VERSION="$PYVER" DEVICE_WHEELS_DIR="$WHEELS" PYTHON=.venv/bin/python \
    bash benchmarks/device_wheels.sh >/dev/null
SITE=$(mktemp -d /tmp/psgrpo-standin-site.XXXXXX)
trap 'rm -rf "$SITE"' EXIT
OUT=outputs/device_rehearsal
rm -rf "$OUT"
PSGRPO_WHEELS="$WHEELS" PSGRPO_SITE="$SITE" PYTHON="$VENV/bin/python" OMP_NUM_THREADS=1 \
    bash benchmarks/device_check.sh --cpu-smoke --output_dir "$OUT/work" --report_dir "$OUT"
.venv/bin/python benchmarks/device_check.py --verify "$OUT/device_check.json"
.venv/bin/python benchmarks/device_check.py --check_wheels .cache/wheels  # what travels: the pins, for Python 3.12
if [[ "$FULL" == 1 ]]; then
    PYTHONPATH="$SITE:$PWD" PSGRPO_CACHE="$PWD/.cache" TOKENIZERS_PARALLELISM=false \
        "$VENV/bin/python" -m pytest -q -m "not slow" -p no:cacheprovider
fi
