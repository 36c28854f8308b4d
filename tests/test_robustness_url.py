"""Robustness of the link: any query string gives a valid view and warnings naming their keys, never an exception.

albert_core.share.decode is driven with arbitrary query dicts (known keys, custom cN.* keys, compare lists,
random keys; values at the edges, repeated keys); then every page is opened in AppTest with such links.
"""

import json
import re
from pathlib import Path
from urllib.parse import parse_qs, urlencode

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from markdown_it import MarkdownIt
from streamlit.testing.v1 import AppTest
from test_app_pages import PAGES

from albert_core.config import FIELD_DEFAULTS, FIELD_NAMES, ModelConfig, validate
from albert_core.families import family_fields
from albert_core.presets import PRESETS
from albert_core.share import CONTROLS, MAX_COMPARE, MAX_VALUE_LEN, PAGE_TABS, View, decode, encode, parse_control

APP = str(Path(__file__).resolve().parents[1] / "app.py")
# Streamlit keeps these query keys for itself (embedding options), so a page never sees them
RESERVED = {"embed", "embed_options"}
_MD = MarkdownIt("commonmark").enable(["table", "strikethrough"])

EDGE_TEXT = ["", " ", "0", "-1", "1", "+1", "10", " 12 ", "12 ", "1e3", "1e400", "-1e400", "1e-400", "0.5", "0.99",
             "0.995", "1.0", "-0.0", "nan", "NaN", "inf", "Infinity", "-inf", "1000000000000", "1_000", "0x10",
             "١٢", "²", "true", "false", "True", "yes", "on", "null", "None", "[]", "{}", "[1,2]", '{"a": 1}',
             "x" * MAX_VALUE_LEN, "x" * (MAX_VALUE_LEN + 1), "y" * 10_000, "<img src=x onerror=alert(1)>",
             "**bold** [link](javascript:alert(1))", "%{y}", "é", "名前", "🙂", "\t", "a\nb", "\x00", ",", ",,,",
             "bert-base", "albert-xxlarge", "c1", "c99", "c100", "c0", "bert-base,bert-base,c1,c1",
             ] + list(PRESETS) + [v for c in CONTROLS.values() for v in c.choices]
TEXT = st.text(st.characters(exclude_categories=("Cs",)), max_size=30)  # no lone surrogates: a URL is UTF-8
VALUES = st.sampled_from(EDGE_TEXT) | TEXT | st.integers(-(10**15), 10**15).map(str) | st.floats().map(repr)
CUSTOM_IDS = st.sampled_from(["c1", "c2", "c3", "c12", "c99", "c0", "c100", "cx", "C1", "c01"])
KEYS = (st.sampled_from(FIELD_NAMES + tuple(CONTROLS) + ("preset", "compare"))
        | st.builds(lambda c, f: f"{c}.{f}", CUSTOM_IDS, st.sampled_from(FIELD_NAMES + ("preset", "colour", "")))
        | TEXT.filter(lambda k: k not in RESERVED))


COMPARE_LISTS = st.lists(st.sampled_from(list(PRESETS) + ["c1", "c2", "c3", "c12", "c99", "nope", "", " c1 "]),
                         max_size=16).map(",".join)

QUERIES = st.dictionaries(KEYS, VALUES | st.lists(VALUES, min_size=0, max_size=3), max_size=12)
QUERIES_WITH_COMPARE = st.builds(lambda q, c: q | {"compare": c}, QUERIES, COMPARE_LISTS)
ANY_QUERY = QUERIES | QUERIES_WITH_COMPARE


def _named(w: str, keys: list[str]) -> bool:
    """A warning names one of the query's keys (as typed, or shortened as decode writes it)."""
    for k in keys:
        for form in (k, k[:37], repr(k), repr(k[:37] + "...")):
            if form and form in w:
                return True
        head = k.partition(".")[0]
        if "." in k and w.startswith(f"{head}") or k.startswith("c") and w.startswith("compare:"):
            return True
    return False


def _check_view(view: View) -> None:
    assert isinstance(view.config, ModelConfig) and not validate(view.config)
    assert view.preset in PRESETS
    assert len(view.compare) <= MAX_COMPARE and all(isinstance(c, ModelConfig) for c in view.compare)
    assert set(view.controls) == set(CONTROLS)
    for name, value in view.controls.items():  # every control holds a value its own parser accepts
        text = ("1" if value else "0") if isinstance(value, bool) else str(value)
        assert parse_control(name, text) == value


