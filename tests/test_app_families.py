"""AppTest: every page renders for a preset of each family; the sidebar groups presets by family, shows the
family's own fields, and imports a config.json by Hub id (against the local Hub of tests/test_hub.py)."""

import pytest
from test_app_pages import PAGES, goto, no_errors, open_app, open_fields, open_tab
from test_hub import server  # noqa: F401  (the local Hub fixture)

from albert_core.estimate.params import count_parameters
from albert_core.presets import PRESET_FAMILIES, PRESETS
from albert_core.share import PAGE_TABS

FAMILY_PRESET = {fam: names[0] for fam, names in PRESET_FAMILIES.items() if fam not in ("bert", "albert")}


@pytest.mark.parametrize("family", sorted(FAMILY_PRESET))
def test_every_page_renders_for_each_family(family):
    preset = FAMILY_PRESET[family]
    at = open_app({"preset": preset})
    for page in PAGES:
        at = goto(at, page)
        no_errors(at)
        for tab in PAGE_TABS.get(page, ()):  # each tab of the page (only the open one is drawn)
            no_errors(open_tab(at, page, tab))
    at = open_tab(goto(at, "parameters"), "parameters", "cuts")
    shown = " ".join(m.value for m in at.markdown)
    assert "ALBERT's two cuts for this model" in [h.value for h in at.header]
    assert preset in shown
    cuts = [d.value for d in at.dataframe if "variant" in d.value.columns][0]
    assert int(cuts["total"][0]) == count_parameters(PRESETS[preset]).total


def test_presets_grouped_by_family():
    at = open_fields(open_app(), "model_fields", "more_fields")
    box = at.sidebar.selectbox(key="preset")
    assert box.options == [f"{PRESETS[n].family} · {n}" for names in PRESET_FAMILIES.values() for n in names]
    at = box.select("xlm-roberta-large").run()
    assert at.sidebar.number_input(key="f.vocab_size").value == 250002
    assert at.sidebar.number_input(key="f.position_offset").value == 2


def test_family_fields_are_editable_and_counted():
    at = open_fields(open_app({"preset": "deberta-v3-base"}), "model_fields", "more_fields")
    before = count_parameters(PRESETS["deberta-v3-base"]).total
    at.sidebar.checkbox(key="f.share_att_key").uncheck().run()
    no_errors(at)
    H = PRESETS["deberta-v3-base"].hidden_dim
    after = at.session_state["_ae_valid"]
    assert count_parameters(after).total - before == 12 * 2 * (H * H + H)  # pos_key_proj + pos_query_proj per layer
    at = open_fields(open_app({"preset": "roberta-base"}), "model_fields", "more_fields")
    at.sidebar.selectbox(key="f.family").select("bert").run()  # position_offset 2 is a roberta field
    # issue 17: choosing the family resets it to bert's default at once, and says so
    assert any("position_offset 2 → 0" in i.value for i in at.sidebar.info)
    assert at.session_state["_ae_valid"].family == "bert" and at.session_state["_ae_valid"].position_offset == 0
    at.sidebar.number_input(key="f.vocab_size").set_value(1000).run()  # the roberta field stays out of the way
    no_errors(at)
    assert at.session_state["_ae_valid"].vocab_size == 1000


def test_import_by_hub_id(server):  # noqa: F811
    at = open_fields(open_app(), "import_export")
    at.sidebar.text_input(key="hub_id").input("FacebookAI/xlm-roberta-large").run()
    no_errors(at)
    cfg = at.session_state["_ae_valid"]
    assert cfg.name == "FacebookAI/xlm-roberta-large"
    assert count_parameters(cfg).total == count_parameters(PRESETS["xlm-roberta-large"]).total
    assert any("Imported" in s.value for s in at.sidebar.success)
    at.sidebar.text_input(key="hub_id").input("org/missing").run()
    assert not at.exception
    (err,) = at.sidebar.error
    assert "org/missing was not found on the Hub" in err.value
    assert at.session_state["_ae_valid"] == cfg  # a failed import keeps the config


def test_cuts_follow_the_e_control_and_the_link():
    from albert_core.estimate.params import albert_cuts

    at = goto(open_app({"preset": "mdeberta-v3-base", "cuts_e": "64", "parameters_tab": "cuts"}), "parameters")
    assert at.number_input(key="ctl.cuts_e").value == 64
    at.number_input(key="ctl.cuts_e").set_value(256).run()
    no_errors(at)
    cuts = [d.value for d in at.dataframe if "variant" in d.value.columns][0]
    expected = albert_cuts(PRESETS["mdeberta-v3-base"], 256)
    assert [int(v) for v in cuts["total"]] == [r["total"] for r in expected]
    assert at.query_params["cuts_e"] == "256"


def test_decoder_cuts_follow_the_decoder_the_e_control_and_the_link():
    """Parameters' decoders tab on a link naming a decoder and E: the table is decoder_cuts' for them; a changed E and
    another decoder are written back into the link. E not narrower than the decoder's hidden size is said to add
    parameters."""
    from albert_core.decoders.decoder_params import decoder_cuts
    from albert_core.decoders.decoder_presets import DECODER_PRESETS

    at = goto(open_app({"cuts_decoder": "gemma-3-270m", "cuts_e": "64", "parameters_tab": "decoders"}), "parameters")
    no_errors(at)
    assert at.selectbox(key="ctl.cuts_decoder").value == "gemma-3-270m" and at.number_input(key="ctl.cuts_e").value == 64
    at.selectbox(key="ctl.cuts_decoder").select("SmolLM2-135M").run()
    at.number_input(key="ctl.cuts_e").set_value(1024).run()
    no_errors(at)
    (one,) = [d.value for d in at.dataframe if "final_norm" in d.value.columns]
    expected = decoder_cuts(DECODER_PRESETS["SmolLM2-135M"].cfg, 1024)
    assert [int(v) for v in one["total"]] == [r["total"] for r in expected]
    assert expected[1]["saved"] < 0  # 1024 > SmolLM2-135M's 576: the factorized table costs more
    assert any("not narrower than SmolLM2-135M's hidden size (576)" in c.value for c in at.caption)
    assert (at.query_params["cuts_decoder"], at.query_params["cuts_e"]) == ("SmolLM2-135M", "1024")
