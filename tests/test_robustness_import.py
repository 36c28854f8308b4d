"""Robustness of the config.json import: any JSON value, any mutation of a valid config.json, any bytes.

from_hf_config returns a ModelConfig (counted, round-tripped) or raises ConfigError naming a field;
parse_upload (the sidebar uploader's parser) returns a ModelConfig or a message; nothing else escapes.
User text reaches the page escaped (Markdown) and the charts escaped (Plotly's HTML subset).
"""

import ast
import html
import json
import math
import pickle
import re
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from markdown_it import MarkdownIt
from test_app_pages import PAGES, goto, open_app, open_fields, open_tab

from albert_core.config import FIELD_NAMES, ConfigError, ModelConfig
from albert_core.estimate.params import count_parameters
from albert_core.families import NAMES, family
from albert_core.formats.hf import EXPLORER_KEY, from_hf_config, to_hf_config
from albert_core.formats.upload import MAX_UPLOAD_BYTES, parse_upload
from albert_core.presets import PRESETS
from albert_core.share import PAGE_TABS
from charts.base import plotly_text
from ui.text import md

ROOT = Path(__file__).resolve().parents[1]
HF_KEYS = ("model_type", "vocab_size", "hidden_size", "num_hidden_layers", "num_attention_heads",
           "intermediate_size", "hidden_dropout_prob", "attention_probs_dropout_prob", "max_position_embeddings",
           "type_vocab_size", "hidden_act", "embedding_size", "num_hidden_groups", "inner_group_num", EXPLORER_KEY)
# every family's own config.json keys (its mapping, what it refuses, what its from_hf reads)
FAMILY_KEYS = tuple({k for n in NAMES for k in (*family(n).HF_KEYS.values(), *family(n).REFUSED, *family(n).REQUIRED)}
                    | {"pad_token_id", "embedding_dropout", "mlp_dropout", "layer_types", "pos_att_type", "norm_rel_ebd",
                       "attention_head_size", "adapters", "adapter_config", "quantization_config"})
NAMED = HF_KEYS + FAMILY_KEYS + FIELD_NAMES  # every problem names one of these

EDGE_VALUES = [0, -1, 1, 10**12, -(10**12), 2**63, 10**30, 10**400, math.nan, math.inf, -math.inf, 1e308, 5e-324,
               0.5, 12.0, 12.5, -0.0, True, False, None, "", " ", "12", " 12 ", "+12", "-12", "1e3", "0x10", "1_000",
               "١٢", "²", "12 ", "NaN", "Infinity", "x" * 10_000, "<img src=x onerror=alert(1)>", "**b** [l](x)",
               [], {}, [12], {"a": 1}, [[[[[]]]]], {"a": {"b": {"c": []}}}]
SCALARS = (st.none() | st.booleans() | st.integers() | st.integers(-(10**40), 10**40)
           | st.floats(allow_nan=True, allow_infinity=True) | st.text(max_size=50) | st.sampled_from(EDGE_VALUES))
JSON = st.recursive(SCALARS, lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner,
                                                                                          max_size=4), max_leaves=20)


def _check(d) -> ModelConfig | None:
    """from_hf_config(d): a usable config, or a ConfigError whose every problem names a field."""
    try:
        cfg = from_hf_config(d)
    except ConfigError as e:
        assert e.problems and str(e)
        if isinstance(d, dict):
            for p in e.problems:
                assert any(k in p for k in NAMED), p
        return None
    assert isinstance(cfg, ModelConfig)
    total = count_parameters(cfg).total
    assert type(total) is int and total > 0
    assert from_hf_config(to_hf_config(cfg)) == cfg  # the download of what was uploaded reads back the same
    assert json.loads(json.dumps(to_hf_config(cfg), allow_nan=False)) == to_hf_config(cfg)  # valid strict JSON
    return cfg


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(JSON)
@example(float("nan"))
@example([{}] * 3)
@example({"model_type": "bert"})
@example({"model_type": ["bert"]})
@example({"model_type": {"bert": 1}})
def test_any_json_value_is_a_config_or_a_config_error(value):
    _check(value)


