#!/usr/bin/env bash
# Fresh-machine check, as a new user would meet the project: clone, build, test, train.
#
#   bash benchmarks/check_fresh.sh [--emulate-avx2] [--distributed-runs N] [--skip-tests] [--ref REF]
#
# 1. clones REF (default: main) of this repository into a temporary directory;
# 2. runs `make test` there (creates its own .venv, installs torch 2.13.0 CPU + the package);
# 3. optionally runs tests/test_trainer_distributed.py N more times in a row (1-vs-2-process equivalence);
# 4. runs 3 steps of the default `psgrpo train` (the embedded demo) with the default precision and with
#    --bf16 false, and prints the step times side by side with the CPU's bf16-relevant flags.
#
# --emulate-avx2 caps PyTorch's kernels at AVX2 (ATEN_CPU_CAPABILITY=avx2, ONEDNN_MAX_CPU_ISA=AVX2,
# MKL_ENABLE_INSTRUCTIONS=AVX2), which is how this machine imitates a CPU without AVX-512 / native bf16.
# Nothing in the clone is kept: the directory is printed and removed unless KEEP=1.
set -euo pipefail

ref=main
emulate=0
distributed_runs=0
skip_tests=0
while [ $# -gt 0 ]; do
    case "$1" in
        --emulate-avx2) emulate=1 ;;
        --distributed-runs) distributed_runs="$2"; shift ;;
        --skip-tests) skip_tests=1 ;;
        --ref) ref="$2"; shift ;;
        -h|--help) sed -n '2,16p' "$0"; exit 0 ;;
        *) echo "check_fresh.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
    esac
    shift
done

repo="$(cd "$(dirname "$0")/.." && pwd)"
work="$(mktemp -d -t psgrpo-fresh-XXXXXX)"
if [ "${KEEP:-0}" != "1" ]; then trap 'rm -rf "$work"' EXIT; fi
if [ "$emulate" = "1" ]; then
    export ATEN_CPU_CAPABILITY=avx2 ONEDNN_MAX_CPU_ISA=AVX2 MKL_ENABLE_INSTRUCTIONS=AVX2
fi

echo "== fresh clone of $ref into $work"
git clone -q --branch "$ref" "$repo" "$work/psgrpo" 2>/dev/null || git clone -q "$repo" "$work/psgrpo"
cd "$work/psgrpo"
git checkout -q "$ref"
git log -1 --format='   commit %h %s'

flags="$(grep -m1 -oE '^(flags|Features)\s*:.*' /proc/cpuinfo 2>/dev/null || true)"
echo "== CPU: $(grep -m1 'model name' /proc/cpuinfo 2>/dev/null | cut -d: -f2 | xargs), $(nproc) cores"
for flag in avx2 avx512f avx512_bf16 amx_bf16; do
    if grep -qw "$flag" <<<"$flags"; then echo "   $flag: yes"; else echo "   $flag: no"; fi
done
[ "$emulate" = "1" ] && echo "   (PyTorch kernels capped at AVX2 by --emulate-avx2)"

start=$(date +%s)
if [ "$skip_tests" = "1" ]; then
    make venv >/dev/null
else
    echo "== make test"
    make test
fi
echo "   setup + tests: $(( $(date +%s) - start )) s"

for i in $(seq 1 "$distributed_runs"); do
    echo "== distributed equivalence run $i/$distributed_runs"
    .venv/bin/python -m pytest -q -p no:cacheprovider tests/test_trainer_distributed.py
done

.venv/bin/python - <<'PY'
from psgrpo.config.precision import cpu_has_native_bf16
print(f"== psgrpo.config.precision: native bf16 on this CPU = {cpu_has_native_bf16()}")
PY

step_time() {  # median step time (s) of steps 2..3 of a 3-step default train run, extra flags in "$@"
    local out="$work/train-$1"
    shift
    .venv/bin/psgrpo train --max_steps 3 --logging_steps 1 --report_to none --save_strategy no \
        --eval_before_after false --output_dir "$out" "$@" >"$out.log" 2>&1 || { tail -20 "$out.log"; exit 1; }
    .venv/bin/python - "$out/metrics.jsonl" <<'PY'
import json, statistics, sys
times = [r["step_time"] for r in map(json.loads, open(sys.argv[1])) if "step_time" in r and r["step"] > 1]
print(f"{statistics.median(times):.2f}")
PY
}
echo "== 3 steps of the default psgrpo train (embedded demo)"
default_time=$(step_time default)
fp32_time=$(step_time fp32 --bf16 false)
echo "   default precision: ${default_time} s/step"
echo "   --bf16 false:      ${fp32_time} s/step"
echo "   ratio default / fp32: $(python3 -c "print(f'{$default_time / $fp32_time:.2f}')")"
echo "== done in $(( $(date +%s) - start )) s"
