"""The ``psgrpo`` command line: one subcommand per module of :mod:`psgrpo.commands`; this file only dispatches.

Every subcommand parses its dataclasses with :class:`psgrpo.config.parsing.ConfigParser` (TRL's parser:
``--config FILE.yaml`` sets values, flags override them). A user error (a bad option value, a
missing file, a malformed dataset row, a missing package) ends with one ``psgrpo: error: …``
line and exit status 2 (it ends by pointing at ``--help`` for a bad option value, at ``--traceback`` for
anything else); ``--traceback`` (or ``PSGRPO_DEBUG=1``) shows the Python traceback instead
(``--debug`` is TrainingArguments' own option and passes through). Ctrl-C ends with one line and exit
status 130 (``psgrpo train`` names the newest complete checkpoint and the command that resumes it).
"""

from __future__ import annotations

import argparse
import importlib
import logging
import os
import sys
from collections.abc import Sequence

from psgrpo.config.kernel_caches import bound_kernel_caches
from psgrpo.config.options import METHODS

SUBCOMMANDS = {
    "train": (
        "psgrpo.commands.train:train",
        f"train a policy with --method {' / '.join(METHODS)} (default: the embedded demo recipe)",
    ),
    "eval": (
        "psgrpo.commands.evaluate:run_eval",
        "accuracy, pass@k, error types of a checkpoint; JSON + markdown + per-sample JSONL",
    ),
    "warmstart": (
        "psgrpo.commands.warmstart:warmstart",
        "reproduce the embedded warm-start checkpoint (SFT of the tiny model)",
    ),
    "inspect": (
        "psgrpo.commands.inspect_credit:inspect",
        "HTML page of the credit each token gets on a few sampled groups",
    ),
    "diagnose": (
        "psgrpo.commands.diagnose:diagnose",
        "does a checkpoint's VPS probe point at the wrong step? AUC of ΔC, C, |α·ΔC|, cut places",
    ),
    "compare": (
        "psgrpo.commands.compare:compare",
        "train methods × seeds on one budget; held-out curves, plot and table (docs/compare.md)",
    ),
    "env": (
        "psgrpo.commands.env:env",
        "this machine and its versions, checked against psgrpo's declared and tested ranges (for bug reports)",
    ),
    "score-steps": (
        "psgrpo.commands.score_steps:score_steps",
        "how well a step scorer finds the first wrong step of labelled solutions (docs/scorers.md)",
    ),
}
"""``name → ("module:function", help)``; the function takes the remaining argv."""

USER_ERRORS = (ValueError, ImportError, OSError)
"""Exceptions that report a problem with the user's input or environment, shown without a traceback
(and :class:`psgrpo.guards.NonFiniteError`: a training quantity went NaN or infinite)."""


TRACEBACK_FLAG = "--traceback"
"""psgrpo's own flag (any position) for Python tracebacks; ``--debug`` belongs to TrainingArguments."""

INTERRUPTED_STATUS = 130
"""Exit status after Ctrl-C (128 + SIGINT), as a shell reports it."""


def _usage(argv: list[str]) -> int:
    top = argparse.ArgumentParser(
        prog="psgrpo",
        description="Process-supervised GRPO on TRL. `psgrpo SUBCOMMAND --help` lists a subcommand's options "
        "(`--help-all`: every option, TRL's too).",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="subcommands:\n"
        + "\n".join(f"  {k:11s} {v[1]}" for k, v in SUBCOMMANDS.items())
        + f"\n\n{TRACEBACK_FLAG} (or PSGRPO_DEBUG=1) shows Python tracebacks of errors; --version prints "
        "psgrpo's version (`psgrpo env`: every version that matters).",
    )
    top.add_argument("subcommand", choices=list(SUBCOMMANDS))
    top.parse_args(argv[:1])  # prints usage / error and exits
    return 2


def _error_message(err: BaseException) -> str:
    """The error as one line: library messages (transformers, the hub) span several lines."""
    return " ".join(str(err).split()) or type(err).__name__


def _error_hint(err: BaseException, subcommand: str) -> str:
    """The error line's closing parenthesis: where the options are listed, for a bad option value (a
    :class:`~psgrpo.config.parsing.ConfigError`: argparse's, or a check run while the config is built, whose
    message names the option); how to see the traceback, for anything else. ``--traceback`` works for both."""
    from psgrpo.config.parsing import ConfigError

    if isinstance(err, ConfigError):
        return "" if "--help" in str(err) else f"(`psgrpo {subcommand} --help` lists the options)"
    return f"({TRACEBACK_FLAG} or PSGRPO_DEBUG=1 shows the traceback)"


def silence_unactionable_warnings() -> None:
    """Hide, for this process, the warnings TRL's own code raises that a user cannot act on
    (:data:`psgrpo.trl_warnings.TRL_DEPRECATIONS`); in the Python API, ``ProcessGRPOTrainer.__init__`` does it."""
    from psgrpo.trl_warnings import ignore_trl_deprecations

    ignore_trl_deprecations()


def configure_logging() -> None:
    """INFO and above to stderr with time and logger name: psgrpo's progress lines (compare's runs, resumes)."""
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(levelname)s %(message)s")


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``psgrpo`` console script (and ``python -m psgrpo``)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    debug = TRACEBACK_FLAG in argv or os.environ.get("PSGRPO_DEBUG", "") not in ("", "0")
    argv = [a for a in argv if a != TRACEBACK_FLAG]
    if argv[:1] in (["--version"], ["-V"]):
        from psgrpo import __version__

        print(f"psgrpo {__version__}")  # `psgrpo env`: every version that matters, for a bug report
        return 0
    configure_logging()
    silence_unactionable_warnings()
    if not argv or argv[0] in ("-h", "--help") or argv[0] not in SUBCOMMANDS:
        return _usage(argv)
    try:  # before any command imports torch: both caches read their variable once
        bound_kernel_caches()
    except ValueError as err:  # `psgrpo env` lists it among its problems instead: it must always report
        if argv[0] != "env":
            print(f"psgrpo: error: {err}", file=sys.stderr)
            return 2
    module_name, function_name = SUBCOMMANDS[argv[0]][0].split(":")
    command = getattr(importlib.import_module(module_name), function_name)
    try:
        from psgrpo.methods import resolve_method_flag  # --method my_methods.py:NAME: import it first

        command(resolve_method_flag(argv[1:]))
    except KeyboardInterrupt as interrupt:
        if debug:
            raise
        # psgrpo train raises psgrpo.preflight.TrainingInterrupted, naming the checkpoint to resume from
        print(f"psgrpo: {_error_message(interrupt) if str(interrupt) else 'interrupted'}", file=sys.stderr)
        return INTERRUPTED_STATUS
    except Exception as err:
        # psgrpo.guards imports torch: look it up only if a command imported it (`psgrpo --help` and
        # `psgrpo env` must work where torch does not import); not imported, it raised no NonFiniteError
        guards = sys.modules.get("psgrpo.guards")
        user_errors = (*USER_ERRORS, guards.NonFiniteError) if guards is not None else USER_ERRORS
        if debug or not isinstance(err, user_errors):
            raise
        hint = _error_hint(err, argv[0])
        print(f"psgrpo: error: {_error_message(err)}{' ' + hint if hint else ''}", file=sys.stderr)
        return 2
    if "torch" in sys.modules:  # under torchrun: the trainer is unreachable now, so its process group can go
        from psgrpo.distributed import close_process_group

        close_process_group()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
