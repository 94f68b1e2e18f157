"""The ``psgrpo`` command line: ``cli`` dispatches to ``train``, ``evaluate``, ``compare``, ``inspect_credit``."""
