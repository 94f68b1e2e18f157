"""benchmarks/gpu_check.py and gpu_check.sh: the GPU readiness check, run here with --cpu-smoke."""

from __future__ import annotations

import dataclasses
import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from psgrpo.data.gsm8k import load_gsm8k
from psgrpo.tiny.model import build_tiny_model

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def gpu_check(import_benchmark):
    return import_benchmark("gpu_check")


def test_full_size_is_qwen25_0_5b(gpu_check, char_tokenizer):
    """Qwen2.5-0.5B's shapes with its 151,936 rows give its 494,032,768 parameters (counted on the meta device)."""
    with torch.device("meta"):
        model = build_tiny_model(char_tokenizer, vocab_size=151_936, **gpu_check.QWEN2_5_0_5B_SHAPES)
    config = model.config
    assert (config.hidden_size, config.num_hidden_layers, config.intermediate_size) == (896, 24, 4864)
    assert (config.num_attention_heads, config.num_key_value_heads, config.tie_word_embeddings) == (
        14,
        2,
        True,
    )
    assert sum(p.numel() for p in model.parameters()) == 494_032_768


def test_sections_run_the_gsm8k_recipe_with_two_steps(gpu_check):
    spec = dict(
        model_dir="m", dataset="d", method="vps", run_dir="r", steps=2, smoke=False, extra=["--x", "1"]
    )
    argv = gpu_check.section_argv(spec)
    assert argv[:2] == ["--config", str(REPO / "psgrpo/recipes/gsm8k_qwen2.5_0.5b.yaml")]
    flags = dict(zip(argv[2:-2:2], argv[3:-2:2], strict=True))
    assert (
        flags["--method"] == "vps" and flags["--max_steps"] == "2" and flags["--eval_before_after"] == "false"
    )
    assert not {"--bf16", "--gradient_checkpointing", "--max_completion_length"} & set(
        flags
    )  # the recipe's own
    assert argv[-2:] == ["--x", "1"]
    smoke = gpu_check.section_argv({**spec, "smoke": True, "extra": []})
    assert smoke[-len(gpu_check.SMOKE_FLAGS) :] == gpu_check.SMOKE_FLAGS


def test_synthetic_rows_load_as_gsm8k(gpu_check, tmp_path, monkeypatch):
    monkeypatch.delenv("PSGRPO_GSM8K_DIR", raising=False)
    monkeypatch.setattr(gpu_check, "REPO", tmp_path)  # no .cache/gsm8k there
    directory, origin = gpu_check.find_dataset(None, tmp_path / "out")
    assert origin.startswith("synthetic") and directory == tmp_path / "out" / "data"
    rows = load_gsm8k(str(directory), split="train", chat=True)
    assert len(rows) == 64 and rows[0]["prompt"][-1]["role"] == "user"
    assert len(load_gsm8k(str(directory), split="test")) == 16
    with pytest.raises(SystemExit, match="has no train.jsonl"):
        gpu_check.find_dataset(str(tmp_path / "nowhere"), tmp_path / "out")


def test_without_cuda_it_asks_for_cpu_smoke(gpu_check, tmp_path):
    if torch.cuda.is_available():
        pytest.skip("a CUDA device is present")
    with pytest.raises(SystemExit, match="pass --cpu-smoke"):
        gpu_check.main(["--output_dir", str(tmp_path)])


def test_an_import_failure_names_the_error(gpu_check):
    assert gpu_check.import_failure("json") is None
    assert gpu_check.import_failure("psgrpo_no_such_package") == (
        "ModuleNotFoundError: No module named 'psgrpo_no_such_package'"
    )


