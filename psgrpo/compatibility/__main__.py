"""python -m psgrpo.compatibility [--write docs/compatibility.md]: print the matrix, or update the page."""

from __future__ import annotations

import sys
from pathlib import Path

from psgrpo.compatibility.matrix import embed_table, render_table

if sys.argv[1:2] == ["--write"] and len(sys.argv) == 3:
    path = Path(sys.argv[2])
    path.write_text(embed_table(path.read_text()))
elif len(sys.argv) == 1:
    print(render_table(), end="")
else:
    sys.exit("usage: python -m psgrpo.compatibility [--write docs/compatibility.md]")
