"""Every private TRL / transformers member psgrpo overrides or reads, checked in one place.

psgrpo extends ``trl.GRPOTrainer`` (pinned to trl 1.16) through members TRL does not promise to
keep. When a TRL bump changes one of them, this file fails first and says which; the fix is then
in the module named in the message.

The lists are generated, so they cannot go stale: :data:`OVERRIDDEN` from the members psgrpo's trainer
classes define again, :data:`CALLS`, :data:`READS` and :data:`WRITES` from psgrpo's source (its AST):
``self.x`` inside those classes and ``trainer.x`` anywhere in the package. A new override, call or
attribute is checked the day it is written. Generation alone would let a member TRL drops fall out of its
list (an override of a member TRL no longer has is no override), so the overrides and writes are also pinned
(:data:`PINNED_OVERRIDES`, :data:`PINNED_WRITES`), and a private call psgrpo does not define itself is
listed whether or not TRL still has it.
"""

from __future__ import annotations

import ast
import inspect
import re
from collections import defaultdict
from pathlib import Path

import pytest
import torch
import transformers
import trl
from trainer_helpers import length_reward, tiny_run_args

import psgrpo
from psgrpo.config.process_grpo_config import ProcessGRPOConfig
from psgrpo.data.arith import make_arith_dataset
from psgrpo.tiny.model import build_tiny_model
from psgrpo.trainer import ProcessGRPOTrainer

PACKAGE = Path(psgrpo.__file__).resolve().parent
TRL_BASES = (trl.GRPOTrainer, transformers.Trainer)
TRAINER_NAMES = {"self", "trainer"}
"""Receivers that are a trainer inside psgrpo's trainer classes (``self``) and in commands (``trainer``)."""


def _psgrpo_classes() -> list[type]:
    """psgrpo's classes in ProcessGRPOTrainer's MRO: the trainer and its mixins."""
    return [c for c in ProcessGRPOTrainer.__mro__ if c.__module__.startswith("psgrpo")]


def _where(obj: object) -> str:
    return str(Path(inspect.getsourcefile(obj)).relative_to(PACKAGE))


def overridden_members() -> dict[str, list[type]]:
    """Every TRL / transformers trainer member a psgrpo trainer class defines again: name → those classes."""
    found: dict[str, list[type]] = defaultdict(list)
    for cls in _psgrpo_classes():
        for name, value in vars(cls).items():
            if callable(value) and not name.startswith("__") and hasattr(trl.GRPOTrainer, name):
                found[name].append(cls)
    return dict(found)


def _trainer_code() -> list[tuple[str, ast.AST, set[str]]]:
    """``(file, code, receivers)`` where a trainer is used: psgrpo's trainer classes (as ``self``, through
    ``super()``) and every module of the package that holds a ``trainer`` (as ``trainer``)."""
    classes: dict[Path, set[str]] = defaultdict(set)
    for cls in _psgrpo_classes():
        classes[Path(inspect.getsourcefile(cls))].add(cls.__name__)
    code = []
    for path in sorted(PACKAGE.rglob("*.py")):
        tree, where = ast.parse(path.read_text()), str(path.relative_to(PACKAGE))
        code.append((where, tree, {"trainer"}))
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef) and node.name in classes.get(path, ()):
                code.append((where, node, {"self", "super()"}))
    return code


def _receiver(node: ast.expr) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "super":
        return "super()"
    return None


def private_uses() -> tuple[dict[str, dict[str, set[str]]], dict[str, set[str]], dict[str, set[str]]]:
    """Read from psgrpo's source: the private TRL members it calls and the trainer attributes it reads.

    Returns ``(calls, attributes, assigned)``: ``calls[name]`` maps each file to the keyword names it
    passes to ``self.name(...)`` / ``super().name(...)`` / ``trainer.name(...)``; ``attributes[name]`` is
    the set of files reading ``self.name`` / ``trainer.name`` (other than a call), for names psgrpo never
    assigns; ``assigned[name]`` the files that assign it.
    """
    calls: dict[str, dict[str, set[str]]] = defaultdict(lambda: defaultdict(set))
    reads: dict[str, set[str]] = defaultdict(set)
    assigned: dict[str, set[str]] = defaultdict(set)
    defined = {n for c in _psgrpo_classes() for n in vars(c)}
    for where, code, receivers in _trainer_code():
        called = set()
        for node in ast.walk(code):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
                name = node.func.attr
                inherited = hasattr(trl.GRPOTrainer, name)
                if _receiver(node.func.value) in receivers and (inherited or name not in defined):
                    # a private call psgrpo does not define is TRL's, present or not: its test says which is gone
                    if name.startswith("_") and not name.startswith("__"):
                        calls[name][where] |= {k.arg for k in node.keywords if k.arg is not None}
                    if inherited:
                        called.add(id(node.func))
            elif isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign)):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                for target in targets:
                    if isinstance(target, ast.Attribute) and _receiver(target.value) in receivers:
                        assigned[target.attr].add(where)
        for node in ast.walk(code):
            if (
                isinstance(node, ast.Attribute)
                and id(node) not in called
                and isinstance(node.ctx, ast.Load)
                and _receiver(node.value) in receivers - {"super()"}
            ):
                reads[node.attr].add(where)
    own = defined | set(assigned)
    attributes = {n: files for n, files in reads.items() if n not in own and not n.startswith("__")}
    return {n: dict(v) for n, v in calls.items()}, attributes, assigned


