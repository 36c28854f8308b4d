"""Figures: every plotted value equals albert_core's number; units on the axes; hover shows exact values."""

import json
import math
import random

import plotly.graph_objects as go
import pytest

from albert_core.config import SHARING_MODES
from albert_core.estimate.activations import activation_memory
from albert_core.estimate.flops import forward_flops, training_flops
from albert_core.estimate.gpus import GPUS
from albert_core.estimate.params import count_parameters, factorization_savings
from albert_core.estimate.sweeps import scaled
from albert_core.presets import HUB_CONFIGS, PRESETS
from albert_core.step.fit import max_batch_size, max_position_that_fits, max_seq_len
from albert_core.step.training import training_memory
from albert_core.units import format_count
from albert_core.workload import Workload
from charts import compute as ccharts
from charts import fit as fcharts
from charts import memory as mcharts
from charts import params as pcharts
from charts.base import FRAME, bottom_px, name_text, sizes, slide, style, title_of
from charts.colors import PALETTE, PREFERRED, PRESET_COLORS, color_map, config_color, preferred
from ui import data

EAGER = Workload(
    batch_size=1, seq_len=512, precision="float32", attention="eager"
)  # the forward the charts' tables count

CFGS = (PRESETS["albert-base"], PRESETS["bert-base"], PRESETS["albert-xxlarge"],
        PRESETS["albert-base"].replace(name="albert-ffn", sharing="ffn", num_layers=24))


def spec(fig: go.Figure) -> dict:
    """What Streamlit sends to the browser."""
    assert isinstance(fig, go.Figure)
    return json.loads(fig.to_json())


def trace(fig: go.Figure, name: str) -> dict:
    """The trace named `name`, or whose meta is `name` (a config's first line carries only its name, for the
    legend; its meta says which line it is)."""
    (t,) = [t for t in spec(fig)["data"] if t.get("meta") == name] or [
        t for t in spec(fig)["data"] if t.get("name") == name]
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


@pytest.mark.parametrize("name", ["bert-base", "albert-base", "deberta-v3-base"])
def test_sunburst_hides_the_labels_of_slices_too_small_to_hold_them(name):
    """issue 29 item 9: labels of thin slices overlapped. A slice under LABEL_MIN_PCT of the model draws no label;
    every other slice its label; every slice keeps its name and numbers in the hover."""
    cfg = PRESETS[name]
    c = count_parameters(cfg)
    t = spec(pcharts.breakdown_sunburst(c.breakdown(), cfg.name))["data"][0]
    small = [v < pcharts.LABEL_MIN_PCT / 100 * c.total for v in t["values"]]
    assert any(small) and not all(small)  # the case holds both kinds
    assert t["texttemplate"] == ["" if s else "%{label}" for s in small]
    assert "%{label}" in t["hovertemplate"] and "%{value:,}" in t["hovertemplate"]
    assert len(t["customdata"]) == len(t["values"])  # the hover's numbers for every slice, labelled or not
    layout = spec(pcharts.breakdown_sunburst(c.breakdown(), cfg.name))["layout"]
    assert layout["uniformtext"] == {"minsize": 10, "mode": "hide"}


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


def test_flops_breakdown_stacks_to_the_forward_total_for_every_family():
    """A new user's review: deberta-v3-base's bar stopped at 96.6 GFLOPs, its relative positions (24.2 G, in the
    table and the CSV) left out of the chart."""
    cfgs = tuple(PRESETS.values())
    _, parts = data.compute_table(cfgs, 512)
    bars = spec(ccharts.flops_breakdown(parts, 512))["data"]
    for i, cfg in enumerate(cfgs):
        assert sum(t["y"][i] for t in bars) == forward_flops(cfg, min(512, cfg.max_position)).total, cfg.name
    (rel,) = [t for t in bars if t["name"] == ccharts.FLOP_LABELS["relative_position"]]
    assert rel["y"][list(PRESETS).index("deberta-v3-base")] > 0 and rel["y"][0] == 0  # bert-base has none


def test_xxlarge_stores_fewer_parameters_than_bert_large_yet_costs_more():
    """The Compute page's claim, read off the figure."""
    table, _ = data.compute_table((PRESETS["bert-large"], PRESETS["albert-xxlarge"]), 512)
    fig = ccharts.flops_vs_params(table, 512)
    bl, xx = trace(fig, "bert-large"), trace(fig, "albert-xxlarge")
    assert xx["x"][0] < bl["x"][0] and xx["y"][0] > bl["y"][0]


def test_colors_are_stable_per_config_and_distinct_for_presets():
    assert len(set(PRESET_COLORS.values())) == len(PRESET_COLORS) and set(PRESET_COLORS) <= set(PRESETS)
    assert len(set(color_map(PRESETS).values())) >= min(len(PRESETS), len(PRESET_COLORS) + 12)
    assert config_color("my model") == config_color("my model")
    fig = pcharts.share_sweep(data.share_sweep(CFGS[:1], "num_layers"), "num_layers")
    assert trace(fig, "albert-base: embedding share")["line"]["color"] == PRESET_COLORS["albert-base"]


def test_backgrounds_are_opaque_with_dark_text_for_exports():
    """A PNG export keeps the figure's own colors: opaque white with dark text reads on light and dark slides."""
    for fig in (pcharts.component_bars(data.params_long(data.params_table(CFGS))),
                ccharts.flops_vs_params(data.compute_table(CFGS, 128)[0], 128),
                fcharts.fit_bars(data.fit_plan(CFGS[:2], "A100 40 GB", Workload(8, 512, **dict(KW), num_gpus=1))),
                pcharts.breakdown_sunburst(data.breakdown(CFGS[0]), "x")):
        lay = spec(slide(fig, "A title", "batch 8"))["layout"]
        assert lay["paper_bgcolor"] == lay["plot_bgcolor"] == "#FFFFFF"
        assert lay["font"]["color"] == lay["title"]["font"]["color"] == "#262730"


def test_slide_puts_title_and_settings_caption_on_the_figure():
    fig = slide(pcharts.share_bars(data.params_long(data.params_table(CFGS))), "Shares <of> params",
                "batch 8, bfloat16, eager attention, A100 80 GB " * 3)
    lay = spec(fig)["layout"]
    assert lay["title"]["text"] == "<b>Shares &lt;of&gt; params</b>"  # escaped: shown as typed
    sub = lay["title"]["subtitle"]["text"]
    assert "bfloat16, eager attention" in sub and sub.count("<br>") >= 2  # wrapped for a phone's width
    long = slide(go.Figure(), "A title long enough that a phone would cut it off at the right edge")
    assert spec(long)["layout"]["title"]["text"].count("<br>") == 1
    assert title_of(fig) == "Shares <of> params"
    assert lay["margin"]["t"] > 60  # room for the caption lines
    assert lay["legend"]["orientation"] == "h" and lay["legend"]["y"] == 0  # below the plot, clear of the toolbar


