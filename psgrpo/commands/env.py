"""``psgrpo env``: this machine and its versions, checked against what psgrpo declares and was tested with.

::

    psgrpo env           # a block to paste into a bug report, then any problem found
    psgrpo env --json    # the same as one JSON object (for scripts)

What it reads: the platform, Python, the CPU (model, usable cores, whether it computes bf16 natively, as
:mod:`psgrpo.config.precision` decides), torch and its accelerator (the CUDA / ROCm build, each GPU's name,
memory, compute capability and bf16 support, MPS), and the installed version of every package psgrpo
requires or can use (its extras, and liger-kernel, flash-attn, wandb). Two checks follow:

- **problems**: a required package missing, installed outside the range psgrpo declares, or not importing
  (torch); a requirement a required package asks for through an extra (``math-verify[antlr4_13_2]`` pins
  the ANTLR runtime) likewise; a bad ``$PSGRPO_NATIVE_BF16``. pip enforces the ranges at install time, but a
  CUDA image, ``pip install --no-deps`` or a later ``pip install`` of something else can break them, and a
  run on such a set is untested;
- **notes**: a version newer than the newest psgrpo was tested with (:data:`TESTED`, the README's "Tested
  versions"), allowed and untested.

The ranges are read from the pyproject.toml beside the imported package when there is one (a clone,
installed editable or not), else from the installed metadata. It imports torch (for the accelerator) and
nothing else heavy, tolerates a torch that does not import, and never loads a model.
"""

from __future__ import annotations

import argparse
import dataclasses
import importlib.metadata
import json
import os
import platform
import subprocess
import sys
import tomllib
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version

import psgrpo
from psgrpo.config.kernel_caches import (
    IDEEP_CACHE_ENV,
    ONEDNN_CACHE_ENV,
    ONEDNN_LEGACY_ENV,
    kernel_cache_problem,
)

TESTED: dict[str, tuple[str, str]] = {
    "python": ("3.11", "3.14"),
    "torch": ("2.11", "2.15"),
    "transformers": ("5.6", "5.25"),
    "trl": ("1.16", "1.16"),
}
"""``{name: (oldest, newest)}`` major.minor releases the test jobs ran (docs/compatibility.md#versions-which-job-
tests-which-part-of-the-declared-ranges); README.md's "Tested versions" states the same (a test keeps them equal).
Bump the newest when a job runs a newer release."""

OPTIONAL = ("peft", "deepspeed", "vllm", "liger-kernel", "flash-attn", "matplotlib", "wandb")
"""Packages psgrpo can use when installed (its extras and TRL's integrations); reported, never required."""


def _installed(name: str) -> str | None:
    """The installed version of the distribution ``name``, or ``None``."""
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return None


def _with_extra(line: str, extra: str) -> str:
    """A pyproject.toml extra's requirement line as package metadata writes it: its own marker and the extra."""
    requirement = Requirement(line)
    marker = f"extra == {extra!r}"
    if requirement.marker is not None:
        marker = f"({requirement.marker}) and {marker}"
    requirement.marker = None
    return f"{requirement}; {marker}"


def declared_requirements(package_dir: Path | None = None) -> list[str]:
    """psgrpo's requirement strings, as package metadata writes them.

    From the pyproject.toml beside the imported package when there is one (a clone: its ranges are the ones
    the code was written for, even when the installed metadata is older), else from the installed
    metadata; ``[]`` when neither is found. ``package_dir`` defaults to the imported package's directory.
    """
    pyproject = Path(package_dir or Path(psgrpo.__file__).parent).resolve().parent / "pyproject.toml"
    if pyproject.is_file():
        project = tomllib.loads(pyproject.read_text()).get("project", {})
        if project.get("name") == "psgrpo":
            extras = project.get("optional-dependencies", {})
            return list(project.get("dependencies", [])) + [
                _with_extra(line, extra) for extra, lines in extras.items() for line in lines
            ]
    try:
        return list(importlib.metadata.requires("psgrpo") or [])
    except importlib.metadata.PackageNotFoundError:
        return []


def _extra_of(requirement: Requirement) -> bool:
    """Whether ``requirement`` belongs to one of psgrpo's extras (its marker names ``extra``)."""
    return requirement.marker is not None and "extra" in str(requirement.marker)


def _is_dev(requirement: str) -> bool:
    """Whether a requirement line belongs to the ``dev`` extra (test tools: neither reported nor checked)."""
    marker = Requirement(requirement).marker
    return marker is not None and marker.evaluate({"extra": "dev"}) and not marker.evaluate({"extra": ""})


