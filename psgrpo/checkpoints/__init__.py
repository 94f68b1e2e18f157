"""Checkpoints that are never half-written, and a resume that equals the unbroken run.

* :mod:`.atomic`: stage, mark, fsync and rename a checkpoint; find the last complete one; rotation.
* :mod:`.sampler`: TRL's prompt sampler with an epoch-addressable shuffle.
* :mod:`.trainer_mixin`: the ``GRPOTrainer`` overrides (save, resume, rollout state, sampler).

See the README section "Checkpoints and resume".
"""