@settings(max_examples=1000, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ANY_QUERY)
@example({"compare": ",".join(f"c{i}" for i in range(1, 40))} | {f"c{i}.num_layers": "2" for i in range(1, 40)})
@example({"hidden_dim": "1e400", "dropout": "nan", "num_layers": "1000000000000", "name": "x" * 81})
@example({"preset": ["bert-base", "albert-large"], "seq_len": []})
@example({"c1.preset": "nope", "c1.hidden_dim": "0", "compare": "c1,c1,c1"})
def test_decode_any_query(q):
    view, warnings = decode(q)
    _check_view(view)
    keys = [str(k) for k in q]
    for w in warnings:
        assert isinstance(w, str) and _named(w, keys), (w, keys)
    if not warnings:  # nothing ignored: the link is the view's own link (up to keys at their defaults)
        again, w2 = decode(encode(view))
        assert again == view and not w2


@settings(max_examples=500, deadline=None)
@given(st.text(max_size=200))
@example("a=1&a=2&a=3&hidden_dim=1024&hidden_dim=abc")
@example("&&&=&==&%zz&%ff%fe=1&hidden_dim=%00")
@example("compare=" + "%2C" * 500)
def test_decode_any_raw_query_string(raw):
    view, warnings = decode(parse_qs(raw, keep_blank_values=True))
    _check_view(view)


def test_decode_every_key_at_every_edge_value():
    n = 0
    for key in FIELD_NAMES + tuple(CONTROLS) + ("preset", "compare", "c1.hidden_dim", "c1.preset", "zzz"):
        for value in EDGE_TEXT:
            view, warnings = decode({key: value})
            _check_view(view)
            assert all(_named(w, [key]) for w in warnings), (key, value, warnings)
            n += 1
    assert n > 1000


@pytest.mark.parametrize(("key", "value"), [("hidden_dim", "1e400"), ("vocab_size", "10000000000000"),
                                            ("num_layers", "-1"), ("dropout", "nan"), ("dropout", "Infinity"),
                                            ("num_heads", "١٢"), ("num_heads", "+-5"), ("seq_len", "0"),
                                            ("batch_size", "1e3"), ("training", "2"), ("name", "")])
def test_bad_values_fall_back_with_a_warning(key, value):
    view, warnings = decode({key: value})
    (w,) = warnings
    assert key in w
    assert view == decode({})[0]


# ---- every page in AppTest -----------------------------------------------------------------
def _open(page: str, q: dict) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=60)
    at.query_params.update(q)
    # every sidebar section open, so that every field's widget is drawn and checked (a closed one draws none)
    at.session_state["_ae_open"] = {"model_fields": True, "more_fields": True, "import_export": True}
    return at.switch_page(f"pages/{page}.py").run()


def _check_page(at: AppTest, q: dict) -> None:
    assert not at.exception, [e.message for e in at.exception]
    assert at.title, "the page has no title"
    # what the page receives: the query string AppTest (like a browser) builds from q; an empty list is no key
    seen = parse_qs(urlencode(q, doseq=True), keep_blank_values=True)
    view, warnings = decode({k: v for k, v in seen.items() if k not in RESERVED})
    shown = [w.value for w in at.warning if w.value.startswith("Some values in the link")]
    assert bool(shown) == bool(warnings), (shown, warnings)
    for text in shown:  # the link's text is shown as typed: no image, link, code, emphasis or heading from it
        assert not re.search(r"<(img|a|script|code|strong|em|h\d|table|del)\b", _MD.render(text)), text
    # the sidebar shows the decoded config, every field (no widget bound silently resets a value)
    for f in FIELD_NAMES:
        owners = family_fields().get(f)
        if owners and view.config.family not in owners and getattr(view.config, f) == FIELD_DEFAULTS[f]:
            continue  # another family's field at its default: the sidebar draws only the config's own family's
        kind = ("text_input" if f == "name" else "checkbox" if isinstance(FIELD_DEFAULTS[f], bool)
                else "selectbox" if f in ("family", "sharing", "hidden_act", "pos_att_type", "norm_rel_ebd")
                else "number_input")
        assert getattr(at.sidebar, kind)(key=f"f.{f}").value == getattr(view.config, f), f
    assert not at.sidebar.error
    # and every page control at the link's value
    drawn = [w for kind in ("number_input", "selectbox", "radio", "toggle") for w in at.main.get(kind)
             if str(getattr(w, "key", "")).startswith("ctl.")]
    for w in drawn:
        assert w.value == view.controls[w.key[4:]], w.key