def _through_extras(requirement: Requirement) -> list[tuple[str, str]]:
    """``(requirement line, who needs it)`` for what an installed package asks for through the extras
    ``requirement`` names (``math-verify[antlr4_13_2]`` → ``antlr4-python3-runtime==4.13.2``)."""
    if not requirement.extras:
        return []
    try:
        lines = importlib.metadata.requires(requirement.name) or []
    except importlib.metadata.PackageNotFoundError:
        return []
    found = []
    for line in lines:
        try:
            sub = Requirement(line)
        except InvalidRequirement:
            continue
        if sub.marker is None or sub.marker.evaluate({"extra": ""}):
            continue  # the package's own requirement: pip's business, not psgrpo's declaration
        if any(sub.marker.evaluate({"extra": extra}) for extra in requirement.extras):
            sub.marker = None
            found.append((str(sub), f"{requirement.name}[{','.join(sorted(requirement.extras))}]"))
    return found


def version_problems(
    requirements: Sequence[str], installed: dict[str, str | None], through_extras: bool = True
) -> list[str]:
    """One line per requirement that ``installed`` breaks.

    Args:
        requirements: requirement strings as package metadata writes them (``"trl<1.17,>=1.16"``,
            ``"peft>=0.15; extra == \\"peft\\""``).
        installed: ``{canonical name: version or None}``; a name not in it is looked up in this Python.
        through_extras: also check what an installed core requirement asks for through the extras named
            (:func:`_through_extras`), and so on down (``math-verify[antlr4_13_2]`` →
            ``latex2sympy2_extended[antlr4_13_2]`` → ``antlr4-python3-runtime==4.13.2``).

    Returns:
        ``"transformers 5.3.0 is installed; psgrpo needs transformers<6,>=5.6"`` for a version outside its
        range (a core requirement, or an extra's requirement of a package that is installed), and
        ``"trl is not installed; psgrpo needs trl<1.17,>=1.16"`` for a missing core requirement.
        Requirements whose markers exclude this Python are skipped.
    """
    checks: list[tuple[str, str]] = [(line, "psgrpo") for line in requirements]
    problems: list[str] = []
    followed: set[str] = set()
    while checks:
        line, needed_by = checks.pop(0)
        try:
            requirement = Requirement(line)
        except InvalidRequirement:
            continue
        optional = _extra_of(requirement)
        if requirement.marker is not None and not optional and not requirement.marker.evaluate():
            continue
        name = canonicalize_name(requirement.name)
        version = installed[name] if name in installed else _installed(name)
        wanted = f"{requirement.name}{requirement.specifier}"
        if version is None:
            if not optional:
                problems.append(f"{requirement.name} is not installed; {needed_by} needs {wanted}")
            continue
        try:
            ok = requirement.specifier.contains(version, prereleases=True)
        except InvalidVersion:
            ok = False
        if not ok:
            problems.append(f"{requirement.name} {version} is installed; {needed_by} needs {wanted}")
        if through_extras and not optional and str(requirement) not in followed:  # extras of extras too
            followed.add(str(requirement))
            checks += _through_extras(requirement)
    return list(dict.fromkeys(problems))  # an extra repeated under two names: one line


def newer_than_tested(
    versions: dict[str, str | None], tested: dict[str, tuple[str, str]] | None = None
) -> list[str]:
    """One line per version newer (by major.minor) than the newest of ``tested`` (default :data:`TESTED`), e.g.
    ``"transformers 5.30.1 is newer than the newest tested (5.25): allowed, untested"``."""
    notes: list[str] = []
    for name, (_, newest) in (TESTED if tested is None else tested).items():
        version = versions.get(name)
        if version is None:
            continue
        try:
            release = Version(version).release[:2]
        except InvalidVersion:
            continue
        if release > Version(newest).release[:2]:
            notes.append(f"{name} {version} is newer than the newest tested ({newest}): allowed, untested")
    return notes


def _error(err: BaseException) -> str:
    """An exception as one line: its type and first line."""
    text = str(err).strip().splitlines()
    return f"{type(err).__name__}: {text[0]}" if text else type(err).__name__


def _cpu_model() -> str:
    """The CPU's marketing name: /proc/cpuinfo's ``model name`` (Linux), ``sysctl`` (macOS), else the platform's."""
    cpuinfo = Path("/proc/cpuinfo")
    if cpuinfo.is_file():
        for line in cpuinfo.read_text().splitlines():
            key, _, value = line.partition(":")
            if key.strip() == "model name":
                return value.strip()
    if sys.platform == "darwin":
        try:
            out = subprocess.run(
                ["sysctl", "-n", "machdep.cpu.brand_string"], capture_output=True, text=True, timeout=5
            )
            if out.returncode == 0 and out.stdout.strip():
                return out.stdout.strip()
        except (OSError, subprocess.SubprocessError):
            pass
    return platform.processor() or platform.machine()


