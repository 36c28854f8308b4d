"""AppTest: every page renders for every preset, and the numbers on it are albert_core's."""

import json
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from albert_core.estimate.activations import activation_memory
from albert_core.estimate.flops import forward_flops
from albert_core.estimate.params import count_parameters
from albert_core.presets import PRESETS
from albert_core.share import CONTROLS, DEFAULT_COMPARE, PAGE_TABS
from albert_core.units import format_bytes, format_count
from albert_core.workload import Workload

APP = str(Path(__file__).resolve().parents[1] / "app.py")
PAGES = ("overview", "parameters", "memory", "fit", "compute", "verify")


def open_app(query: dict | None = None) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=60)
    at.query_params.update(query or {})
    at.ae_page = "overview"  # the page shown, for on_tabs
    return at.run()


def open_fields(at: AppTest, *sections: str) -> AppTest:
    """Open sidebar sections (default: "Model fields"), as clicking their expanders would: a closed section's
    widgets are not drawn at all (ui/sidebar._section)."""
    opened = dict(at.session_state["_ae_open"]) if "_ae_open" in at.session_state else {}
    at.session_state["_ae_open"] = opened | {s: True for s in sections or ("model_fields",)}
    return at.run()


def goto(at: AppTest, page: str) -> AppTest:
    at.ae_page = page
    return at.switch_page(f"pages/{page}.py").run()


def open_tab(at: AppTest, page: str, tab: str) -> AppTest:
    """Open one tab of a chart page (ui/sections.lazy_tabs draws only the open one), as clicking it would: the
    open tab is the page control "<page>_tab"."""
    assert tab in PAGE_TABS[page], (page, tab)
    store = dict(at.session_state["_ae_controls"])
    store[f"{page}_tab"] = tab
    at.session_state["_ae_controls"] = store
    return at.run()


def on_tabs(at: AppTest, find):
    """find(at) on the page as shown, else on each tab of the page in turn (only the open tab is drawn); the tab
    where it was found stays open. None when no tab has it."""
    hit = find(at)
    page = getattr(at, "ae_page", None)
    for tab in PAGE_TABS.get(page, ()) if hit is None else ():
        hit = find(open_tab(at, page, tab))
        if hit is not None:
            break
    return hit


def figure(at: AppTest, key: str) -> dict:
    """The figure with this key, on whichever tab of the page holds it."""
    els = on_tabs(at, lambda a: [e for e in a.get("plotly_chart") if getattr(e, "key", None) == key] or None)
    assert els and len(els) == 1, f"no figure {key!r} on any tab of {getattr(at, 'ae_page', '?')}"
    return json.loads(els[0].proto.spec)


def traces(fig: dict) -> dict[str, dict]:
    """Traces by legend name; in faceted figures (one panel per config) by "<config>: <name>"."""
    return {(f"{t['meta']}: {t['name']}" if "meta" in t else t["name"]): t for t in fig["data"] if "name" in t}


def table_with(at: AppTest, *columns: str):
    """The first table with these columns, on whichever tab of the page holds it."""
    t = on_tabs(at, lambda a: next((d.value for d in a.dataframe if set(columns) <= set(d.value.columns)), None))
    if t is None:
        raise AssertionError(f"no table with columns {columns} on any tab of {getattr(at, 'ae_page', '?')}")
    return t


def no_errors(at: AppTest) -> None:
    assert not at.exception, [e.message for e in at.exception]
    assert not at.error, [e.value for e in at.error]


def shown_names(preset: str) -> list[str]:
    return [preset] + [n for n in DEFAULT_COMPARE if n != preset]


