"""psgrpo.generation: ``--compiled_generation`` reaches transformers' generate as a static cache, compiled."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from trainer_helpers import length_reward, tiny_run_args
from transformers import CompileConfig, GenerationConfig
from transformers.cache_utils import Cache
from transformers.generation.utils import GenerationMixin

from psgrpo.config.process_grpo_config import ProcessGRPOConfig
from psgrpo.data.arith import make_arith_dataset
from psgrpo.generation import cache_ceiling, compiled_generation_error, enable_compiled_generation
from psgrpo.tiny.model import build_tiny_model
from psgrpo.trainer import ProcessGRPOTrainer

METHOD_ARGS = {
    "grpo": {},
    "ps": {},
    "vps": {},
    "tree": {
        "tree_branching": [2, 2],
        "tree_segment_tokens": 8,
    },  # two generate calls per step, one per level
}


class GenerateSpy:
    """Records, for every generate call, the cache class it built and whether it decoded through the compiled forward."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.caches: list[list[str]] = []
        self.lengths: list[int | None] = []  # each static cache's max_cache_len
        self.compiled: list[bool] = []
        prepare, criteria = (
            GenerationMixin._prepare_cache_for_generation,
            GenerationMixin._valid_auto_compile_criteria,
        )

        def spy_prepare(model, generation_config, model_kwargs, *args, **kwargs):
            result = prepare(model, generation_config, model_kwargs, *args, **kwargs)
            caches = [v for v in model_kwargs.values() if isinstance(v, Cache)]
            self.caches.append([type(v).__name__ for v in caches])
            self.lengths += [v.layers[0].max_cache_len for v in caches if type(v).__name__ == "StaticCache"]
            return result

        def spy_criteria(model, model_kwargs, generation_config):
            compiled = criteria(model, model_kwargs, generation_config)
            self.compiled.append(compiled)
            return compiled

        monkeypatch.setattr(GenerationMixin, "_prepare_cache_for_generation", spy_prepare)
        monkeypatch.setattr(GenerationMixin, "_valid_auto_compile_criteria", spy_criteria)


def _completions(tmp_path, tokenizer, method, compile_config=None, **overrides):
    """Train one greedy step (do_sample False: the completions depend on the weights alone); its completion ids.

    fp32 throughout (``bf16=False``), so the comparison means the same on every CPU and transformers release
    (bf16 autocast over fp32 weights is tested apart: test_autocast_over_other_weights_…)."""
    overrides.setdefault("bf16", False)
    args = ProcessGRPOConfig(
        **tiny_run_args(
            tmp_path,
            method=method,
            generation_kwargs={"do_sample": False},
            **METHOD_ARGS[method],
            **overrides,
        )
    )
    trainer = ProcessGRPOTrainer(
        model=build_tiny_model(tokenizer, seed=0, hidden_size=32, num_layers=2, intermediate_size=64),
        reward_funcs=[length_reward],
        args=args,
        train_dataset=make_arith_dataset("train", n=16),
        processing_class=tokenizer,
    )
    if compile_config is not None:
        enable_compiled_generation(trainer, compile_config)
    completions = []
    score = trainer._generate_and_score_completions

    def recorder(inputs):
        output = score(inputs)
        completions.append(output["completion_ids"].tolist())
        return output

    trainer._generate_and_score_completions = recorder
    trainer.train()
    return completions


@pytest.mark.parametrize("method", list(METHOD_ARGS))
def test_the_static_cache_reaches_generate_and_gives_the_same_completions(
    tmp_path, char_tokenizer, monkeypatch, method
):
    dynamic = _completions(tmp_path / "dynamic", char_tokenizer, method)
    spy = GenerateSpy(monkeypatch)
    static = _completions(tmp_path / "static", char_tokenizer, method, compiled_generation=True)
    assert static == dynamic
    levels = 2 if method == "tree" else 1
    assert spy.caches == [["StaticCache"]] * levels
    assert spy.compiled == [False] * levels  # a CPU: transformers compiles on accelerators only
    if hasattr(GenerationConfig(), "max_cache_len"):  # sized in buckets: prompt + completion, rounded up
        assert spy.lengths == [256] * levels  # arith prompts + 24 tokens < 256


def test_the_dynamic_cache_stays_without_the_option(tmp_path, char_tokenizer, monkeypatch):
    spy = GenerateSpy(monkeypatch)
    _completions(tmp_path, char_tokenizer, "grpo")
    assert spy.caches == [["DynamicCache"]] and spy.compiled == [False]


