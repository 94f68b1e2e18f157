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
from collections.abc import Callable, Iterator, Sequence
from typing import Any

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


def nan_as_infinite(reward_func: Callable[..., Any]) -> Callable[..., Any]:
    """``reward_func`` with a NaN it returns handed on as ``inf``, so :func:`check_rewards` stops the step.

    TRL turns a ``None`` reward into NaN, its "unscorable" marker, after the function returns; a NaN the
    function returned itself would pass as unscorable, so it is made infinite before TRL sees it (and the check
    runs on the gathered rewards, on every process together). Sync and async functions alike; the name is kept.
    """

    def mark(values: Any) -> Any:
        if isinstance(values, (list, tuple)):
            return [math.inf if isinstance(v, float) and math.isnan(v) else v for v in values]
        return values

    from trl.trainer.utils import (
        is_async_callable,  # also a partial or a callable object with an async __call__
    )

    if is_async_callable(reward_func):

        @functools.wraps(reward_func)
        async def checked_async(*args: Any, **kwargs: Any) -> Any:
            return mark(await reward_func(*args, **kwargs))

        return checked_async

    @functools.wraps(reward_func)
    def checked(*args: Any, **kwargs: Any) -> Any:
        return mark(reward_func(*args, **kwargs))

    return checked


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