@pytest.fixture(scope="module", params=list(PRESETS))
def preset_app(request):
    """The app opened on one preset; every page visited once, and every tab of it (the tests below check each)."""
    at = open_app({"preset": request.param} if request.param != "albert-base" else {})
    pages = {}
    for page in PAGES:
        goto(at, page)
        no_errors(at)
        content = pages[page] = {"titles": [t.value for t in at.title], "figures": {}, "tables": [], "info": [],
                                 "warning": []}
        for tab in PAGE_TABS.get(page, (None,)):
            if tab == "decoders" and request.param != "albert-base":
                continue  # the same for every sidebar config: opened once (test_overview_decoders_tab)
            if tab is not None:
                no_errors(open_tab(at, page, tab))
            content["figures"] |= {e.key: json.loads(e.proto.spec) for e in at.get("plotly_chart")}
            content["tables"] += [d.value for d in at.dataframe] + [t.value for t in at.table]
            content["info"] += [i.value for i in at.info]
            content["warning"] += [w.value for w in at.warning]
    return request.param, pages, at


def test_every_page_has_a_title_and_no_error(preset_app):
    _, pages, at = preset_app
    for page, content in pages.items():
        assert content["titles"], page
    assert at.sidebar.selectbox(key="preset").value == preset_app[0]


def test_overview_numbers(preset_app):
    preset, pages, _ = preset_app
    names = shown_names(preset)
    ref = names + [p for p, c in PRESETS.items() if p not in names and c.family in ("bert", "albert")]  # reference
    (t,) = [t for t in pages["overview"]["tables"] if "all_layers" in t.columns]
    assert list(t["config"]) == ref
    assert list(t.columns[:3]) == ["config", "embedding_pct", "layers_pct"]  # shares first
    for _, r in t.iterrows():
        c = count_parameters(PRESETS[r["config"]])
        assert (r["total"], r["embedding"], r["all_layers"]) == (c.total, c.embedding, c.all_layers)
        assert r["total (≈)"] == format_count(c.total)
        assert r["embedding_pct"] == pytest.approx(c.embedding_pct)
        a = activation_memory(
            PRESETS[r["config"]], Workload(batch_size=1, seq_len=512, precision="float32", attention="eager")
        )
        assert r["activations_512"] == a.total and r["activations_512 (≈)"] == format_bytes(a.total)
    figs = pages["overview"]["figures"]
    assert traces(figs["overview_components"])["Embedding"]["y"] == [count_parameters(PRESETS[n]).embedding
                                                                     for n in ref]
    shares = traces(figs["overview_shares"])
    for i, n in enumerate(ref):
        c = count_parameters(PRESETS[n])
        assert shares["Embedding"]["y"][i] == pytest.approx(c.embedding_pct)
        assert shares["Layers"]["y"][i] == pytest.approx(c.layers_pct)
    for key in ("overview_shares", "overview_components"):  # both mark your configs, above the plot (a full bar hid it)
        layout = figs[key]["layout"]
        (band,) = [s for s in layout["shapes"] if s["type"] == "rect"]
        (bracket,) = [s for s in layout["shapes"] if s["type"] == "line"]
        (label,) = [a for a in layout["annotations"] if a["text"] == "yours"]
        assert (band["x0"], band["x1"]) == (-0.5, len(names) - 0.5), key
        assert bracket["x0"] > -0.5 and bracket["x1"] < len(names) - 0.5 and bracket["yanchor"] == 1, key
        assert (label["yref"], label["y"], label["yanchor"], label["x"]) == ("paper", 1, "bottom", (len(names) - 1) / 2)