APP_QUERIES = st.dictionaries(KEYS, VALUES, max_size=6) | QUERIES_WITH_COMPARE.filter(lambda q: len(q) <= 8)


@pytest.mark.parametrize("page", PAGES)
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                  HealthCheck.function_scoped_fixture])
@given(q=APP_QUERIES)
def test_every_page_survives_any_link(page, q):
    _check_page(_open(page, q), q)


HAND_WRITTEN = [
    {"hidden_dim": "1e400", "num_layers": "-5", "dropout": "NaN", "seq_len": "Infinity", "batch_size": " 8 "},
    {"vocab_size": str(2**30), "hidden_dim": str(2**20), "embedding_dim": str(2**20), "num_heads": "1",
     "intermediate_dim": str(2**23), "max_position": str(2**20)},  # the largest config the bounds allow
    {"num_layers": "100000", "sharing": "none", "seq_len": str(2**20), "batch_size": str(2**16),
     "flops_seq_len": str(2**20), "num_gpus": "4096", "sharding": "zero3", "verify_seq_len": "4096"},
    {"name": "<img src=x onerror=alert(1)>", "compare": "c1,c2", "c1.name": "**bold** [link](javascript:alert(1))",
     "c2.name": "%{y} <b>x</b> & $x$"},
    {"name": "x" * 10_000, "compare": "," * 300, "preset": "🙂"},
    {"compare": ",".join(f"c{i}" for i in range(1, 30)), **{f"c{i}.num_layers": str(i) for i in range(1, 30)}},
    {"preset": ["bert-base", "bert-large"], "hidden_dim": ["1024", "x"], "num_heads": ["16", "16"]},
    {"c1.preset": "bert-base", "c1.family": "albert", "c1.embedding_dim": "0", "compare": "c1,c1,nope"},
    {"training": "maybe", "checkpointing": "2", "scale": "LOG", "dtype": "float8", "gpu": "<script>"},
    {"name": "a\nb\x00c", "utm_source": "x" * 201, "": "", "=": "="},
    {"dropout": "0.995", "attention_dropout": "0.999999", "c1.dropout": "0.9999"},  # valid, above the old widget max
    {"dropout": "1e-300", "attention_dropout": "5e-324", "hidden_act": "quick_gelu", "family": "bert",
     "embedding_dim": "768"},
    {"overview_tab": "Side by side", "parameters_tab": "nope", "memory_tab": "", "fit_tab": "<b>table</b>",
     "compute_tab": "TABLE"},  # a tab by its label, unknown, empty: the first tab, with a warning
]


@pytest.mark.parametrize("page", PAGES)
def test_hand_written_links(page):
    for q in HAND_WRITTEN:
        at = _open(page, q)
        _check_page(at, q)
        # the app rewrote the link to the view it shows: opening that gives the same view, with no warning
        again = _open(page, dict(at.query_params))
        assert not again.exception and not [w for w in again.warning if w.value.startswith("Some values")]
        assert again.session_state["_ae_valid"] == at.session_state["_ae_valid"]



@pytest.mark.parametrize("page", [p for p in PAGES if p in PAGE_TABS])
def test_hand_written_links_on_every_tab(page):
    """Each tab of the page (ui/sections.lazy_tabs draws only the open one), opened by the link as a shared view
    would: no exception, the tab the link names is the one drawn, every figure on it titled."""
    for q in HAND_WRITTEN:
        for tab in PAGE_TABS[page]:
            at = _open(page, {**q, f"{page}_tab": tab})
            assert not at.exception, (q, tab, [e.message for e in at.exception])
            assert at.session_state["_ae_controls"][f"{page}_tab"] == tab
            for el in at.get("plotly_chart"):
                assert json.loads(el.proto.spec)["layout"]["title"]["text"], (q, tab, el.key)