@pytest.mark.slow
def test_cpu_smoke_in_process_runs_vps_and_reports_the_optional_backends(
    gpu_check, tmp_path, qwen_tokenizer, monkeypatch, request
):
    """The script's main() on the smoke size: 1 vps step, then every optional section skipped with its reason.

    The session's tokenizer stands in for the ranks → tokenizer build (the same function, 10 s saved);
    the full script, every method and both steps, is the slow test below.
    """
    monkeypatch.setattr(gpu_check, "build_qwen_tokenizer", lambda ranks: qwen_tokenizer)
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # 2 threads on a shared 2-core machine spin-wait: 10-30x slower steps
    request.addfinalizer(lambda: torch.set_num_threads(threads))
    monkeypatch.setitem(
        gpu_check.OPTIONAL, "liger", ("psgrpo_no_such_package", ["--use_liger_kernel", "true"])
    )
    out = tmp_path / "gpu_check"
    argv = ["--cpu-smoke", "--methods", "vps", "--steps", "1", "--optional_methods", "grpo", "vps"]
    report = gpu_check.main([*argv, "--output_dir", str(out)])
    assert report == json.loads((out / "gpu_check.json").read_text())
    assert report["model"]["vocab_size"] == 151_936 and report["environment"]["device"] == "cpu"
    vps = report["sections"]["vps"]
    assert vps["status"] == "ok" and len(vps["step_time_s"]) == 1 and vps["completion_tokens_mean"] == [8]
    assert vps["compiled_graphs"] == 0  # transformers compiles decoding on accelerators only
    assert len(vps["loss"]) == 1 and len(vps["process_share"]) == 1
    assert list(report["sections"]) == ["vps", "vllm-grpo", "vllm-vps", "liger-grpo", "liger-vps"]
    liger = "skipped: psgrpo_no_such_package does not import (ModuleNotFoundError: No module named"
    assert report["sections"]["liger-vps"]["status"].startswith(liger)
    vllm = report["sections"]["vllm-vps"]["status"]
    assert vllm.startswith("skipped: vllm does not import") or vllm == "skipped: needs CUDA (--cpu-smoke)"
    table = (out / "gpu_check.md").read_text()
    assert "| vps | ok |" in table and "| liger-grpo | skipped: " in table and "| compiled graphs |" in table


@pytest.mark.slow
def test_cpu_smoke_runs_the_script_and_reports(tmp_path, qwen_tokenizer):
    """The whole script through its shell entry: `bash benchmarks/gpu_check.sh --cpu-smoke --methods grpo`
    (40 s on the shared 2 cores). vps's section is the in-process test's above; every method's static section
    runs in test_device_check.py's smoke."""
    env = {**os.environ, "PYTHON": sys.executable, "OMP_NUM_THREADS": "1"}
    out = tmp_path / "gpu_check"
    command = ["bash", str(REPO / "benchmarks/gpu_check.sh"), "--cpu-smoke", "--output_dir", str(out)]
    command += ["--methods", "grpo"]
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads((out / "gpu_check.json").read_text())
    assert report["environment"]["device"] == "cpu" and report["model"]["vocab_size"] == 151_936
    optional = [f"{backend}-{method}" for backend in ("vllm", "liger") for method in ("grpo", "ps", "vps")]
    assert list(report["sections"]) == ["grpo", *optional]
    section = report["sections"]["grpo"]
    assert section["status"] == "ok" and section["process_share"] == []
    assert len(section["step_time_s"]) == 2 and all(t > 0 for t in section["step_time_s"])
    assert section["completion_tokens_mean"] == [8, 8]  # a random model never stops early
    assert section["peak_rss_mib"] >= section["start_rss_mib"] > 0
    assert len(section["loss"]) == 2 and all(math.isfinite(v) for v in section["loss"])
    for name in optional:
        assert report["sections"][name]["status"].startswith("skipped: ")
        assert f"[gpu_check] {name}: skipped: " in done.stdout  # the line a GPU session reads
    table = (out / "gpu_check.md").read_text()
    assert "| grpo | ok |" in table and table in done.stdout


def test_a_section_name_is_a_trainer_and_a_cache(gpu_check):
    assert gpu_check.parse_section("ps-static") == ("ps", "static")
    assert gpu_check.parse_section("trl") == ("trl", "dynamic")
    assert gpu_check.parse_section("tree") == ("tree", "dynamic")
    with pytest.raises(ValueError, match="unknown section 'ps-fast'"):
        gpu_check.parse_section("ps-fast")


def test_a_static_section_compiles_generation_and_every_section_times_its_phases(gpu_check):
    spec = dict(model_dir="m", dataset="d", method="grpo", run_dir="r", steps=2, smoke=False, extra=[])
    static = gpu_check.section_argv({**spec, "cache": "static"})
    dynamic = gpu_check.section_argv({**spec, "cache": "dynamic"})
    for argv, compiled in ((static, "true"), (dynamic, "false")):  # said either way: the recipe may set it
        assert argv[argv.index("--compiled_generation") + 1] == compiled
        assert argv[argv.index("--phase_times") + 1] == "true"