def test_overview_decoders_tab(preset_app):
    """The small decoders beside BERT-base and ALBERT-base: the table and the bars are albert_core.decoders' exact
    counts, the decoders by embedding share, largest first."""
    from albert_core.decoders.decoder_params import count_decoder
    from albert_core.decoders.decoder_presets import DECODER_PRESETS

    preset, pages, _ = preset_app
    if preset != "albert-base":
        return  # the tab does not depend on the sidebar's config: once
    (t,) = [t for t in pages["overview"]["tables"] if "kv_cache_per_token" in t.columns]
    assert list(t["config"][:2]) == ["bert-base", "albert-base"] and len(t) == 2 + len(DECODER_PRESETS)
    decoders = t.iloc[2:]
    assert list(decoders["embedding_pct"]) == sorted(decoders["embedding_pct"], reverse=True)
    for _, r in decoders.iterrows():
        p = DECODER_PRESETS[r["config"]]
        c = count_decoder(p.cfg)
        assert (r["total"], r["embedding"], r["layers"], r["other"]) == (c.total, c.embedding, c.layers, c.final_norm)
        assert r["total"] == p.base_params and r["hub_id"] == p.model_id
    shares = traces(pages["overview"]["figures"]["overview_decoders"])
    assert shares["Embedding"]["y"] == pytest.approx(list(t["embedding_pct"]))
    assert shares["Final norm"]["y"] == pytest.approx(list(decoders["other_pct"]))


def test_memory_decoders_tab(preset_app):
    """The loss's float32 logits and the KV cache of five decoder presets against length: every point equal to
    albert_core.decoders' closed forms (decoder_loss.loss_saved, held equal to the engine; decoder_serving.kv_cache
    while generating, held equal to transformers' DynamicCache) at the page's batch, up to each model's max_position;
    Gemma-3's local layers capped at their window."""
    from albert_core.decoders.decoder_loss import loss_saved
    from albert_core.decoders.decoder_presets import DECODER_PRESETS
    from albert_core.decoders.decoder_serving import kv_cache
    from albert_core.share import CONTROLS

    preset, pages, _ = preset_app
    if preset != "albert-base":
        return  # the tab does not depend on the sidebar's config: once
    batch = CONTROLS["batch_size"].default
    figs = pages["memory"]["figures"]
    for key, closed in (("memory_decoders_loss", loss_saved), ("memory_decoders_kv",
                                                              lambda c, b, n: kv_cache(c, b, n - 1, 1).total)):
        lines = [t for t in figs[key]["data"] if t.get("mode") == "lines+markers"]
        assert len(lines) == 5, key
        for t in lines:
            c = DECODER_PRESETS[t["legendgroup"]].cfg
            assert t["x"][-1] == c.max_position
            assert [d[0] for d in t["customdata"]] == [closed(c, batch, n) for n in t["x"]], (key, c.name)
            if key == "memory_decoders_kv" and c.sliding_window:  # past the window, only the global layers grow
                n_global = sum(c.is_global(i) for i in range(c.num_layers))
                grow = (t["customdata"][-1][0] - t["customdata"][-2][0]) // (t["x"][-1] - t["x"][-2])
                assert grow == batch * n_global * 2 * c.kv_heads * c.head_dim * 2
    # the weights at rest: estimate.serving.weight_bytes (held to torchao's storage, tests/test_serving.py)
    from albert_core.decoders.decoder_presets import trains_as_causal_lm
    from albert_core.estimate.serving import weight_bytes

    (served,) = [t for t in pages["memory"]["tables"] if "int8_vs_rule" in t.columns]
    assert list(served["config"]) == list(DECODER_PRESETS)
    for _, r in served.iterrows():
        c = DECODER_PRESETS[r["config"]].cfg
        head = "causal-lm" if trains_as_causal_lm(c) else "none"
        assert r["head"] == head and [int(r[f]) for f in ("bfloat16", "int8")] == [
            weight_bytes(c, f, dtype="bfloat16", head=head).weights for f in ("bfloat16", "int8")]
        assert int(r["int4"]) == weight_bytes(c, "int4", dtype="bfloat16", group_size=int(r["int4_group"]),
                                              head=head).weights
    gemma = served[served["config"] == "gemma-3-270m"].iloc[0]
    assert int(gemma["int8"]) > int(gemma["bfloat16"]) and "a copy of its own" in gemma["why"]  # the tied head's copy
    assert served[served["config"] == "SmolLM2-135M"].iloc[0]["int4_group"] == 64  # 128 does not divide 576


