"""Figures: every plotted value equals albert_core's number; units on the axes; hover shows exact values."""

import json

import plotly.graph_objects as go
import pytest

from albert_core.activations import activation_memory
from albert_core.config import SHARING_MODES
from albert_core.fit import max_batch_size, max_position_that_fits, max_seq_len
from albert_core.flops import forward_flops, training_flops
from albert_core.gpus import GPUS
from albert_core.params import count_parameters, factorization_savings
from albert_core.presets import PRESETS
from albert_core.sweeps import scaled
from albert_core.training import training_memory
from albert_core.units import format_count
from charts import compute as ccharts
from charts import fit as fcharts
from charts import memory as mcharts
from charts import params as pcharts
from charts.colors import PRESET_COLORS, config_color
from ui import data

CFGS = (PRESETS["albert-base"], PRESETS["bert-base"], PRESETS["albert-xxlarge"],
        PRESETS["albert-base"].replace(name="albert-ffn", sharing="ffn", num_layers=24))


def spec(fig: go.Figure) -> dict:
    """What Streamlit sends to the browser."""
    assert isinstance(fig, go.Figure)
    return json.loads(fig.to_json())


def trace(fig: go.Figure, name: str) -> dict:
    (t,) = [t for t in spec(fig)["data"] if t.get("name") == name]
    return t


def axis_titles(fig: go.Figure) -> tuple[str, str]:
    lay = spec(fig)["layout"]
    return lay["xaxis"]["title"]["text"], lay["yaxis"]["title"]["text"]


def test_component_bars_equal_count_parameters():
    fig = pcharts.component_bars(data.params_long(data.params_table(CFGS)))
    for label, field in (("Embedding", "embedding"), ("Layers", "all_layers"), ("Pooler", "pooler")):
        t = trace(fig, label)
        assert t["x"] == [c.name for c in CFGS]
        assert t["y"] == [getattr(count_parameters(c), field) for c in CFGS]
        assert "%{y:,}" in t["hovertemplate"]  # exact value on hover
        assert t["customdata"][0][0] == format_count(getattr(count_parameters(CFGS[0]), field))
    assert spec(fig)["layout"]["barmode"] == "stack"
    assert axis_titles(fig) == ("config", "parameters")


def test_bert_base_bars_are_the_source_text_numbers():
    fig = pcharts.component_bars(data.params_long(data.params_table((PRESETS["bert-base"],))))
    assert trace(fig, "Embedding")["y"] == [23_837_184]
    assert trace(fig, "Layers")["y"] == [85_054_464]
    assert sum(t["y"][0] for t in spec(fig)["data"]) == 109_482_240


def test_sunburst_values_sum_to_total_and_leaves_are_groups():
    cfg = CFGS[3]
    c = count_parameters(cfg)
    fig = pcharts.breakdown_sunburst(c.breakdown(), cfg.name)
    t = spec(fig)["data"][0]
    values = dict(zip(t["ids"], t["values"], strict=True))
    assert values[cfg.name] == c.total
    assert values["embedding"] == c.embedding and values["layers"] == c.all_layers and values["pooler"] == c.pooler
    leaves = {i: v for i, v in values.items() if i not in t["parents"]}
    assert sorted(leaves.values()) == sorted(g.params for g in c.groups)


@pytest.mark.parametrize("field", ["vocab_size", "hidden_dim", "num_layers"])
def test_share_sweep_points_are_count_parameters(field):
    df = data.share_sweep(CFGS[:2], field)
    fig = pcharts.share_sweep(df, field)
    assert axis_titles(fig) == (field, "share of all parameters (%)")
    for cfg in CFGS[:2]:
        emb = trace(fig, f"{cfg.name}: embedding share")
        lay = trace(fig, f"{cfg.name}: layer share")
        assert len(emb["x"]) >= 5
        for x, e, lp in zip(emb["x"], emb["y"], lay["y"], strict=True):
            # the swept config has field == x and is otherwise cfg (with the fields that must follow)
            c = count_parameters(scaled(cfg, field, x))
            assert getattr(scaled(cfg, field, x), field) == x
            assert e == pytest.approx(c.embedding_pct, rel=1e-12) and lp == pytest.approx(c.layers_pct, rel=1e-12)
    # at the config's own value the point is the config itself
    for cfg in CFGS[:2]:
        emb = trace(fig, f"{cfg.name}: embedding share")
        own = emb["x"].index(getattr(cfg, field))
        assert emb["y"][own] == pytest.approx(count_parameters(cfg).embedding_pct, rel=1e-12)