def test_bottom_px_raises_the_bottom_margin_for_what_it_counts_and_only_that():
    """charts.base.bottom_px (Plotly's settled margin, held in Chromium by test_figure_audit): a figure with no x axis
    or legend it counts (a sunburst) keeps FRAME's margin; a legend of two entries adds room below the axis; a taller
    tick label adds more; a margin set larger is kept."""
    sun = slide(go.Figure(go.Sunburst(ids=["a", "b"], labels=["a", "b"], parents=["", "a"])), "t")
    assert sun.layout.margin.b == FRAME["margin"]["b"]

    def bars(names: list[str], traces: int) -> go.Figure:
        fig = go.Figure([go.Bar(x=names, y=[1] * len(names), name=f"part {i}") for i in range(traces)])
        return slide(style(fig, x="config", y="parameters"), "t")

    one, two = bars(["a", "b"], 1), bars(["a", "b"], 2)
    assert FRAME["margin"]["b"] < one.layout.margin.b < two.layout.margin.b  # the legend: drawn for two entries
    tall = bars(["a", "b"], 2)
    tall.update_xaxes(tickmode="array", tickvals=["a", "b"], ticktext=["a<br>line", "b"])
    assert bottom_px(tall) > two.layout.margin.b
    tall.layout.margin.b = 400
    assert bottom_px(tall) == 400


def test_share_bars_are_the_parameter_shares_and_sum_to_100():
    fig = pcharts.share_bars(data.params_long(data.params_table(CFGS)))
    s = spec(fig)
    assert s["layout"]["barmode"] == "stack" and s["layout"]["yaxis"]["range"] == [0, 100]
    emb, lay_, pool = (trace(fig, n) for n in ("Embedding", "Layers", "Pooler"))
    for i, cfg in enumerate(CFGS):
        c = count_parameters(cfg)
        assert emb["y"][i] == pytest.approx(c.embedding_pct) and emb["customdata"][i][0] == c.embedding
        assert emb["y"][i] + lay_["y"][i] + pool["y"][i] == pytest.approx(100)


def test_each_shown_config_gets_its_own_color_the_same_on_every_page():
    customs = [f"custom {i}" for i in range(8)]
    shown = ["albert-base (edited)", *customs[:3], "bert-base"]
    colors = color_map(shown)
    assert len(set(colors.values())) == len(shown)  # distinct
    assert color_map(shown + [p for p in PRESETS if p not in shown])["custom 1"] == colors["custom 1"]  # Overview
    everything = color_map(list(PRESET_COLORS) + customs)
    assert len(set(everything.values())) == len(everything)  # presets and 8 custom configs: all distinct


def _lab(hex_color: str) -> tuple[float, float, float]:
    """sRGB (D65) to CIELAB."""
    rgb = [int(hex_color[i:i + 2], 16) / 255 for i in (1, 3, 5)]
    r, g, b = [c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4 for c in rgb]
    xyz = ((0.4124 * r + 0.3576 * g + 0.1805 * b) / 0.95047, 0.2126 * r + 0.7152 * g + 0.0722 * b,
           (0.0193 * r + 0.1192 * g + 0.9505 * b) / 1.08883)
    fx, fy, fz = [v ** (1 / 3) if v > 0.008856 else 7.787 * v + 16 / 116 for v in xyz]
    return 116 * fy - 16, 500 * (fx - fy), 200 * (fy - fz)


def delta_e(c1: str, c2: str) -> float:
    return delta_e_lab(_lab(c1), _lab(c2))


def delta_e_lab(lab1: tuple[float, float, float], lab2: tuple[float, float, float]) -> float:
    """CIEDE2000 (Sharma, Wu and Dalal, Color Research & Application 30(1), 2005, eqs. 1-22)."""
    (l1, a1, b1), (l2, a2, b2) = lab1, lab2
    cb = (math.hypot(a1, b1) + math.hypot(a2, b2)) / 2
    g = 0.5 * (1 - math.sqrt(cb ** 7 / (cb ** 7 + 25 ** 7)))
    a1, a2 = (1 + g) * a1, (1 + g) * a2
    c1p, c2p = math.hypot(a1, b1), math.hypot(a2, b2)
    h1, h2 = math.degrees(math.atan2(b1, a1)) % 360, math.degrees(math.atan2(b2, a2)) % 360
    dh = 0.0 if c1p * c2p == 0 else (h2 - h1 + 180) % 360 - 180
    dl, dc, dhh = l2 - l1, c2p - c1p, 2 * math.sqrt(c1p * c2p) * math.sin(math.radians(dh / 2))
    lb, cbp = (l1 + l2) / 2, (c1p + c2p) / 2
    hb = h1 + h2 if c1p * c2p == 0 else (h1 + h2) / 2 if abs(h1 - h2) <= 180 else (h1 + h2 + 360 * (h1 + h2 < 360) - 360 * (h1 + h2 >= 360)) / 2
    t = (1 - 0.17 * math.cos(math.radians(hb - 30)) + 0.24 * math.cos(math.radians(2 * hb))
         + 0.32 * math.cos(math.radians(3 * hb + 6)) - 0.20 * math.cos(math.radians(4 * hb - 63)))
    sl = 1 + 0.015 * (lb - 50) ** 2 / math.sqrt(20 + (lb - 50) ** 2)
    sc, sh = 1 + 0.045 * cbp, 1 + 0.015 * cbp * t
    rt = -math.sin(math.radians(60 * math.exp(-(((hb - 275) / 25) ** 2)))) * 2 * math.sqrt(cbp ** 7 / (cbp ** 7 + 25 ** 7))
    return math.sqrt((dl / sl) ** 2 + (dc / sc) ** 2 + (dhh / sh) ** 2 + rt * (dc / sc) * (dhh / sh))


def test_no_two_config_colors_are_near_alike():
    """A new user could not tell albert-base (#56B4E9) from bert-base-multilingual-cased (#66CCEE, 8.5 apart), nor
    ModernBERT-large from distilbert-base-uncased (#AA3377 and #AA4499, 7.5); #4477AA was 4.7 from the preset blue."""
    for lab1, lab2, want in (((50, 2.6772, -79.7751), (50, 0, -82.7485), 2.0425),  # the paper's test data, Table 1
                             ((50, 2.5, 0), (50, 0, -2.5), 4.3065),
                             ((60.2574, -34.0099, 36.2677), (60.4626, -34.1751, 39.4387), 1.2644)):
        assert delta_e_lab(lab1, lab2) == pytest.approx(want, abs=1e-4)
    assert delta_e("#56B4E9", "#66CCEE") < 10 and delta_e("#0072B2", "#4477AA") < 5  # the measure tells those apart
    assert delta_e("#FFFFFF", "#000000") == pytest.approx(100, abs=0.1)
    colors = list(PRESET_COLORS.values()) + list(PALETTE)
    closest = min(delta_e(a, b) for i, a in enumerate(colors) for b in colors[i + 1:])
    assert closest >= 10.5, closest