def test_parameters_decoders_tab(preset_app):
    """ALBERT's two cuts for the default decoder preset at the default E: the bars and the table are
    decoders.decoder_params.decoder_cuts' closed forms (held equal to transformers' counts, tests/test_decoders.py);
    the table of every decoder preset holds the same numbers, the largest factorization saving first."""
    from albert_core.decoders.decoder_params import count_decoder, decoder_cuts
    from albert_core.decoders.decoder_presets import DECODER_PRESETS

    preset, pages, _ = preset_app
    if preset != "albert-base":
        return  # the tab does not depend on the sidebar's config: once
    name, e = CONTROLS["cuts_decoder"].default, CONTROLS["cuts_e"].default
    expected = decoder_cuts(DECODER_PRESETS[name].cfg, e)
    bars = traces(pages["parameters"]["figures"]["params_decoder_cuts"])
    assert [int(v) for v in bars["Embedding"]["x"]] == [r["embedding"] for r in expected]
    assert [int(v) for v in bars["Layers"]["x"]] == [r["layers"] for r in expected]
    assert "Pooler" not in bars and bars["Final norm"]["x"][0] == count_decoder(DECODER_PRESETS[name].cfg).final_norm
    (one,) = [t for t in pages["parameters"]["tables"] if "final_norm" in t.columns]
    assert [int(v) for v in one["total"]] == [r["total"] for r in expected]
    (every,) = [t for t in pages["parameters"]["tables"] if "both_saved_pct" in t.columns]
    assert sorted(every["config"]) == sorted(DECODER_PRESETS)
    assert list(every["factorized_saved_pct"]) == sorted(every["factorized_saved_pct"], reverse=True)
    row = every[every["config"] == name].iloc[0]
    assert (row["total"], row["factorized"], row["shared_all"], row["both"]) == (
        expected[0]["total"], expected[1]["total"], expected[4]["total"], expected[5]["total"])


def test_compute_decoders_tab(preset_app):
    """Every decoder preset's forward FLOPs at the page's sequence length (each at most its max_position), the LM
    head counted where it trains as a causal LM: the table and the bars are decoders.decoder_flops' exact counts
    (held equal to FlopCounterMode, tests/test_decoders.py)."""
    from albert_core.decoders.decoder_flops import decoder_forward_flops, decoder_training_flops
    from albert_core.decoders.decoder_presets import DECODER_PRESETS, trains_as_causal_lm
    from albert_core.share import CONTROLS

    preset, pages, _ = preset_app
    if preset != "albert-base":
        return  # the tab does not depend on the sidebar's config: once
    S = CONTROLS["flops_seq_len"].default
    (t,) = [t for t in pages["compute"]["tables"] if "lm_head_pct" in t.columns]
    assert list(t["config"]) == list(DECODER_PRESETS)
    bars = traces(pages["compute"]["figures"]["compute_decoders"])
    for i, r in t.iterrows():
        c = DECODER_PRESETS[r["config"]].cfg
        lm = trains_as_causal_lm(c)
        f = decoder_forward_flops(c, min(S, c.max_position), 1, head=lm)
        assert (r["forward_flops"], r["training_flops"]) == (f.total, decoder_training_flops(c, min(S, c.max_position),
                                                                                             1, head=lm))
        assert bars["LM head (H→vocab)"]["customdata"][i][0] == f.lm_head and (f.lm_head > 0) == lm
    assert not trains_as_causal_lm(DECODER_PRESETS["Qwen3-Embedding-0.6B"].cfg)  # an embedding model: no LM head