def test_on_cuda_a_section_frees_the_last_sections_graphs_before_it_reads_memory(
    gpu_check, tmp_path, monkeypatch
):
    """A CUDA-present simulation of run_section: dynamo's reset (which frees the last -static section's CUDA graph
    pools) comes before the cache is emptied and the peak is reset, and the section reports GPU memory, not RSS."""
    calls: list[str] = []
    gib = 2**30
    for name, value in (
        ("memory_allocated", 1 * gib),
        ("max_memory_allocated", 5 * gib),
        ("max_memory_reserved", 6 * gib),
    ):
        monkeypatch.setattr(torch.cuda, name, lambda *a, n=name, v=value: calls.append(n) or v)
    for name in ("empty_cache", "reset_peak_memory_stats"):
        monkeypatch.setattr(torch.cuda, name, lambda *a, n=name: calls.append(n))
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch._dynamo, "reset", lambda: calls.append("dynamo.reset"))
    run_dir = tmp_path / "run"

    def fake_train(argv):  # what psgrpo train leaves behind: report.json and the logged steps
        calls.append("train")
        run_dir.mkdir()
        (run_dir / "report.json").write_text(json.dumps({"train_seconds": 8.0}))
        step = {"step_time": 4.0, "time/step_s": 4.0, "time/generation_s": 1.0}
        (run_dir / "metrics.jsonl").write_text("\n".join(json.dumps(step) for _ in range(2)) + "\n")

    monkeypatch.setattr(gpu_check, "psgrpo_train", fake_train)
    run_dir.mkdir()  # a rerun on a warm machine: the last check's section (train refuses a folder with a run)
    (run_dir / "report.json").write_text("{}")
    spec = dict(
        model_dir="m", dataset="d", method="grpo", run_dir=str(run_dir), steps=2, smoke=False, extra=[]
    )
    result = gpu_check.run_section({**spec, "cache": "static"})
    assert calls[: calls.index("train")] == [
        "dynamo.reset",
        "empty_cache",
        "reset_peak_memory_stats",
        "memory_allocated",
    ]
    assert (result["start_allocated_gib"], result["peak_allocated_gib"], result["peak_reserved_gib"]) == (
        1,
        5,
        6,
    )
    assert "peak_rss_mib" not in result and result["whole_step_s"] == [4.0, 4.0]


def _section(steps: list[float], **phases: float) -> dict:
    return {"status": "ok", "whole_step_s": steps, "phases_s": [phases] * len(steps)}


def test_the_summary_compares_like_with_like(gpu_check):
    sections = {
        "grpo-static": _section([30.0, 4.0], generation=1.0),
        "ps-static": _section([31.0, 4.4]),
        "trl-static": _section([30.0, 4.2]),
        "grpo": _section([60.0, 20.0]),
        "trl": {"status": "skipped: time budget"},
        "liger-grpo": _section([5.0, 3.0]),
    }
    summary = gpu_check.summary(sections)
    assert summary["ps-static"] == pytest.approx({"step_s": 4.4, "vs_trl": 4.4 / 4.2, "vs_grpo": 1.1})
    assert summary["grpo-static"] == pytest.approx(
        {"step_s": 4.0, "vs_trl": 4.0 / 4.2, "static_speedup": 5.0}
    )
    assert summary["grpo"] == {"step_s": 20.0}  # its stock TRL section did not run
    assert summary["trl-static"] == {"step_s": 4.2} and "trl" not in summary
    assert summary["liger-grpo"] == {"step_s": 3.0}
    table = gpu_check.breakdown_table({"sections": sections, "summary": summary})
    header, _, first, *rest = table.splitlines()
    assert header.split(" | ")[2:4] == ["generation", "logprobs"]
    assert first.startswith("| grpo-static | 4.00 | 1.00 | 0.00 |") and first.endswith("| 0.95 |  | 5.00 |")
    assert len(rest) == 4  # the skipped section has no row


def test_a_trl_section_trains_stock_trl_with_the_same_options(gpu_check, tmp_path, char_tokenizer):
    from trainer_helpers import save_tiny_model, tiny_run_args
    from transformers import AutoModelForCausalLM
    from trl import GRPOConfig, GRPOTrainer

    from psgrpo.config.process_grpo_config import ProcessGRPOConfig
    from psgrpo.data.arith import make_arith_dataset
    from psgrpo.trainer import ProcessGRPOTrainer

    args = ProcessGRPOConfig(
        **tiny_run_args(
            tmp_path,
            beta=0.05,
            warmup_lr=1e-6,
            warmup_steps=1,
            compiled_generation=True,
            phase_times=True,
            bf16=False,  # fp32 weights without autocast: a static cache on every transformers (docs/scaling.md)
        )
    )
    model = AutoModelForCausalLM.from_pretrained(save_tiny_model(tmp_path / "model", char_tokenizer))
    dataset = make_arith_dataset("train", n=8)
    with gpu_check.trainer_class("trl"):
        import psgrpo.trainer

        trainer = psgrpo.trainer.ProcessGRPOTrainer(
            model=model, args=args, train_dataset=dataset, processing_class=char_tokenizer
        )
    assert psgrpo.trainer.ProcessGRPOTrainer is ProcessGRPOTrainer  # restored
    assert isinstance(trainer, GRPOTrainer) and not isinstance(trainer, ProcessGRPOTrainer)
    assert type(trainer.args) is GRPOConfig
    shared = [f.name for f in dataclasses.fields(GRPOConfig) if f.init and f.name != "generation_batch_size"]
    assert all(getattr(trainer.args, name) == getattr(args, name) for name in shared)
    assert trainer.reward_func_names == ["correctness_reward", "format_reward"]
    assert trainer.generation_config.cache_implementation == "static" and trainer.phase_timer.enabled
    assert "generate" in vars(
        trainer.model
    )  # stock TRL's rollouts too leave no hook to recompile on (generation.py)


