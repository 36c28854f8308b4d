"""The import graph inside albert_core: every arrow (top-level and function-local), its cycles, its arrows back up.

Usage: python scripts/import_graph.py [--edges] [--root DIR]

First the layers: albert_core's parts (each subpackage and each top-level module) and the order docs/typing.md
writes in its ```layers block (top first). Every arrow between two parts, a TYPE_CHECKING one too, must point to a
lower layer; one that does not is listed, with the modules and lines that make it.

An arrow A -> B is one `import`/`from ... import` of albert_core module B in module A, anywhere in A (at the
top or inside a function). Imports under `if TYPE_CHECKING:` are not arrows (they never run) and are
listed apart; the type checker follows them, so a last report counts the cycles with them added (a module importing
itself, as each family module does to hold itself to the contract, is no cycle). The dynamic `importlib.import_module` in families.family() makes the families package point
at each family module (a downward arrow). An arrow lies on a cycle when B reaches A again. "Arrows back up" counts the fewest of those that any layering must have pointing up (the rest can all
point down). The same is reported with albert_core.families.* folded into one node, as the README draws it.
Exit status 1 when an arrow runs against the layers or there is a cycle, so it guards the layering.
"""

from __future__ import annotations

import ast
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PKG = "albert_core"
LAYERS_DOC = "docs/typing.md"


