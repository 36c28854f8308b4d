"""AppTest: changed controls change the numbers (to albert_core's), survive page changes, and bad input is explained."""

import pytest
from test_app_pages import figure, goto, no_errors, open_app, open_fields, open_tab, table_with, traces

from albert_core.estimate.activations import activation_memory
from albert_core.estimate.flops import forward_flops
from albert_core.estimate.params import count_parameters
from albert_core.presets import PRESETS
from albert_core.workload import Workload


def test_changed_batch_and_dtype_on_memory_page():
    at = goto(open_app(), "memory")
    at.number_input(key="ctl.batch_size").set_value(3).run()
    at.selectbox(key="ctl.dtype").set_value("bfloat16").run()
    at.selectbox(key="ctl.attention").set_value("sdpa").run()
    no_errors(at)
    t = traces(figure(at, "memory_activations"))["albert-base: linear in seq_len"]
    for s, gib in zip(t["x"], t["y"], strict=True):
        a = activation_memory(
            PRESETS["albert-base"].replace(max_position=s),
            Workload(batch_size=3, seq_len=s, precision="bfloat16", attention="sdpa"),
        )
        assert gib * 2**30 == pytest.approx(a.linear, rel=1e-12)
    assert at.query_params["batch_size"] == "3" and at.query_params["dtype"] == "bfloat16"


def test_log_scale_and_checkpointing():
    at = goto(open_app(), "memory")
    at.radio(key="ctl.scale").set_value("log").run()
    at.toggle(key="ctl.checkpointing").set_value(True).run()
    no_errors(at)
    fig = figure(at, "memory_activations")
    assert fig["layout"]["xaxis"]["type"] == "log" and fig["layout"]["yaxis"]["type"] == "log"
    t = traces(fig)["bert-base: attention (grows with seq_len²)"]
    s = t["x"][0]
    a = activation_memory(
        PRESETS["bert-base"].replace(max_position=s),
        Workload(batch_size=8, seq_len=s, precision="float32", attention="eager", checkpointing=True),
    )
    if a.quadratic:
        assert t["y"][0] * 2**30 == pytest.approx(a.quadratic, rel=1e-12)
    else:  # nothing of it kept under checkpointing: left out on the log axis (log 0 is not drawable)
        assert t["y"][0] is None and t["customdata"][0][0] == 0


def test_controls_keep_their_values_across_pages():
    at = goto(open_app(), "compute")
    at.number_input(key="ctl.flops_seq_len").set_value(128).run()
    open_tab(goto(at, "parameters"), "parameters", "sweep")  # the sweep's controls sit on its tab
    at.radio(key="ctl.sweep").set_value("num_layers").run()
    goto(at, "overview")
    goto(at, "compute")
    assert at.number_input(key="ctl.flops_seq_len").value == 128
    t = traces(figure(at, "compute_scatter"))["bert-large"]
    assert t["y"] == [forward_flops(PRESETS["bert-large"], 128).total]
    goto(at, "parameters")
    assert at.radio(key="ctl.sweep").value == "num_layers"  # and the open tab too
    assert at.query_params["flops_seq_len"] == "128" and at.query_params["sweep"] == "num_layers"
    assert at.query_params["parameters_tab"] == "sweep"


def test_sidebar_field_change_updates_every_number():
    at = goto(open_fields(open_app()), "parameters")
    at.sidebar.number_input(key="f.num_layers").set_value(24).run()
    at.sidebar.selectbox(key="f.sharing").set_value("none").run()
    no_errors(at)
    cfg = PRESETS["albert-base"].replace(num_layers=24, sharing="none")
    t = table_with(at, "per_layer", "total")
    assert t["config"][0] == "albert-base (edited)" and t["total"][0] == count_parameters(cfg).total
    assert at.query_params["num_layers"] == "24" and at.query_params["sharing"] == "none"


def test_an_edited_preset_added_to_the_comparison_keeps_its_name_and_is_shown_once():
    at = goto(open_fields(open_app()), "parameters")
    at.sidebar.number_input(key="f.num_layers").set_value(6).run()
    at.sidebar.button(key="add_compare").click().run()
    no_errors(at)
    assert at.sidebar.multiselect(key="compare").value[-1] == "albert-base (edited)"
    names = list(table_with(at, "per_layer", "total")["config"])
    assert names[0] == "albert-base (edited)" and names.count("albert-base (edited)") == 1  # not also "(custom)"
    assert not [n for n in names if "(custom)" in n]
    at.sidebar.number_input(key="f.num_layers").set_value(8).run()
    t = table_with(at, "per_layer", "total").set_index("config")
    assert t.loc["albert-base (edited)", "total"] == count_parameters(PRESETS["albert-base"].replace(num_layers=8)).total
    assert t.loc["albert-base (edited) #2", "total"] == count_parameters(PRESETS["albert-base"].replace(num_layers=6)).total