def _cpu() -> dict[str, Any]:
    """The CPU's model name, usable cores (of all), and native bf16 as the precision rule decides it: ``True``
    / ``False``, ``None`` where it cannot be decided (``bf16_error`` says why); ``bf16_override`` names
    ``$PSGRPO_NATIVE_BF16`` when that set the answer."""
    from psgrpo.config.precision import NATIVE_BF16_ENV, cpu_has_native_bf16

    usable = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    info: dict[str, Any] = {"model": _cpu_model(), "cores": usable, "cores_total": os.cpu_count()}
    try:
        info["native_bf16"] = cpu_has_native_bf16()
    except Exception as err:  # a bad $PSGRPO_NATIVE_BF16, a torch that does not import: reported, not raised
        info["native_bf16"], info["bf16_error"] = None, _error(err)
    if os.environ.get(NATIVE_BF16_ENV, "").strip():
        info["bf16_override"] = f"${NATIVE_BF16_ENV}={os.environ[NATIVE_BF16_ENV].strip()}"
    # what this command runs with: `psgrpo` sets both where unset (psgrpo/config/kernel_caches.py)
    info["kernel_caches"] = {name: os.environ.get(name) for name in (ONEDNN_CACHE_ENV, IDEEP_CACHE_ENV)}
    if ONEDNN_LEGACY_ENV in os.environ:
        info["kernel_caches"][ONEDNN_LEGACY_ENV] = os.environ[ONEDNN_LEGACY_ENV]
    return info


def _accelerator() -> dict[str, Any]:
    """torch's view: the CUDA or ROCm version it was built for, each visible GPU, MPS; ``{"torch_error": …}``
    when torch does not import (``{}`` when it is not installed)."""
    try:
        import torch
    except Exception as err:  # ImportError, or an OSError from a missing CUDA library
        return {"torch_error": _error(err)} if _installed("torch") else {}
    hip = getattr(torch.version, "hip", None)
    mps = getattr(torch.backends, "mps", None)
    info: dict[str, Any] = {
        "cuda_build": torch.version.cuda,
        "rocm_build": hip,
        "mps_built": bool(mps is not None and mps.is_built()),
        "mps_available": bool(mps is not None and mps.is_available()),
        "gpus": [],
    }
    try:
        count = torch.cuda.device_count() if torch.cuda.is_available() else 0
        for i in range(count):
            major, minor = torch.cuda.get_device_capability(i)
            info["gpus"].append(
                {
                    "name": torch.cuda.get_device_name(i),
                    "memory_gib": round(torch.cuda.get_device_properties(i).total_memory / 2**30, 1),
                    "capability": f"{major}.{minor}",
                    # CUDA: Ampere (8.0) and newer compute bf16; ROCm reports its own answer
                    "bf16": bool(torch.cuda.is_bf16_supported()) if hip else major >= 8,
                }
            )
    except Exception as err:  # a driver that torch cannot talk to: reported, not raised
        info["gpu_error"] = _error(err)
    return info


def collect() -> dict[str, Any]:
    """Everything ``psgrpo env`` reports, as one JSON-able dict (keys: ``psgrpo``, ``python``, ``platform``,
    ``cpu``, ``accelerator``, ``packages``, ``optional``, ``problems``, ``notes``)."""
    requirements = [r for r in declared_requirements() if not _is_dev(r)]
    parsed = [Requirement(r) for r in requirements]
    names = {canonicalize_name(r.name) for r in parsed} | {canonicalize_name(n) for n in OPTIONAL}
    installed = {name: _installed(name) for name in sorted(names)}
    required = sorted({canonicalize_name(r.name) for r in parsed if not _extra_of(r)})
    packages = {name: installed[name] for name in required}
    optional = {name: v for name, v in installed.items() if name not in packages}
    cpu, accelerator = _cpu(), _accelerator()
    problems = version_problems(requirements, installed) if requirements else [
        "psgrpo's requirements were not found (neither a pyproject.toml beside the package nor installed metadata)"
    ]  # fmt: skip
    if "torch_error" in accelerator:
        problems.append(
            f"torch {installed.get('torch')} is installed but does not import: {accelerator['torch_error']}"
        )
    if cpu["native_bf16"] is None and "torch_error" not in accelerator:
        problems.append(f"native bf16 cannot be decided: {cpu['bf16_error']}")
    cache_problem = kernel_cache_problem()
    if cache_problem is not None:
        problems.append(cache_problem)
    flagged = {canonicalize_name(p.split(" ", 1)[0]) for p in problems}  # outside its range: not a note too
    versions = {
        name: v
        for name, v in {**installed, "python": platform.python_version()}.items()
        if name not in flagged
    }
    return {
        "psgrpo": psgrpo.__version__,
        "python": platform.python_version(),
        "platform": platform.platform(),
        "cpu": cpu,
        "accelerator": accelerator,
        "packages": packages,
        "optional": optional,
        "problems": problems,
        "notes": newer_than_tested(versions),
    }