def test_share_sweep_log_axis():
    fig = pcharts.share_sweep(data.share_sweep(CFGS[:1], "vocab_size"), "vocab_size", log_x=True)
    assert spec(fig)["layout"]["xaxis"]["type"] == "log"


def test_factorization_saves_what_albert_core_says():
    df = data.factorization_sweep(CFGS[:2])
    fig = pcharts.factorization(df)
    for cfg in CFGS[:2]:
        t = trace(fig, f"{cfg.name}: factorized V×E + E×H")
        for e, emb, cd in zip(t["x"], t["y"], t["customdata"], strict=True):
            albert = cfg.replace(family="albert", embedding_dim=e)
            assert emb == count_parameters(albert).embedding
            assert cd[1] == factorization_savings(albert)
        un = trace(fig, f"{cfg.name}: unfactorized V×H")
        bert = cfg.replace(family="bert", embedding_dim=cfg.hidden_dim)
        assert set(un["y"]) == {count_parameters(bert).embedding}
    band = spec(fig)["layout"]["shapes"][0]  # shapes: data coordinates; annotations: log10 units
    assert (band["x0"], band["x1"]) == (64, 256)
    assert 10 ** spec(fig)["layout"]["annotations"][0]["x"] == pytest.approx(64)
    assert spec(fig)["layout"]["xaxis"]["type"] == "log"
    assert "embedding_dim" in axis_titles(fig)[0] and "parameters" in axis_titles(fig)[1]


def test_sharing_modes_are_the_four_modes():
    fig = pcharts.sharing_modes(data.sharing_table(CFGS[:2]))
    for cfg in CFGS[:2]:
        t = trace(fig, cfg.name)
        assert t["x"] == list(SHARING_MODES)
        assert t["y"] == [count_parameters(cfg.replace(sharing=m)).total for m in SHARING_MODES]
        assert t["marker"]["color"] == config_color(cfg.name)


def test_compute_scatter_and_breakdown_equal_flops():
    table, parts = data.compute_table(CFGS, 512)
    fig = ccharts.flops_vs_params(table, 512)
    for cfg in CFGS:
        t = trace(fig, cfg.name)
        assert t["x"] == [count_parameters(cfg).total]
        assert t["y"] == [forward_flops(cfg, 512).total]
        assert t["customdata"][0][2] == training_flops(cfg, 512)
    lay = spec(fig)["layout"]
    assert lay["xaxis"]["type"] == "log" and lay["yaxis"]["type"] == "log"
    bars = ccharts.flops_breakdown(parts, 512)
    qkv = trace(bars, ccharts.FLOP_LABELS["qkv"])
    assert qkv["y"] == [forward_flops(c, 512).qkv for c in CFGS]
    totals = [sum(t["y"][i] for t in spec(bars)["data"]) for i in range(len(CFGS))]
    assert totals == [forward_flops(c, 512).total for c in CFGS]


def test_xxlarge_stores_fewer_parameters_than_bert_large_yet_costs_more():
    """The Compute page's claim, read off the figure."""
    table, _ = data.compute_table((PRESETS["bert-large"], PRESETS["albert-xxlarge"]), 512)
    fig = ccharts.flops_vs_params(table, 512)
    bl, xx = trace(fig, "bert-large"), trace(fig, "albert-xxlarge")
    assert xx["x"][0] < bl["x"][0] and xx["y"][0] > bl["y"][0]


