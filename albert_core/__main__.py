"""python -m albert_core: see albert_core.cli."""

from .cli import main

raise SystemExit(main(prog="python -m albert_core"))
