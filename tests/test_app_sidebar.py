"""AppTest: the sidebar's sections ("Model fields", "More fields", "Import / export") draw their widgets only while
open (a first visit sends fewer widgets: docs/benchmarks.md, "Speed in the browser"); closing one never loses a value."""

from test_app_pages import goto, open_app, open_fields, table_with

from albert_core.estimate.params import count_parameters
from albert_core.presets import PRESETS


def _close(at, *sections):
    at.session_state["_ae_open"] = dict(at.session_state["_ae_open"]) | {s: False for s in sections}
    return at.run()


def test_default_view_shows_a_summary_and_no_field_widgets():
    at = open_app()
    assert [e.label for e in at.sidebar.expander] == ["Model fields", "Import / export"]
    assert not at.sidebar.number_input and not at.sidebar.file_uploader
    (summary, *_) = [c.value for c in at.sidebar.caption if "Open **Model fields**" in c.value]
    cfg = PRESETS["albert-base"]
    for part in (f"V {cfg.vocab_size:,}", f"E {cfg.embedding_dim:,}", f"H {cfg.hidden_dim:,}", f"L {cfg.num_layers}"):
        assert part in summary


def test_a_link_with_changed_fields_opens_them():
    at = open_app({"num_layers": "6"})
    assert at.sidebar.number_input(key="f.num_layers").value == 6
    assert not any("Open **Model fields**" in c.value for c in at.sidebar.caption)


def test_closing_and_reopening_keeps_every_edit():
    at = goto(open_fields(open_app(), "model_fields", "more_fields"), "parameters")
    at.sidebar.number_input(key="f.num_layers").set_value(24).run()
    at.sidebar.number_input(key="f.num_groups").set_value(2).run()
    cfg = PRESETS["albert-base"].replace(num_layers=24, num_groups=2)
    at = _close(at, "model_fields")
    assert not at.sidebar.number_input  # closed: not drawn
    assert at.session_state["_ae_valid"] == cfg
    assert table_with(at, "per_layer", "total")["total"][0] == count_parameters(cfg).total
    assert any("L 24" in c.value for c in at.sidebar.caption)
    at = open_fields(at, "model_fields")  # reopened: the widgets show the edits, not the preset's values
    assert at.sidebar.number_input(key="f.num_layers").value == 24
    assert at.sidebar.number_input(key="f.num_groups").value == 2
    assert at.session_state["_ae_valid"] == cfg


def test_a_rejected_value_keeps_its_section_open():
    at = open_fields(open_app(), "model_fields", "more_fields")
    at.sidebar.number_input(key="f.num_groups").set_value(5).run()  # does not divide 12 layers
    at = _close(at, "model_fields", "more_fields")
    assert at.sidebar.number_input(key="f.num_groups").value == 5  # still shown, with its reason
    assert any("Rejected" in m.value and "num_groups" in m.value for m in at.sidebar.markdown)
    assert at.session_state["_ae_valid"] == PRESETS["albert-base"]  # the last valid config is shown


def test_a_preset_picked_while_closed_fills_the_fields():
    at = open_app()
    at.sidebar.selectbox(key="preset").set_value("bert-large").run()
    assert any(f"H {PRESETS['bert-large'].hidden_dim:,}" in c.value for c in at.sidebar.caption)
    at = open_fields(at)
    assert at.sidebar.number_input(key="f.hidden_dim").value == PRESETS["bert-large"].hidden_dim
    assert at.sidebar.number_input(key="f.vocab_size").value == PRESETS["bert-large"].vocab_size


def test_choosing_a_family_resets_what_it_does_not_allow():
    """RoBERTa -> albert: position_offset back to 0, sharing to albert's own (all), said in the sidebar; the
    config is valid at once (no field to fix by hand)."""
    from albert_core.config import default_sharing

    at = open_fields(open_app({"preset": "roberta-base"}), "model_fields")
    at.sidebar.selectbox(key="f.family").set_value("albert").run()
    cfg = at.session_state["_ae_valid"]
    assert at.session_state["_ae_error"] is None
    assert cfg.family == "albert" and cfg.position_offset == 0 and cfg.sharing == default_sharing("albert")
    assert cfg.vocab_size == PRESETS["roberta-base"].vocab_size  # the family's own fields are kept
    (note,) = [i.value for i in at.sidebar.info if "Family albert" in i.value]
    assert "position_offset 2 → 0" in note and "sharing 'none' → 'all'" in note
    at.sidebar.selectbox(key="f.family").set_value("bert").run()  # back: E = H again, sharing none
    cfg = at.session_state["_ae_valid"]
    assert cfg.family == "bert" and cfg.sharing == "none" and cfg.embedding_dim == cfg.hidden_dim
