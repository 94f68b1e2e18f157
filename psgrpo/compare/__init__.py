"""The machinery behind ``psgrpo compare`` (the command is :mod:`psgrpo.commands.compare`).

- :mod:`~psgrpo.compare.settings`: the arms' settings and whether a finished run still matches them.
- :mod:`~psgrpo.compare.claim`: one process trains a run at a time (a lock per run directory).
- :mod:`~psgrpo.compare.intervals`: Student's t intervals of a mean and of paired differences.
- :mod:`~psgrpo.compare.report`: held-out curves → ``curves.csv`` rows → the Markdown report.
- :mod:`~psgrpo.compare.tables`: the error, length and process-signal tables of the report.
- :mod:`~psgrpo.compare.plot`: ``compare.png``.
"""