def test_a_configs_color_does_not_move_when_another_is_added_or_removed():
    """The helper's report: roberta-base turned from one color to another as configs before it came and went."""
    hub = list(PREFERRED)
    assert set(hub) == set(HUB_CONFIGS)  # every preset off BERT's and ALBERT's has a fixed color
    rng = random.Random(0)
    for _ in range(300):
        shown = rng.sample(hub + ["bert-base", "albert-xxlarge", "my model"], rng.randint(1, 8))
        colors = color_map(shown)
        assert len(set(colors.values())) == len(shown)
        if len({preferred(n) for n in shown}) == len(shown):  # no two want one color: each has its own, in any set
            assert all(colors[n] == preferred(n) for n in shown)
        else:  # the first to want a color has it
            assert all(colors[n] == preferred(n) for i, n in enumerate(shown)
                       if preferred(n) not in {colors[m] for m in shown[:i]})
    assert color_map(["roberta-base"])["roberta-base"] == color_map(["ModernBERT-base", "roberta-base"])["roberta-base"]
    pairs = [(a, b) for a in hub for b in hub if a < b and PREFERRED[a] == PREFERRED[b]]
    assert len(pairs) == len(hub) - len(PALETTE)  # 16 presets on 12 colors: four pairs, across families
    assert all(a.split("-")[0] != b.split("-")[0] for a, b in pairs)
    assert len({preferred(f"custom {i}") for i in range(40)}) > 6  # other names spread over the palette


def test_share_sweep_and_factorization_mark_each_configs_own_value():
    fig = pcharts.share_sweep(data.share_sweep(CFGS[:2], "hidden_dim"), "hidden_dim", log_x=True)
    for cfg in CFGS[:2]:
        (own,) = [t for t in spec(fig)["data"] if t["name"] == f"{cfg.name}: its own value"]
        assert own["x"] == [cfg.hidden_dim] and own["y"] == [pytest.approx(count_parameters(cfg).embedding_pct)]
    fig = pcharts.factorization(data.factorization_sweep(CFGS[:1]))
    (own,) = [t for t in spec(fig)["data"] if t["name"] == f"{CFGS[0].name}: its own value"]
    assert own["x"] == [CFGS[0].embedding_dim] and own["y"] == [count_parameters(CFGS[0]).embedding]


# ---- memory and fit -----------------------------------------------------------------------------------------

KW = (("precision", "mixed_bf16"), ("optimizer", "adamw"), ("attention", "sdpa"), ("checkpointing", False))


def test_activation_panels_stack_the_two_parts():
    seqs = (128, 512, 2048)
    df = data.activation_table(CFGS[:2], seqs, EAGER.replace(batch_size=4, precision="bfloat16"), True)
    fig = mcharts.activation_vs_seq(df)
    s = spec(fig)
    for cfg in CFGS[:2]:
        for part in ("quadratic", "linear"):
            (t,) = [t for t in s["data"] if t["meta"] == cfg.name and t["name"] == mcharts.PART_LABELS[part]]
            for x, y, cd in zip(t["x"], t["y"], t["customdata"], strict=True):
                a = activation_memory(
                    cfg.replace(max_position=x), EAGER.replace(batch_size=4, seq_len=x, precision="bfloat16")
                )
                assert cd[0] == getattr(a, part) and y * 2**30 == pytest.approx(cd[0], rel=1e-12)
            assert t["stackgroup"]  # stacked on linear axes
    assert [a["text"] for a in s["layout"]["annotations"][:2]] == [c.name for c in CFGS[:2]]  # one panel per config
    x = s["layout"]["xaxis"]  # thousands as every other chart writes them (Plotly's "~s" wrote 2k)
    assert x["ticktext"] == ["0", "1K", "2K"] and x["tickvals"] == [0, 1000, 2000] and x["range"][1] >= 2048
    log = spec(mcharts.activation_vs_seq(df, log=True))
    assert log["layout"]["yaxis"]["type"] == "log" and "stackgroup" not in log["data"][0]


@pytest.mark.parametrize("precision", ["mixed_bf16", "bf16_master"])
def test_training_stack_equals_training_memory_and_budget_line(precision):
    kw = (("precision", precision), *KW[1:])
    df = data.training_table(CFGS, Workload(8, 512, **dict(kw)))
    fig = mcharts.training_stack(df[df["part"] != "total"], {"A100 80 GB": GPUS["A100 80 GB"]})
    names = {t["name"] for t in spec(fig)["data"]}
    assert ("fp32 master weights" in names) == (precision == "bf16_master")  # autocast's weights are the master
    for label, field in (("weights", "weights"), ("gradients", "gradients"), ("optimizer state", "optimizer"),
                         ("fp32 master weights", "master_weights"), ("activations", "activations")):
        want = [getattr(training_memory(c, Workload(batch_size=8, seq_len=512, **dict(kw))), field) for c in CFGS]
        if label not in names:
            assert not any(want)
            continue
        t = trace(fig, label)
        assert [cd[0] for cd in t["customdata"]] == want
    tallest = max(int(b) for b in df[df["part"] == "total"]["bytes"])
    lay = spec(fig)["layout"]
    assert axis_titles(fig)[1] == "memory per GPU (GiB)"
    if 2.5 * tallest >= GPUS["A100 80 GB"]:  # the GPU line near the bars: drawn, the axis reaching it
        (line,) = lay["shapes"]
        assert line["y0"] * 2**30 == pytest.approx(GPUS["A100 80 GB"])
    else:  # far above: said in the corner, and the axis stays on the bars
        assert "shapes" not in lay
        (note,) = [a for a in lay["annotations"] if a.get("name") == "budget off the axis"]
        assert f"{round(100 * tallest / GPUS['A100 80 GB'])}% of it" in note["text"]
        assert lay["yaxis"]["range"][1] * 2**30 < GPUS["A100 80 GB"]


def test_training_stack_draws_the_gpu_line_when_the_bars_come_near_it():
    df = data.training_table(CFGS, Workload(64, 512, **dict(KW)))
    tallest = max(int(b) for b in df[df["part"] == "total"]["bytes"])
    gpu = min((g for g in GPUS if GPUS[g] <= 2.5 * tallest), key=GPUS.get)
    lay = spec(mcharts.training_stack(df[df["part"] != "total"], {gpu: GPUS[gpu]}))["layout"]
    (line,) = lay["shapes"]
    assert line["y0"] * 2**30 == pytest.approx(GPUS[gpu]) and lay["yaxis"]["range"][1] * 2**30 > GPUS[gpu]


