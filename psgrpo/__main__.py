"""``python -m psgrpo`` (also ``accelerate launch -m psgrpo train ...``): the ``psgrpo`` command."""

from psgrpo.commands.cli import main

if __name__ == "__main__":
    raise SystemExit(main())