def test_a_section_starts_only_when_it_can_end_by_the_deadline(gpu_check):
    skip = gpu_check.budget_skip
    assert skip(10, 540, None, 0, 60) is None  # no deadline: only --time_budget_s
    assert skip(541, 540, None, 0, 60) == "skipped: time budget (no section starts after 540 s)"
    assert skip(10, 540, 70, 0, 60) is None  # the first section: --min_section_s
    assert skip(10, 540, 50, 0, 60) == "skipped: time budget (50 s left, a section needs about 60 s)"
    # then 1.25 × the longest section so far (80 s → 100 s)
    assert skip(10, 540, 99, 80, 60) == "skipped: time budget (99 s left, a section needs about 100 s)"
    assert skip(10, 540, 101, 80, 60) is None


@pytest.fixture()
def fake_sections(gpu_check, tmp_path, monkeypatch):
    """gpu_check.main without a model: sections that take no time, one that fails, and a log of what ran."""
    monkeypatch.setattr(gpu_check, "find_dataset", lambda choice, out: (tmp_path / "data", "synthetic"))
    shapes = {"num_layers": 2, "hidden_size": 32, "num_heads": 2, "num_kv_heads": 1, "vocab_size": 99}
    monkeypatch.setattr(
        gpu_check, "build_model_dir", lambda out, smoke: (tmp_path / "model", {**shapes, "parameters": 1e6})
    )
    ran: list[str] = []
    seen: dict[str, tuple[dict, str]] = {}  # section → (gpu_check.json, gpu_check.md) as it found them

    def run_section(spec):
        name = Path(spec["run_dir"]).name
        ran.append(name)
        if ran[1:]:
            out = Path(spec["run_dir"]).parents[1]
            seen[name] = (
                json.loads((out / "gpu_check.json").read_text()),
                (out / "gpu_check.md").read_text(),
            )
        if name.startswith("vps"):
            raise RuntimeError("CUDA error: an illegal memory access was encountered")
        return {**_section([30.0, 4.0]), "step_time_s": [30.0, 4.0], "train_s_per_step": 17.0,
                "peak_rss_mib": 1.0, "completion_tokens_mean": [8, 8], "loss": [0.1, 0.2]}  # fmt: skip

    monkeypatch.setattr(gpu_check, "run_section", run_section)
    return ran, seen


def test_every_section_rewrites_the_summary_and_a_failure_leaves_its_traceback(
    gpu_check, tmp_path, fake_sections, capsys
):
    out = tmp_path / "out"
    argv = ["--cpu-smoke", "--sections", "grpo-static", "trl-static", "vps-static", "ps-static", "--optional"]
    report = gpu_check.main([*argv, "--output_dir", str(out)])
    ran, seen = fake_sections
    assert ran == ["grpo-static", "trl-static", "vps-static", "ps-static"]
    # the second section found the first one's summary and table already written: a stop keeps them
    written, table = seen["trl-static"]
    assert written["summary"] == {"grpo-static": {"step_s": 4.0}} and "| grpo-static | ok |" in table
    assert report["sections"]["vps-static"]["status"] == (
        "failed: RuntimeError: CUDA error: an illegal memory access was encountered"
    )
    assert "Traceback (most recent call last)" in capsys.readouterr().out
    assert report["summary"]["ps-static"]["vs_trl"] == 1.0
    assert "| grpo-static | 4.00 |" in (out / "gpu_check.md").read_text()
    assert not list(out.glob("*.partial"))