def _yes(flag: Any) -> str:
    return "yes" if flag is True else "no" if flag is False else "unknown"


def _gpu_line(accelerator: dict[str, Any]) -> str:
    """One line for the accelerator: identical GPUs grouped, each group with its memory, capability and bf16."""
    if "torch_error" in accelerator:
        return f"- GPUs: unknown, torch does not import ({accelerator['torch_error']})"
    builds = [f"CUDA {accelerator['cuda_build']}"] if accelerator["cuda_build"] else []
    builds += [f"ROCm {accelerator['rocm_build']}"] if accelerator["rocm_build"] else []
    built = f"torch built for {', '.join(builds)}" if builds else "a CPU build of torch"
    if accelerator["mps_built"]:
        built += ", MPS " + ("available" if accelerator["mps_available"] else "built, not available")
    groups = Counter(
        f"{g['name']} ({g['memory_gib']} GiB, capability {g['capability']}, bf16: {_yes(g['bf16'])})"
        for g in accelerator["gpus"]
    )
    if not groups:
        error = f"; {accelerator['gpu_error']}" if "gpu_error" in accelerator else ""
        return f"- GPUs: none visible ({built}{error})"
    return f"- GPUs: {', '.join(f'{n}× {gpu}' for gpu, n in groups.items())}; {built}"


def format_report(info: dict[str, Any]) -> str:
    """``collect()``'s dict as the text ``psgrpo env`` prints: a Markdown list to paste, then problems and notes."""
    cpu, accelerator = info["cpu"], info["accelerator"]
    cores = f"{cpu['cores']} cores" + (
        f" usable of {cpu['cores_total']}"
        if cpu["cores_total"] and cpu["cores_total"] != cpu["cores"]
        else ""
    )
    bf16 = _yes(cpu["native_bf16"]) + (f" (set by {cpu['bf16_override']})" if "bf16_override" in cpu else "")
    lines = [
        "Paste this into a bug report, with the command you ran and its output:",
        "",
        f"- psgrpo: {info['psgrpo']}",
        f"- Python: {info['python']}",
        f"- platform: {info['platform']}",
        f"- CPU: {cpu['model']}, {cores}, native bf16: {bf16}",
        "- CPU kernel caches: "
        + ", ".join(
            f"${name}={'unset' if value is None else (value if value.strip() else repr(value))}"
            for name, value in cpu["kernel_caches"].items()
        ),
        _gpu_line(accelerator) if accelerator else "- GPUs: unknown, torch is not installed",
    ]
    lines += [f"- {name}: {version or 'not installed'}" for name, version in info["packages"].items()]
    extras = [f"{name} {version}" for name, version in info["optional"].items() if version]
    lines.append(f"- optional: {', '.join(extras) if extras else 'none installed'}")
    lines += ["", "Problems:" if info["problems"] else "Problems: none."]
    lines += [f"- {p}" for p in info["problems"]]
    if info["notes"]:
        lines += ["", "Notes:"] + [f"- {n}" for n in info["notes"]]
    return "\n".join(lines)


@dataclasses.dataclass
class EnvConfig:
    """This machine and its package versions, checked against the ranges psgrpo declares and the releases it
    was tested with. Paste its output into a bug report.

    Parsed with plain argparse, not the other commands' TRL parser: it must run where trl does not import.
    """

    json: bool = dataclasses.field(
        default=False,
        metadata={
            "help": "Print one JSON object instead of the text (default false): for scripts and CI logs."
        },
    )


def env(argv: Sequence[str]) -> None:
    """``psgrpo env [--json]``: print :func:`collect`'s report."""
    parser = argparse.ArgumentParser(
        prog="psgrpo env", description=" ".join(EnvConfig.__doc__.split("\n\n")[0].split())
    )
    (json_field,) = dataclasses.fields(EnvConfig)
    parser.add_argument("--json", action="store_true", help=json_field.metadata["help"])
    args = EnvConfig(**vars(parser.parse_args(list(argv))))
    info = collect()
    print(json.dumps(info, indent=2) if args.json else format_report(info), file=sys.stdout)
