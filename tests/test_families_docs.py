"""docs/parameters.md holds the presets table as scripts/preset_table.py prints it (it cannot drift)."""

import importlib.util
from pathlib import Path

from albert_core.estimate.params import albert_cuts, count_parameters
from albert_core.presets import PRESETS

ROOT = Path(__file__).resolve().parents[1]


def _script():
    spec = importlib.util.spec_from_file_location("preset_table", ROOT / "scripts" / "preset_table.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_docs_hold_the_generated_presets_table():
    table = _script().table()
    assert table in (ROOT / "docs" / "parameters.md").read_text(encoding="utf-8"), \
        "run `python scripts/preset_table.py` and paste its output into docs/parameters.md"
    for name in PRESETS:  # every preset, with its exact total
        assert f"| {name} |" in table and f"{count_parameters(PRESETS[name]).total:,}" in table


def test_docs_hold_the_generated_decoder_table():
    from albert_core.decoders.decoder_presets import DECODER_PRESETS

    table = _script().decoder_table()
    assert table in (ROOT / "docs" / "parameters.md").read_text(encoding="utf-8"), \
        "run `python scripts/preset_table.py` and paste its second table into docs/parameters.md"
    for name, p in DECODER_PRESETS.items():  # every decoder preset, its count beside the published one
        row = next(line for line in table.splitlines() if line.startswith(f"| {name} |"))
        assert row.count(f"| {p.base_params:,}") == 2, row  # counted, and published


def test_albert_cuts_against_independent_counts():
    bert = PRESETS["bert-base"]
    rows = {r["variant"]: r for r in albert_cuts(bert, 128)}
    as_albert = bert.replace(family="albert", embedding_dim=128)  # ALBERT's embedding with BERT-base's sizes
    assert rows["factorized, E=128"]["embedding"] == count_parameters(as_albert).embedding
    assert rows["shared all"]["total"] == 31_515_648  # issue 10: BERT-base with every layer shared
    assert rows["as stored now"]["saved"] == 0 and rows["as stored now"]["total"] == count_parameters(bert).total
    for cfg in PRESETS.values():
        for r in albert_cuts(cfg, min(64, cfg.hidden_dim)):
            assert r["total"] == r["embedding"] + r["layers"] + r["pooler"]
            assert r["saved"] == count_parameters(cfg).total - r["total"]
        shared = {r["sharing"]: r["layers"] for r in albert_cuts(cfg, 1)[2:5]}
        assert shared["all"] <= min(shared["attention"], shared["ffn"])


def test_cuts_chart_shows_albert_cuts():
    import pandas as pd

    from charts.cuts import cuts_bars

    df = pd.DataFrame(albert_cuts(PRESETS["xlm-roberta-large"], 128))
    fig = cuts_bars(df)
    bars = {t.name: t for t in fig.data if t.type == "bar"}
    assert list(bars["Embedding"].x) == [int(v) for v in df["embedding"]]
    assert list(bars["Layers"].x) == [int(v) for v in df["layers"]]
    (ends,) = [t for t in fig.data if t.type == "scatter"]
    assert list(ends.x) == [int(v) for v in df["total"]] and ends.text[-1].endswith("(−92%)")
    assert fig.layout.xaxis.title.text == "stored parameters"
    albert = pd.DataFrame(albert_cuts(PRESETS["albert-base"], 128))
    assert "(same)" in cuts_bars(albert).data[-1].text[1]  # ALBERT already factorized at 128