def test_colors_are_stable_per_config_and_distinct_for_presets():
    assert len(set(PRESET_COLORS.values())) == len(PRESETS)
    assert config_color("my model") == config_color("my model")
    fig = pcharts.share_sweep(data.share_sweep(CFGS[:1], "num_layers"), "num_layers")
    assert trace(fig, "albert-base: embedding share")["line"]["color"] == PRESET_COLORS["albert-base"]


def test_backgrounds_are_transparent_for_both_themes():
    for fig in (pcharts.component_bars(data.params_long(data.params_table(CFGS))),
                ccharts.flops_vs_params(data.compute_table(CFGS, 128)[0], 128)):
        lay = spec(fig)["layout"]
        assert lay["paper_bgcolor"] == "rgba(0,0,0,0)" and lay["plot_bgcolor"] == "rgba(0,0,0,0)"


# ---- memory and fit -----------------------------------------------------------------------------------------

KW = (("precision", "mixed_bf16"), ("optimizer", "adamw"), ("attention", "sdpa"), ("checkpointing", False))


def test_activation_panels_stack_the_two_parts():
    seqs = (128, 512, 2048)
    df = data.activation_table(CFGS[:2], seqs, 4, "bfloat16", "eager", True, False)
    fig = mcharts.activation_vs_seq(df)
    s = spec(fig)
    for cfg in CFGS[:2]:
        for part in ("quadratic", "linear"):
            (t,) = [t for t in s["data"] if t["meta"] == cfg.name and t["name"] == mcharts.PART_LABELS[part]]
            for x, y, cd in zip(t["x"], t["y"], t["customdata"], strict=True):
                a = activation_memory(cfg.replace(max_position=x), batch_size=4, seq_len=x, dtype="bfloat16")
                assert cd[0] == getattr(a, part) and y * 2**30 == pytest.approx(cd[0], rel=1e-12)
            assert t["stackgroup"]  # stacked on linear axes
    assert [a["text"] for a in s["layout"]["annotations"][:2]] == [c.name for c in CFGS[:2]]  # one panel per config
    log = spec(mcharts.activation_vs_seq(df, log=True))
    assert log["layout"]["yaxis"]["type"] == "log" and "stackgroup" not in log["data"][0]


def test_training_stack_equals_training_memory_and_budget_line():
    df = data.training_table(CFGS, 8, 512, KW)
    fig = mcharts.training_stack(df[df["part"] != "total"], {"A100 80 GB": GPUS["A100 80 GB"]})
    for label, field in (("weights", "weights"), ("gradients", "gradients"), ("optimizer state", "optimizer"),
                         ("fp32 master weights", "master_weights"), ("activations", "activations")):
        t = trace(fig, label)
        want = [getattr(training_memory(c, batch_size=8, seq_len=512, **dict(KW)), field) for c in CFGS]
        assert [cd[0] for cd in t["customdata"]] == want
    (line,) = spec(fig)["layout"]["shapes"]
    assert line["y0"] * 2**30 == pytest.approx(GPUS["A100 80 GB"])
    assert axis_titles(fig)[1] == "memory per GPU (GiB)"


def test_merge_budgets_joins_near_equal_gpus():
    merged = mcharts.merge_budgets(GPUS)
    assert "L4 24 GB / A10 24 GB" in merged or "A10 24 GB / L4 24 GB" in merged
    assert len(merged) < len(GPUS) and min(merged.values()) == min(GPUS.values())


def test_fit_bars_equal_albert_core_fit():
    kw = KW + (("num_gpus", 4), ("sharding", "zero2"))
    plan = data.fit_plan(CFGS, "A100 40 GB", 8, 512, kw)
    fig = fcharts.fit_bars(plan)
    s = spec(fig)
    for cfg in CFGS:
        batch_bar, seq_bar = [t for t in s["data"] if t["name"] == cfg.name]
        assert batch_bar["y"] == [max_batch_size(cfg, GPUS["A100 40 GB"], seq_len=512, **dict(kw))]
        assert seq_bar["y"] == [max_position_that_fits(cfg, GPUS["A100 40 GB"], batch_size=8, **dict(kw))]
        assert seq_bar["customdata"][0][1] == max_seq_len(cfg, GPUS["A100 40 GB"], batch_size=8, **dict(kw))