def test_the_steps_peak_is_a_bar_as_wide_as_each_stack():
    """Drawn in category units, so it spans its own bar at every width: a fixed 44-px mark ran into the next one
    where six configs share a phone's plot."""
    w = Workload(8, 512, **dict(KW))
    df = data.training_table(CFGS, w)
    peaks = {c.name: training_memory(c, w).peak for c in CFGS}
    lay = spec(mcharts.training_stack(df[~df["part"].isin(("total", "peak"))], {"A100 80 GB": GPUS["A100 80 GB"]},
                                      peaks=peaks))["layout"]
    bars = [s for s in lay["shapes"] if s.get("name") == "the step's peak"]
    assert len(bars) == len(CFGS)
    for i, (c, bar) in enumerate(zip(CFGS, bars, strict=True)):
        assert (bar["x0"], bar["x1"]) == pytest.approx((i - 0.4, i + 0.4)) and bar["xref"] == "x"
        assert bar["y0"] * 2**30 == pytest.approx(peaks[c.name]) and bar["y0"] == bar["y1"]
    assert 1 - 2 * mcharts.PEAK_HALF_WIDTH == pytest.approx(0.2)  # Plotly's default bargap: the bar's own width


def test_merge_budgets_joins_near_equal_gpus():
    merged = mcharts.merge_budgets(GPUS)
    assert "L4 24 GB / A10 24 GB" in merged or "A10 24 GB / L4 24 GB" in merged
    assert len(merged) < len(GPUS) and min(merged.values()) == min(GPUS.values())


def test_fit_bars_equal_albert_core_fit():
    kw = KW + (("num_gpus", 4), ("sharding", "zero2"))
    plan = data.fit_plan(CFGS, "A100 40 GB", Workload(8, 512, **dict(kw)))
    fig = fcharts.fit_bars(plan)
    s = spec(fig)
    for cfg in CFGS:
        batch_bar, seq_bar = [t for t in s["data"] if t["name"] == cfg.name]
        assert batch_bar["y"] == [max_batch_size(cfg, GPUS["A100 40 GB"], Workload(seq_len=512, **dict(kw)))]
        assert seq_bar["y"] == [max_position_that_fits(cfg, GPUS["A100 40 GB"], Workload(batch_size=8, **dict(kw)))]
        assert seq_bar["customdata"][0][1] == max_seq_len(cfg, GPUS["A100 40 GB"], Workload(batch_size=8, **dict(kw)))
        # issue 29: each bar carries its value and its config's name under it, not the legend's colour alone
        assert batch_bar["text"] == [f"{batch_bar['y'][0]:,}"] and seq_bar["text"] == [f"{seq_bar['y'][0]:,}"]
    assert s["layout"]["xaxis2"]["ticktext"] == [name_text(c.name) for c in CFGS]  # under the lower panel, for both
    assert s["layout"]["xaxis"]["matches"] == "x2" and s["layout"]["xaxis"]["showticklabels"] is False


def test_a_one_character_value_stands_upright_in_its_fit_bar():
    """charts.base.value_angle: Plotly turned a one-digit value in a Fit bar a little shorter than a line on its side
    (a new user's run in Chromium); such a value is set upright (textangle 0), a longer one left to Plotly."""
    import pandas as pd

    rows = [dict(config=n, max_batch_size=b, longest_max_position=p, seq_len=512, batch_size=8, needed_bytes=10**9,
                 gpu_bytes=10**10, max_seq_len=512) for n, b, p in (("a", 90, 8192), ("b", 7, 12))]
    bars = {(t["name"], t["text"][0]): t.get("textangle") for t in spec(fcharts.fit_bars(pd.DataFrame(rows)))["data"]}
    assert bars == {("a", "90"): None, ("a", "8,192"): None, ("b", "7"): 0, ("b", "12"): None}


def test_a_fit_bar_too_short_for_its_value_shows_it_above():
    """A new user's run: albert-xxlarge's largest batch, 24, beside electra-small's 554 showed no number (Plotly
    hid it, the bar too short to hold a line). A bar under SHORT_BAR of its panel's tallest shows its value above
    it; the others keep theirs inside, so the axis is not pushed up into the panel titles."""
    import pandas as pd

    rows = [dict(config=n, max_batch_size=b, longest_max_position=p, seq_len=512, batch_size=8, needed_bytes=10**9,
                 gpu_bytes=10**10, max_seq_len=512) for n, b, p in (("small", 554, 5456), ("xx", 24, 1100),
                                                                    ("none", 0, 600))]
    where = {(t["name"], t["text"][0]): t["textposition"] for t in spec(fcharts.fit_bars(pd.DataFrame(rows)))["data"]}
    assert where == {("small", "554"): "inside", ("small", "5,456"): "inside", ("xx", "24"): "outside",
                     ("xx", "1,100"): "inside", ("none", "0"): "outside", ("none", "600"): "outside"}
    assert 600 < fcharts.SHORT_BAR * 5456 < 1100 and 24 < fcharts.SHORT_BAR * 554


def test_activation_chart_marks_each_max_position_with_its_attention_memory():
    cfgs = (PRESETS["albert-base"].replace(name="long", max_position=8192), PRESETS["bert-base"])
    seqs = data.sweep_lengths(cfgs, 1024)
    assert seqs[-1] == 8192 and 512 in seqs  # the sweep reaches every shown max_position
    args = (EAGER.replace(batch_size=2), True)
    at = data.at_max_position(cfgs, *args)
    marks = {r["config"]: (int(r["max_position"]), int(r["attention_seq_len2"]), int(r["activations"]))
             for _, r in at.iterrows()}
    s = spec(mcharts.activation_vs_seq(data.activation_table(cfgs, seqs, *args), marks=marks))
    for i, cfg in enumerate(cfgs):
        (m,) = [t for t in s["data"] if t.get("meta") == f"mark {i + 1}"]
        a = activation_memory(cfg, EAGER.replace(batch_size=2, seq_len=cfg.max_position))
        assert m["x"] == [cfg.max_position] and m["customdata"][0][0] == a.quadratic and m["customdata"][0][2] == a.total
        assert m["cliponaxis"] is False  # drawn whole where it is the axis's end (8,192 here)
    assert sorted(sh["x0"] for sh in s["layout"]["shapes"]) == [512, 8192]
    assert any("max_position 8,192" in a["text"] for a in s["layout"]["annotations"])


def test_identical_variants_stay_visible():
    cfg = PRESETS["bert-base"]
    fig = mcharts.variants(
        data.variant_table(cfg, (128, 256, 512), EAGER.replace(batch_size=2)), cfg.name, max_position=512
    )
    s = spec(fig)
    ckpt = [t for t in s["data"] if "checkpointing" in t["name"]]
    assert len(ckpt) == 2
    e, sd = ckpt  # eager and sdpa keep the same bytes under checkpointing (only the layer inputs)
    assert e["y"] == sd["y"]
    assert "(= eager" in sd["name"] and sd["line"]["dash"] == "dot" and sd["marker"]["symbol"].endswith("-open")
    assert e["line"]["dash"] != "dot"


