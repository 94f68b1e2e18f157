"""ProcessGRPOConfig's docstring: TRL-style parameter sections generated from the fields' help texts."""

from __future__ import annotations

import dataclasses

from trl import GRPOConfig

from psgrpo.config.process_grpo_config import CONFIG_SECTIONS, ProcessGRPOConfig


def _in_section(name: str, names: tuple[str, ...]) -> bool:
    return name in names or any(n.endswith("_") and name.startswith(n) for n in names)


def test_every_psgrpo_field_is_documented_in_exactly_one_section():
    trl_fields = {f.name for f in dataclasses.fields(GRPOConfig)}
    own = [f.name for f in dataclasses.fields(ProcessGRPOConfig) if f.name not in trl_fields]
    assert {"method", "vps_alpha", "ps_lambda", "kl_schedule", "vps_entropy_tolerance"} <= set(own)
    for name in own:
        sections = [title for title, names in CONFIG_SECTIONS.items() if _in_section(name, names)]
        assert len(sections) == 1, f"{name} is in sections {sections}"
        assert f"        {name} (*optional*, defaults to" in ProcessGRPOConfig.__doc__


def test_sections_carry_the_help_text_and_the_default():
    doc = " ".join(ProcessGRPOConfig.__doc__.split())
    assert "> GRPO-VPS (method='vps')" in doc and "> PS-GRPO (method='ps')" in doc
    assert "vps_alpha (*optional*, defaults to `1.2`): α in Ã_k = A_i + α·ΔC_k" in doc
    assert "bf16 (*optional*, defaults to `None`): bf16 mixed precision" in doc
