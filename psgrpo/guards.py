"""Nothing non-finite reaches the weights: checks that stop a step before the optimizer moves.

Options are checked for NaN and infinity at config time (:mod:`psgrpo.config.options`). During training
a non-finite value can still appear: a reward function returning ``inf``, a diverged model
producing NaN logits, a loss or gradient overflowing. TRL would quietly turn some of them into
zero advantages (``nan_to_num``) and let others reach the optimizer. The trainer calls these
checks on the rewards, the advantages, the method's signal, the loss and the gradients; the
first failure raises :class:`NonFiniteError` naming the quantity, the step and the rows, before
``optimizer.step()``, so the weights and the last checkpoint stay as they were.
"""

from __future__ import annotations

import contextlib
import functools
import math
import numbers
import reprlib
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import Any

import numpy as np
import torch


class NonFiniteError(RuntimeError):
    """A NaN or infinite value in a training quantity; the message names it, the step and the rows."""


def bad_rows(values: torch.Tensor, allow_nan: bool = False, valid: torch.Tensor | None = None) -> list[int]:
    """Indices of the rows (dim 0) of ``values`` holding a non-finite entry.

    Args:
        values: (N, ...) any float tensor.
        allow_nan: NaN is allowed (a marker, e.g. TRL's unscorable reward); ±inf is not.
        valid: optional bool mask of ``values``'s shape; entries outside it are ignored (padding).
    """
    bad = torch.isinf(values) if allow_nan else ~torch.isfinite(values)
    if valid is not None:
        bad = bad & valid.to(torch.bool)
    if bad.dim() > 1:
        bad = bad.flatten(1).any(dim=1)
    return torch.nonzero(bad).flatten().tolist()


def check_finite(
    name: str, values: torch.Tensor, step: int, allow_nan: bool = False, valid: torch.Tensor | None = None
) -> None:
    """Raise :class:`NonFiniteError` when ``values`` (rows on dim 0) holds NaN or ±inf (see :func:`bad_rows`)."""
    rows = bad_rows(values.detach(), allow_nan=allow_nan, valid=valid)
    if rows:
        kind = "an infinite" if allow_nan else "a NaN or infinite"
        raise stopped(step, f"{name} holds {kind} value", rows)


def stopped(step: int, what: str, rows: Sequence[int], hint: str = "") -> NonFiniteError:
    """The error of a stopped step: what was found, in which rows (the first ten), and that nothing moved."""
    shown = ", ".join(map(str, rows[:10])) + (" …" if len(rows) > 10 else "")
    return NonFiniteError(
        f"step {step}: {what} in rows {shown}{hint}; the step was stopped before the optimizer moved, so the "
        "weights and the last checkpoint are unchanged"
    )


def check_rewards(rewards_per_func: torch.Tensor, names: Sequence[str], step: int) -> None:
    """Rewards (N, F) of the whole batch: NaN is TRL's "unscorable" marker (a ``None`` the function returned),
    ±inf names the reward function (an infinite value, or a NaN it returned itself: :func:`nan_as_infinite`)."""
    for column, name in enumerate(names):
        rows = bad_rows(rewards_per_func[:, column].detach(), allow_nan=True)
        if rows:
            what = f"reward function {name!r} returned NaN or an infinite value"
            raise stopped(step, what, rows, " (return None for a row it cannot score)")


REWARDS_EXPECTED = "a list (or tuple, 1-D array or tensor) of one number or None per completion"
"""What a reward function must return, quoted by :func:`reward_values`."""


def reward_values(name: str, values: Any, completions: int | None = None) -> list[float | None]:
    """What reward function ``name`` returned, checked, as Python floats and ``None``.

    Args:
        name: the function's name, for the error message.
        values: its result: a list or tuple whose entries are numbers (``int``, ``float``, ``bool``, numpy
            numbers, 0-d arrays or tensors) or ``None`` (TRL's "unscorable"), or a 1-D ``numpy.ndarray`` /
            ``torch.Tensor``.
        completions: how many completions it was given (``None``: not known, not checked).

    Returns:
        (completions,) the rewards as floats, ``None`` kept, a NaN made ``inf`` (see :func:`nan_as_infinite`).

    Raises:
        ValueError: ``values`` is no such sequence (a scalar, ``None``, a string, a mapping, a 2-D array …), an
            entry is not a number or ``None`` (a string, a list …), or there is not one per completion; the
            message names the function, what it returned (short repr and type) and what was expected.
    """
    where = f"reward function {name!r}"
    if isinstance(values, (torch.Tensor, np.ndarray)):
        if values.ndim != 1:
            raise ValueError(f"{where} returned {_described(values)}; expected {REWARDS_EXPECTED}")
        values = values.tolist()
    elif isinstance(values, Iterable) and not isinstance(values, (str, bytes, Mapping)):
        values = list(values)  # a generator, a pandas Series, an array.array: TRL only iterates it
    else:
        raise ValueError(f"{where} returned {_described(values)}; expected {REWARDS_EXPECTED}")
    if completions is not None and len(values) != completions:
        raise ValueError(
            f"{where} returned {len(values)} rewards for {completions} completions; expected {REWARDS_EXPECTED}"
        )
    rewards: list[float | None] = []
    for row, value in enumerate(values):
        if (
            isinstance(value, np.ndarray | torch.Tensor) and math.prod(value.shape) == 1
        ):  # a 0-d or [x] tensor
            value = value.item()
        number = isinstance(value, (numbers.Number, np.bool_)) and not isinstance(
            value, (complex, np.complexfloating)
        )
        if value is not None and not number:
            raise ValueError(
                f"{where} returned {_described(value)} for completion {row}; expected {REWARDS_EXPECTED}"
            )
        reward = None if value is None else float(value)
        rewards.append(math.inf if reward is not None and math.isnan(reward) else reward)
    return rewards