@st.composite
def mutated_configs(draw):
    """A valid config.json (a preset, or bare HF keys) with fields replaced, removed and added."""
    cfg = PRESETS[draw(st.sampled_from(list(PRESETS)))]
    d = to_hf_config(cfg)
    if draw(st.booleans()):
        del d[EXPLORER_KEY]
    keys = sorted(d)
    for k in draw(st.lists(st.sampled_from(keys), max_size=4, unique=True)):
        d[k] = draw(JSON)
    for k in draw(st.lists(st.sampled_from(keys), max_size=2, unique=True)):
        d.pop(k, None)
    if EXPLORER_KEY in d and isinstance(d[EXPLORER_KEY], dict) and draw(st.booleans()):
        extra = dict(d[EXPLORER_KEY])
        extra[draw(st.sampled_from(["name", "sharing", "num_groups", "inner_group_num", "other"]))] = draw(JSON)
        d[EXPLORER_KEY] = extra
    for k, v in draw(st.dictionaries(st.sampled_from(["_name_or_path", "architectures", "torch_dtype", "x" * 300,
                                                      "", "vocab_size "]) | st.text(max_size=10), JSON, max_size=3)).items():
        d[k] = v
    return d


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mutated_configs())
def test_mutated_hf_configs_are_a_config_or_name_the_field(d):
    _check(d)


# ints past Python's 4,300-digit str limit (json.loads refuses them, but from_hf_config takes any dict);
# hypothesis cannot print them, so they are only here
@pytest.mark.parametrize("value", EDGE_VALUES + [10**5000, -(10**5000)], ids=lambda v: type(v).__name__)
@pytest.mark.parametrize("key", ["vocab_size", "hidden_size", "num_hidden_layers", "num_attention_heads",
                                 "hidden_dropout_prob", "max_position_embeddings", "hidden_act", "embedding_size",
                                 "num_hidden_groups", "_name_or_path", EXPLORER_KEY])
def test_each_field_at_each_edge_value(key, value):
    d = to_hf_config(PRESETS["albert-base"])
    d[key] = value
    cfg = _check(d)
    if cfg is None or key in ("_name_or_path", EXPLORER_KEY):
        return
    # a value that was accepted is the number it reads as: never a bool, nan, or a truncated float
    assert not isinstance(value, bool) and value not in ([], {}, None)
    if isinstance(value, float):
        assert math.isfinite(value)


def test_names_are_bounded_text():
    d = to_hf_config(PRESETS["bert-base"]) | {"_name_or_path": "n" * 10_000}
    del d[EXPLORER_KEY]
    assert len(from_hf_config(d).name) == 80
    for not_a_name in (["a", {"b": 1}], 10**5000, "   ", ""):  # not a name: the model type is
        d["_name_or_path"] = not_a_name
        assert from_hf_config(d).name == "bert"


# ---- the bytes of an upload ------------------------------------------------------------------
def _upload(data: bytes, name: str = "config.json") -> ModelConfig | str:
    out = parse_upload(name, data)
    assert isinstance(out, (ModelConfig, str))
    if isinstance(out, str):
        assert out.startswith(f"{name} cannot be ") and len(out) < 2000, out[:300]
    return out


VALID = json.dumps(to_hf_config(PRESETS["albert-large"])).encode()
BAD_BYTES = {
    "empty": b"",
    "invalid utf-8": b"\xff\xfe\xfa{}",
    "utf-16": json.dumps(to_hf_config(PRESETS["bert-base"])).encode("utf-16"),
    "oversized": b"{" + b" " * MAX_UPLOAD_BYTES + b"}",
    "deep arrays": b"[" * 32_000 + b"]" * 32_000,  # fits the size cap; json.loads raises RecursionError
    "deep objects": b'{"a":' * 10_000 + b"1" + b"}" * 10_000,
    "deep arrays, oversized": b"[" * 100_000 + b"]" * 100_000,
    "deep but small": b"[" * 5_000 + b"]" * 5_000,
    "NaN literal": VALID[:-1] + b', "hidden_dropout_prob": NaN}',
    "Infinity literal": b'{"model_type": "bert", "vocab_size": Infinity}',
    "-Infinity literal": b'{"model_type": "bert", "vocab_size": -Infinity}',
    "1e400": VALID.replace(b'"vocab_size": 30000', b'"vocab_size": 1e400'),
    "5000-digit integer": VALID.replace(b'"vocab_size": 30000', b'"vocab_size": ' + b"9" * 5000),
    "duplicated key": b'{"model_type": "bert", "model_type": "albert"}',
    "yaml": b"model_type: bert\nvocab_size: 30522\nhidden_size: 768\n",
    "python literal": b"{'model_type': 'bert', 'vocab_size': 30522}",
    "pickle": pickle.dumps(to_hf_config(PRESETS["bert-base"])),
    "trailing garbage": VALID + b"garbage",
    "two documents": VALID + VALID,
    "a string": b'"config"',
    "null": b"null",
}


