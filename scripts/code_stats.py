"""The code's shape in numbers, for docs/typing.md: written there by this script, checked by a test.

    python scripts/code_stats.py           # print the block
    python scripts/code_stats.py --write   # write it into docs/typing.md, between the code-stats markers
    python scripts/code_stats.py --check   # exit 1 when docs/typing.md's block is not what the code gives

Counted with the standard library's ast (no imports of the code): modules, their lines, functions over 60 lines,
functions over 8 parameters, `Any` in albert_core, and comparisons against a family name outside families/ (the
family contract's leaks: a string of albert_core.names.FAMILIES on either side of ==, !=, in, not in).
"""

from __future__ import annotations

import ast
import re
import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "typing.md"
BEGIN, END = "<!-- code-stats:begin (scripts/code_stats.py --write) -->", "<!-- code-stats:end -->"
FAMILIES = set(ast.literal_eval(re.search(r"FAMILIES: tuple\[str, \.\.\.\] = (\(.*?\))",
                                          (ROOT / "albert_core" / "names.py").read_text(), re.S).group(1)))


def _files(top: str) -> list[Path]:
    return sorted(p for p in (ROOT / top).rglob("*.py") if "__pycache__" not in p.parts)


def _rel(p: Path) -> str:
    return str(p.relative_to(ROOT))


def _functions(tree: ast.AST) -> list[ast.FunctionDef | ast.AsyncFunctionDef]:
    return [n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]


def _length(f: ast.FunctionDef | ast.AsyncFunctionDef) -> int:  # decorators and docstring included
    return (f.end_lineno or f.lineno) - min([f.lineno, *(d.lineno for d in f.decorator_list)]) + 1


def _params(f: ast.FunctionDef | ast.AsyncFunctionDef) -> int:  # self and cls not counted
    a = f.args
    names = [x.arg for x in (*a.posonlyargs, *a.args, *a.kwonlyargs)]
    return len([n for n in names if n not in ("self", "cls")]) + (a.vararg is not None) + (a.kwarg is not None)


def _names_a_family(node: ast.expr) -> bool:
    if isinstance(node, ast.Constant):
        return node.value in FAMILIES
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        return any(_names_a_family(e) for e in node.elts)
    return False


def _family_comparisons(tree: ast.AST) -> int:
    n = 0
    for node in ast.walk(tree):
        if isinstance(node, ast.Compare) and any(
                isinstance(op, (ast.Eq, ast.NotEq, ast.In, ast.NotIn)) for op in node.ops):
            if any(_names_a_family(side) for side in (node.left, *node.comparators)):
                n += 1
    return n


def stats() -> str:
    core = _files("albert_core")
    trees = {p: ast.parse(p.read_text(), str(p)) for p in (*core, *_files("charts"), *_files("ui"), *_files("pages"))}
    lines = {p: len(p.read_text().splitlines()) for p in core}
    top_level = [p for p in core if p.parent == ROOT / "albert_core"]
    big = sorted(((n, _rel(p)) for p, n in lines.items() if n > 500), reverse=True)
    long_f = sorted(((_length(f), f"{_rel(p)} {f.name}") for p, t in trees.items() for f in _functions(t)
                     if _length(f) > 60), reverse=True)
    wide = sorted(((_params(f), f"{_rel(p)} {f.name}") for p in core for f in _functions(trees[p])
                   if _params(f) > 8), reverse=True)
    any_words = Counter({_rel(p): len(re.findall(r"\bAny\b", p.read_text())) for p in core})
    leaks = Counter({_rel(p): _family_comparisons(trees[p]) for p in core if "families" not in p.parts})
    checked = sum(1 for p in trees if not _rel(p).startswith("pages"))

    def listing(rows: list[tuple[int, str]], unit: str, k: int = 8) -> str:
        shown = ", ".join(f"`{name}` {n}{unit}" for n, name in rows[:k])
        return shown + (f", and {len(rows) - k} more" if len(rows) > k else "") if rows else "none"

    out = [
        "| measure (albert_core unless said) | now |",
        "|---|---|",
        f"| modules in albert_core / directly in `albert_core/` | {len(core)} / {len(top_level)} |",
        f"| lines of albert_core | {sum(lines.values()):,} |",
        f"| modules over 500 lines | {len(big)}: {listing(big, ' lines')} |",
        f"| functions over 60 lines (albert_core, charts, ui, pages) | {len(long_f)}: {listing(long_f, ' lines')} |",
        f"| functions over 8 parameters | {len(wide)}: {listing(wide, '')} |",
        f"| `Any` (the word) / in families/ | {sum(any_words.values())} / "
        f"{sum(n for k, n in any_words.items() if '/families/' in k)} |",
        "| comparisons against a family name outside families/ | "
        f"{sum(leaks.values())}: {listing(sorted(((n, k) for k, n in leaks.items() if n), reverse=True), '', 12)} |",
        f"| source files mypy checks (albert_core, charts, ui) | {checked} |",
    ]
    return "\n".join(out)


def _block() -> str:
    return f"{BEGIN}\n{stats()}\n{END}"


def main(argv: list[str]) -> int:
    text = DOC.read_text()
    if BEGIN not in text or END not in text:
        print(f"{_rel(DOC)} has no code-stats markers", file=sys.stderr)
        return 1
    now = text[text.index(BEGIN):text.index(END) + len(END)]
    if "--check" in argv:
        if now != _block():
            print(f"{_rel(DOC)}'s numbers are stale: run `python scripts/code_stats.py --write`.\n"
                  f"In the doc:\n{now}\nThe code gives:\n{_block()}", file=sys.stderr)
            return 1
        return 0
    if "--write" in argv:
        DOC.write_text(text.replace(now, _block()))
    print(stats())
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