def test_decoding_runs_through_the_compiled_forward_where_transformers_compiles(
    tmp_path, char_tokenizer, monkeypatch
):
    """What a GPU does, forced on the CPU (``_compile_all_devices``; the eager backend: dynamo only, no inductor)."""
    dynamic = _completions(tmp_path / "dynamic", char_tokenizer, "grpo")
    config = CompileConfig(backend="eager", mode="default")
    config._compile_all_devices = True
    spy = GenerateSpy(monkeypatch)
    compiled = _completions(tmp_path / "compiled", char_tokenizer, "grpo", compile_config=config)
    assert spy.caches == [["StaticCache"]] and spy.compiled == [True]
    assert compiled == dynamic


@pytest.mark.parametrize(
    ("overrides", "names"),
    [
        ({"use_vllm": True}, "use_vllm"),
        ({"use_transformers_paged": True}, "use_transformers_paged"),
        ({"cache_implementation": "dynamic"}, "cache_implementation='dynamic'"),
        (
            {"generation_kwargs": {"cache_implementation": "offloaded"}},
            "generation_kwargs['cache_implementation']",
        ),
    ],
)
def test_a_combination_that_cannot_compile_is_refused_by_name(tmp_path, overrides, names):
    """The config refuses it when it is built, before any model loads, naming both options."""
    with pytest.raises(ValueError, match="compiled_generation=True") as refused:
        ProcessGRPOConfig(**tiny_run_args(tmp_path, compiled_generation=True, **overrides))
    assert names in str(refused.value)
    alone = ProcessGRPOConfig(**tiny_run_args(tmp_path, **overrides))  # alone, each setting is fine
    alone.compiled_generation = True
    assert names in compiled_generation_error(alone)


def test_the_trainer_refuses_it_too(tmp_path, char_tokenizer):
    """A config changed after it was built is checked again when the trainer starts."""
    args = ProcessGRPOConfig(**tiny_run_args(tmp_path, cache_implementation="dynamic"))
    args.compiled_generation = True
    with pytest.raises(ValueError, match="compiled_generation=True decodes with the static cache"):
        ProcessGRPOTrainer(model="not loaded", args=args, processing_class=char_tokenizer)


def test_allowed_settings_pass(tmp_path):
    for overrides in (
        {},
        {"cache_implementation": "static"},
        {"compiled_generation": False, "use_vllm": True},
    ):
        config = ProcessGRPOConfig(**tiny_run_args(tmp_path, **{"compiled_generation": True, **overrides}))
        assert compiled_generation_error(config) is None


@given(st.lists(st.integers(0, 5000), max_size=16), st.integers(1, 4096), st.sampled_from([1, 64, 256]))
def test_the_cache_ceiling_holds_the_longest_row_in_whole_buckets(lengths, completion, bucket):
    ceiling = cache_ceiling(lengths, completion, bucket)
    assert ceiling % bucket == 0 and ceiling >= max(lengths, default=0) + completion
    assert ceiling - bucket < max(max(lengths, default=0) + completion, 1)  # no whole bucket to spare


def test_autocast_over_other_weights_needs_a_recent_transformers(tmp_path, char_tokenizer, monkeypatch):
    """bf16 autocast over fp32 weights: refused by name before 5.25 (whose static cache mixes dtypes), works after."""
    import torch
    import transformers

    from psgrpo.generation import STATIC_CACHE_AUTOCAST_MIN

    def build(version: str, dtype: torch.dtype) -> ProcessGRPOTrainer:
        monkeypatch.setattr(transformers, "__version__", version)
        model = build_tiny_model(char_tokenizer, seed=0, hidden_size=32, num_layers=2, intermediate_size=64)
        return ProcessGRPOTrainer(
            model=model.to(dtype), reward_funcs=[length_reward],
            args=ProcessGRPOConfig(**tiny_run_args(tmp_path / version, bf16=True, compiled_generation=True)),
            train_dataset=make_arith_dataset("train", n=16), processing_class=char_tokenizer,
        )  # fmt: skip

    with pytest.raises(ValueError, match="bfloat16 autocast over float32 weights needs transformers >= 5.25"):
        build("5.17.0", torch.float32)
    assert build(STATIC_CACHE_AUTOCAST_MIN, torch.float32).generation_config.cache_implementation == "static"
    assert (
        build("5.17.0", torch.bfloat16).generation_config.cache_implementation == "static"
    )  # weights in bf16