@pytest.mark.parametrize("data", list(BAD_BYTES.values()), ids=list(BAD_BYTES))
def test_bad_bytes_give_a_message(data):
    out = _upload(data)
    assert isinstance(out, str)


def test_specific_messages():
    assert "64 KiB" in _upload(BAD_BYTES["oversized"])
    assert "nested too deeply" in _upload(BAD_BYTES["deep arrays"])
    assert "nested too deeply" in _upload(BAD_BYTES["deep objects"])
    assert "NaN is not a JSON number" in _upload(BAD_BYTES["NaN literal"])
    assert "Infinity is not a JSON number" in _upload(BAD_BYTES["Infinity literal"])
    assert "'model_type' appears twice" in _upload(BAD_BYTES["duplicated key"])
    assert "not UTF-8" in _upload(BAD_BYTES["invalid utf-8"])
    assert "vocab_size" in _upload(BAD_BYTES["1e400"])  # json reads it as inf; the field refuses it
    assert "digits" in _upload(BAD_BYTES["5000-digit integer"])


def test_valid_bytes_with_a_byte_order_mark_and_any_whitespace_load():
    cfg = PRESETS["albert-large"]
    assert _upload(VALID) == cfg
    assert _upload(b"\xef\xbb\xbf" + VALID) == cfg
    assert _upload(json.dumps(to_hf_config(cfg), indent=4).encode()) == cfg


_unpickled = []


class _Payload:
    def __reduce__(self):
        return (_unpickled.append, ("unpickled",))


def test_only_json_parses_never_pickle_yaml_or_eval():
    assert isinstance(_upload(pickle.dumps(_Payload())), str) and not _unpickled
    imported = set()
    for node in ast.walk(ast.parse((ROOT / "albert_core" / "formats" / "upload.py").read_text())):
        if isinstance(node, ast.Import):
            imported |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0:
            imported.add(node.module)
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
            assert node.func.id not in ("eval", "exec", "compile"), node.func.id
    assert imported <= {"json", "__future__", "typing"}, imported


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=300))
def test_random_bytes(data):
    _upload(data)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mutated_configs(), st.sampled_from([None, 0, 2]), st.booleans())
def test_uploaded_json_text_agrees_with_from_hf_config(d, indent, ascii_only):
    try:
        data = json.dumps(d, indent=indent, ensure_ascii=ascii_only).encode()
    except ValueError:  # an int of more than 4,300 digits cannot even be written
        return
    out = _upload(data)
    if isinstance(out, ModelConfig):
        assert out == from_hf_config(d)
    else:
        try:
            json.dumps(d, allow_nan=False)
        except ValueError:  # NaN/Infinity somewhere: refused when parsing
            assert "is not a JSON number" in out
            return
        with pytest.raises(ConfigError):  # else the same problems are reported
            from_hf_config(json.loads(data))


# ---- user text shown literally ---------------------------------------------------------------
_MD = MarkdownIt("commonmark").enable(["table", "strikethrough"])
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]")


def _rendered(text: str) -> str:
    """What CommonMark shows for a line containing text (tags kept)."""
    return _MD.render(text)


def _as_text(s: str) -> str:
    s = _CONTROL.sub(" ", s)
    return s.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace('"', "&quot;")


ATTACKS = ["<img src=x onerror=alert(1)>", "**bold** [link](javascript:alert(1))", "![i](http://x/i.png)",
           "<script>alert(1)</script>", "`code`", "$x^2$", ":red[red] :material/home:", "a\n# heading\n- item",
           "&lt;b&gt;", "_it_ __b__ ~~s~~", "| a | b |\n|---|---|", "<http://example.com>", "\\*", "1. x", "- x"]