def test_overview_comparison_table(preset_app):
    """Side by side: two tables, the own facts (fields and results at each max_position) and the workload's."""
    preset, pages, _ = preset_app
    names = shown_names(preset)
    (t,) = [t for t in pages["overview"]["tables"] if "field / result" in (t.index.name or "")]
    (w,) = [t for t in pages["overview"]["tables"] if t.index.name == "result"]
    assert "hidden_\u200bdim" in t.index  # a label may break after a field name's "_" (ui/comparison.label)
    t, w = (x.rename(index=lambda s: s.replace("\u200b", "")) for x in (t, w))
    assert list(t.columns) == names == list(w.columns)
    for n in names:
        assert t.loc["total parameters", n].startswith(f"{count_parameters(PRESETS[n]).total:,} ")
        assert t.loc["hidden_dim", n] == f"{PRESETS[n].hidden_dim:,}"
    assert "training step's peak per GPU" in w.index and "training step's peak per GPU" not in t.index
    assert "activations at max_position" in t.index and "activations at max_position" not in w.index


def test_every_figure_has_a_title(preset_app):
    _, pages, _ = preset_app
    for page, content in pages.items():
        for key, fig in content["figures"].items():
            assert fig["layout"]["title"]["text"].startswith("<b>"), (page, key)


def test_parameters_numbers(preset_app):
    preset, pages, _ = preset_app
    names = shown_names(preset)
    (t,) = [t for t in pages["parameters"]["tables"] if "per_layer" in t.columns]
    assert list(t["config"]) == names
    assert list(t["total"]) == [count_parameters(PRESETS[n]).total for n in names]
    figs = pages["parameters"]["figures"]
    assert traces(figs["params_components"])["Layers"]["y"] == [count_parameters(PRESETS[n]).all_layers for n in names]
    sun = figs["params_sunburst"]["data"][0]
    assert sun["values"][0] == count_parameters(PRESETS[preset]).total
    assert set(figs) >= {"params_shares", "params_components", "params_sunburst", "params_share_sweep",
                         "params_factorization", "params_sharing"}


def axis_unit(fig: dict) -> int:
    """Bytes in one unit of a memory figure's y axis, read from its title ("activation memory (TiB)")."""
    (unit,) = [u for u in ("GiB", "TiB", "PiB", "EiB") if f"({u}" in fig["layout"]["yaxis"]["title"]["text"]]
    return 2 ** (30 + 10 * ("GiB", "TiB", "PiB", "EiB").index(unit))


def test_memory_numbers(preset_app):
    preset, pages, _ = preset_app
    fig = pages["memory"]["figures"]["memory_activations"]
    t = traces(fig)[f"{preset}: attention (grows with seq_len²)"]
    cfg = PRESETS[preset]
    batch = CONTROLS["batch_size"].default
    unit = axis_unit(fig)  # GiB, or TiB where the largest value is 1,000 GiB or more (ModernBERT at 8,192)
    for s, y, cd in zip(t["x"], t["y"], t["customdata"], strict=True):
        a = activation_memory(
            cfg.replace(max_position=s), Workload(batch_size=batch, seq_len=s, precision="float32", attention="eager")
        )
        assert cd[0] == a.quadratic and y * unit == pytest.approx(a.quadratic, rel=1e-12)
    longest = max(PRESETS[n].max_position for n in shown_names(preset))
    assert t["x"][-1] == max(CONTROLS["seq_max"].default, longest)  # reaches every shown max_position
    assert cfg.max_position in t["x"]
    top = max(y for tr in fig["data"] if tr.get("stackgroup") for y in tr["y"])  # a part's own curve
    assert top < 1000 and (unit == 2**30 or top >= 1)  # GiB until 1,000 GiB, then the unit that reads under 1,000


def test_compute_numbers(preset_app):
    preset, pages, _ = preset_app
    fig = pages["compute"]["figures"]["compute_scatter"]
    seq = CONTROLS["flops_seq_len"].default
    names = shown_names(preset)
    assert sorted(traces(fig)) == sorted(names)  # only the shown configs (presets only when added)
    for name in names:
        cfg = PRESETS[name]
        t = traces(fig)[name]
        assert t["x"] == [count_parameters(cfg).total] and t["y"] == [forward_flops(cfg, seq).total]