def test_after_a_cuda_error_the_later_sections_are_skipped_with_it(
    gpu_check, tmp_path, fake_sections, monkeypatch
):
    monkeypatch.setattr(
        gpu_check, "cuda_error", lambda: "AcceleratorError: CUDA error: an illegal memory access"
    )
    argv = [
        "--cpu-smoke",
        "--sections",
        "vps-static",
        "grpo-static",
        "--optional",
        "--output_dir",
        str(tmp_path / "out"),
    ]
    report = gpu_check.main(argv)
    assert fake_sections[0] == ["vps-static"]
    assert report["sections"]["grpo-static"]["status"] == (
        "skipped: an earlier section left CUDA unusable (AcceleratorError: CUDA error: an illegal memory access)"
    )


def test_with_a_deadline_no_section_starts_that_could_not_end_by_it(gpu_check, tmp_path, fake_sections):
    deadline = gpu_check.time.time() + 30
    argv = ["--cpu-smoke", "--sections", "grpo-static", "--optional", "--output_dir", str(tmp_path / "out")]
    report = gpu_check.main([*argv, "--deadline", str(deadline), "--min_section_s", "60"])
    assert fake_sections[0] == []
    assert report["sections"]["grpo-static"]["status"].startswith("skipped: time budget (")


def test_once_a_section_took_long_the_next_needs_1_25_times_as_long_left(
    gpu_check, tmp_path, fake_sections, monkeypatch
):
    """Every fake section takes 80 s of a fake clock: with 190 s to the deadline the first (needs 60) and the
    second (needs 100, 110 left) run, the third (30 left) does not."""
    clock = {"now": 1_000.0}
    fake_time = type("FakeTime", (), {"time": staticmethod(lambda: clock["now"]),
                                      "perf_counter": staticmethod(lambda: clock["now"])})  # fmt: skip
    monkeypatch.setattr(gpu_check, "time", fake_time)
    run = gpu_check.run_section

    def slow(spec):
        clock["now"] += 80.0
        return run(spec)

    monkeypatch.setattr(gpu_check, "run_section", slow)
    argv = ["--cpu-smoke", "--sections", "grpo-static", "trl-static", "ps-static", "--optional"]
    report = gpu_check.main(
        [*argv, "--output_dir", str(tmp_path / "out"), "--deadline", "1190", "--min_section_s", "60"]
    )
    assert fake_sections[0] == ["grpo-static", "trl-static"]
    assert report["sections"]["trl-static"]["section_total_s"] == 80.0
    assert (
        report["sections"]["ps-static"]["status"]
        == "skipped: time budget (30 s left, a section needs about 100 s)"
    )


def test_a_child_section_stopped_at_the_deadline_is_a_budget_skip_with_its_output_in_the_log(
    gpu_check, tmp_path, capsys
):
    spec = {"run_dir": str(tmp_path / "runs" / "liger-grpo")}
    result = gpu_check.run_in_child(spec, timeout_s=0.5)  # the child is still importing torch
    assert result == {"status": "skipped: time budget (stopped after 0 s, at the end of the budget)"}
    gpu_check.show_child_output("liger-grpo", b"line one\nline two\n", None)
    assert "[gpu_check] liger-grpo stdout (last 2 lines):\nline one\nline two" in capsys.readouterr().out


def test_cuda_graph_recordings_are_counted_from_inductors_log_and_not_printed(gpu_check, capsys):
    """Where CUDA graphs exist (the device check), a re-recording per rollout would be invisible to
    CompileWatch: inductor's own records are counted, with the messages torch 2.11-2.15 write."""
    import logging

    import torch

    logger = logging.getLogger(gpu_check.CUDAGRAPH_LOGGER)
    with gpu_check.graph_recordings(False) as none:
        assert none is None
    with gpu_check.graph_recordings(True) as counter:
        assert logger.isEnabledFor(logging.DEBUG)  # the artifact is on inside the block
        for message in ("[%s] Recording function=%s, cuda_graph_id=%d, inputs: %s",) * 2 + (
            "[%s] Re-recording function=%s, reason=%s",
            "[%s] Running warmup function=%s, mode=%s",
        ):
            logger.debug(message, "0/0", "f", 1, "x" * 10_000)
    assert (counter.recorded, counter.rerecorded) == (2, 1)
    assert "Recording function" not in capsys.readouterr().err  # counted, not printed
    assert not logger.isEnabledFor(logging.DEBUG) or "cudagraphs" in os.environ.get("TORCH_LOGS", "")
    assert (
        torch._inductor.cudagraph_trees.log.name == gpu_check.CUDAGRAPH_LOGGER
    )  # the logger torch writes to
