"""benchmarks/bench_generation.py: transformers' generate, TRL's dynamic cache against the compiled static cache."""

from __future__ import annotations

import json

import pytest


@pytest.fixture(scope="module")
def bench_generation(import_benchmark):
    return import_benchmark("bench_generation")


def test_the_configs_are_trls_and_psgrpos(bench_generation):
    dynamic = bench_generation.generation_config("dynamic", 16, 0, 1)
    static = bench_generation.generation_config("static", 16, 0, 1)
    assert dynamic.disable_compile and dynamic.cache_implementation is None  # as GRPOTrainer builds it
    assert not static.disable_compile and static.cache_implementation == "static"
    for config in (dynamic, static):
        assert config.min_new_tokens == config.max_new_tokens == 16  # every call decodes exactly 16 tokens
        assert (config.do_sample, config.temperature, config.top_k, config.top_p) == (True, 0.7, 40, 0.9)


def test_cpu_smoke_times_both_caches(bench_generation, tmp_path):
    output = tmp_path / "generation.json"
    argv = ["--cpu-smoke", "--batch", "2", "--prompt_tokens", "8", "--new_tokens", "4", "--repeats", "1"]
    report = bench_generation.main([*argv, "--output", str(output)])
    assert report == json.loads(output.read_text())
    assert report["caches"].keys() == {"dynamic", "static"} and report["static_speedup"] > 0
    for timing in report["caches"].values():
        assert len(timing["call_s"]) == 1 and timing["ms_per_token"] == pytest.approx(
            1000 * timing["call_s"][0] / 4
        )