CALLS, READS, ASSIGNED = private_uses()
OVERRIDDEN = overridden_members()
TRL_SOURCE = "\n".join(inspect.getsource(c) for c in (trl.GRPOTrainer, transformers.Trainer))
WRITES = {n: files for n, files in ASSIGNED.items() if n.startswith("_") and f"self.{n}" in TRL_SOURCE}
"""Private trainer attributes psgrpo sets that TRL or transformers read too (e.g. ``_created_lr_scheduler``)."""


PINNED_OVERRIDES = frozenset(
    {
        "_calculate_rewards",
        "_compute_loss",
        "_generate",
        "_generate_and_score_completions",
        "_generate_single_turn",
        "_get_output_dir",
        "_get_per_token_logps_and_entropies",
        "_get_train_sampler",
        "_load_optimizer_and_scheduler",
        "_run_epoch",
        "_save_checkpoint",
        "compute_loss",
        "create_model_card",
        "create_scheduler",
        "get_gamma_weights",
        "get_off_policy_mask",
        "train",
        "training_step",
    }
)
"""The TRL / transformers members psgrpo's trainer classes override with trl 1.16 (:data:`OVERRIDDEN` must equal
it: one TRL drops leaves psgrpo's method uncalled, and a new override is added here on purpose)."""

PINNED_WRITES = frozenset({"_buffered_inputs", "_created_lr_scheduler", "_generate_single_turn", "_step"})
"""The private attributes psgrpo sets that TRL or transformers read (:data:`WRITES` must equal it)."""

GENERATE_RETURNS = 8
"""``GRPOTrainer._generate`` returns (prompt_ids, completion_ids, tool_mask, completions, logprobs,
extra_fields, images, tool_images); the memory bank unpacks and rebuilds it."""

OUTPUT_KEYS = {"prompt_ids", "prompt_mask", "completion_ids", "completion_mask", "advantages"}
"""Keys of ``_generate_and_score_completions``'s output every psgrpo stage reads."""


def test_trl_is_the_pinned_minor():
    assert trl.__version__.startswith("1.16."), f"psgrpo is pinned to trl 1.16.x, found {trl.__version__}"


def test_the_contract_is_read_from_the_source():
    """Generated, so it cannot go stale; these members have been overridden or called for a long time."""
    assert {"_generate_and_score_completions", "_compute_loss", "_generate", "_save_checkpoint"} <= set(
        OVERRIDDEN
    )
    assert {"_get_per_token_logps_and_entropies", "_generate_and_score_completions"} <= set(CALLS)
    assert {"_metrics", "_tokenizer", "num_generations"} <= set(READS)
    assert "_created_lr_scheduler" in WRITES


def test_every_pinned_override_is_still_an_override():
    """A member TRL drops or renames falls out of the generated :data:`OVERRIDDEN`: compared with the pin, it
    fails by name instead of leaving psgrpo's override silently uncalled."""
    gone = sorted(PINNED_OVERRIDES - set(OVERRIDDEN))
    assert not gone, (
        f"trl.GRPOTrainer (or transformers.Trainer) no longer has {gone}: psgrpo's overrides of them are never "
        "called; port them to what replaced them"
    )
    new = sorted(set(OVERRIDDEN) - PINNED_OVERRIDES)
    assert not new, (
        f"psgrpo now overrides {new}: add them to PINNED_OVERRIDES (their signatures are checked below)"
    )


def test_every_pinned_write_is_still_read_by_trl():
    gone = sorted(PINNED_WRITES - set(WRITES))
    assert not gone, f"nothing in TRL or transformers reads {gone} now; psgrpo sets them for TRL to read"
    new = sorted(set(WRITES) - PINNED_WRITES)
    assert not new, f"psgrpo now sets TRL's private {new}: add them to PINNED_WRITES"


@pytest.mark.parametrize("name", sorted(WRITES))
def test_private_attributes_psgrpo_sets_are_still_trls(name):
    """The contract of a write: TRL or transformers still reads the attribute psgrpo sets for it."""
    assert re.search(rf"self\.{name}\b", TRL_SOURCE), (
        f"nothing in TRL reads {name!r} now; set in {sorted(WRITES[name])}"
    )


def _trl_owner(name: str) -> type:
    for cls in trl.GRPOTrainer.__mro__:
        if name in vars(cls):
            return cls
    raise AssertionError(name)


def _parameters(function) -> list[inspect.Parameter]:
    return [p for p in inspect.signature(function).parameters.values() if p.name != "self"]