def test_a_config_given_another_presets_name_is_not_called_an_edited_copy_of_it():
    at = goto(open_app({"name": "bert-base"}), "parameters")  # albert-base's fields, named bert-base
    no_errors(at)
    t = table_with(at, "per_layer", "total")
    assert list(t["config"][:2]) == ["bert-base (custom)", "bert-base"]
    assert t["total"][0] == count_parameters(PRESETS["albert-base"]).total
    assert t["total"][1] == count_parameters(PRESETS["bert-base"]).total


def test_head_count_that_does_not_divide_is_explained_and_last_valid_config_kept():
    at = goto(open_fields(open_app()), "parameters")
    at.sidebar.number_input(key="f.hidden_dim").set_value(1024).run()  # 12 heads do not divide 1024
    assert not at.exception
    (err,) = at.sidebar.error
    assert "num_heads (12) must divide hidden_dim (1024)" in err.value and "try 8 heads" in err.value
    # on a phone the sidebar starts closed: the same refusal above the page, shown only below Streamlit's 768 px
    box = next(iter(at.main.children.values()))  # above the page's title: the box NARROW_REFUSAL_CSS shows on phones
    assert box.proto.id.endswith("-config_refused")  # (test_browser.py: shown below 768 px only)
    (above,) = box.error
    assert above.value.startswith(err.value) and "in the sidebar" in above.value and len(at.main.error) == 1
    assert table_with(at, "per_layer")["total"][0] == count_parameters(PRESETS["albert-base"]).total
    at.sidebar.number_input(key="f.num_heads").set_value(16).run()
    assert not at.sidebar.error and not at.main.error
    cfg = PRESETS["albert-base"].replace(hidden_dim=1024, num_heads=16)
    assert table_with(at, "per_layer")["total"][0] == count_parameters(cfg).total


def test_bert_family_needs_equal_widths():
    """Choosing bert sets E = H (issue 17: the family resets what it does not allow, and says so); an E ≠ H typed
    afterwards is refused with its reason, the last valid config kept."""
    at = open_fields(open_app())
    at.sidebar.selectbox(key="f.family").set_value("bert").run()
    assert not at.sidebar.error and at.session_state["_ae_valid"].embedding_dim == 768
    assert any("embedding_dim 128 → 768" in i.value for i in at.sidebar.info)
    assert at.query_params["family"] == "bert"
    at.sidebar.number_input(key="f.embedding_dim").set_value(128).run()
    (err,) = at.sidebar.error
    assert "embedding_dim (128) must equal hidden_dim (768)" in err.value
    assert at.session_state["_ae_valid"].embedding_dim == 768  # the last valid config


def test_preset_picker_resets_every_field():
    at = open_fields(open_app())
    at.sidebar.number_input(key="f.vocab_size").set_value(50000).run()
    at.sidebar.selectbox(key="preset").set_value("bert-large").run()
    assert at.sidebar.number_input(key="f.vocab_size").value == PRESETS["bert-large"].vocab_size
    assert at.sidebar.number_input(key="f.hidden_dim").value == 1024
    assert dict(at.query_params) == {"preset": "bert-large"}


def test_add_custom_config_to_comparison():
    at = goto(open_fields(open_app()), "parameters")
    at.sidebar.text_input(key="f.name").set_value("deep-albert").run()
    at.sidebar.number_input(key="f.num_layers").set_value(48).run()
    at.sidebar.button(key="add_compare").click().run()
    assert "deep-albert" in at.sidebar.multiselect(key="compare").value
    assert any(s.value.startswith("Added 'deep-albert' to the comparison") for s in at.sidebar.success)
    at.sidebar.button(key="add_compare").click().run()  # said, not silent: nothing changes
    assert any(i.value == "'deep-albert' is already in the comparison." for i in at.sidebar.info)
    assert at.sidebar.multiselect(key="compare").value.count("deep-albert") == 1
    at.sidebar.selectbox(key="preset").set_value("bert-base").run()  # the custom one stays compared
    t = table_with(at, "per_layer", "total")
    row = t[t["config"] == "deep-albert"].iloc[0]
    assert row["total"] == count_parameters(PRESETS["albert-base"].replace(num_layers=48)).total
    assert at.query_params["compare"].endswith("c1") and at.query_params["c1.num_layers"] == "48"


