"""LoRA through `psgrpo train --use_peft` (TRL's ModelConfig → get_peft_config) for every method.

The policy becomes a ``peft.PeftModel``: TRL trains only the adapter, and with β > 0 it uses the
policy with the adapter switched off as the reference model. VPS probes run through the
PeftModel's forward.
"""

from __future__ import annotations

import json

import pytest
import torch

import psgrpo.trainer
from psgrpo.commands.cli import main

peft = pytest.importorskip("peft")

pytestmark = pytest.mark.slow


@pytest.mark.parametrize("method", ["grpo", "ps", "vps"])
def test_lora_trains_only_the_adapter(method, tmp_path, monkeypatch):
    trainers = []

    class Recorded(psgrpo.trainer.ProcessGRPOTrainer):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            self.initial = {n: p.detach().clone() for n, p in self.model.named_parameters()}
            trainers.append(self)

    monkeypatch.setattr(psgrpo.trainer, "ProcessGRPOTrainer", Recorded)  # cli.train imports it at call time
    out = tmp_path / "out"
    main(
        ["train", "--method", method, "--output_dir", str(out), "--use_peft", "--lora_r", "4",
         "--lora_alpha", "8", "--lora_target_modules", "q_proj", "v_proj", "--learning_rate", "1e-2",
         "--beta", "0.04", "--warmup_steps", "0", "--max_steps", "2", "--per_device_train_batch_size", "8", "--num_generations", "4",
         "--max_completion_length", "128", "--max_eval_examples", "4",
         "--report_to", "none", "--save_strategy", "no", "--logging_steps", "1",
         "--segmenter", "newline", "--vps_min_segment_tokens", "2"]
    )  # fmt: skip
    (trainer,) = trainers
    assert isinstance(trainer.model, peft.PeftModel) and trainer.ref_model is None  # reference = adapter off
    lora = {n for n in trainer.initial if "lora_" in n}
    assert lora and all(trainer.model.get_parameter(n).requires_grad for n in lora)
    for name, before in trainer.initial.items():
        after = trainer.model.get_parameter(name).detach()
        if name in lora:
            continue
        assert torch.equal(after, before), f"base weight {name} changed"
    changed = [
        n for n in lora if not torch.equal(trainer.model.get_parameter(n).detach(), trainer.initial[n])
    ]
    assert any("lora_B" in n for n in changed), "the adapter did not train"

    logs = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    steps = [r for r in logs if "loss" in r]
    assert steps[0]["kl"] == pytest.approx(
        0.0, abs=1e-6
    )  # lora_B starts at 0: policy = adapter-off reference
    assert steps[1]["kl"] > 0.0  # after one update the adapter moves the policy away from the reference
    if method == "vps":
        assert 0.0 < steps[0]["vps/c0_mean"] <= 1.0  # probes ran through the PeftModel
    assert (out / "adapter_model.safetensors").exists() and (out / "adapter_config.json").exists()
    report = json.loads((out / "report.json").read_text())
    assert 0.0 <= report["after"]["accuracy"] <= 1.0  # evaluation generates through the PeftModel
