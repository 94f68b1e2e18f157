"""The shipped accelerate configs (DDP, DeepSpeed ZeRO-2 / ZeRO-3, FSDP) through ``accelerate launch`` and the
Trainer, on 2 CPU processes: every method trains, resumes exactly, and starts where DDP starts.

    make sharded-cpu                                    # builds .venv-deepspeed, then runs this with it
    make sharded-cpu ARGS="--precision bf16"            # bf16, as the shipped configs set it
    make sharded-cpu ARGS="--train_flags '--per_device_train_batch_size 8 --num_generations 4'"   # the tests' size
    .venv-deepspeed/bin/python benchmarks/sharded_cpu.py --configs deepspeed_zero3 --methods vps

accelerate takes its distributed paths only where it finds an accelerator backend
(``PartialState._prepare_backend``): on a CPU-only machine a ``MULTI_GPU`` / ``DEEPSPEED`` / ``FSDP`` config
starts processes that each see a world of 1, and DeepSpeed stops at its batch-size check. The worker
(``--worker``, what this script launches) makes that one method answer gloo, the backend DeepSpeed's CPU
accelerator (``DS_ACCELERATOR=cpu``) and FSDP on CPU use; everything after it is the real accelerate, DeepSpeed,
transformers, TRL and psgrpo code: ZeRO-3's partitioned init and its parameter gathering in every forward
(generation, VPS probes, the loss), gradient reduce-scatter, DeepSpeed / FSDP checkpoints, the gathered save.
The workers see no GPU (``CUDA_VISIBLE_DEVICES`` empty), so the check runs the same on a machine that has one.
A worker fails its run unless it trained in a world of 2, as its config's distributed type (:data:`TRAINS_AS`)
and in the precision asked (:func:`trained_precision`).

``--precision bf16`` keeps the configs' ``mixed_precision: bf16`` and lets it take the path it takes on a GPU
(:func:`bf16_as_on_a_gpu`): DeepSpeed's bf16 weights with fp32 master copies, FSDP2's bf16 compute, DDP's autocast.

For each config of ``psgrpo/recipes/accelerate`` named (2 processes, by default fp32: ``mixed_precision: 'no'``) and each
method (``ps-prm``: ps scored by a tiny random PRM, loaded whole on every rank), the demo recipe with gradient
checkpointing on (the GSM8K recipe's setting):

1. 4 steps, a checkpoint every 2, unbroken;
2. for the sharded configs (not ``ddp``): that run's ``checkpoint-2`` copied into a fresh directory and resumed
   to step 4 with the same flags.

Checks: every run exits 0; every logged loss and grad norm is finite, and the grad norm > 0; the saved
``model.safetensors`` holds the whole model (ZeRO-3 and FSDP gather it on save); the resumed steps 3-4 log the
unbroken run's loss, grad norm and reward (relative ``--resume_rtol``); in fp32, step 1 logs DDP's loss and
reward (relative ``--start_rtol``: the same weights and completions, reduced in another order); in bf16, ZeRO-2
and FSDP log the same step 1 (:data:`BF16_SAME_START`), and each gap to DDP is reported. Writes
``sharded_cpu.json`` and ``sharded_cpu.md`` to ``--output_dir``; exit status 1 if a check fails.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import json
import math
import os
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
CONFIG_DIR = REPO / "psgrpo" / "recipes" / "accelerate"
CONFIGS = ["ddp", "deepspeed_zero2", "deepspeed_zero3", "fsdp"]
METHODS = ["grpo", "ps", "vps", "tree", "ps-prm"]
"""``ps-prm``: ps scored by a tiny random process reward model, which every rank loads whole (never sharded)."""
STEPS = 4
RESUME_FROM = 2
TRAIN_FLAGS = [
    "--max_steps", str(STEPS), "--save_steps", str(RESUME_FROM), "--save_total_limit", "3",
    "--logging_steps", "1", "--gradient_checkpointing", "true",
    "--eval_before_after", "false", "--report_to", "none", "--disable_tqdm", "true",
]  # fmt: skip
COMPARED = ("loss", "grad_norm", "reward")
PRECISIONS = {"fp32": "no", "bf16": "bf16"}
"""``--precision`` → the configs' ``mixed_precision``; ``bf16`` is what the shipped configs (and a GPU) use."""
PRECISION_ENV = "SHARDED_CPU_PRECISION"
TRAINS_AS = {
    "ddp": "MULTI_CPU",
    "deepspeed_zero2": "DEEPSPEED-2",
    "deepspeed_zero3": "DEEPSPEED-3",
    "fsdp": "FSDP",
}
"""The accelerate ``DistributedType`` each config must train as here, with DeepSpeed's ZeRO stage (DDP: gloo's
``MULTI_CPU``, which a bf16 run reaches with or without :func:`bf16_as_on_a_gpu`; on a GPU it is ``MULTI_GPU``)."""
BF16_SAME_START = ("deepspeed_zero2", "fsdp")
"""In bf16 these two compute step 1 from the same bf16 weights (DeepSpeed's cast copy, FSDP2's ``param_dtype``
cast of the same fp32 values), so they sample the same completions and must log the same step 1 (relative
``--start_rtol``, 1e-4 by default). DDP autocasts from fp32 weights, ZeRO-3 gathers its partitions in other
shapes: neither is expected to match, so their gap is reported, not checked."""
EXPECTED_ENV = "SHARDED_CPU_TRAINS_AS"
WORKER_SAYS = "sharded_cpu worker: "
"""How the worker's own finding starts in its log, to be copied into the report."""


