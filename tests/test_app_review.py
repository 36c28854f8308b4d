"""AppTest for the design-review features (issue 9): your configs everywhere, max_position marked, Compute past
512 tokens, rejected fields explained, per-page axis scales, the edited heading, the report button."""

import pytest
from test_app_pages import PAGES, figure, goto, no_errors, open_app, open_fields, open_tab, table_with, traces

from albert_core.estimate.activations import activation_memory
from albert_core.estimate.flops import forward_flops
from albert_core.estimate.params import count_parameters
from albert_core.presets import DEFAULT_PRESET, PRESETS
from albert_core.workload import Workload

MINE = f"{DEFAULT_PRESET} (edited)"


def test_memory_covers_and_marks_the_sidebar_max_position():
    at = goto(open_app({"max_position": "8192"}), "memory")
    no_errors(at)
    fig = figure(at, "memory_activations")
    t = traces(fig)[f"{MINE}: attention (grows with seq_len²)"]
    assert t["x"][-1] == 8192
    cfg = PRESETS[DEFAULT_PRESET].replace(max_position=8192)
    a = activation_memory(cfg, Workload(batch_size=8, seq_len=8192, precision="float32", attention="eager"))
    (mark,) = [m for m in fig["data"] if m.get("name") == "max_position" and m["x"] == [8192]]
    assert mark["customdata"][0][0] == a.quadratic
    at_max = table_with(at, "attention_seq_len2")
    row = at_max[at_max["config"] == MINE].iloc[0]
    assert (row["max_position"], row["attention_seq_len2"], row["activations"]) == (8192, a.quadratic, a.total)
    assert row["attention_seq_len2 (≈)"]  # readable, with the exact number kept in its own column


def test_compute_counts_a_custom_config_at_4096_tokens():
    at = goto(open_app({"name": "long", "max_position": "4096", "flops_seq_len": "4096"}), "compute")
    no_errors(at)
    assert not at.warning
    assert at.number_input(key="ctl.flops_seq_len").value == 4096
    fig = figure(at, "compute_scatter")
    cfg = PRESETS[DEFAULT_PRESET].replace(name="long", max_position=4096)
    assert traces(fig)["long"]["y"] == [forward_flops(cfg, 4096).total]
    assert traces(fig)["bert-base"]["y"] == [forward_flops(PRESETS["bert-base"], 512).total]
    assert any("bert-base (512)" in i.value for i in at.info)  # said, not silent
    assert "bert-xlarge" not in traces(fig)  # presets only when the user compares them


@pytest.mark.parametrize(("field", "value", "reason"), [("num_layers", 0, "num_layers must be at least 1"),
                                                         ("max_position", 5_000_000, "max_position must be at most"),
                                                         ("dropout", 2.0, "dropout must be at least 0 and below 1")])
def test_out_of_range_field_is_rejected_next_to_it_and_the_last_valid_config_stays(field, value, reason):
    at = goto(open_fields(open_app()), "parameters")
    at.sidebar.number_input(key=f"f.{field}").set_value(value).run()
    assert not at.exception
    rejected = [m.value for m in at.sidebar.markdown if "Rejected" in m.value]
    assert len(rejected) == 1 and reason in rejected[0]
    assert any("Showing the last valid config: 'albert-base'" in e.value for e in at.sidebar.error)
    t = table_with(at, "per_layer")
    assert t["total"].iloc[0] == count_parameters(PRESETS[DEFAULT_PRESET]).total  # nothing silently changed


def test_an_embedding_as_wide_as_the_hidden_size_says_the_factorization_now_costs_parameters():
    from albert_core.estimate.params import factorization_savings

    at = open_fields(open_app())
    assert not [c for c in at.sidebar.caption if "factorized embedding stores" in c.value]  # E 128 < H 768: it saves
    at.sidebar.number_input(key="f.embedding_dim").set_value(2048).run()
    no_errors(at)
    cost = -factorization_savings(PRESETS[DEFAULT_PRESET].replace(embedding_dim=2048))
    # (V + P + T + LayerNorm's 2) rows of E − H more, and the E -> H projection with its bias
    assert cost == (30_000 + 512 + 2 + 2) * (2048 - 768) + 2048 * 768 + 768 == 40_634_112
    (note,) = [c.value for c in at.sidebar.caption if "factorized embedding stores" in c.value]
    assert f"E 2,048 ≥ H 768: the factorized embedding stores {cost:,} parameters more" in note


def test_far_outside_trained_values_compute_with_a_note():
    at = open_fields(open_app())
    at.sidebar.number_input(key="f.vocab_size").set_value(2_000_000).run()
    no_errors(at)
    assert any("far past trained vocabularies" in c.value for c in at.sidebar.caption)
    m = {x.label: x.value for x in at.metric}
    from albert_core.units import format_count
    assert m["Parameters"] == format_count(count_parameters(PRESETS[DEFAULT_PRESET].replace(vocab_size=2_000_000)).total)


def test_each_page_has_its_own_axis_scale():
    at = open_tab(goto(open_app(), "parameters"), "parameters", "sweep")  # the axis scale sits on its tab
    at.radio(key="ctl.params_scale").set_value("linear").run()
    goto(at, "memory")
    assert at.radio(key="ctl.scale").value == "linear"
    at.radio(key="ctl.scale").set_value("log").run()
    goto(at, "parameters")
    assert at.radio(key="ctl.params_scale").value == "linear"
    assert figure(at, "params_share_sweep")["layout"]["xaxis"].get("type") != "log"


def test_overview_heading_says_edited():
    at = open_app({"num_layers": "6"})
    assert any(s.value == f"Your config: {MINE}" for s in at.subheader)


def test_report_button_on_every_page():
    at = open_app()
    for page in PAGES:  # in the sidebar's "Share this view", beside the link
        at = goto(at, page)
        (b,) = [b for b in at.sidebar.get("download_button") if b.proto.label == "Download report"]
        assert b.proto.label == "Download report"


def test_overview_reference_toggle_survives_another_tab_and_travels_in_the_link():
    """The presets toggle is a page control: switched off, it stays off after the Side by side tab (whose run does
    not draw it, so Streamlit drops its widget state) and a link with overview_presets=0 opens without presets."""
    def configs(at):  # the bars' configs (one trace per component, the configs along x)
        return set(traces(figure(at, "overview_components"))["Layers"]["x"])

    at = open_app()
    assert "albert-large" in configs(at)
    assert at.button(key="ctl.overview_presets").proto.label == "Hide the BERT and ALBERT presets"
    at.button(key="ctl.overview_presets").click().run()
    mine = configs(at)  # the sidebar config and the compared ones only
    assert "albert-large" not in mine and DEFAULT_PRESET in mine
    at = open_tab(at, "overview", "compare")
    no_errors(at)
    at = open_tab(at, "overview", "presets")
    assert at.button(key="ctl.overview_presets").proto.label == "Show the BERT and ALBERT presets as a reference"
    assert "albert-large" not in configs(at)
    linked = open_app({"overview_presets": "0"})
    no_errors(linked)
    assert configs(linked) == mine