@pytest.mark.parametrize("name", sorted(OVERRIDDEN))
def test_overridden_members_keep_their_signature(name):
    """TRL calls psgrpo's override as it would call its own member: TRL's parameters are a prefix of ours."""
    theirs = [p.name for p in _parameters(getattr(trl.GRPOTrainer, name))]
    for cls in OVERRIDDEN[name]:
        ours = _parameters(vars(cls)[name])
        if any(p.kind is inspect.Parameter.VAR_POSITIONAL for p in ours):
            continue  # (*args, **kwargs): forwards whatever TRL passes
        names = [p.name for p in ours if p.kind is not inspect.Parameter.VAR_KEYWORD]
        assert names[: len(theirs)] == theirs[: len(names)] and (
            len(names) >= len(theirs) or any(p.kind is inspect.Parameter.VAR_KEYWORD for p in ours)
        ), (
            f"{_trl_owner(name).__name__}.{name}{theirs} changed; psgrpo overrides it in {_where(cls)} with {names}"
        )


@pytest.mark.parametrize("name", sorted(CALLS))
def test_called_members_take_the_keywords_psgrpo_passes(name):
    assert hasattr(trl.GRPOTrainer, name), f"GRPOTrainer.{name} is gone; called in {sorted(CALLS[name])}"
    parameters = {p.name: p for p in _parameters(getattr(trl.GRPOTrainer, name))}
    takes_any = any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters.values())
    for where, keywords in CALLS[name].items():
        missing = sorted(k for k in keywords if k not in parameters)
        assert takes_any or not missing, f"GRPOTrainer.{name} no longer takes {missing}; see {where}"


@pytest.fixture(scope="module")
def trainer(tmp_path_factory, char_tokenizer):
    tmp = tmp_path_factory.mktemp("contract")
    model = build_tiny_model(char_tokenizer, seed=0, hidden_size=32, num_layers=2, intermediate_size=64)
    return ProcessGRPOTrainer(
        model=model,
        reward_funcs=[length_reward],
        args=ProcessGRPOConfig(**tiny_run_args(tmp, max_completion_length=8)),
        train_dataset=make_arith_dataset("train", n=8),
        processing_class=char_tokenizer,
    )


@pytest.mark.parametrize("name", sorted(READS))
def test_attributes_psgrpo_reads_exist(trainer, name):
    """On a built trainer, or assigned by GRPOTrainer.__init__ under a setting the fixture does not use (vLLM)."""
    assigned = re.search(rf"self\.{name}\s*=", inspect.getsource(trl.GRPOTrainer.__init__)) is not None
    assert hasattr(trainer, name) or assigned, (
        f"GRPOTrainer no longer sets {name!r}; read in {sorted(READS[name])}"
    )


def test_compute_loss_reads_old_logps_after_its_forward():
    """GSPO-token (loss_hooks.py) sets the old log-probs from inside the loss forward, so TRL must read them after."""
    source = inspect.getsource(trl.GRPOTrainer._compute_loss)
    forward = source.index("self._get_per_token_logps_and_entropies(")
    assert forward < source.index('inputs.get("old_per_token_logps")'), "see psgrpo/loss_hooks.py"
    assert 'if self.importance_sampling_level == "token":' in source, "see psgrpo/loss_hooks.py"
    for hook in ("get_off_policy_mask", "get_gamma_weights"):  # the wrappers take keyword arguments only
        assert re.search(rf"self\.{hook}\(\s*advantages=advantages,", source), (
            f"_compute_loss no longer calls self.{hook}(advantages=..., ...); see psgrpo/loss_hooks.py"
        )


def test_metrics_and_logs_have_the_layout_psgrpo_writes_into(trainer):
    assert set(trainer._metrics) >= {"train", "eval"}
    assert (
        isinstance(trainer._metrics["train"], defaultdict)
        and trainer._metrics["train"].default_factory is list
    )
    assert "rewards" in trainer._logs


def test_generate_returns_the_tuple_the_memory_bank_rebuilds(trainer):
    rows = [dict(make_arith_dataset("train", n=1)[0]) for _ in range(trainer.num_generations)]
    trainer.model.train()
    result = trainer._generate([row["prompt"] for row in rows])
    assert isinstance(result, tuple) and len(result) == GENERATE_RETURNS
    prompt_ids, completion_ids, _, completions, *_ = result
    assert len(prompt_ids) == len(completion_ids) == len(completions) == len(rows)
    assert all(isinstance(ids, list) and all(isinstance(t, int) for t in ids) for ids in completion_ids)


def test_generate_and_score_output_and_rewards_shape(trainer):
    rows = [dict(make_arith_dataset("train", n=1)[0]) for _ in range(trainer.num_generations)]
    trainer.model.train()
    output = trainer._generate_and_score_completions(rows)
    assert OUTPUT_KEYS <= set(output)
    assert output["advantages"].shape == (len(rows),)  # grpo: TRL's own 1-D A_i (ps/vps: (B, T))
    assert trainer.step_record.rewards_per_func.shape == (len(rows), 1)  # (N, F) from _calculate_rewards
    logps, entropies = trainer._get_per_token_logps_and_entropies(
        trainer.model,
        torch.cat([output["prompt_ids"], output["completion_ids"]], dim=1),
        torch.cat([output["prompt_mask"], output["completion_mask"]], dim=1),
        output["completion_ids"].size(1),
        batch_size=4,
    )[:2]
    assert logps.shape == output["completion_ids"].shape