def gloo_on_cpu() -> None:
    """Let accelerate take a distributed config's path on a CPU-only machine, with gloo (see the module docstring).

    DDP and DeepSpeed start from ``MULTI_CPU``. accelerate turns only a GPU-like type into ``FSDP``
    (``AcceleratorState``), so an FSDP config starts from ``MULTI_GPU``, its device pinned to the CPU
    (``ACCELERATE_TORCH_DEVICE``); from ``MULTI_CPU`` it would train as plain DDP.
    """
    import torch
    from accelerate.state import PartialState
    from accelerate.utils import DistributedType

    prepare = PartialState._prepare_backend
    fsdp = os.environ.get("ACCELERATE_USE_FSDP", "false").lower() == "true"
    if fsdp:
        os.environ["ACCELERATE_TORCH_DEVICE"] = "cpu"

    def prepare_backend(self: Any, cpu: bool = False, sagemaker_dp: bool = False, backend: str | None = None):
        if int(os.environ.get("LOCAL_RANK", -1)) != -1 and not cpu and not torch.cuda.is_available():
            return "gloo", DistributedType.MULTI_GPU if fsdp else DistributedType.MULTI_CPU
        return prepare(self, cpu, sagemaker_dp, backend)

    PartialState._prepare_backend = prepare_backend


def bf16_as_on_a_gpu() -> None:
    """Let bf16 take the path it takes on a GPU: the launch config's mixed precision, not a plain CPU run.

    On a machine without an accelerator, transformers refuses ``bf16`` unless ``use_cpu`` is set, and psgrpo sets
    ``use_cpu`` for the user (:func:`psgrpo.config.precision.resolve_use_cpu`); accelerate then drops DeepSpeed and
    FSDP for its plain CPU path. Here both answer as on a bf16 GPU, so DeepSpeed trains bf16 weights with fp32
    master copies, FSDP2 computes in bf16 (``MixedPrecisionPolicy``) and DDP autocasts, as on the GPU.
    """
    import transformers.training_args

    import psgrpo.config.precision

    transformers.training_args.is_torch_bf16_gpu_available = lambda: True
    psgrpo.config.precision.accelerator_available = lambda: True


def worker(argv: list[str]) -> int:
    """``psgrpo`` with ``argv`` in this process, after :func:`gloo_on_cpu` (and :func:`bf16_as_on_a_gpu`)."""
    import torch.distributed
    from accelerate.state import AcceleratorState

    import psgrpo.distributed
    from psgrpo.commands.cli import main as psgrpo_main

    gloo_on_cpu()
    if os.environ.get(PRECISION_ENV) == "bf16":
        bf16_as_on_a_gpu()
    trained = []  # (world size, distributed type, precision) of the run, read before psgrpo closes its group
    close = psgrpo.distributed.close_process_group

    def close_process_group() -> None:
        world = torch.distributed.get_world_size() if torch.distributed.is_initialized() else 1
        state = AcceleratorState() if AcceleratorState._shared_state else None
        kind = str(state.distributed_type).rsplit(".", 1)[-1] if state else "NO"
        if kind == "DEEPSPEED":
            kind += f"-{state.deepspeed_plugin.zero_stage}"
        trained.append((world, kind, trained_precision(state) if state else "fp32"))
        close()

    psgrpo.distributed.close_process_group = close_process_group
    status = psgrpo_main(argv)
    found = trained[-1] if trained else (1, "NO", "fp32")
    expected = (int(os.environ.get("WORLD_SIZE", 1)), os.environ[EXPECTED_ENV], os.environ[PRECISION_ENV])
    if status == 0 and found != expected:
        print(
            f"{WORKER_SAYS}trained as {' '.join(map(str, found))}, not {' '.join(map(str, expected))}",
            file=sys.stderr,
        )
        return 3
    return status


