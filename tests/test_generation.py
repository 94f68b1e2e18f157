"""psgrpo.generation: ``--compiled_generation`` reaches transformers' generate as a static cache, compiled."""

from __future__ import annotations

import itertools

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
    spy = GenerateSpy(monkeypatch)
    compiled = _completions(
        tmp_path / "compiled", char_tokenizer, "grpo", compile_config=_forced_compile("eager")
    )
    assert spy.caches == [["StaticCache"]] and spy.compiled == [True]
    assert compiled == dynamic


@pytest.mark.parametrize(
    ("overrides", "names"),
    [
        ({"use_vllm": True}, "use_vllm"),
        ({"use_transformers_paged": True}, "use_transformers_paged"),
        (
            {"use_transformers_continuous_batching": True},
            "use_transformers_continuous_batching",
        ),  # TRL 1.16's name
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


def _input_grad_hooks(model) -> int:
    return len(model.get_input_embeddings()._forward_hooks)


def _hooks_seen_by_generate(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The input-embedding hooks each ``generate`` call finds, in order."""
    seen: list[int] = []
    generate = GenerationMixin.generate

    def spy(model, *args, **kwargs):
        seen.append(_input_grad_hooks(model))
        return generate(model, *args, **kwargs)

    monkeypatch.setattr(GenerationMixin, "generate", spy)
    return seen


def _tiny_trainer(tmp_path, tokenizer, method="grpo", stock=False, **overrides):
    """A tiny run with gradient checkpointing on (TRL's default, the GSM8K recipe's setting)."""
    from trl import GRPOConfig, GRPOTrainer

    fields = tiny_run_args(tmp_path, gradient_checkpointing=True, bf16=False, **overrides)
    model = build_tiny_model(tokenizer, seed=0, hidden_size=32, num_layers=2, intermediate_size=64)
    if stock:
        return GRPOTrainer(
            model=model, reward_funcs=[length_reward], args=GRPOConfig(**fields),
            train_dataset=make_arith_dataset("train", n=64), processing_class=tokenizer,
        )  # fmt: skip
    return ProcessGRPOTrainer(
        model=model, reward_funcs=[length_reward], args=ProcessGRPOConfig(method=method, **METHOD_ARGS[method], **fields),
        train_dataset=make_arith_dataset("train", n=64), processing_class=tokenizer,
    )  # fmt: skip


@pytest.mark.parametrize("method", ["grpo", "tree"])
def test_rollouts_leave_one_input_grad_hook(tmp_path, char_tokenizer, method):
    """TRL turns gradient checkpointing off and on around each rollout; the embeddings keep one hook, not 2·step + 1."""
    trainer = _tiny_trainer(tmp_path, char_tokenizer, method, max_steps=3)
    trainer.train()
    assert trainer.model.is_gradient_checkpointing and _input_grad_hooks(trainer.model) == 1


def test_stock_trl_gets_one_hook_with_compiled_generation(tmp_path, char_tokenizer):
    """Stock ``trl.GRPOTrainer`` (gpu_check's ``trl-static``) leaks a hook per rollout; enable_compiled_generation stops it."""
    stock = _tiny_trainer(tmp_path / "stock", char_tokenizer, stock=True, max_steps=3)
    stock.train()
    if _input_grad_hooks(stock.model) == 1:
        pytest.skip("this transformers/TRL no longer leaks the hook: tidy_input_grad_hooks can go")
    assert _input_grad_hooks(stock.model) > 1  # the leak (2 per step here) that tidy_input_grad_hooks stops
    fixed = _tiny_trainer(tmp_path / "fixed", char_tokenizer, stock=True, max_steps=3)
    enable_compiled_generation(fixed)
    fixed.train()
    assert _input_grad_hooks(fixed.model) == 1


def test_keep_one_input_grad_hook_is_idempotent_and_survives_a_deep_copy(char_tokenizer):
    import copy

    from psgrpo.generation import keep_one_input_grad_hook

    model = build_tiny_model(char_tokenizer, seed=0, hidden_size=32, num_layers=2, intermediate_size=64)
    assert keep_one_input_grad_hook(model) == 2  # Qwen2ForCausalLM and its Qwen2Model
    assert keep_one_input_grad_hook(model) == 0
    for _ in range(3):
        model.gradient_checkpointing_enable()
        model.gradient_checkpointing_disable()
    assert _input_grad_hooks(model) == 1
    twin = copy.deepcopy(model)
    twin.gradient_checkpointing_enable()  # the twin's hooks, on the twin's embeddings
    assert _input_grad_hooks(twin) == 1 and _input_grad_hooks(model) == 1


def _forced_compile(backend: str) -> CompileConfig:
    """What a GPU does, forced on the CPU: transformers compiles decoding on accelerators only."""
    config = CompileConfig(backend=backend, mode="default")
    config._compile_all_devices = True
    return config


def _train_counting_graphs(trainer, monkeypatch: pytest.MonkeyPatch, backend: str) -> list[int]:
    """Train with decoding compiled by ``backend``; dynamo's graph count after each step. Asserts every generate
    decoded compiled and nothing broke a graph (torch 2.11's symptom of the hook per rollout)."""
    import torch._dynamo
    from torch._dynamo.utils import counters
    from transformers import TrainerCallback

    class GraphCount(TrainerCallback):
        def __init__(self) -> None:
            self.per_step: list[int] = []

        def on_step_end(self, args, state, control, **kwargs):
            self.per_step.append(counters["stats"]["unique_graphs"])

    torch._dynamo.reset()
    counters.clear()
    enable_compiled_generation(trainer, _forced_compile(backend))
    graphs = GraphCount()
    trainer.add_callback(graphs)
    spy = GenerateSpy(monkeypatch)
    trainer.train()
    assert spy.compiled and all(spy.compiled)
    assert not counters["graph_break"], dict(counters["graph_break"])
    assert len(graphs.per_step) == trainer.args.max_steps
    return graphs.per_step


def _compiled_once(per_step: list[int]) -> bool:
    """Graphs made in the first steps only: each of the first step's graphs compiles again at most once, early (a
    second tree level batch size, or before transformers 5.17 a second cache length, makes that dimension dynamic)."""
    first, middle, last = per_step[0], per_step[len(per_step) // 2], per_step[-1]
    return 1 <= first and middle == last <= 2 * first


@pytest.mark.parametrize("method", ["grpo", "vps", "tree"])
def test_compiled_decoding_stops_compiling_after_the_first_steps(
    tmp_path, char_tokenizer, monkeypatch, method
):
    """Forced on the CPU (dynamo, eager backend), over more steps than dynamo's recompile limit: graphs are made in
    the first steps only, so decoding never reaches the limit, after which it would run eagerly for the rest of
    training. With a hook added per rollout, it compiled again at every step."""
    import torch._dynamo

    steps = torch._dynamo.config.recompile_limit + 2
    trainer = _tiny_trainer(tmp_path, char_tokenizer, method, max_steps=steps)
    per_step = _train_counting_graphs(trainer, monkeypatch, "eager")
    assert _compiled_once(per_step), per_step


def _cxx_compiler() -> str | None:
    import shutil

    return next((path for name in ("g++", "c++", "clang++") if (path := shutil.which(name))), None)


@pytest.mark.slow
@pytest.mark.skipif(
    _cxx_compiler() is None, reason="inductor compiles C++ on the CPU: no g++, c++ or clang++ here"
)
@pytest.mark.parametrize("method", ["grpo", "vps", "tree"])
def test_the_recipe_settings_compile_once_with_inductor(tmp_path, char_tokenizer, monkeypatch, method):
    """The GSM8K recipe's generation settings under inductor, the GPU's compiler (AOTAutograd, then generated code;
    the GPU adds CUDA graphs): bf16 weights and autocast, a reference model (beta > 0), gradient checkpointing,
    sampling with top-k / top-p. Decoding compiles in the first steps only, without a graph break, and training
    stays finite."""
    import math

    import torch

    model_dir = tmp_path / "model"  # beta > 0: TRL loads the reference model from the policy's path
    build_tiny_model(char_tokenizer, seed=0, hidden_size=32, num_layers=2, intermediate_size=64).to(
        torch.bfloat16
    ).save_pretrained(model_dir)
    fields = tiny_run_args(
        tmp_path, max_steps=5, bf16=True, beta=0.05, gradient_checkpointing=True, compiled_generation=True,
        temperature=0.7, top_k=40, top_p=0.9, model_init_kwargs={"dtype": "bfloat16"},
    )  # fmt: skip
    trainer = ProcessGRPOTrainer(
        model=str(model_dir), reward_funcs=[length_reward], train_dataset=make_arith_dataset("train", n=64),
        args=ProcessGRPOConfig(method=method, **METHOD_ARGS[method], **fields), processing_class=char_tokenizer,
    )  # fmt: skip
    assert trainer.model.dtype == torch.bfloat16 and trainer.ref_model is not None
    per_step = _train_counting_graphs(trainer, monkeypatch, "inductor")
    assert _compiled_once(per_step), per_step
    losses = [log["loss"] for log in trainer.state.log_history if "loss" in log]
    assert len(losses) == 5 and all(math.isfinite(loss) for loss in losses)


def test_generation_runs_without_the_input_grad_hook(tmp_path, char_tokenizer, monkeypatch):
    """No hook while TRL generates (it broke each compiled decoding graph in two under transformers 5.17), the
    one gradient checkpointing needs while the loss is computed."""
    seen = _hooks_seen_by_generate(monkeypatch)
    trainer = _tiny_trainer(tmp_path, char_tokenizer, "tree", max_steps=2)
    forward = trainer.compute_loss
    in_loss: list[int] = []

    def loss(model, *args, **kwargs):
        in_loss.append(_input_grad_hooks(trainer.model))
        return forward(model, *args, **kwargs)

    trainer.compute_loss = loss
    trainer.train()
    assert seen == [0] * 4  # 2 steps × 2 tree levels
    assert in_loss and set(in_loss) == {1}


def test_lora_with_reentrant_checkpointing_still_gets_gradients(tmp_path, char_tokenizer):
    """Reentrant checkpointing over frozen embeddings needs the hook in the loss forward: the LoRA weights learn."""
    import torch
    from peft import LoraConfig

    args = ProcessGRPOConfig(
        **tiny_run_args(
            tmp_path, max_steps=2, bf16=False, gradient_checkpointing=True, learning_rate=1e-2,
            gradient_checkpointing_kwargs={"use_reentrant": True},
        )
    )  # fmt: skip
    trainer = ProcessGRPOTrainer(
        model=build_tiny_model(char_tokenizer, seed=0, hidden_size=32, num_layers=2, intermediate_size=64),
        reward_funcs=[length_reward], args=args, train_dataset=make_arith_dataset("train", n=64),
        processing_class=char_tokenizer, peft_config=LoraConfig(r=4, target_modules=["q_proj", "v_proj"]),
    )  # fmt: skip
    before = {name: p.detach().clone() for name, p in trainer.model.named_parameters() if p.requires_grad}
    trainer.train()
    after = dict(trainer.model.named_parameters())
    assert before and all(not torch.equal(value, after[name]) for name, value in before.items())
    assert _input_grad_hooks(trainer.model) == 1


@pytest.mark.parametrize(
    ("made", "warned_after"),
    [
        ([1, 1, 0, 0, 0, 0, 0], None),  # compiles in the first rollouts, then never
        ([1, 1, 1, 0, 1, 1, 0, 1], None),  # never 3 in a row after the warm-up
        ([1, 1, 1, 1, 1, 1, 1, 1], 5),  # every rollout: warned once, at the 3rd after the 2 of warm-up
    ],
)
def test_the_compile_watch_warns_once_when_decoding_keeps_compiling(monkeypatch, caplog, made, warned_after):
    from psgrpo.generation import CompileWatch

    totals = iter([0, *itertools.accumulate(made)])
    monkeypatch.setattr(CompileWatch, "graphs", staticmethod(lambda: next(totals)))
    watch = CompileWatch()
    warned = []
    with caplog.at_level("WARNING", logger="psgrpo.generation"):
        for rollout, expected in enumerate(made, start=1):
            assert watch() == expected
            if caplog.records and not warned:
                warned.append(rollout)
    assert warned == ([] if warned_after is None else [warned_after])
    assert len(caplog.records) == len(warned)
    if warned:
        assert "TORCH_LOGS=recompiles" in caplog.text


def test_a_compiled_run_logs_its_graphs_per_rollout_and_does_not_warn(tmp_path, char_tokenizer, caplog):
    import torch._dynamo

    torch._dynamo.reset()
    trainer = _tiny_trainer(tmp_path, char_tokenizer, "grpo", max_steps=6, compiled_generation=True)
    enable_compiled_generation(trainer, _forced_compile("eager"))  # forced on the CPU, as a GPU compiles
    with caplog.at_level("WARNING", logger="psgrpo.generation"):
        trainer.train()
    graphs = [
        log["psgrpo/compiled_graphs"] for log in trainer.state.log_history if "psgrpo/compiled_graphs" in log
    ]
    assert len(graphs) == 6 and graphs[0] >= 1 and graphs[-3:] == [0.0, 0.0, 0.0]
    assert not caplog.records


def _tidy(model):
    import types as pytypes

    from psgrpo.generation import tidy_input_grad_hooks

    trainer = pytypes.SimpleNamespace(model=model, args=pytypes.SimpleNamespace(gradient_checkpointing=True))
    tidy_input_grad_hooks(trainer)
    return model


def test_generate_puts_back_the_hooks_it_took_off(char_tokenizer, monkeypatch):
    """Without relying on TRL to add it back (it does not for every model, e.g. one whose main input is not
    input_ids): no hook during generate while checkpointing is off, the model's one hook after it; with
    checkpointing on, generate leaves it."""
    import torch

    model = _tidy(
        build_tiny_model(char_tokenizer, seed=0, hidden_size=32, num_layers=2, intermediate_size=64)
    )
    seen = _hooks_seen_by_generate(monkeypatch)
    model.enable_input_require_grads()
    ids = torch.tensor([[5, 6, 7]])
    model.generate(ids, max_new_tokens=2, do_sample=False)
    assert seen == [0] and _input_grad_hooks(model) == 1
    model.gradient_checkpointing_enable()
    model.generate(ids, max_new_tokens=2, do_sample=False)
    assert seen == [0, 1] and _input_grad_hooks(model) == 1


def test_a_patched_model_still_pickles(char_tokenizer):
    import pickle

    model = _tidy(
        build_tiny_model(char_tokenizer, seed=0, hidden_size=32, num_layers=2, intermediate_size=64)
    )
    twin = pickle.loads(pickle.dumps(model))
    twin.enable_input_require_grads()
    twin.enable_input_require_grads()
    assert _input_grad_hooks(twin) == 1 and _input_grad_hooks(model) == 0


def test_the_cache_is_sized_for_the_prompts_as_trl_pads_them():
    """TRL pads prompts to pad_to_multiple_of before generate: a 200-token prompt is 256 long there, so a
    ceiling from 200 (512 with 300 new tokens) was short and transformers sized the cache off the grid."""
    from types import SimpleNamespace

    from psgrpo.generation import _size_cache_per_rollout

    trainer = SimpleNamespace(
        max_completion_length=300,
        pad_to_multiple_of=64,
        generation_config=SimpleNamespace(max_cache_len=None),
        _generate_single_turn=lambda prompt_ids, *a, **k: None,
    )
    _size_cache_per_rollout(trainer)
    trainer._generate_single_turn([[0] * 200, [0] * 10])
    assert trainer.generation_config.max_cache_len == cache_ceiling([256, 64], 300) >= 256 + 300
