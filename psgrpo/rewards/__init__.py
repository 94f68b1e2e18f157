"""Outcome rewards, the stage after the rollout: what each completion's final answer earns.

- :mod:`~psgrpo.rewards.functions`: answer extraction, ``correctness_reward``, ``format_reward`` and the
  other reward functions (TRL's signature), registered by name in ``REWARD_FUNCS``.
- :mod:`~psgrpo.rewards.numbers`: reading and writing numbers (``1,234``, ``$4.20``, ``3/4``) exactly,
  shared with the step scorers.
"""