def test_verify_waits_for_the_button(preset_app):
    _, pages, at = preset_app
    assert any("Press the button" in i for i in pages["verify"]["info"])
    assert at.button(key="verify_run").label == "Build, count and measure"


def test_verify_names_an_edited_preset_as_every_page_does():
    """A new user's run: Verify said "Build **albert-base**" (and named its downloads albert-base-*.csv) for a sidebar
    config edited from albert-base, which every other page calls "albert-base (edited)"."""
    at = goto(open_app({"preset": "albert-base", "num_layers": "2"}), "verify")
    intro = " ".join(m.value for m in at.markdown)
    assert "Build **albert-base (edited)** (the sidebar config)" in intro.replace("\\", "")
    at = goto(open_app({"preset": "albert-base"}), "verify")
    assert "Build **albert-base** (the sidebar config)" in " ".join(m.value for m in at.markdown).replace("\\", "")
    # and so do the process's refusals (the request carries the shown name): 3,000 unshared layers are not built
    at = goto(open_app({"preset": "bert-base", "num_layers": "3000"}), "verify")
    at.button(key="verify_run").click().run()
    assert not at.exception
    said = " ".join(e.value for e in at.error).replace("\\", "")
    assert "Building bert-base (edited) creates 3,000 layer modules" in said, said


def test_paper_sections(preset_app):
    """What the ALBERT paper measured (issue 28): Table 3 on the factorization tab and Table 4 on the sharing tab
    beside exact counts, every row on the Overview, the speedups on Compute, the advice and the TPU note shown;
    rings only on the configs that are exactly a paper network."""
    from albert_core.estimate import paper_results as pr

    preset, pages, _ = preset_app
    names = shown_names(preset)
    rows = [t for t in pages["parameters"]["tables"] if {"table", "row", "params_exact", "avg"} <= set(t.columns)]
    swept = {"hidden_dim": [[12]], "num_layers": [[11, 13]]}.get(CONTROLS["sweep"].default, [])  # the sweep tab
    assert [sorted(set(t["table"])) for t in rows] == swept + [[3], [4]]
    for t in rows:
        for _, r in t.iterrows():
            (row,) = [p for p in pr.rows_of(int(r["table"])) if p.label == r["row"]]
            assert r["params_exact"] == count_parameters(row.config()).total and r["avg"] == row.scores.avg
    info = " ".join(pages["parameters"]["info"] + pages["overview"]["info"] + pages["compute"]["info"]).replace("\\", "")
    assert pr.ADVICE["embedding_dim"] in info and pr.ADVICE["dropout"] in info and pr.TPU_NOTE in info
    (every,) = [t for t in pages["overview"]["tables"] if {"table", "row", "params_exact"} <= set(t.columns)]
    assert len(every) == len(pr.ROWS)
    ringed = {t["meta"][len("config "):] for t in pages["overview"]["figures"]["paper_tradeoff"]["data"]
              if str(t.get("meta", "")).startswith("config ")}
    assert ringed == {n for n in names if pr.matches(PRESETS[n])}
    (measured,) = [t for t in pages["compute"]["figures"]["paper_speedup"]["data"] if t["meta"] == "measured"]
    assert measured["y"] == [r.speedup for r in pr.rows_of(2)]


def test_a_missing_value_reads_as_a_dash_not_none():
    """A new user's review: Table 13's rows showed the word "None" where the paper prints no count (the grid's own
    word for a missing value) and an empty readable cell beside it; both read "—" now."""
    import pandas as pd

    from ui.tables import MISSING

    at = open_tab(open_app(), "overview", "paper")
    no_errors(at)
    (grid,) = [d for d in at.dataframe if {"table", "params_printed"} <= set(d.value.columns) and 13 in set(d.value["table"])]
    missing = grid.value[grid.value["params_printed"].isna()]
    assert len(missing) >= 2 and set(missing["row"]) >= {"ALBERT-xxlarge 12 layers", "ALBERT-xxlarge 24 layers"}
    assert set(missing["params_printed (≈)"]) == {MISSING} and grid.proto.placeholder == MISSING == "—"
    assert pd.isna(missing["params_diff_pct"]).all()