def test_comparison_can_be_emptied():
    at = goto(open_app(), "parameters")
    at.sidebar.multiselect(key="compare").set_value([]).run()
    no_errors(at)
    assert list(table_with(at, "per_layer")["config"]) == ["albert-base"]
    assert at.query_params["compare"] == ""


def test_compute_seq_len_beyond_max_position_is_explained():
    at = goto(open_app(), "compute")
    at.number_input(key="ctl.flops_seq_len").set_value(4096).run()
    assert not at.exception
    assert any("exceeds the max_position" in w.value for w in at.warning)
    t = traces(figure(at, "compute_scatter"))["bert-base"]
    assert t["y"] == [forward_flops(PRESETS["bert-base"], 512).total]


def test_memory_training_bars_and_stop_table():
    from albert_core.estimate.gpus import GPUS
    from albert_core.step.fit import max_position_that_fits
    from albert_core.step.training import training_memory

    at = goto(open_app({"precision": "float32", "optimizer": "sgd", "gpu": "A100 40 GB", "attention": "sdpa"}),
              "memory")
    no_errors(at)
    kw = dict(precision="float32", optimizer="sgd", attention="sdpa", checkpointing=False)
    t = traces(figure(at, "memory_training"))["activations"]
    assert [cd[0] for cd in t["customdata"]] == [
        training_memory(PRESETS[n], Workload(batch_size=8, seq_len=512, **kw)).activations
        for n in ("albert-base", "bert-base", "bert-large", "albert-xxlarge")]
    stops = table_with(at, "longest_max_position")
    assert list(stops["gpu"]) == ["A100 40 GB"] * 4
    assert stops["longest_max_position"][1] == max_position_that_fits(PRESETS["bert-base"], GPUS["A100 40 GB"],
                                                                      Workload(batch_size=8, **kw))


def test_fit_planner_page():
    from albert_core.estimate.gpus import GPUS
    from albert_core.step.fit import max_batch_size

    at = goto(open_app(), "fit")
    at.selectbox(key="ctl.gpu").set_value("H100 80 GB").run()
    at.number_input(key="ctl.num_gpus").set_value(8).run()
    at.selectbox(key="ctl.sharding").set_value("zero3").run()
    no_errors(at)
    t = table_with(at, "max_batch_size", "max_seq_len")
    kw = dict(precision="mixed_bf16", optimizer="adamw", num_gpus=8, sharding="zero3", attention="eager",
              checkpointing=False)
    assert list(t["max_batch_size"]) == [max_batch_size(PRESETS[n], GPUS["H100 80 GB"], Workload(seq_len=512, **kw))
                                         for n in ("albert-base", "bert-base", "bert-large", "albert-xxlarge")]
    assert at.query_params["gpu"] == "H100 80 GB" and at.query_params["sharding"] == "zero3"
    at.selectbox(key="ctl.sharding").set_value("zero1").run()
    at.number_input(key="ctl.num_gpus").set_value(1).run()
    assert any("single GPU" in i.value for i in at.info)


def test_fit_planner_says_when_nothing_fits():
    at = goto(open_app({"preset": "bert-xlarge", "gpu": "T4 16 GB", "seq_len": "512", "batch_size": "1",
                        "precision": "float32"}), "fit")
    assert not at.exception
    assert any("Not even one sequence" in w.value and "bert-xlarge" in w.value for w in at.warning)


def test_fit_planner_says_which_configs_are_planned_at_their_own_max_position():
    at = goto(open_app({"seq_len": "2048"}), "fit")  # the four shown configs: max_position 512 each
    no_errors(at)
    assert any("2,048 is longer than the max_position of every shown config (longest 512)" in i.value for i in at.info)
    assert set(table_with(at, "max_batch_size", "seq_len")["seq_len"]) == {512}  # what the notice says
    at = goto(open_app({"seq_len": "1024", "compare": "bert-base,ModernBERT-base"}), "fit")  # 8,192 positions
    assert list(table_with(at, "max_batch_size", "seq_len")["seq_len"]) == [512, 512, 1024]
    (note,) = [i.value for i in at.info if "own max_position" in i.value]
    assert note == "Planned at their own max_position (shorter than 1,024 tokens): albert-base (512), bert-base (512)."
    assert "ModernBERT" not in note
    assert not any("own max_position" in i.value for i in goto(open_app(), "fit").info)  # 512 fits every config