@settings(max_examples=500, deadline=None)
@given(st.text(max_size=60) | st.sampled_from(ATTACKS))
@example("a_b_c _x_ a__b__c")
def test_markdown_escape_shows_text_as_typed(s):
    assert _rendered(f"x {md(s)} x") == f"<p>x {_as_text(s)} x</p>\n"


@pytest.mark.parametrize("s", ATTACKS)
def test_markdown_escape_at_line_start(s):
    out = _rendered(md(s))
    assert out == f"<p>{_as_text(s).strip()}</p>\n"


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=60) | st.sampled_from(ATTACKS + ["%{y}", "%{customdata[0]:,}", "<b>x</b>"]))
def test_plotly_text_has_no_tags_or_template_fields(s):
    out = plotly_text(s)
    assert "<" not in out and ">" not in out and "%{" not in out
    assert html.unescape(out) == s


# ---- the real uploader, in AppTest -----------------------------------------------------------
def _upload_app(at, name: str, content: bytes):
    at = open_fields(at, "import_export", "model_fields")
    at.sidebar.file_uploader(key="upload").set_value((name, content, "application/json"))
    return at.run()


def _no_markup(markdown: str) -> None:
    """The user's text did not turn into markup: no image, link, script, or the user's words in bold/code."""
    # the app's own links to Verify (ui/url.measure_on_verify: a relative link, the name in its query, encoded) are
    # not the user's markup; any other link is
    out = re.sub(r'<a href="verify\?[^"<>]*">measure this on Verify</a>', "", _rendered(markdown))
    assert not re.search(r"<(img|a|script|code)\b|<strong>bold|<em>it", out), out


def test_uploaded_names_are_shown_literally():
    evil = "**bold** [link](javascript:alert(1)) <img src=x onerror=alert(1)>"
    d = to_hf_config(PRESETS["bert-base"].replace(name=evil[:80]))
    at = _upload_app(goto(open_app(), "memory"), "<img src=x onerror=alert(1)>.json", json.dumps(d).encode())
    assert not at.exception
    (ok,) = at.sidebar.success
    _no_markup(ok.value)
    assert evil[:80] in html.unescape(_rendered(ok.value))
    assert at.sidebar.text_input(key="f.name").value == evil[:80]
    # the page's own headers and the charts show it as text too
    for el in list(at.subheader) + list(at.markdown) + list(at.caption):
        _no_markup(el.value)
    for chart in at.get("plotly_chart"):
        spec = json.loads(chart.proto.spec)
        for t in spec["data"]:
            for k in ("name", "hovertemplate"):
                if isinstance(t.get(k), str):
                    assert "<img" not in t[k] and "**bold**" not in t[k] or "&lt;img" in t[k], t[k]
    for page in PAGES:  # every text element of every page, on each of its tabs (only the open one is drawn)
        goto(at, page)
        assert not at.exception
        named = False
        for tab in PAGE_TABS.get(page, (None,)):
            if tab is not None:
                assert not open_tab(at, page, tab).exception
            for kind in ("markdown", "subheader", "caption", "header", "title", "warning", "error", "info", "success"):
                for el in at.get(kind):
                    _no_markup(el.value)
            named |= any(evil[:30] in html.unescape(_rendered(m.value)) for m in at.markdown)
        if page in ("parameters", "verify"):  # they name the sidebar config in a paragraph
            assert named, page


def test_upload_errors_are_shown_literally():
    at = _upload_app(open_app(), "**x**[y](javascript:z).json", b'{"model_type": "<img src=x onerror=alert(1)>"}')
    assert not at.exception
    (err,) = at.sidebar.error
    _no_markup(err.value)
    assert "model_type must be" in err.value


# a browser never sends a NUL in a file name (and Streamlit's test uploader refuses one), so none is drawn
@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(list(BAD_BYTES.values())) | st.binary(max_size=200)
       | mutated_configs().map(lambda d: json.dumps(d, default=str).encode()),
       st.text(st.characters(blacklist_characters="\x00"), min_size=1, max_size=30).map(lambda s: s + ".json"))
def test_uploader_in_apptest_never_raises(data, name):
    at = _upload_app(open_app(), name, data)
    assert not at.exception, [e.message for e in at.exception]
    shown = list(at.sidebar.success) + list(at.sidebar.error)
    assert len(shown) == 1
    _no_markup(shown[0].value)
