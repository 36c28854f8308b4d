"""AppTest: the query string reproduces the view; bad or tampered values give a warning naming them."""

from urllib.parse import parse_qsl, urlsplit

import pytest
from test_app_pages import PAGES, figure, goto, no_errors, open_app, open_fields, table_with, traces

from albert_core.estimate.params import count_parameters
from albert_core.presets import PRESETS

SHARED = {
    "preset": "bert-base", "hidden_dim": "1024", "embedding_dim": "1024", "num_heads": "16", "name": "wide-bert",
    "compare": "albert-xxlarge,c1", "c1.preset": "albert-base", "c1.name": "deep", "c1.num_layers": "48",
    "batch_size": "2", "dtype": "bfloat16", "attention": "sdpa", "seq_max": "2048", "scale": "log",
    "sweep": "vocab_size", "flops_seq_len": "256",
}


def view_of(at) -> dict:
    """What the user sees: the sidebar config (its fields' widgets are drawn only while "Model fields" is open),
    the comparison, and the page's figures."""
    return {
        "config": at.session_state["_ae_valid"], "preset": at.sidebar.selectbox(key="preset").value,
        "compare": at.sidebar.multiselect(key="compare").value,
        "figures": {e.key: figure(at, e.key)["data"] for e in at.get("plotly_chart")},
    }


def link_query(at) -> dict:
    (code,) = at.sidebar.code
    return dict(parse_qsl(urlsplit(code.value).query, keep_blank_values=True))


@pytest.mark.parametrize("page", [p for p in PAGES if p != "verify"])
def test_opening_a_link_reproduces_the_view(page):
    at = goto(open_app(SHARED), page)
    no_errors(at)
    assert not at.warning, [w.value for w in at.warning]
    assert at.sidebar.number_input(key="f.hidden_dim").value == 1024
    assert at.sidebar.text_input(key="f.name").value == "wide-bert"
    assert at.sidebar.multiselect(key="compare").value == ["albert-xxlarge", "deep"]
    assert dict(at.query_params) == SHARED  # the app writes back exactly the link it was opened with
    assert link_query(at) == SHARED  # and the visible link carries it
    # a second session opened on the app's own link sees the same thing
    again = goto(open_app(link_query(at)), page)
    assert view_of(again) == view_of(at)


def test_a_view_built_by_clicking_round_trips_through_its_link():
    at = goto(open_fields(open_app()), "memory")
    at.sidebar.selectbox(key="preset").set_value("albert-large").run()
    at.sidebar.number_input(key="f.vocab_size").set_value(50000).run()
    at.sidebar.button(key="add_compare").click().run()
    at.sidebar.selectbox(key="preset").set_value("bert-base").run()
    at.number_input(key="ctl.batch_size").set_value(4).run()
    at.toggle(key="ctl.checkpointing").set_value(True).run()
    q = link_query(at)
    assert q["compare"].endswith("c1") and q["c1.vocab_size"] == "50000" and q["checkpointing"] == "1"
    again = goto(open_app(q), "memory")
    assert view_of(again) == view_of(at)
    assert link_query(again) == q


def test_figures_of_a_linked_view_are_albert_core_numbers():
    at = goto(open_app(SHARED), "parameters")
    wide = PRESETS["bert-base"].replace(hidden_dim=1024, embedding_dim=1024, num_heads=16, name="wide-bert")
    deep = PRESETS["albert-base"].replace(num_layers=48, name="deep")
    t = table_with(at, "per_layer", "total")
    assert list(t["config"]) == ["wide-bert", "albert-xxlarge", "deep"]
    assert list(t["total"]) == [count_parameters(c).total for c in (wide, PRESETS["albert-xxlarge"], deep)]
    assert figure(at, "params_share_sweep")["layout"]["xaxis"]["type"] == "log"
    assert traces(figure(at, "params_components"))["Embedding"]["y"][0] == count_parameters(wide).embedding


BAD = [
    ({"hidden_dim": "huge"}, "hidden_dim"),
    ({"num_heads": "7"}, "num_heads (7) must divide hidden_dim (768)"),
    ({"preset": "gpt-9"}, "'gpt-9'"),
    ({"compare": "bert-base,nonsense"}, "'nonsense'"),
    ({"c1.num_layers": "-4"}, "c1"),
    ({"c1.colour": "red"}, "'c1.colour'"),
    ({"batch_size": "0"}, "batch_size"),
    ({"dtype": "float8"}, "dtype"),
    ({"gpu": "<script>"}, "gpu"),
    ({"checkpointing": "perhaps"}, "checkpointing"),
    ({"utm_source": "mail"}, "'utm_source'"),
    ({"name": "x" * 300}, "too long"),
    ({"dropout": "1.5"}, "dropout"),
    ({"family": "gpt"}, "family must be one of"),
]


@pytest.mark.parametrize(("query", "named"), BAD)
def test_bad_values_warn_and_fall_back(query, named):
    at = open_app(query)
    assert not at.exception
    (warning,) = at.warning
    assert named in warning.value
    assert at.session_state["_ae_valid"].hidden_dim in (768, PRESETS["albert-base"].hidden_dim)
    # the URL is rewritten to the view actually shown: decoding it again gives no warning
    again = open_app(dict(at.query_params))
    assert not again.warning


def test_warnings_stay_until_dismissed_or_the_view_changes():
    """issue 29: the link's warning showed for two seconds, then the width rerun took it away."""
    at = open_app({"seq_len": "abc"})
    assert len(at.warning) == 1 and "seq_len" in at.warning[0].value
    at.run()  # a rerun (the browser reporting its width) keeps it
    goto(at, "parameters")  # so does another page of the same view
    assert len(at.warning) == 1
    at.button(key="url_warnings_dismiss").click().run()
    assert not at.warning
    at = goto(open_app({"seq_len": "abc"}), "memory")
    at.number_input(key="ctl.batch_size").set_value(3).run()  # the view changed: the warning was about another one
    assert not at.warning


def test_unnamed_custom_configs_get_distinct_names():
    at = goto(open_app({"compare": "c1,c2", "c1.num_layers": "48", "c2.hidden_dim": "1024", "c2.num_heads": "16"}),
              "parameters")
    no_errors(at)
    assert not at.warning
    assert at.sidebar.multiselect(key="compare").value == ["albert-base (custom)", "albert-base (custom) #2"]
    t = table_with(at, "per_layer", "total")
    assert list(t["total"])[1:] == [count_parameters(PRESETS["albert-base"].replace(num_layers=48)).total,
                                    count_parameters(PRESETS["albert-base"].replace(hidden_dim=1024,
                                                                                   num_heads=16)).total]
    again = goto(open_app(link_query(at)), "parameters")  # the rewritten link names them
    assert view_of(again) == view_of(at)


def test_a_key_given_twice_in_a_link_says_which_value_is_used():
    at = open_app({"preset": ["bert-base", "albert-large"]})
    assert not at.exception
    (w,) = [w.value for w in at.warning if "Some values in the link" in w.value]
    from ui.text import md

    assert md("'preset': given 2 times ('bert-base', 'albert-large'); the last one is used") in w  # as rendered
    assert at.sidebar.selectbox(key="preset").value == "albert-large"