def _described(value: Any) -> str:
    """A short repr of ``value`` on one line, its type, and an array's or tensor's shape."""
    shape = f" of shape {tuple(value.shape)}" if isinstance(value, (torch.Tensor, np.ndarray)) else ""
    return f"{' '.join(reprlib.repr(value).split())} of type {type(value).__name__}{shape}"


def nan_as_infinite(reward_func: Callable[..., Any]) -> Callable[..., Any]:
    """``reward_func`` with its result checked (:func:`reward_values`) and a NaN it returns handed on as
    ``inf``, so :func:`check_rewards` stops the step.

    TRL turns a ``None`` reward into NaN, its "unscorable" marker, after the function returns; a NaN the
    function returned itself would pass as unscorable, so it is made infinite before TRL sees it (and the check
    runs on the gathered rewards, on every process together). A result that is no sequence of numbers, or not
    one per completion, raises a ``ValueError`` naming the function, instead of TRL's ``TypeError: 'float'
    object is not iterable``. Sync and async functions alike; the name is kept.
    """
    from trl.trainer.utils import get_callable_name

    name = get_callable_name(reward_func)

    def mark(values: Any, kwargs: dict[str, Any]) -> list[float | None]:
        completions = kwargs.get("completions")
        return reward_values(name, values, None if completions is None else len(completions))

    from trl.trainer.utils import (
        is_async_callable,  # also a partial or a callable object with an async __call__
    )

    if is_async_callable(reward_func):

        @functools.wraps(reward_func)
        async def checked_async(*args: Any, **kwargs: Any) -> Any:
            with named_errors(name):
                return mark(await reward_func(*args, **kwargs), kwargs)

        return checked_async

    @functools.wraps(reward_func)
    def checked(*args: Any, **kwargs: Any) -> Any:
        with named_errors(name):
            return mark(reward_func(*args, **kwargs), kwargs)

    return checked


@contextlib.contextmanager
def named_errors(name: str) -> Iterator[None]:
    """An error a reward function raises itself (a ``KeyError('gold')``, a bug) keeps its type and traceback and
    gains a note naming the function: TRL calls every function in one loop, so the traceback alone names none."""
    try:
        yield
    except Exception as err:
        if not isinstance(err, ValueError) or not str(err).startswith(f"reward function {name!r}"):
            err.add_note(f"(raised in reward function {name!r})")
        raise


def check_loss_and_gradients(loss: torch.Tensor, model: torch.nn.Module, accelerator: Any, step: int) -> None:
    """The loss and every gradient finite, on every process.

    One all-reduce of a flag, so every process raises together (a process raising alone would leave
    the others waiting in the next collective, e.g. under DDP, ZeRO-3 or FSDP).
    """
    # this process's part of each gradient (a sharded DTensor's local shard; the all-reduce below covers the rest)
    grads = [
        (n, getattr(p.grad, "to_local", lambda g=p.grad: g)())
        for n, p in model.named_parameters()
        if p.grad is not None
    ]
    # one device-side verdict per tensor, read back once (a read per parameter is ~290 GPU syncs a step)
    device = loss.device
    verdicts = [torch.isfinite(loss.detach()).all()] + [torch.isfinite(g).all().to(device) for _, g in grads]
    finite = torch.stack(verdicts)
    bad = []
    if not bool(finite.all()):  # the rare case: name the culprits
        flags = finite.tolist()
        bad = (["the loss"] if not flags[0] else []) + [
            f"the gradient of {n}" for (n, _), ok in zip(grads, flags[1:], strict=True) if not ok
        ]
    flag = torch.tensor([float(len(bad))], device=accelerator.device)
    if float(accelerator.reduce(flag, reduction="sum").item()) > 0:
        where = ", ".join(bad[:4]) + (" …" if len(bad) > 4 else "") if bad else "a value on another process"
        raise NonFiniteError(
            f"step {step}: NaN or infinite values in {where}; the step was stopped before the optimizer moved, "
            "so the weights and the last checkpoint are unchanged. Lower the learning rate, set max_grad_norm, "
            "or check the rewards"
        )


SAMPLING_REFUSED = "probability tensor contains either"
"""The start of torch's error when ``multinomial`` gets NaN, ±inf or negative probabilities (what a diverged
model's logits give ``generate``)."""


@contextlib.contextmanager
def diverged_sampling(step: int) -> Iterator[None]:
    """Turn torch's sampling error on NaN or infinite probabilities into :class:`NonFiniteError` for ``step``.

    Generation comes first in a step, so a model whose weights an update blew up (finite gradients, too large
    a step) failed there with ninety lines of ``torch.multinomial`` traceback before any check ran."""
    try:
        yield
    except RuntimeError as err:
        if SAMPLING_REFUSED not in str(err):
            raise
        raise NonFiniteError(
            f"step {step}: the policy's sampling probabilities hold NaN or infinite values (torch refused to sample "
            "from them): the weights diverged at an earlier update. Lower the learning rate or set max_grad_norm; "
            "a checkpoint saved after that update holds the diverged weights, so resume from one before it"
        ) from err
