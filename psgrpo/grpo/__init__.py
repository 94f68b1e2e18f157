"""Outcome GRPO (`method: grpo`): one reward per completion, normalised in its group: exactly ``trl.GRPOTrainer``."""