def trained_precision(state: Any) -> str:
    """``bf16`` or ``fp32``: what the prepared run computes in (DeepSpeed's config, FSDP2's policy, else autocast)."""
    import torch
    from accelerate.utils import DistributedType

    if state.distributed_type == DistributedType.DEEPSPEED:
        bf16 = state.deepspeed_plugin.deepspeed_config.get("bf16", {}).get("enabled") is True
    elif state.distributed_type == DistributedType.FSDP:
        policy = state.fsdp_plugin.mixed_precision_policy
        bf16 = policy is not None and policy.param_dtype == torch.bfloat16
    else:
        bf16 = state.mixed_precision == "bf16"
    return "bf16" if bf16 else "fp32"


def launch_config(name: str, directory: Path, precision: str = "fp32") -> Path:
    """``name``'s shipped config for 2 CPU processes in ``precision`` (:data:`PRECISIONS`), written to ``directory``."""
    import yaml

    config = yaml.safe_load((CONFIG_DIR / f"{name}.yaml").read_text())
    config.update(num_processes=2, mixed_precision=PRECISIONS[precision])
    config.pop("gpu_ids", None)
    path = directory / f"{name}.yaml"
    path.write_text(yaml.safe_dump(config))
    return path


def tiny_prm(directory: Path) -> Path:
    """A random 1-layer token-classification PRM (2 labels) with the embedded model's tokenizer, in ``directory``."""
    from transformers import Qwen2ForTokenClassification

    from psgrpo.tiny.model import tiny_qwen2_config
    from psgrpo.tiny.tokenizer import build_char_tokenizer

    if not (directory / "config.json").exists():
        tokenizer = build_char_tokenizer()
        config = tiny_qwen2_config(
            len(tokenizer), hidden_size=32, intermediate_size=64, num_layers=1, num_labels=2,
            pad_token_id=tokenizer.pad_token_id,
        )  # fmt: skip
        Qwen2ForTokenClassification(config).save_pretrained(directory)
        tokenizer.save_pretrained(directory)
    return directory


def method_flags(method: str, directory: Path) -> list[str]:
    """``psgrpo train`` flags of one entry of :data:`METHODS`."""
    if method != "ps-prm":
        return ["--method", method]
    scorer = {
        "model": str(tiny_prm(directory / "prm")),
        "style": "token_classification",
        "step_separator": "\n",
    }
    return ["--method", "ps", "--step_scorer", "prm", "--step_scorer_kwargs", json.dumps(scorer)]