def test_configs_the_paper_did_not_train_are_said_in_one_closed_expander():
    """A new user's review: with eight configs, seven paragraphs of "not a network the paper trained" stood between
    the paper's chart and its table. The configs it trained keep their caption; the others are one expander."""
    at = open_tab(open_app({"preset": "albert-base", "compare": "bert-base,roberta-base,albert-xxlarge"}),
                  "overview", "paper")
    no_errors(at)
    shown = [c.value.replace("\\", "") for c in at.main.caption]  # md() escapes the colons
    assert any(v.startswith("albert-base: the paper trained this exact network") for v in shown)
    (box,) = [e for e in at.main.expander if e.label.startswith("Not trained by the paper")]
    assert box.label == "Not trained by the paper, so not drawn: bert-base, roberta-base"
    inside = [c.value.replace("\\", "") for c in box.caption]
    assert [v.split(":")[0] for v in inside] == ["bert-base", "roberta-base"]
    assert all("not a network the paper trained" in v and "Closest:" in v for v in inside)
    assert not [v for v in shown if "not a network the paper trained" in v and v not in inside]


def test_a_share_that_is_not_zero_never_reads_zero():
    """A new user's review: the fine breakdown showed 0.00% for token_type_embeddings (256 of albert-base's 11.7M
    parameters). A share column with such a value shows three significant digits; the others keep two decimals."""
    import json

    at = open_tab(goto(open_app(), "parameters"), "parameters", "breakdown")
    no_errors(at)
    (grid,) = [d for d in at.dataframe if "pct" in d.value.columns]
    tiny = grid.value[(grid.value["pct"] > 0) & (grid.value["pct"] < 0.005)]
    assert len(tiny) >= 1 and json.loads(grid.proto.columns)["pct"]["type_config"]["format"] == "%.3g%%"
    at = open_tab(open_app(), "overview", "table")
    formats = {c: v["type_config"]["format"] for d in at.dataframe for c, v in json.loads(d.proto.columns).items()
               if c.endswith("_pct")}
    assert formats and set(formats.values()) == {"%.2f%%"}, formats


def test_the_sharing_modes_and_the_flops_breakdown_take_their_scale_from_a_link():
    at = goto(open_app({"sharing_scale": "log", "parameters_tab": "sharing", "compare": "albert-xxlarge"}), "parameters")
    no_errors(at)
    assert figure(at, "params_sharing")["layout"]["yaxis"]["type"] == "log"
    at = goto(open_app({"flops_view": "shares", "compute_tab": "breakdown", "compare": "albert-xxlarge"}), "compute")
    no_errors(at)
    fig = figure(at, "compute_breakdown")
    assert fig["layout"]["yaxis"]["range"] == [0, 100]
    assert all(sum(t["y"][i] for t in fig["data"]) == pytest.approx(100) for i in range(len(fig["data"][0]["y"])))
    assert [r.value for r in at.radio if r.label == "Bars"] == ["shares"]


def test_narrow_tables_put_what_their_text_speaks_of_first():
    """A new user's review: the fine breakdown (40% of the page) showed component, pct, sublayer and half of the
    module's name; the paper's tables held the Avg and params_embedding, which their text speaks of, off-screen."""
    at = open_tab(goto(open_app(), "parameters"), "parameters", "breakdown")
    (grid,) = [d for d in at.dataframe if "module" in d.value.columns]
    assert list(grid.value.columns[:5]) == ["module", "pct", "params (≈)", "params", "copies"]
    at = open_tab(goto(open_app(), "parameters"), "parameters", "factorization")
    (grid,) = [d for d in at.dataframe if "avg" in d.value.columns]
    assert list(grid.value.columns[:5]) == ["row", "params_diff_pct", "avg", "params_embedding (≈)", "params_embedding"]