def test_gpu_lines_are_named_in_the_legend_with_each_gpus_own_memory():
    """Labels on the lines crossed each other where two GPUs lie close on the axis: the legend names them, each
    GPU of a merged line with its own size (albert_core.estimate.gpus, as the tables give it)."""
    s = spec(mcharts.training_vs_seq(data.training_sweep(CFGS[:1], (128, 512), Workload(2, **dict(KW))), GPUS))
    lines = [t for t in s["data"] if str(t.get("meta", "")).startswith("budget ")]
    assert len(lines) == len(mcharts.merge_budgets(GPUS)) and "annotations" not in s["layout"]
    assert len({t["line"]["dash"] for t in lines}) == len(lines)  # told apart by their dashes
    (h100,) = [t for t in lines if "H100 80 GB" in t["name"]]
    assert "H100 80 GB: 79.65 GiB" in h100["name"] and "A100 80 GB: 80.00 GiB" in h100["name"]
    assert h100["y"][0] * 2**30 == pytest.approx(min(GPUS["H100 80 GB"], GPUS["A100 80 GB"]))
    assert s["layout"]["yaxis"]["rangemode"] == "tozero"  # memory per GPU: never below 0 on a linear axis


def test_log_axes_get_ranges_of_their_values_and_full_number_ticks():
    """Issue 17: on log axes the GPU labels stretched the y axis to 10^138 with ~150 ticks; Compute's narrow
    range had no y tick at all and x ticks read "5", "100M", "2"."""
    from charts.base import log_range, log_ticks

    sweep = data.training_sweep(CFGS, (128, 512, 4096), Workload(8, **dict(KW)))
    lay = spec(mcharts.training_vs_seq(sweep, GPUS, log=True))["layout"]
    values = [b / 2**30 for b in sweep["bytes"]] + [b / 2**30 for b in GPUS.values()]
    lo, hi = lay["yaxis"]["range"]
    assert 10 ** lo < min(values) and 10 ** hi > max(values) and hi - lo < 6
    assert 2 <= len(lay["yaxis"]["tickvals"]) <= 7 and all(10 ** lo <= v <= 10 ** hi for v in lay["yaxis"]["tickvals"])
    near = tuple(PRESETS["bert-base"].replace(name=f"ffn{f}", intermediate_dim=f) for f in (3072, 3076, 3080))
    table, _ = data.compute_table(near, 512)
    lay = spec(ccharts.flops_vs_params(table, 512))["layout"]
    for ax, col in (("xaxis", "params"), ("yaxis", "forward_flops")):
        lo, hi = lay[ax]["range"]
        assert hi - lo >= 1  # a decade at least: 0.1% apart sits in the middle
        assert len(lay[ax]["tickvals"]) >= 2 and all(t[-1] in "KMBGT" for t in lay[ax]["ticktext"])
        assert all(lo < math.log10(v) < hi for v in table[col])
    vals, text = log_ticks(*log_range([96.6e9, 96.7e9]), "flops")
    assert text == ["50G", "100G"] or len(text) >= 2 and all(t.endswith("G") for t in text)
    assert log_ticks(0, 12)[0] == [10.0 ** k for k in (0, 2, 4, 6, 8, 10, 12)]  # every other power of ten


def test_side_by_side_activation_panels_keep_their_log_ticks_off_the_panel_ends():
    """A config of 8,192 positions beside others on log axes: a tick at 10K closed each panel's x axis and one at
    100 opened the next, and on a phone the two labels ran together ("10K100"). Panels side by side keep their x
    ticks SIDE_TICK_CLEAR of each end, at most 4; a single column keeps its ends (5 ticks, as before)."""
    from charts.base import log_range, log_ticks

    lo, hi = log_range([128, 8192])
    assert log_ticks(lo, hi, "count", 5)[0][0] == 100 and log_ticks(lo, hi, "count", 5)[0][-1] == 10_000  # at the ends
    cfgs = (PRESETS["ModernBERT-base"], PRESETS["bert-base"])
    seqs = data.sweep_lengths(cfgs, 8192)
    act = data.activation_table(cfgs, seqs, Workload(8, **dict(KW)), True)
    for per_row, clear in ((2, mcharts.SIDE_TICK_CLEAR), (1, 0.0)):
        lay = spec(mcharts.activation_vs_seq(act, log=True, per_row=per_row))["layout"]
        for ax in ("xaxis", "xaxis2"):
            lo, hi = lay[ax]["range"]
            ticks = [math.log10(v) for v in lay[ax]["tickvals"]]
            assert 2 <= len(ticks) <= (4 if per_row == 2 else 5), (per_row, lay[ax]["ticktext"])
            assert all(lo + clear * (hi - lo) <= t <= hi - clear * (hi - lo) for t in ticks), (per_row, ticks, lo, hi)
        if per_row == 1:
            assert lay["xaxis"]["ticktext"][-1] == "10K"  # one column: nothing beside it, the end tick stays


def test_long_names_wrap_in_ticks_and_panel_titles_in_full():
    """issue 29 item 9: a long name is not cut ("bert-base-mu…ual-cased"): tick labels carry every character, in
    lines broken after - _ / . or a space, each line within NAME_PX; past NAME_LINES lines the name's end is kept."""
    from charts.base import NAME_LINES, NAME_PX, name_lines, text_px

    long = "xlmr-large-proposal-2026q3-shared-ffn-e256-rel-pos-v2-final"
    multi = "bert-base-multilingual-cased"
    cfgs = (PRESETS["bert-base"].replace(name=long), PRESETS["bert-base"].replace(name=multi), PRESETS["bert-base"])
    fig = pcharts.component_bars(data.params_long(data.params_table(cfgs)))
    x = spec(fig)["layout"]["xaxis"]
    assert x["tickvals"] == [long, multi, "bert-base"]
    ticks = [t.split("<br>") for t in x["ticktext"]]
    assert ["".join(t) for t in ticks] == [long, multi, "bert-base"]  # every character, in order, none added
    assert len(ticks[0]) == 3 and len(ticks[1]) == 2 and ticks[2] == ["bert-base"]
    assert all(text_px(line, 12) <= NAME_PX for t in ticks for line in t)
    assert all(line[-1] in "-_/. " for t in ticks for line in t[:-1])  # broken after a separator, not mid-word
    assert all(t["x"][0] == long for t in spec(fig)["data"] if t["x"])  # the hover's %{x}: the full name
    longest = "xlmr-large-proposal-2026q3-shared-ffn-e256-rel-pos-v2-final-ablation-run-0042-ab"  # 80 characters, the
    # longest name allowed: NAME_LINES lines, the last one ending the name
    lines = name_lines(longest)
    assert len(lines) == NAME_LINES and lines[-1].startswith("…") and longest.endswith(lines[-1][1:])
    assert "".join(lines[:-1]) == longest[:len("".join(lines[:-1]))]
    panels = mcharts.activation_vs_seq(data.activation_table(cfgs[:2], (128, 512), EAGER, True))
    titles = [a["text"] for a in spec(panels)["layout"]["annotations"][:2]]
    assert "".join(titles[1].split("<br>")) == multi and len(titles[1].split("<br>")) == 2  # in full, two lines
    assert titles[0].startswith("xlmr-large-proposal-<br>…") and titles[0].endswith("v2-final")



