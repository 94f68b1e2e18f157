"""``psgrpo warmstart``: reproduce the embedded checkpoint (SFT of the tiny model on arith)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any


def warmstart(argv: Sequence[str]) -> dict[str, Any]:
    """Parse :class:`~psgrpo.tiny.warmstart.WarmstartConfig`, run the SFT, print and return its result."""
    from psgrpo.config.parsing import ConfigParser
    from psgrpo.preflight import check_output_dir
    from psgrpo.tiny.warmstart import WarmstartConfig, check_replaceable
    from psgrpo.tiny.warmstart import warmstart as run_warmstart

    (cfg,) = ConfigParser((WarmstartConfig,), prog="psgrpo warmstart").parse_args_and_config(list(argv))
    check_output_dir(cfg.output_dir)
    check_replaceable(cfg.output_dir)
    result = run_warmstart(cfg)
    print(json.dumps(result, indent=2))
    return result