@pytest.mark.parametrize("query", [{}, {"vocab_size": "50000", "num_layers": "6", "sharing": "none"},
                                   {"preset": "bert-large", "max_position": "256"}])
def test_overview_headline_is_the_sidebar_config(query):
    from albert_core.share import decode
    from albert_core.step.training import training_memory
    from albert_core.units import format_bytes, format_count

    at = open_app(query)
    no_errors(at)
    cfg = decode(query)[0].config
    c = count_parameters(cfg)
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["Parameters"] == format_count(c.total)
    assert metrics["Embedding share"] == f"{c.embedding_pct:.1f}%"
    seq = min(512, cfg.max_position)
    step = training_memory(cfg, Workload(batch_size=1, seq_len=seq, precision="float32", attention="eager"))
    assert step.peak_modelled and step.peak != step.total  # the headline is the peak, not the sum of the parts
    # a lower bound where the working set inside a layer is not replayed (CUDA), as Fit's "at least" says
    assert metrics["Training step's peak"] == ("≥ " if not step.peak_replayed else "") + format_bytes(step.peak)
    assert not step.peak_replayed  # the Overview's step is CUDA's: Fit says "at least" for the same number
    (said,) = [c.value for c in at.caption if c.value.startswith("The training step above")]  # its settings
    assert f"one sequence of {seq:,} tokens, float32, AdamW, eager attention" in said and "sum of the parts" not in said


def test_overview_headline_says_sum_of_parts_past_the_peak_model():
    """Past training.PEAK_MAX_LAYERS layer applications the step's peak is not modelled: the headline is the sum
    of the parts and its label says so (not "peak")."""
    from albert_core.share import decode
    from albert_core.step.training import PEAK_MAX_LAYERS, training_memory
    from albert_core.units import format_bytes

    query = {"num_layers": str(PEAK_MAX_LAYERS + 88), "hidden_dim": "64", "num_heads": "2", "intermediate_dim": "128"}
    at = open_app(query)
    no_errors(at)
    view, warnings = decode(query)
    cfg = view.config
    assert not warnings and cfg.num_layers == PEAK_MAX_LAYERS + 88
    step = training_memory(cfg, Workload(batch_size=1, seq_len=512, precision="float32", attention="eager"))
    assert not step.peak_modelled
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["Training step, sum of parts"] == format_bytes(step.total)
    assert not any("peak" in label for label in metrics)
    (said,) = [c.value for c in at.caption if c.value.startswith("The training step above")]  # why, not in a tooltip
    assert f"runs {PEAK_MAX_LAYERS + 88:,}: the number is the sum of the parts" in said


def test_memory_says_when_a_config_reaches_past_the_longest_sequence():
    """issue 29: the control read 4096 while every panel ran to ModernBERT's 8,192; the page now says why."""
    at = goto(open_app({"preset": "albert-base", "compare": "ModernBERT-base", "seq_max": "4096"}), "memory")
    no_errors(at)
    end = PRESETS["ModernBERT-base"].max_position
    assert traces(figure(at, "memory_activations"))["ModernBERT-base: attention (grows with seq_len²)"]["x"][-1] == end
    said = [c.value for c in at.caption if "The charts run to" in c.value]
    assert said == [f"The charts run to {end:,} tokens, ModernBERT-base's own max_position (the longest sequence "
                    "asked for: 4,096)."], [c.value for c in at.caption]
    at = goto(open_app({"preset": "albert-base", "seq_max": "4096"}), "memory")
    assert not [c.value for c in at.caption if "The charts run to" in c.value]  # 4096 reaches albert-base's 512


@pytest.mark.parametrize("page", ["fit", "memory"])
def test_sdpa_says_which_configs_run_their_own_attention(page):
    """issue 29: with sdpa chosen, DeBERTa-v2 (no sdpa path in Hugging Face) is computed with eager; the page says so."""
    at = goto(open_app({"preset": "deberta-v3-base", "compare": "bert-base", "attention": "sdpa"}), page)
    no_errors(at)
    said = [c.value for c in at.caption if "has no sdpa path" in c.value]
    assert said == ["deberta-v3-base (deberta-v2): Hugging Face's model has no sdpa path and runs its own attention, "
                    "so its numbers here are eager's."], [c.value for c in at.caption]
    at = goto(open_app({"preset": "deberta-v3-base", "compare": "bert-base", "attention": "eager"}), page)
    assert not [c.value for c in at.caption if "has no sdpa path" in c.value]


