"""python -m albert_core: see albert_core.cli."""

from .cli import console

raise SystemExit(console(prog="python -m albert_core"))