def test_crowded_names_take_the_lines_their_spacing_holds():
    """issue 52 item 5: twelve names under one axis (four of 60+ characters and Overview's eight presets) took 3 lines
    each, which Plotly turned on end: 51 px deep across the axis where a phone spaces them 22 px apart, so they ran
    through each other. Each name now takes the lines the phone's spacing holds (name_most): 3 up to five names, 2
    up to seven, then 1, which keeps the name's start and end; the categories (the hover's %{x}) stay the full names."""
    from charts.base import (
        NAME_AXIS_PX,
        NAME_GAP_PX,
        NAME_LINES,
        NAME_PX,
        ONE_LINE_PX,
        X_LABEL_LINE_PX,
        name_lines,
        name_most,
        text_px,
    )

    assert [name_most(n) for n in range(1, 14)] == [3] * 5 + [2] * 2 + [1] * 6
    for n in range(1, 14):  # a name's lines, turned on end, fit between its neighbours on a phone
        assert name_most(n) * X_LABEL_LINE_PX + NAME_GAP_PX <= NAME_AXIS_PX / n or name_most(n) == 1, n
    longs = ("xlmr-large-proposal-2026q3-shared-ffn-e256-rel-pos-v2-final",
             "albert-base-proposal-2026q3-shared-attn-e128-abs-pos-v3-draft",
             "bert-base-proposal-2026q3-unshared-ffn-e768-rel-pos-v1-baseline",
             "albert-large-proposal-2026q4-shared-all-e128-rope-v5-candidate")
    cfgs = tuple(PRESETS["bert-base"].replace(name=n) for n in longs)
    cfgs += tuple(p for p in PRESETS.values() if p.family in ("bert", "albert"))  # as Overview adds them
    assert len(cfgs) == 12
    for fig in (pcharts.component_bars(data.params_long(data.params_table(cfgs))),
                pcharts.share_bars(data.params_long(data.params_table(cfgs)))):
        s = spec(fig)
        ticks = s["layout"]["xaxis"]["ticktext"]
        assert all("<br>" not in t for t in ticks), ticks  # one line each
        assert s["layout"]["xaxis"]["tickvals"] == [c.name for c in cfgs]
        assert all(t["x"] == [c.name for c in cfgs] for t in s["data"])  # the hover names each in full
        assert ticks[0] == "xlmr-large-pro…l-pos-v2-final"  # cut in the middle, at most ONE_LINE_PX long
        assert ticks[-1] == "bert-base-multilingual-cased"  # the longest preset name stays whole
        assert len(set(ticks)) == len(ticks)  # still told apart
        assert all(text_px(t, 12) <= ONE_LINE_PX for t in ticks)
    line = name_lines(longs[2], most=1)
    assert len(line) == 1 and text_px(line[0], 12) <= NAME_PX and line[0].startswith("bert-base-pro")
    assert line[0].endswith("v1-baseline")
    # a few names keep their lines in full (issue 29 item 9)
    few = pcharts.component_bars(data.params_long(data.params_table(cfgs[:3])))
    assert [t.count("<br>") + 1 for t in spec(few)["layout"]["xaxis"]["ticktext"]] == [NAME_LINES] * 3


def test_factorization_draws_identical_curves_dotted_and_named():
    twin = PRESETS["bert-base"].replace(name="bert-twin")
    fig = pcharts.factorization(data.factorization_sweep((PRESETS["bert-base"], twin)))
    a, b = trace(fig, "bert-base: factorized V×E + E×H"), trace(fig, "bert-twin: factorized V×E + E×H")
    assert a["y"] == b["y"] and a["line"]["dash"] == "solid" and b["line"]["dash"] == "dot"
    assert "(= bert-base)" in b["name"] and b["marker"]["symbol"] == "circle-open"


def test_activation_panels_share_one_y_range_across_rows():
    cfgs = CFGS[:3]
    seqs = (128, 512)
    fig = mcharts.activation_vs_seq(data.activation_table(cfgs, seqs, EAGER.replace(batch_size=2), True))
    lay = spec(fig)["layout"]
    assert [lay[k].get("matches") for k in ("yaxis2", "yaxis3")] == ["y", "y"]  # row 2 too


MANY = tuple(PRESETS[n] for n in ("albert-base", "bert-base", "bert-large", "bert-xlarge", "albert-large",
                                   "albert-xlarge", "albert-xxlarge", "roberta-base", "roberta-large",
                                   "xlm-roberta-large", "distilbert-base-uncased", "deberta-v3-large", "ModernBERT-large"))


