"""Every file a docstring or comment of the project's code names (`replay/symbolic.py`, `torch/optim/adam.py`,
`modeling_bert.py`) exists: in this repository, or in an installed package the code cites (torch, transformers, peft,
...). Issue 53 found `replay.py` and `engine.py` named where neither had existed since the packages were split."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CODE = ("albert_core", "ui", "charts", "pages", "scripts", "cloud", "benchmarks", "app.py", "serve.py")
CITED = ("torch", "transformers", "peft", "torchao", "streamlit", "plotly")  # whose sources the comments name
NAMED = re.compile(r"(?<![\w/.])((?:[a-z_]+/)*[a-z_][a-z0-9_]*\.py)\b")
# names that are not files of a package: a file the benchmark writes, google-research/albert's modeling.py, and
# plotly.py (the Python library's name for itself)
NOT_FILES = {"one_chart.py", "same_figure.py", "modeling.py", "plotly.py", "src/peft/utils/constants.py"}


def known_files() -> set[str]:
    """Paths, relative to their root, of every .py file here and in the cited packages (forward slashes)."""
    paths = {p.relative_to(ROOT).as_posix() for p in ROOT.rglob("*.py") if ".venv" not in p.parts}
    for name in CITED:
        spec = importlib.util.find_spec(name)
        assert spec is not None and spec.submodule_search_locations, f"{name} is not installed"
        top = Path(next(iter(spec.submodule_search_locations)))
        paths |= {(Path(name) / p.relative_to(top)).as_posix() for p in top.rglob("*.py")}
    return paths


def test_every_file_the_code_names_exists():
    files = known_files()
    missing: dict[str, list[str]] = {}
    for source in sorted(p for part in CODE for p in ((ROOT / part).rglob("*.py") if (ROOT / part).is_dir()
                                                       else [ROOT / part])):
        for n, line in enumerate(source.read_text().splitlines(), 1):
            for name in NAMED.findall(line):
                if name in NOT_FILES or any(f == name or f.endswith("/" + name) for f in files):
                    continue
                missing.setdefault(name, []).append(f"{source.relative_to(ROOT)}:{n}")
    assert not missing, missing


def test_no_module_name_twice_and_no_pair_a_short_suffix_apart():
    """Names that cannot be confused (issue 53): no module name in two folders of albert_core (cli/measure.py and
    engine/measure.py were), and no two modules of a folder one name plus a short suffix (run/runner, build/building)."""
    from collections import defaultdict

    by_name: dict[str, list[str]] = defaultdict(list)
    by_folder: dict[str, list[str]] = defaultdict(list)
    for p in (ROOT / "albert_core").rglob("*.py"):
        if "__pycache__" in p.parts or p.stem in ("__init__", "__main__"):
            continue
        by_name[p.stem].append(str(p.parent.relative_to(ROOT)))
        by_folder[str(p.parent.relative_to(ROOT))].append(p.stem)
    assert {n: f for n, f in by_name.items() if len(f) > 1} == {}
    close = [(folder, a, b) for folder, names in by_folder.items() for a in names for b in names
             if a != b and b.startswith(a) and len(b) - len(a) <= 4]
    assert close == []
    # across folders too, a name and the same name with a letter or two added (estimate/finetune.py beside
    # engine/finetuned.py was)
    near = [(a, b) for a in by_name for b in by_name if a != b and b.startswith(a) and len(b) - len(a) <= 2]
    assert near == []