@pytest.mark.parametrize("typed", [100_000, 0, -3])
def test_a_number_out_of_range_is_refused_with_its_range_and_the_box_shows_the_value_in_use(typed):
    """A new user typed batch 100,000 on the Fit planner: the browser kept 8 (a red box, a tooltip) while the box
    showed 100,000. Now the value is refused in words under the box, which goes back to the value in use."""
    from albert_core.share import CONTROLS

    at = goto(open_app(), "fit")
    at.number_input(key="ctl.batch_size").set_value(typed).run()
    assert not at.exception
    hi = CONTROLS["batch_size"].hi
    assert [e.value for e in at.error] == [f"Batch size per GPU (sequences): {typed:,} is out of range; it must be 1 "
                                           f"to {hi:,}. Still using 8."]
    assert at.number_input(key="ctl.batch_size").value == 8
    assert any("batch 8 ×" in c.value for c in [*at.caption, *at.markdown, *at.subheader])
    at.run()  # said once
    assert not at.error
    at.number_input(key="ctl.batch_size").set_value(hi).run()  # the range's end is applied
    assert not at.error and at.number_input(key="ctl.batch_size").value == hi


@pytest.mark.parametrize("page", ["fit", "memory"])
def test_bfloat16_on_a_t4_is_remarked_beside_its_numbers(page):
    """A T4 (Turing, 7.5) has no bfloat16 tensor cores: the pages say so beside the GPU, naming float16's twin
    precision (the same bytes); an Ampere GPU, or float16 on the T4, draws no remark."""
    def remarks(query):
        at = goto(open_app(query), page)
        if page == "memory":
            at = open_tab(at, "memory", "training")
        no_errors(at)
        return [c.value for c in at.caption if "bfloat16 tensor cores" in c.value]

    (said,) = remarks({"gpu": "T4 16 GB", "precision": "mixed_bf16"})
    assert said.startswith("The T4 16 GB (compute capability 7.5) has no bfloat16 tensor cores") and "mixed_fp16" in said
    assert not remarks({"gpu": "T4 16 GB", "precision": "mixed_fp16"})
    assert not remarks({"gpu": "L4 24 GB", "precision": "mixed_bf16"})


def test_the_fit_table_puts_its_answers_first_and_keeps_the_config_in_view():
    """On a phone the plan's table scrolled its config column away and held its answers at the far right: the
    answers come first now, and the key column is pinned (every table of tables.show)."""
    import json

    at = open_tab(goto(open_app(), "fit"), "fit", "table")
    no_errors(at)
    (grid,) = [d for d in at.dataframe if "max_batch_size" in d.value.columns]
    assert list(grid.value.columns[:5]) == ["config", "max_batch_size", "max_seq_len", "longest_max_position", "fits"]
    for d in at.dataframe:
        columns = json.loads(d.proto.columns)
        first = d.value.columns[0]
        assert columns[first]["pinned"] is True, first
        assert not [c for c, v in columns.items() if c != first and v.get("pinned")]


def test_each_memory_tab_draws_the_controls_it_uses():
    """A new user read Memory's top controls (dtype, Training) as the training tab's, which counts its own
    precision, and scrolled 900 px of them on a phone before the serving tab, which uses none. The tabs come first
    and each draws its own: dtype and Training on the activation tabs only, nothing shared on the serving tab."""
    def keys(at):
        return {w.key for kind in ("number_input", "selectbox", "toggle", "radio") for w in at.get(kind)
                if w.key and w.key.startswith("ctl.")}

    shared = {"ctl.batch_size", "ctl.seq_max", "ctl.attention", "ctl.scale", "ctl.checkpointing"}
    at = goto(open_app(), "memory")
    assert shared | {"ctl.dtype", "ctl.training"} <= keys(at)
    at = open_tab(at, "memory", "training")
    no_errors(at)
    assert shared | {"ctl.precision", "ctl.gpu"} <= keys(at) and not {"ctl.dtype", "ctl.training"} & keys(at)
    at = open_tab(at, "memory", "serving")
    no_errors(at)
    assert not (shared | {"ctl.dtype", "ctl.training"}) & keys(at) and "ctl.serve_format" in keys(at)
    # with Training off on the activation tabs, the training tab still trains with checkpointing as chosen
    at = open_tab(goto(open_app({"training": "0", "checkpointing": "1"}), "memory"), "memory", "training")
    no_errors(at)
    assert any("checkpointing" in c.value for c in at.caption if c.value.startswith("Batch 8 ×"))
