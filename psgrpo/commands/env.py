"""``psgrpo env``: this machine and its versions, checked against what psgrpo declares and was tested with.

::

    psgrpo env           # a block to paste into a bug report, then any problem found
    psgrpo env --json    # the same as one JSON object (for scripts)

What it reads: the platform, Python, the CPU (model, cores, whether it computes bf16 natively, as
:mod:`psgrpo.config.precision` decides), torch and its accelerator (CUDA version, each GPU's name, memory and
bf16 support), and the installed version of every package psgrpo requires or can use (its extras, and
liger-kernel, flash-attn, wandb). Two checks follow:

- **problems**: a required package missing, or installed outside the range psgrpo's metadata declares
  (pip enforces the ranges, but a CUDA image, ``pip install --no-deps`` or a later ``pip install`` of
  something else can break them; a psgrpo run on such a set is untested);
- **notes**: a version newer than the newest psgrpo was tested with (:data:`TESTED`, the README's "Tested
  versions"), which is allowed and may work; say so in a bug report.

It imports torch (for the accelerator) and nothing else heavy; it never loads a model.
"""

from __future__ import annotations

import argparse
import dataclasses
import importlib.metadata
import json
import os
import platform
import sys
import tomllib
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version

import psgrpo

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


def declared_requirements() -> list[str]:
    """psgrpo's requirement strings: from its installed metadata, else (a source tree on ``sys.path`` that
    was never installed) from the pyproject.toml beside the package; ``[]`` when neither is found."""
    try:
        requirements = importlib.metadata.requires("psgrpo")
    except importlib.metadata.PackageNotFoundError:
        requirements = None
    if requirements is not None:
        return list(requirements)
    pyproject = Path(psgrpo.__file__).resolve().parents[1] / "pyproject.toml"
    if not pyproject.is_file():
        return []
    project = tomllib.loads(pyproject.read_text()).get("project", {})
    extras = project.get("optional-dependencies", {})
    return list(project.get("dependencies", [])) + [
        f"{line}; extra == {extra!r}" for extra, lines in extras.items() for line in lines
    ]


def _is_extra(requirement: Requirement) -> bool:
    """Whether ``requirement`` belongs to one of psgrpo's extras (its marker names ``extra``)."""
    return requirement.marker is not None and "extra" in str(requirement.marker)


def _is_dev(requirement: str) -> bool:
    """Whether a requirement line belongs to the ``dev`` extra (test tools: neither reported nor checked)."""
    marker = Requirement(requirement).marker
    return marker is not None and marker.evaluate({"extra": "dev"}) and not marker.evaluate({"extra": ""})


def version_problems(requirements: Sequence[str], installed: dict[str, str | None]) -> list[str]:
    """One line per requirement that ``installed`` breaks.

    Args:
        requirements: requirement strings as package metadata writes them (``"trl<1.17,>=1.16"``,
            ``"peft>=0.15; extra == \\"peft\\""``).
        installed: ``{canonical name: version or None}``.

    Returns:
        ``"transformers 5.3.0 is installed; psgrpo needs transformers<6,>=5.6"`` for a version outside its
        range (a core requirement, or an extra's requirement of a package that is installed), and
        ``"trl is not installed; psgrpo needs trl<1.17,>=1.16"`` for a missing core requirement.
        Requirements whose markers exclude this Python are skipped.
    """
    problems: list[str] = []
    for line in requirements:
        try:
            requirement = Requirement(line)
        except InvalidRequirement:
            continue
        optional = _is_extra(requirement)
        if requirement.marker is not None and not optional and not requirement.marker.evaluate():
            continue
        name = canonicalize_name(requirement.name)
        version = installed.get(name)
        wanted = f"{requirement.name}{requirement.specifier}"
        if version is None:
            if not optional:
                problems.append(f"{requirement.name} is not installed; psgrpo needs {wanted}")
            continue
        try:
            ok = requirement.specifier.contains(version, prereleases=True)
        except InvalidVersion:
            ok = False
        if not ok:
            problems.append(f"{requirement.name} {version} is installed; psgrpo needs {wanted}")
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