def _resolve(mod: str, is_pkg: bool, node: ast.ImportFrom) -> str:
    if node.level == 0:
        return node.module or ""
    base = mod.split(".") if is_pkg else mod.split(".")[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def _type_checking_nodes(tree: ast.AST) -> set[int]:
    """ids of the import nodes under `if TYPE_CHECKING:`."""
    out: set[int] = set()
    for n in ast.walk(tree):
        if isinstance(n, ast.If) and isinstance(n.test, ast.Name) and n.test.id == "TYPE_CHECKING":
            out |= {id(m) for s in n.body for m in ast.walk(s)}
    return out


def module_name(root: Path, path: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def layers(root: Path) -> dict[str, int]:
    """part -> its layer (0 = lowest), from the ```layers block of docs/typing.md (top first, one layer a line,
    parts separated by spaces; words after a part in parentheses are comments)."""
    text = (root / LAYERS_DOC).read_text()
    start = text.find("```layers\n")
    if start < 0:
        raise SystemExit(f"{LAYERS_DOC} has no ```layers block: write albert_core's parts there, top layer first")
    block = text[start + len("```layers\n"):text.index("```", start + 3)]
    rows = [re.sub(r"\([^)]*\)", " ", line).split() for line in block.splitlines() if line.strip()]
    out: dict[str, int] = {}
    for rank, row in enumerate(reversed(rows)):
        for part in row:
            if part in out:
                raise SystemExit(f"{LAYERS_DOC}'s layers name {part} twice")
            out[part] = rank
    return out


def part_of(mod: str) -> str:
    """albert_core.estimate.params -> estimate; albert_core.config -> config; albert_core -> albert_core."""
    return mod.split(".")[1] if "." in mod else mod


def layer_report(runtime: list[tuple[str, str, str]], typing_only: list[tuple[str, str]], where: dict[tuple[str, str], list[str]],
                 order: dict[str, int]) -> int:
    """Print the arrows between parts against the written layers; return how many run the wrong way, name a
    part the layers do not, or tie parts into a knot."""
    every = {(a, b) for a, b, _ in runtime} | set(typing_only)
    between: dict[tuple[str, str], list[tuple[str, str]]] = {}
    for a, b in sorted(every):
        pa, pb = part_of(a), part_of(b)
        if pa != pb:
            between.setdefault((pa, pb), []).append((a, b))
    parts = sorted({part_of(m) for ab in every for m in ab})
    unplaced = [p for p in parts if p not in order]
    wrong = sorted(k for k in between if k[0] in order and k[1] in order and order[k[0]] <= order[k[1]])
    print(f"[layers, {LAYERS_DOC}] parts: {len(parts)} in {len(set(order.values()))} layers; arrows between parts: "
          f"{len(between)}; against the layers: {len(wrong)}; parts the layers do not name: {len(unplaced)}")
    knots = cycle_parts(set(between))
    print(f"[parts] knots (parts that import each other, directly or through others): {len(knots)}")
    for k in knots:
        print("  knot:", ", ".join(k))
    for p in unplaced:
        print(f"  not in the layers: {p} (add it to {LAYERS_DOC}'s ```layers block)")
    for pa, pb in wrong:
        how = "the same layer" if order[pa] == order[pb] else "a higher layer"
        print(f"  against the layers: {pa} -> {pb} ({how}):")
        for a, b in between[(pa, pb)]:
            print(f"    {a.removeprefix(PKG + '.')} -> {b.removeprefix(PKG + '.')} at {', '.join(where[(a, b)])}")
    return len(wrong) + len(unplaced) + len(knots)


def arrows(modules: dict[str, Path], where: dict[tuple[str, str], list[str]] | None = None,
           root: Path = ROOT) -> tuple[list[tuple[str, str, str]], list[tuple[str, str]]]:
    """(runtime arrows (from, to, 'top' | 'local'), TYPE_CHECKING-only arrows); `where` gets each arrow's
    file:line places."""
    runtime: list[tuple[str, str, str]] = []
    typing_only: list[tuple[str, str]] = []
    for mod, path in sorted(modules.items()):
        rel = path.relative_to(root)
        tree = ast.parse(path.read_text(), str(path))
        guarded = _type_checking_nodes(tree)
        top = {id(n) for n in tree.body}
        for node in ast.walk(tree):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                src = _resolve(mod, path.name == "__init__.py", node)
                # `from . import bert`: the name is a submodule when one exists
                targets = [f"{src}.{a.name}" if f"{src}.{a.name}" in modules else src for a in node.names]
            elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                  and node.func.attr == "import_module" and mod == f"{PKG}.families"):
                targets = [m for m in modules if m.startswith(f"{PKG}.families.") and m != f"{PKG}.families.base"]
            for t in dict.fromkeys(targets):
                if t not in modules or t == mod:
                    continue
                if where is not None:
                    where.setdefault((mod, t), []).append(f"{rel}:{getattr(node, 'lineno', '?')}")
                if id(node) in guarded:
                    typing_only.append((mod, t))
                else:
                    runtime.append((mod, t, "top" if id(node) in top or _at_top(tree, node) else "local"))
    return runtime, typing_only


def _at_top(tree: ast.Module, node: ast.AST) -> bool:
    """Whether node runs at import time: in the module body, outside every def (ifs and trys count as top)."""
    for stmt in tree.body:
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            continue
        if any(m is node for m in ast.walk(stmt)):
            return True
    return False


def cycle_parts(edges: set[tuple[str, str]]) -> list[list[str]]:
    """Strongly connected components of more than one node (Tarjan)."""
    graph: dict[str, list[str]] = {}
    for a, b in sorted(edges):
        graph.setdefault(a, []).append(b)
        graph.setdefault(b, [])
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    sys.setrecursionlimit(10_000)
    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def back_up(part: list[str], edges: set[tuple[str, str]]) -> list[tuple[str, str]]:
    """The fewest arrows of one cycle that must run back up in any layering of its modules (an exact minimum
    feedback arc set: dynamic programming over the subsets placed lowest first), as one layering has them."""
    n = len(part)
    if n > 20:
        raise SystemExit(f"a cycle of {n} modules is too large to layer exactly")
    into = [sum(1 << j for j in range(n) if (part[i], part[j]) in edges) for i in range(n)]  # i imports j
    best = {0: (0, -1)}  # placed set -> (arrows back up, the module placed last)
    for placed in range(1 << n):
        cost = best[placed][0]
        for i in range(n):
            if placed >> i & 1:
                continue
            # i is placed above everything already placed: an arrow from a placed module up to i runs back up
            c = cost + sum(1 for j in range(n) if placed >> j & 1 and into[j] >> i & 1)
            nxt = placed | 1 << i
            if nxt not in best or c < best[nxt][0]:
                best[nxt] = (c, i)
    order, placed = [], (1 << n) - 1
    while placed:
        i = best[placed][1]
        order.append(i)
        placed &= ~(1 << i)
    rank = {part[i]: r for r, i in enumerate(reversed(order))}  # 0 = lowest layer
    return sorted((a, b) for a, b in edges if a in rank and b in rank and rank[b] > rank[a])


def fold(m: str) -> str:
    return f"{PKG}.families" if m.startswith(f"{PKG}.families.") else m


def report(edges: list[tuple[str, str, str]], folded: bool, label: str = "") -> int:
    named = {(fold(a), fold(b), k) if folded else (a, b, k) for a, b, k in edges}
    plain = {(a, b) for a, b, _ in named if a != b}
    parts = cycle_parts(plain)
    where = {m: i for i, p in enumerate(parts) for m in p}
    on_cycle = sorted({(a, b) for a, b in plain if a in where and where.get(b) == where[a]})
    back = [e for p in parts for e in back_up(p, plain)]
    label = label or ("families folded" if folded else "module by module")
    print(f"[{label}] arrows: {len(plain)}; cycles: {len(parts)}; arrows on a cycle: {len(on_cycle)}; "
          f"arrows back up (fewest in any layering): {len(back)}")
    for p in parts:
        print("  cycle:", " <-> ".join(m.removeprefix(f"{PKG}.") for m in p))
    for a, b in back:
        kinds = sorted({k for x, y, k in named if (x, y) == (a, b)})
        print(f"  back up: {a.removeprefix(PKG + '.')} -> {b.removeprefix(PKG + '.')} ({'/'.join(kinds)})")
    return len(parts)


def main() -> int:
    root = Path(sys.argv[sys.argv.index("--root") + 1]).resolve() if "--root" in sys.argv else ROOT
    modules = {module_name(root, p): p for p in sorted((root / PKG).rglob("*.py"))}
    where: dict[tuple[str, str], list[str]] = {}
    runtime, typing_only = arrows(modules, where, root)
    wrong = layer_report(runtime, typing_only, where, layers(root))
    local = [(a, b) for a, b, k in runtime if k == "local"]
    print(f"modules: {len(modules)}; runtime arrows: {len({(a, b) for a, b, _ in runtime})} "
          f"(function-local import statements of albert_core modules: {len(local)}); "
          f"TYPE_CHECKING-only: {len(typing_only)}")
    if "--edges" in sys.argv:
        for a, b, k in sorted(set(runtime)):
            print(f"  {a} -> {b} ({k})")
    n = report(runtime, folded=False)
    n += report(runtime, folded=True)
    typing = runtime + [(a, b, "TYPE_CHECKING") for a, b in typing_only]
    n += report(typing, folded=False, label="with the type checker's imports")
    return 1 if n or wrong else 0


if __name__ == "__main__":
    sys.exit(main())
