"""Diagnostics: does a method's process signal point at the wrong steps?

- :mod:`~psgrpo.diagnostics.measures`: pure measures (AUC of a signal against step labels, process
  share, reward shares, all-equal groups, where boundaries fall, unneeded steps).
- :mod:`~psgrpo.diagnostics.step_logger`: ``--diagnostics true``, those measures on every training
  step's batch, logged as ``diag/*``.
- :mod:`~psgrpo.diagnostics.probe_quality`: the offline check behind ``psgrpo diagnose``: each
  signal on correct solutions and on copies with one corrupted step.
"""