def _cpu() -> dict[str, Any]:
    """The CPU's model name, core count and native bf16, as the precision rule decides it."""
    from psgrpo.config.precision import cpu_has_native_bf16

    model = platform.processor() or platform.machine()
    cpuinfo = Path("/proc/cpuinfo")
    if cpuinfo.is_file():
        for line in cpuinfo.read_text().splitlines():
            key, _, value = line.partition(":")
            if key.strip() == "model name":
                model = value.strip()
                break
    try:
        native_bf16: bool | str = cpu_has_native_bf16()
    except ValueError as err:  # a bad $PSGRPO_NATIVE_BF16: reported here, not raised
        native_bf16 = str(err)
    return {"model": model, "cores": os.cpu_count(), "native_bf16": native_bf16}


def _accelerator() -> dict[str, Any]:
    """torch's CUDA (or MPS) view: the CUDA version it was built for and each GPU; ``{}`` without torch."""
    try:
        import torch
    except ImportError:
        return {}
    info: dict[str, Any] = {"cuda_build": torch.version.cuda, "cuda_available": torch.cuda.is_available()}
    if torch.cuda.is_available():
        info["gpus"] = [
            {
                "name": torch.cuda.get_device_name(i),
                "memory_gib": round(torch.cuda.get_device_properties(i).total_memory / 2**30, 1),
                "capability": ".".join(map(str, torch.cuda.get_device_capability(i))),
            }
            for i in range(torch.cuda.device_count())
        ]
        info["bf16"] = torch.cuda.is_bf16_supported()
    mps = getattr(torch.backends, "mps", None)
    if mps is not None and mps.is_available():
        info["mps_available"] = True
    return info


def collect() -> dict[str, Any]:
    """Everything ``psgrpo env`` reports, as one JSON-able dict (keys: ``psgrpo``, ``python``, ``platform``,
    ``cpu``, ``accelerator``, ``packages``, ``optional``, ``problems``, ``notes``)."""
    requirements = [r for r in declared_requirements() if not _is_dev(r)]
    parsed = [Requirement(r) for r in requirements]
    names = {canonicalize_name(r.name) for r in parsed} | {canonicalize_name(n) for n in OPTIONAL}
    installed = {name: _installed(name) for name in sorted(names)}
    required = sorted({canonicalize_name(r.name) for r in parsed if not _is_extra(r)})
    packages = {name: installed[name] for name in required}
    optional = {name: v for name, v in installed.items() if name not in packages}
    versions = {**installed, "python": platform.python_version()}
    return {
        "psgrpo": psgrpo.__version__,
        "python": platform.python_version(),
        "platform": platform.platform(),
        "cpu": _cpu(),
        "accelerator": _accelerator(),
        "packages": packages,
        "optional": optional,
        "problems": version_problems(requirements, installed)
        if requirements
        else ["psgrpo's requirements were not found (neither installed metadata nor pyproject.toml)"],
        "notes": newer_than_tested(versions),
    }


def format_report(info: dict[str, Any]) -> str:
    """``collect()``'s dict as the text ``psgrpo env`` prints: a Markdown list to paste, then problems and notes."""
    cpu, accelerator = info["cpu"], info["accelerator"]
    bf16 = cpu["native_bf16"]
    lines = [
        "Paste this into a bug report, with the command you ran and its output:",
        "",
        f"- psgrpo: {info['psgrpo']}",
        f"- Python: {info['python']}",
        f"- platform: {info['platform']}",
        f"- CPU: {cpu['model']}, {cpu['cores']} cores, native bf16: "
        + ("yes" if bf16 is True else "no" if bf16 is False else bf16),
    ]
    if not accelerator:
        lines.append("- accelerator: torch is not installed")
    elif accelerator.get("gpus"):
        gpus = ", ".join(
            f"{g['name']} ({g['memory_gib']} GiB, sm {g['capability']})" for g in accelerator["gpus"]
        )
        bf16_gpu = "yes" if accelerator.get("bf16") else "no"
        lines.append(
            f"- GPUs: {len(accelerator['gpus'])}× {gpus}; CUDA {accelerator['cuda_build']}, bf16: {bf16_gpu}"
        )
    else:
        built = accelerator["cuda_build"]
        lines.append(
            "- GPUs: none visible"
            + (f" (torch built for CUDA {built})" if built else " (a CPU build of torch)")
            + ("; MPS available" if accelerator.get("mps_available") else "")
        )
    lines += [f"- {name}: {version or 'not installed'}" for name, version in info["packages"].items()]
    extras = [f"{name} {version}" for name, version in info["optional"].items() if version]
    lines.append(f"- optional: {', '.join(extras) if extras else 'none installed'}")
    lines += ["", "Problems (outside the ranges psgrpo declares):" if info["problems"] else "Problems: none."]
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
