"""Functions longer than a limit (default 60 lines, decorators and docstring included) in the app's code.

Usage: python scripts/func_lengths.py [--limit N] [paths...]   (default paths: albert_core charts ui pages)
Prints each long function as path:line name (lines), then the count. Exit status 0 always: it measures.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def long_functions(paths: list[str], limit: int) -> list[tuple[str, int, str, int]]:
    out = []
    for top in paths:
        for path in sorted((ROOT / top).rglob("*.py")) if (ROOT / top).is_dir() else [ROOT / top]:
            tree = ast.parse(path.read_text(), str(path))
            for node in ast.walk(tree):
                if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    first = min([node.lineno, *(d.lineno for d in node.decorator_list)])
                    n = (node.end_lineno or node.lineno) - first + 1
                    if n > limit:
                        out.append((str(path.relative_to(ROOT)), node.lineno, node.name, n))
    return out


def main() -> int:
    args = sys.argv[1:]
    limit = 60
    if "--limit" in args:
        i = args.index("--limit")
        limit = int(args[i + 1])
        del args[i:i + 2]
    found = long_functions(args or ["albert_core", "charts", "ui", "pages"], limit)
    for path, line, name, n in sorted(found, key=lambda t: -t[3]):
        print(f"{path}:{line} {name} ({n} lines)")
    print(f"{len(found)} functions over {limit} lines")
    return 0


if __name__ == "__main__":
    sys.exit(main())