@pytest.mark.parametrize("n", [1, 2, 4, 8, 12, 13])
def test_activation_panels_keep_their_height_and_start_at_zero(n):
    """A fixed fraction of the height between rows (0.16) took 6 x 0.16 of seven rows (13 configs): panels 12 px
    high. The rows are ROW_GAP_PX apart, each panel keeps ROW_PX less a gap of the plotting height; linear y axes
    start at 0 (autorange padded the markers below it: -196 GiB with 12 panels), log axes keep their range."""
    df = data.activation_table(MANY[:n], (128, 512), EAGER, True)
    lay = spec(mcharts.activation_vs_seq(df))["layout"]
    rows = -(-n // 2)
    assert lay["height"] == mcharts.ROW_PX * rows + mcharts.PANELS_CHROME_PX
    plotting = mcharts.ROW_PX * rows  # the height less the chrome (the drawn plot is a little less on a phone)
    for k in [k for k in lay if k.startswith("yaxis")]:
        lo, hi = lay[k]["domain"]
        assert (hi - lo) * plotting >= mcharts.ROW_PX - mcharts.ROW_GAP_PX - 1e-6, (k, hi - lo)
        assert lay[k]["rangemode"] == "tozero"
    log = spec(mcharts.activation_vs_seq(df, log=True))["layout"]
    assert "rangemode" not in log["yaxis"] and log["yaxis"]["type"] == "log"


def test_flops_scatter_grows_with_its_legend_past_the_default_configs():
    """Past LEGEND_HELD configs the legend's rows (a config a row on a phone) take the plot's height: 13 configs
    left 110 px on a 390-px phone. The figure grows by a legend row per config; four configs keep HEIGHT."""
    from charts.base import HEIGHT, LEGEND_ROW_PX

    heights = {n: spec(ccharts.flops_vs_params(data.compute_table(MANY[:n], 512)[0], 512))["layout"]["height"]
               for n in (1, 4, 5, 13)}
    assert heights[1] == heights[4] == HEIGHT
    assert heights[5] == HEIGHT + LEGEND_ROW_PX and heights[13] == HEIGHT + 9 * LEGEND_ROW_PX


def test_cuts_leave_out_partial_sharing_that_undoes_a_cut():
    df = data.albert_cuts(PRESETS["albert-base"], 128)  # already shares all
    assert "shared attention" not in set(df["variant"]) and (df["saved"] >= 0).all()
    assert data.cuts_left_out(PRESETS["albert-base"], df) == ["shared attention", "shared FFN"]
    assert len(data.albert_cuts(PRESETS["bert-base"], 128)) == 6


def test_titles_and_legend_names_wrap_by_drawn_width_and_keep_every_character():
    """wrap_px measures lines in the figures' font (Arial's metrics), not in characters: a title that fits a
    390-px phone's figure keeps one line, a longer one wraps; a legend entry holds a 60-character name in full."""
    from charts.base import LEGEND_PX, TEXT_PX, legend_name, text_px, wrap_px

    long = "xlmr-large-proposal-2026q3-shared-ffn-e256-rel-pos-v2-final"
    assert text_px("iiii", 12) < text_px("WWWW", 12) and text_px("ab", 16, bold=True) > text_px("ab", 16)
    entry = legend_name(long)
    lines = entry.split("<br>")
    assert "".join(lines) == long and len(lines) == 2  # nothing cut, broken after a hyphen
    assert all(text_px(ln, 12) <= LEGEND_PX for ln in lines) and lines[0].endswith("-")
    assert legend_name("bert-base") == "bert-base"
    assert legend_name("a<b>-" * 20).count("&lt;b&gt;") == 20  # escaped after wrapping: shown as typed
    text = "word " * 60
    assert all(text_px(ln, 12) <= TEXT_PX for ln in wrap_px(text, 12)) and len(wrap_px(text, 12)) > 3
    assert " ".join(wrap_px(text, 12)) == text.strip()
    assert wrap_px("x" * 200, 16, bold=True)[0] == "x" * int(TEXT_PX // text_px("x", 16, bold=True))
    fig = slide(go.Figure(), "Training memory against max_position", f"{long}: batch 8")
    assert "<br>" not in spec(fig)["layout"]["title"]["text"]
    assert long.replace("-", "") in spec(fig)["layout"]["title"]["subtitle"]["text"].replace("-", "").replace("<br>", "")


def test_training_curve_equal_to_an_earlier_one_is_drawn_over_it_and_named():
    """Seen in the long-name screenshot: a proposal whose training curve equals XLM-R large's was drawn under it.
    Equal at every length: dotted with open markers on top, its legend entry saying which it equals."""
    twin = PRESETS["bert-base"].replace(name="proposal with bert-base's shape")
    sweep = data.training_sweep((PRESETS["bert-base"], twin, PRESETS["bert-large"]), (128, 512),
                                Workload(2, **dict(KW)))
    s = spec(mcharts.training_vs_seq(sweep, GPUS))
    curves = [t for t in s["data"] if t.get("mode") == "lines+markers"]
    base, copy, large = curves
    assert copy["y"] == base["y"] and "(= bert-base)" in copy["name"] and copy["line"]["dash"] == "dot"
    assert copy["marker"]["symbol"] == "circle-open"
    assert base["line"]["dash"] == large["line"]["dash"] == "solid" and "(=" not in large["name"]


# ---- what the ALBERT paper measured (issue 28) ----------------------------------------------------------------
def test_paper_tradeoff_draws_each_row_at_its_exact_count_and_rings_exact_matches():
    from albert_core.estimate import paper_results as pr
    from charts import paper as paper_charts

    cfgs = (PRESETS["albert-base"], PRESETS["bert-base"], PRESETS["albert-xxlarge"])
    points, marks = data.paper_points(data.PAPER_TABLES), data.paper_marks(cfgs, data.PAPER_TABLES)
    fig = paper_charts.tradeoff(points, marks)
    drawn = {}
    for t in spec(fig)["data"]:
        if not str(t["meta"]).startswith("config "):
            for k, x, y in zip([c[0] for c in t["customdata"]], t["x"], t["y"], strict=True):
                drawn[k] = (x, y)
    assert drawn == {r.key: (count_parameters(r.config()).total, r.scores.avg) for r in pr.ROWS}  # every row, once
    rings = {t["meta"]: t for t in spec(fig)["data"] if str(t["meta"]).startswith("config ")}
    assert set(rings) == {"config albert-base", "config albert-xxlarge"}  # bert-base (V = 30,522) is no paper network
    for cfg in (PRESETS["albert-base"], PRESETS["albert-xxlarge"]):
        t = rings[f"config {cfg.name}"]
        assert [c[1] for c in t["customdata"]] == [r.key for r in pr.matches(cfg)]
        assert set(t["x"]) == {count_parameters(cfg).total} and t["y"] == [r.scores.avg for r in pr.matches(cfg)]
        assert t["marker"]["color"] == PRESET_COLORS[cfg.name]  # the config's own color
    assert axis_titles(fig) == ("stored parameters, exact (log scale)", "paper's dev-set Avg (%)")
    assert spec(fig)["layout"]["xaxis"]["type"] == "log"
    assert all(t["mode"] == "markers" for t in spec(fig)["data"])  # no line: nothing between measured points


def test_paper_tradeoff_by_sharing_and_without_marks():
    from charts import paper as paper_charts

    fig = paper_charts.tradeoff(data.paper_points((3,), "sharing"), data.paper_marks((PRESETS["bert-base"],), (3,)))
    assert [t["name"] for t in spec(fig)["data"]] == ["not-shared", "all-shared"]
    assert [len(t["x"]) for t in spec(fig)["data"]] == [4, 4]


def test_paper_speedup_bars_are_flops_ratios_and_the_measured_speedups():
    from albert_core.estimate import paper_results as pr
    from charts import paper as paper_charts

    fig = paper_charts.speedup_bars(data.paper_speedups())
    flops_bars, measured = spec(fig)["data"]
    ref = forward_flops(PRESETS["bert-large"].replace(vocab_size=30000), 512).per_token
    for r, f, m in zip(pr.rows_of(2), flops_bars["y"], measured["y"], strict=True):
        assert f == pytest.approx(ref / forward_flops(r.config(), 512).per_token, rel=1e-12)
        assert m == r.speedup
    assert axis_titles(fig) == ("model (Table 2)", "training speed relative to BERT-large (×)")


def test_share_sweep_says_what_moves_and_which_curves_coincide():
    """issue 29: the caption said "other fields as in each config" while hidden_dim's sweep scales I and the heads,
    and albert-base's curves lay exactly under albert-xxlarge's, unseen though the legend listed them."""
    from ui import figures

    cfgs = (PRESETS["albert-base"], PRESETS["bert-base"], PRESETS["albert-xxlarge"])
    caption = figures.params_share_sweep(cfgs, "hidden_dim", False).layout.meta["caption"]
    assert "Along hidden_dim: I/H and the head width stay" in caption
    assert "albert-base and albert-xxlarge: the same curves, one under the other." in caption
    df = data.share_sweep(cfgs, "hidden_dim")
    a, x = (df[df["config"] == n] for n in ("albert-base", "albert-xxlarge"))
    assert list(a["layers_pct"]) == pytest.approx(list(x["layers_pct"]), abs=1e-9)  # they do coincide
    caption = figures.params_share_sweep(cfgs[:2], "hidden_dim", False).layout.meta["caption"]
    assert "the same curves" not in caption


@pytest.mark.parametrize(("batch", "unit"), [(8, "GiB"), (4096, "TiB"), (8_000_000, "PiB")])
def test_memory_axes_take_the_unit_their_largest_value_reads_in(batch, unit):
    """A huge workload's memory axes read in TiB or PiB (ticks 200 ... 800), not 200K ... 800K GiB beside labels
    that say TiB; every plotted value times the unit is the exact bytes in the hover."""
    cfgs, w = CFGS[:2], EAGER.replace(batch_size=batch)
    seqs = (128, 512)
    gpus = {"A100 80 GB": GPUS["A100 80 GB"]}
    training = data.training_table(cfgs, Workload(batch, 512, **dict(KW)))
    figs = {"activations": mcharts.activation_vs_seq(data.activation_table(cfgs, seqs, w, True)),
            "activations, log": mcharts.activation_vs_seq(data.activation_table(cfgs, seqs, w, True), log=True),
            "variants": mcharts.variants(data.variant_table(cfgs[0], seqs, w), cfgs[0].name),
            "training": mcharts.training_stack(training[training["part"] != "total"], gpus),
            "training sweep": mcharts.training_vs_seq(data.training_sweep(cfgs, seqs, Workload(batch, 512, **dict(KW))),
                                                      gpus, log=True)}
    sweep_top = max(int(b) for b in data.training_sweep(cfgs, seqs, Workload(batch, 512, **dict(KW)))["bytes"])
    for what, fig in figs.items():
        s = spec(fig)
        # the training sweep is read against its GPU lines: on a log axis it keeps their GiB up to 10,000 GiB
        want = "GiB" if what == "training sweep" and sweep_top < mcharts.LOG_IN_GPU_UNIT * 2**30 else unit
        size = {"GiB": 2**30, "TiB": 2**40, "PiB": 2**50}[want]
        assert f"({want}" in s["layout"]["yaxis"]["title"]["text"], what
        top = 0.0
        for t in s["data"]:
            for y, cd in zip(t.get("y") or [], t.get("customdata") or [], strict=False):
                if y is not None and isinstance(cd, list) and isinstance(cd[0], int):
                    assert y * size == pytest.approx(cd[0], rel=1e-12), what
                    top = max(top, y)
        assert 1 <= top < (mcharts.LOG_IN_GPU_UNIT if want != unit else 1000) or want == "GiB" == unit, what


def test_a_linear_training_sweep_stops_above_the_gpu_lines():
    """A new user's run: ModernBERT's 8,192 tokens took the linear axis to 2.5 TiB and squeezed the five GPU lines
    (15-140 GiB), which the chart is read against, into its bottom twentieth; the log axis read 0.001 ... 1 TiB.
    Past ABOVE_GPUS times the largest GPU a linear axis stops at CAPPED_HEADROOM times it and the corner says how far
    the curves go on (the traces keep every value); a log axis keeps the GPU lines' GiB."""
    cfgs = (PRESETS["ModernBERT-base"], PRESETS["bert-base"])
    w = Workload(8, 512, **{**dict(KW), "attention": "eager"})  # the app's default: the n² scores kept
    sweep = data.training_sweep(cfgs, data.sweep_lengths(cfgs, 512), w)
    top = max(int(b) for b in sweep["bytes"])
    assert top > mcharts.ABOVE_GPUS * max(GPUS.values())
    lay = spec(mcharts.training_vs_seq(sweep, GPUS))["layout"]
    assert lay["yaxis"]["range"] == pytest.approx([0, max(GPUS.values()) / 2**30 * mcharts.CAPPED_HEADROOM])
    assert "(GiB)" in lay["yaxis"]["title"]["text"]
    (note,) = [a for a in lay["annotations"] if a.get("name") == "curves above the axis"]
    row = sweep.loc[sweep["bytes"].map(int).idxmax()]
    assert f"up to {sizes([top])[0]}" in note["text"] and f"at {int(row['seq_len']):,} tokens" in note["text"]
    log = spec(mcharts.training_vs_seq(sweep, GPUS, log=True))["layout"]
    assert "(GiB, log)" in log["yaxis"]["title"]["text"] and not log.get("annotations")
    small = data.training_sweep(cfgs[1:], (128, 512), w)  # under the GPU lines: the axis over every curve, from 0
    lay = spec(mcharts.training_vs_seq(small, GPUS))["layout"]
    assert lay["yaxis"].get("rangemode") == "tozero" and "range" not in lay["yaxis"] and not lay.get("annotations")


def test_put_sets_what_plotly_update_sets():
    """charts.base.put (by item, a nested dict given whole where nothing is set yet) leaves the same figure as
    Plotly's update(): merged into what a chart set before, replaced where it names a leaf."""
    from plotly.subplots import make_subplots

    from charts.base import FRAME, FRAME_AXIS, put, put_axes

    def made():
        fig = make_subplots(rows=1, cols=2)
        fig.add_bar(x=["a"], y=[1], row=1, col=2)
        fig.layout.legend.y = 0.5  # set before: kept where the update does not name it, replaced where it does
        fig.layout.legend.traceorder = "reversed"
        fig.layout.xaxis2.title.text = "x2"
        return fig

    a, b = made(), made()
    a.update_layout(FRAME)
    a.update_xaxes(FRAME_AXIS | {"title": {"standoff": 3}})
    put(b.layout, FRAME)
    put_axes(b, "x", FRAME_AXIS | {"title": {"standoff": 3}})
    assert a.to_dict() == b.to_dict()
    assert b.layout.legend.traceorder == "reversed" and b.layout.legend.y == 0.0
    assert b.layout.xaxis2.title.text == "x2" and b.layout.xaxis.title.standoff == 3


def test_the_breakdown_in_shares_and_the_sharing_modes_on_a_log_axis_keep_a_small_config_readable():
    """A new user's review: beside albert-xxlarge (2.4B not shared) electra-small's and albert-base's bars were flat in
    both charts, and neither had another scale."""
    cfgs = (PRESETS["electra-small-discriminator"], PRESETS["albert-xxlarge"], PRESETS["deberta-v3-base"])
    _, parts = data.compute_table(cfgs, 512)
    bars = spec(ccharts.flops_breakdown(parts, 512, shares=True))
    for i in range(len(cfgs)):
        assert sum(t["y"][i] for t in bars["data"]) == pytest.approx(100)
    assert bars["layout"]["yaxis"]["range"] == [0, 100]
    exact = spec(ccharts.flops_breakdown(parts, 512))["data"]  # the hover keeps the FLOPs either way
    assert [t["customdata"] for t in bars["data"]] == [t["customdata"] for t in exact]
    log = spec(pcharts.sharing_modes(data.sharing_table(cfgs), log=True))
    assert log["layout"]["yaxis"]["type"] == "log" and "log scale" in log["layout"]["yaxis"]["title"]["text"]
    assert "type" not in spec(pcharts.sharing_modes(data.sharing_table(cfgs)))["layout"]["yaxis"] or \
        spec(pcharts.sharing_modes(data.sharing_table(cfgs)))["layout"]["yaxis"]["type"] != "log"