def free_port() -> int:
    """A TCP port free on this machine now (the OS picks it)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def launch(
    config: Path,
    method: str,
    run_dir: Path,
    log: Path,
    timeout_s: float,
    resume: bool,
    precision: str = "fp32",
    weights: str = "float32",
    train_flags: Sequence[str] = (),
) -> dict[str, Any]:
    """One ``accelerate launch`` of the worker (``train_flags`` after the benchmark's own); its exit status, wall
    time and logged steps."""
    command = [sys.executable, "-m", "accelerate.commands.launch", "--config_file", str(config)]
    command += ["--main_process_port", str(free_port())]  # not 29500 for all: launches may run side by side
    command += [
        __file__,
        "--worker",
        "train",
        *method_flags(method, log.parent),
        "--output_dir",
        str(run_dir),
    ]
    command += [*TRAIN_FLAGS, "--bf16", str(precision == "bf16").lower(), "--dtype", weights, *train_flags]
    if resume:
        command += ["--resume_from_checkpoint", "true"]
    # CPU processes on any machine: with a GPU visible, 2 ranks would share it (NCCL refuses duplicate devices)
    env = {**os.environ, "DS_ACCELERATOR": "cpu", "CUDA_VISIBLE_DEVICES": "", "OMP_NUM_THREADS": "1"}
    env[PRECISION_ENV] = precision
    env[EXPECTED_ENV] = TRAINS_AS[config.stem]
    env["TOKENIZERS_PARALLELISM"] = "false"
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")]))
    started = time.perf_counter()
    with log.open("w") as out:  # its own session, killed whole after a hang
        process = subprocess.Popen(
            command, env=env, cwd=REPO, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
        )
        try:
            rc: int | str = process.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:  # torchrun stops its workers (their own sessions) on SIGTERM
            process.terminate()
            try:
                process.wait(timeout=60)
            finally:
                with contextlib.suppress(ProcessLookupError):  # the group may be gone already
                    os.killpg(process.pid, signal.SIGKILL)
                process.wait()
            rc = f"killed after {timeout_s:.0f} s (a hang?)"
    metrics = run_dir / "metrics.jsonl"
    steps = [json.loads(line) for line in metrics.read_text().splitlines()] if metrics.exists() else []
    said = [line for line in log.read_text(errors="replace").splitlines() if line.startswith(WORKER_SAYS)]
    return {
        "rc": rc,
        "wall_s": round(time.perf_counter() - started, 1),
        "steps": [s for s in steps if "loss" in s],
        "worker": sorted(set(said)),
    }


def relative_gap(a: float, b: float) -> float:
    """|a - b| over the larger magnitude (0 when both are 0)."""
    return abs(a - b) / max(abs(a), abs(b), 1e-12)


def largest_gap(ours: list[dict], theirs: list[dict], steps: range) -> float:
    """The largest relative difference of :data:`COMPARED` over ``steps`` (inf where a step is missing)."""
    by_step = {s["step"]: s for s in theirs}
    gaps = [
        relative_gap(row[key], by_step[row["step"]][key]) if row["step"] in by_step else math.inf
        for row in ours
        if row["step"] in steps
        for key in COMPARED
    ]
    return max(gaps) if len(gaps) == len(steps) * len(COMPARED) else math.inf


def saved_weights(run_dir: Path) -> dict[str, tuple[tuple[int, ...], str]]:
    """``{name: (shape, dtype)}`` of the tensors in ``run_dir/model.safetensors`` (empty when it is missing)."""
    from safetensors import safe_open

    path = run_dir / "model.safetensors"
    if not path.exists():
        return {}
    with safe_open(str(path), "pt") as saved:
        slices = {key: saved.get_slice(key) for key in saved.keys()}  # noqa: SIM118
        return {key: (tuple(piece.get_shape()), piece.get_dtype()) for key, piece in slices.items()}


def whole_model(run_dir: Path, saved: dict[str, tuple[tuple[int, ...], str]] | None = None) -> bool:
    """Whether the saved weights (``saved``: :func:`saved_weights` of ``run_dir``, read when not given) hold every
    parameter of the architecture at its full shape."""
    from transformers import AutoConfig, AutoModelForCausalLM

    saved = saved_weights(run_dir) if saved is None else saved
    if not saved:
        return False
    config = AutoConfig.from_pretrained(run_dir)
    expected = AutoModelForCausalLM.from_config(config).state_dict()
    # tied output weights are saved once, as the input embeddings
    tied = {"lm_head.weight"} if getattr(config, "tie_word_embeddings", False) else set()
    return all(
        key in saved and saved[key][0] == tuple(value.shape)
        for key, value in expected.items()
        if key not in tied
    )


def check_run(run: dict[str, Any], first_step: int) -> list[str]:
    """What is wrong with one run's exit status and logged steps."""
    problems = [] if run["rc"] == 0 else [f"exit status {run['rc']}"]
    problems += [line.removeprefix(WORKER_SAYS) for line in run.get("worker", [])]
    steps = [s["step"] for s in run["steps"]]
    if steps != list(range(first_step, STEPS + 1)):
        problems.append(f"logged steps {steps}")
    for row in run["steps"]:
        if not (math.isfinite(row["loss"]) and math.isfinite(row["grad_norm"]) and row["grad_norm"] > 0):
            problems.append(f"step {row['step']}: loss {row['loss']}, grad norm {row['grad_norm']}")
    return problems


def run_all(args: argparse.Namespace) -> list[dict[str, Any]]:
    out = args.output_dir
    rows: list[dict[str, Any]] = []
    ddp_steps: dict[str, list[dict]] = {}
    bf16_peer: dict[str, tuple[str, list[dict]]] = {}  # method -> the first of BF16_SAME_START that ran it
    train_flags = shlex.split(args.train_flags)
    for name in args.configs:
        config = launch_config(name, out, args.precision)
        for method in args.methods:
            run_dir = out / name / method
            shutil.rmtree(run_dir, ignore_errors=True)
            run_dir.parent.mkdir(parents=True, exist_ok=True)
            log = out / f"{name}-{method}.log"
            unbroken = launch(
                config,
                method,
                run_dir,
                log,
                args.timeout_s,
                False,
                args.precision,
                args.weights,
                train_flags,
            )
            problems = check_run(unbroken, 1)
            row: dict[str, Any] = {"config": name, "method": method, "wall_s": unbroken["wall_s"]}
            saved = saved_weights(run_dir)
            row["whole_model"] = unbroken["rc"] == 0 and whole_model(run_dir, saved)
            row["saved_dtypes"] = sorted({dtype for _, dtype in saved.values()})
            if unbroken["rc"] == 0 and not row["whole_model"]:
                problems.append("model.safetensors does not hold the whole model")
            if name == "ddp":
                ddp_steps[method] = unbroken["steps"]
            elif method in ddp_steps:
                row["start_gap"] = largest_gap(unbroken["steps"], ddp_steps[method], range(1, 2))
                if args.precision == "fp32" and not row["start_gap"] <= args.start_rtol:
                    problems.append(f"step 1 differs from DDP's by {row['start_gap']:.2e} (relative)")
            if args.precision == "bf16" and name in BF16_SAME_START and unbroken["rc"] == 0:
                if method not in bf16_peer:
                    bf16_peer[method] = (name, unbroken["steps"])
                else:
                    peer, peer_steps = bf16_peer[method]
                    row["bf16_peer_gap"] = largest_gap(unbroken["steps"], peer_steps, range(1, 2))
                    if not row["bf16_peer_gap"] <= args.start_rtol:
                        problems.append(
                            f"step 1 differs from {peer}'s by {row['bf16_peer_gap']:.2e} (relative), "
                            "which computes it from the same bf16 weights"
                        )
            if name != "ddp" and unbroken["rc"] == 0:
                resumed_dir = out / name / f"{method}-resumed"
                shutil.rmtree(resumed_dir, ignore_errors=True)
                resumed_dir.mkdir(parents=True)
                shutil.copytree(
                    run_dir / f"checkpoint-{RESUME_FROM}", resumed_dir / f"checkpoint-{RESUME_FROM}"
                )
                log = out / f"{name}-{method}-resumed.log"
                resumed = launch(
                    config,
                    method,
                    resumed_dir,
                    log,
                    args.timeout_s,
                    True,
                    args.precision,
                    args.weights,
                    train_flags,
                )
                problems += [f"resumed: {p}" for p in check_run(resumed, RESUME_FROM + 1)]
                row["resume_gap"] = largest_gap(
                    resumed["steps"], unbroken["steps"], range(RESUME_FROM + 1, STEPS + 1)
                )
                if not row["resume_gap"] <= args.resume_rtol:
                    problems.append(
                        f"resumed steps differ from the unbroken run's by {row['resume_gap']:.2e}"
                    )
                row["wall_s"] += resumed["wall_s"]
            row["losses"] = [round(s["loss"], 6) for s in unbroken["steps"]]
            row["problems"] = problems
            rows.append(row)
            print(
                f"sharded_cpu: {name} {method}: {'ok' if not problems else '; '.join(problems)}", flush=True
            )
    return rows


def markdown(rows: list[dict[str, Any]], environment: dict[str, str]) -> str:
    def gap(value: float | None) -> str:
        return "" if value is None else f"{value:.1e}"

    lines = [
        f"# Sharded configs on 2 CPU processes, {environment.get('precision', 'fp32')} (benchmarks/sharded_cpu.py)",
        "",
        json.dumps(environment),
        "",
        "| config | method | status | losses, steps 1-4 | whole saved model | resumed vs unbroken | step 1 vs DDP "
        "| step 1, ZeRO-2 vs FSDP (bf16) | wall s |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for row in rows:
        status = "ok" if not row["problems"] else "; ".join(row["problems"])
        saved = f"yes ({', '.join(row.get('saved_dtypes', []))})" if row["whole_model"] else "no"
        lines.append(
            f"| {row['config']} | {row['method']} | {status} | {', '.join(f'{x:.4g}' for x in row['losses'])} | "
            f"{saved} | {gap(row.get('resume_gap'))} | {gap(row.get('start_gap'))} | "
            f"{gap(row.get('bf16_peer_gap'))} | {row['wall_s']:.0f} |"
        )
    return "\n".join(lines) + "\n"


def main() -> int:
    if sys.argv[1:2] == ["--worker"]:
        return worker(sys.argv[2:])
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--configs", nargs="+", choices=CONFIGS, default=CONFIGS, help="accelerate configs (default: all)"
    )
    parser.add_argument(
        "--methods", nargs="+", choices=METHODS, default=METHODS, help="methods (default: all)"
    )
    parser.add_argument(
        "--output_dir", type=Path, default=REPO / "outputs" / "sharded_cpu", help="runs, logs, report"
    )
    parser.add_argument(
        "--timeout_s", type=float, default=600, help="per launch (default 600; a hang is a failure)"
    )
    parser.add_argument(
        "--resume_rtol", type=float, default=1e-6, help="resumed vs unbroken, relative (default 1e-6)"
    )
    parser.add_argument(
        "--start_rtol",
        type=float,
        default=1e-4,
        help="step 1 vs DDP's in fp32, relative (default 1e-4). In bf16 DeepSpeed keeps bf16 weights and FSDP2 "
        "casts them, where DDP autocasts from fp32 weights: the gap to DDP is reported, not checked, and this "
        "bounds ZeRO-2 vs FSDP instead (BF16_SAME_START)",
    )
    parser.add_argument(
        "--precision",
        choices=sorted(PRECISIONS),
        default="fp32",
        help="fp32 (default), or bf16 as the shipped configs set it, taking the path it takes on a GPU "
        "(see bf16_as_on_a_gpu); this CPU then needs native bf16 to be quick",
    )
    parser.add_argument(
        "--weights",
        choices=["float32", "bfloat16"],
        default="float32",
        help="the dtype the policy loads in (psgrpo train's --dtype): float32 (default, the demo recipe's) or "
        "bfloat16 (the GSM8K recipe's: DDP then trains bf16 weights, FSDP upcasts them to fp32 masters)",
    )
    parser.add_argument(
        "--train_flags",
        default="",
        help="more `psgrpo train` flags for every launch, after the benchmark's own (default none: the demo "
        "recipe's shape, 64 completions a process). The tests pass a smaller batch; flags that change the steps or "
        "the checkpoints break the resume check",
    )
    args = parser.parse_args()
    try:
        shlex.split(args.train_flags)
    except ValueError as err:  # an unclosed quote: one line here, not a traceback from the first launch
        parser.error(f"--train_flags {args.train_flags!r}: {err}")
    if (
        any(name.startswith("deepspeed") for name in args.configs)
        and importlib.util.find_spec("deepspeed") is None
    ):
        sys.exit(
            "sharded_cpu: the DeepSpeed configs need deepspeed: run `make sharded-cpu` (it builds .venv-deepspeed)"
        )
    if "ddp" in args.configs:
        args.configs = ["ddp", *[c for c in args.configs if c != "ddp"]]  # the baseline of step 1 first
    args.output_dir.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    rows = run_all(args)
    import accelerate
    import torch
    import transformers
    import trl

    environment = {"torch": torch.__version__, "transformers": transformers.__version__, "trl": trl.__version__,
                   "accelerate": accelerate.__version__, "cpus": str(os.cpu_count()),
                   "precision": args.precision, "weights": args.weights, "train_flags": args.train_flags,
                   "wall_s": f"{time.perf_counter() - started:.0f}"}  # fmt: skip
    try:
        import deepspeed

        environment["deepspeed"] = deepspeed.__version__
    except ImportError:
        pass
    (args.output_dir / "sharded_cpu.json").write_text(
        json.dumps({"environment": environment, "rows": rows}, indent=1)
    )
    report = markdown(rows, environment)
    (args.output_dir / "sharded_cpu.md").write_text(report)
    print(report)
    return 1 if any(row["problems"] for row in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
