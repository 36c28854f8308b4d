"""Every number the CLI prints for every preset, and what validation says of many configs, as one JSON file.

Usage: python scripts/snapshot.py OUT.json [--pages]  (then: python scripts/snapshot.py --compare A.json B.json)

A refactor that should change no number is checked by running this before and after (a worktree of the old
commit) and comparing: the CLI's `--json` of `params` (with the heads where modelled), `flops` and `memory` (the
default workload, mixed precision with checkpointing, a fine-tuning with LoRA, serving) for every preset, and the
problems `ModelConfig` reports for a few thousand configs made from the presets with edge values in their fields
(seeded, so both runs see the same configs). With --pages, also every tab of every page in AppTest for six
presets, one of each kind of family: its tables (as CSV), metrics and captions.
"""

from __future__ import annotations

import contextlib
import io
import json
import random
import sys
from dataclasses import asdict, fields
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

MEMORY_RUNS = (
    [],
    ["--precision", "mixed_bf16", "--checkpointing", "--batch-size", "8", "--seq-len", "256"],
    ["--train", "lora", "--lora-r", "8", "--head", "classification:3"],
    ["--train", "frozen-embeddings", "--head", "token:5", "--optimizer", "sgd"],
    ["--serve", "int4", "--group-size", "64", "--batch-size", "4", "--seq-len", "128"],
)
EDGES = (-2, -1, 0, 1, 2, 3, 7, 31, 32, 33, 64, 127, 128, 513, 2**20, 2**40)


def cli(argv: list[str]) -> object:
    """What `python -m albert_core ARGV` prints (JSON parsed where it is JSON), and its exit status."""
    from albert_core.cli.main import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            rc = main(argv)
        except SystemExit as e:  # argparse's refusals
            rc = e.code
    text = out.getvalue()
    try:
        body: object = json.loads(text)
    except ValueError:
        body = text
    return {"rc": rc, "out": body, "err": err.getvalue()}


def configs(n: int, seed: int = 0) -> list[dict]:
    """n field dicts: a preset with one or two fields set to an edge value or a neighbour of its own."""
    from albert_core.config import ModelConfig
    from albert_core.presets import PRESETS

    rng = random.Random(seed)
    names = [f.name for f in fields(ModelConfig) if f.type in ("int", "bool")]
    out = []
    for _ in range(n):
        d = asdict(rng.choice(list(PRESETS.values())))
        for f in rng.sample(names, rng.randint(1, 2)):
            d[f] = rng.choice((*EDGES, d[f] + 1, d[f] - 1, not d[f])) if not isinstance(d[f], bool) else not d[f]
        out.append(d)
    return out


def snapshot() -> dict:
    from albert_core.config import ConfigError, ModelConfig
    from albert_core.formats.hf import to_hf_config
    from albert_core.presets import PRESETS

    out: dict = {"cli": {}, "validate": [], "config_json": {}}
    for name, cfg in PRESETS.items():
        p = ["--preset", name]
        out["cli"][f"params {name}"] = cli(["params", *p, "--json"])
        out["cli"][f"params --heads {name}"] = cli(["params", *p, "--json", "--heads"])
        out["cli"][f"flops {name}"] = cli(["flops", *p, "--json"])
        for extra in MEMORY_RUNS:
            out["cli"][f"memory {name} {' '.join(extra)}"] = cli(["memory", *p, "--json", *extra])
        out["config_json"][name] = to_hf_config(cfg)
    for d in configs(3000):
        try:
            ModelConfig.from_dict(d)
            out["validate"].append([])
        except ConfigError as e:
            out["validate"].append(sorted(e.problems))
    return out


PAGE_PRESETS = ("bert-base", "albert-xxlarge", "roberta-base", "deberta-v3-base", "ModernBERT-base", "all-mpnet-base-v2")


def pages() -> dict:
    """Page and tab -> what AppTest shows there: tables as CSV, metrics, captions (the settings beside numbers)."""
    from streamlit.testing.v1 import AppTest

    from albert_core.share import PAGE_TABS

    app = str(Path(__file__).resolve().parent.parent / "app.py")
    out: dict = {}
    for preset in PAGE_PRESETS:
        at = AppTest.from_file(app, default_timeout=120)
        at.query_params["preset"] = preset
        at.run()
        for page in ("overview", "parameters", "memory", "fit", "compute", "verify"):
            at.switch_page(f"pages/{page}.py").run()
            for tab in PAGE_TABS.get(page, ("",)):
                if tab:  # the open tab is a page control (ui/sections.lazy_tabs draws only that one)
                    at.session_state["_ae_controls"] = {**at.session_state["_ae_controls"], f"{page}_tab": tab}
                    at.run()
                out[f"{preset} {page} {tab}"] = {
                    "tables": [d.value.to_csv() for d in at.dataframe] + [t.value.to_csv() for t in at.table],
                    "metrics": [(m.label, m.value) for m in at.metric],
                    "captions": [c.value for c in at.caption],
                    "errors": [e.value for e in at.exception] + [e.value for e in at.error]}
    return out


def compare(a: dict, b: dict) -> int:
    """Print what differs; 0 when nothing does."""
    diff = 0
    for part in ("cli", "config_json", "pages"):
        if part not in a or part not in b:
            continue
        for k in sorted(set(a[part]) | set(b[part])):
            if a[part].get(k) != b[part].get(k):
                diff += 1
                print(f"{part}: {k} differs")
    bad = [i for i, (x, y) in enumerate(zip(a["validate"], b["validate"], strict=True)) if x != y]
    diff += len(bad)
    print(f"page tabs: {len(a.get('pages', {}))}, cli runs: {len(a['cli'])}, config.json: {len(a['config_json'])}, configs validated: {len(a['validate'])} "
          f"({sum(1 for v in a['validate'] if v)} refused); differences: {diff}")
    for i in bad[:10]:
        print(f"  config {i}: {a['validate'][i]} != {b['validate'][i]}")
    return 1 if diff else 0


if __name__ == "__main__":
    if sys.argv[1:2] == ["--compare"]:
        sys.exit(compare(*(json.loads(Path(p).read_text()) for p in sys.argv[2:4])))
    outs = [a for a in sys.argv[1:] if not a.startswith("--")]
    if len(outs) != 1 or set(sys.argv[1:]) - {*outs, "--pages"}:
        sys.exit("usage: python scripts/snapshot.py OUT.json [--pages]  |  --compare A.json B.json")
    snap = snapshot()
    if "--pages" in sys.argv:
        snap["pages"] = pages()
    Path(outs[0]).write_text(json.dumps(snap, sort_keys=True, default=str))
