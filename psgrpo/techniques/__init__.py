"""Training techniques of the reference GRPO recipe, each behind one ``ProcessGRPOConfig`` option.

Every module holds the pure logic of one technique (tested on its own); :mod:`.trainer_mixin`
wires them into ``ProcessGRPOTrainer``. All are off by default. See docs/techniques.md.

* :mod:`.kl_schedule`: decay the KL coefficient β over training (``kl_schedule``, ``beta_min``).
* :mod:`.reward_norm`: running (EMA) mean/std normalisation of the summed reward (``reward_norm_momentum``).
* :mod:`.curriculum`: sample prompts easy → hard (``curriculum``, ``curriculum_start_fraction`` …).
* :mod:`.memory_bank`: replay the best correct completion of a prompt into all-wrong groups (``memory_bank``).
* :mod:`.lr_warmup`: a flat low learning rate for the first steps (``warmup_lr``).
* :mod:`.state`: the stateful techniques' state in checkpoints (so resuming keeps it).
"""
