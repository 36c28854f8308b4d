"""python -m albert_core: see albert_core.cli.main."""

from .cli.main import console

raise SystemExit(console(prog="python -m albert_core"))
