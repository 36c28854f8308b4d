"""albert_core.share: the URL scheme round-trips every view, and garbage gives warnings, never exceptions."""

from urllib.parse import parse_qs, urlencode

from hypothesis import given, settings
from hypothesis import strategies as st

from albert_core.config import FIELD_NAMES, ConfigError, ModelConfig
from albert_core.families import family
from albert_core.presets import DEFAULT_PRESET, PRESETS
from albert_core.share import CONTROLS, DEFAULT_COMPARE, MAX_COMPARE, View, decode, encode

NAMES = st.text(st.characters(codec="utf-8", exclude_categories=("Cs", "Cc")), min_size=1, max_size=30).filter(
    lambda s: s.strip())

_CHANGES = {
    "vocab_size": st.integers(1, 10**7),
    "max_position": st.integers(1, 8192),
    "type_vocab_size": st.integers(1, 16),
    "intermediate_dim": st.integers(1, 20000),
    "dropout": st.floats(0, 0.99, allow_nan=False),
    "attention_dropout": st.floats(0, 0.99, allow_nan=False),
    "sharing": st.sampled_from(("none", "attention", "ffn", "all")),
    "hidden_act": st.sampled_from(("gelu", "relu", "gelu_new", "silu")),
    "inner_group_num": st.integers(1, 4),
}


@st.composite
def configs(draw):
    base = PRESETS[draw(st.sampled_from(list(PRESETS)))]
    changes = {k: draw(v) for k, v in _CHANGES.items() if draw(st.booleans())}
    if draw(st.booleans()):
        heads = draw(st.integers(1, 32))
        head_dim = draw(st.integers(1, 128))
        changes.update(num_heads=heads, hidden_dim=heads * head_dim)
        own_width = family(base.family).OWN_EMBEDDING_WIDTH  # else E follows H
        changes["embedding_dim"] = draw(st.integers(1, 512)) if own_width else heads * head_dim
    if draw(st.booleans()):
        layers = draw(st.integers(1, 48))
        changes.update(num_layers=layers, num_groups=draw(st.sampled_from([d for d in range(1, layers + 1)
                                                                            if layers % d == 0])))
    if draw(st.booleans()):
        changes["name"] = draw(NAMES)
    if family(base.family).SEGMENT_TABLE is False:  # distilbert, modernbert: no segment table
        changes.pop("type_vocab_size", None)
    if "vocab_size" in changes:  # RoBERTa's pad token (position_offset - 1) must be in the vocabulary
        changes["vocab_size"] = max(changes["vocab_size"], base.position_offset)
    return base.replace(**changes)


def control_values():
    out = {}
    for name, c in CONTROLS.items():
        if c.kind == "int":
            out[name] = st.integers(c.lo, c.hi)
        elif c.kind == "bool":
            out[name] = st.booleans()
        elif c.kind == "probability":
            out[name] = st.floats(0, 1, exclude_max=True, allow_nan=False)
        elif c.kind == "names":
            out[name] = st.lists(st.from_regex(r"[A-Za-z_][A-Za-z0-9_.]{0,12}", fullmatch=True), max_size=4).map(",".join)
        else:
            out[name] = st.sampled_from(c.choices)
    return st.fixed_dictionaries(out)


@st.composite
def views(draw):
    preset = draw(st.sampled_from(list(PRESETS)))
    config = draw(configs()) if draw(st.booleans()) else PRESETS[preset]
    compare = draw(st.lists(st.one_of(st.sampled_from(list(PRESETS.values())), configs()), max_size=MAX_COMPARE))
    return View(config=config, preset=preset, compare=tuple(compare), controls=draw(control_values()))


@settings(max_examples=150, deadline=None)
@given(views())
def test_encode_decode_round_trip(view):
    q = encode(view)
    assert all(isinstance(k, str) and isinstance(v, str) for k, v in q.items())
    back, warnings = decode(q)
    assert warnings == []
    assert back == view


@settings(max_examples=60, deadline=None)
@given(views())
def test_round_trip_through_a_real_query_string(view):
    """urlencode -> parse_qs (what a browser and st.query_params do) loses nothing."""
    text = urlencode(encode(view))
    parsed = {k: v[-1] for k, v in parse_qs(text, keep_blank_values=True).items()}
    back, warnings = decode(parsed)
    assert warnings == [] and back == view


def test_default_view_is_an_empty_query():
    assert encode(View()) == {}
    view, warnings = decode({})
    assert warnings == [] and view == View()
    assert view.config == PRESETS[DEFAULT_PRESET]
    assert [c.name for c in view.compare] == list(DEFAULT_COMPARE)


def test_keys_are_model_config_fields_and_control_names():
    cfg = PRESETS["bert-base"].replace(hidden_dim=1024, embedding_dim=1024, num_heads=16, name="wide")
    custom = PRESETS["albert-base"].replace(name="deep", num_layers=48)
    view = View(config=cfg, preset="bert-base", compare=(PRESETS["albert-xxlarge"], custom),
                controls={**{k: c.default for k, c in CONTROLS.items()}, "seq_len": 1024, "dtype": "bfloat16"})
    q = encode(view)
    assert q == {"preset": "bert-base", "name": "wide", "embedding_dim": "1024", "hidden_dim": "1024",
                 "num_heads": "16", "compare": "albert-xxlarge,c1", "c1.preset": "albert-base", "c1.name": "deep",
                 "c1.num_layers": "48", "seq_len": "1024", "dtype": "bfloat16"}
    assert set(q) - {"preset", "compare"} - {k for k in q if k.startswith("c1.")} <= set(FIELD_NAMES) | set(CONTROLS)


GARBAGE = st.dictionaries(
    st.one_of(st.sampled_from(list(FIELD_NAMES) + list(CONTROLS) + ["preset", "compare", "c1.hidden_dim", "c2.name",
                                                                    "c1.preset", "c0.x", "c100.name", "x.y"]),
              st.text(max_size=12)),
    st.one_of(st.text(max_size=30), st.lists(st.text(max_size=10), max_size=3), st.text(min_size=190, max_size=260)),
    max_size=12,
)


@settings(max_examples=300, deadline=None)
@given(GARBAGE)
def test_garbage_gives_warnings_never_exceptions(params):
    view, warnings = decode(params)
    assert isinstance(view.config, ModelConfig)
    assert all(isinstance(c, ModelConfig) for c in view.compare) and len(view.compare) <= MAX_COMPARE
    assert all(isinstance(w, str) and w for w in warnings)
    for name, c in CONTROLS.items():  # every control holds an allowed value
        v = view.controls[name]
        if c.kind == "probability":
            assert isinstance(v, float) and 0 <= v < 1
        elif c.kind == "names":
            assert v == "" or all(t and t == t.strip() for t in v.split(","))
        else:
            assert (c.lo <= v <= c.hi) if c.kind == "int" else (v in (True, False)) if c.kind == "bool" else v in c.choices
    # what decode accepted encodes again, and decodes to itself without warnings
    again, w2 = decode(encode(view))
    assert w2 == [] and again == view


def _one(params):
    view, warnings = decode(params)
    assert len(warnings) == 1, warnings
    return view, warnings[0]


def test_bad_field_value_is_named_and_falls_back():
    view, w = _one({"hidden_dim": "wide"})
    assert "hidden_dim" in w and "'wide'" in w
    assert view.config == PRESETS[DEFAULT_PRESET]


def test_head_count_that_does_not_divide_is_explained():
    view, w = _one({"num_heads": "7"})
    assert "num_heads (7) must divide hidden_dim (768)" in w
    assert view.config == PRESETS[DEFAULT_PRESET]


def test_bad_field_keeps_the_good_ones():
    view, warnings = decode({"vocab_size": "50000", "dropout": "nan"})
    assert len(warnings) == 1 and "dropout" in warnings[0]
    assert view.config.vocab_size == 50000 and view.config.dropout == PRESETS[DEFAULT_PRESET].dropout


def test_unknown_preset():
    view, w = _one({"preset": "gpt-5"})
    assert "preset" in w and "'gpt-5'" in w and view.preset == DEFAULT_PRESET


def test_a_preset_named_in_another_case_is_that_preset_and_a_near_miss_is_suggested():
    """A new user's review: compare=modernbert-large was refused with the list of 23 names and no hint."""
    view, warnings = decode({"preset": "Bert-Base", "compare": "modernbert-large,ALBERT-XXLARGE,robreta-base"})
    assert view.preset == "bert-base" and [c.name for c in view.compare] == ["ModernBERT-large", "albert-xxlarge"]
    (said,) = warnings
    assert said.startswith("compare: 'robreta-base' is neither a preset (") and said.endswith(
        "ignored. Did you mean roberta-base or xlm-roberta-base?")
    view, (said,) = decode({"preset": "albert-bas"})
    assert view.preset == DEFAULT_PRESET and said.endswith(f"using {DEFAULT_PRESET}. Did you mean albert-base or bert-base?")
    assert "Did you mean" not in decode({"preset": "gpt-5"})[1][0]  # nothing near: no guess
    assert encode(decode({"compare": "modernbert-large"})[0]) == {"compare": "ModernBERT-large"}  # the link mended


def test_unknown_key():
    view, w = _one({"hiden_dim": "1024"})
    assert "'hiden_dim'" in w and view == View()


def test_bad_control_values():
    for key, raw in (("seq_len", "0"), ("seq_len", "12abc"), ("batch_size", "-3"), ("dtype", "float8"),
                     ("attention", "flash"), ("checkpointing", "maybe"), ("gpu", "toaster"),
                     ("train_mode", "frozen-layers:3"), ("frozen_layers", "-1"), ("lora_r", "0"), ("lora_alpha", "x"),
                     ("lora_dropout", "1"), ("lora_dropout", "nan"), ("lora_dropout", "-0.1"),
                     ("lora_targets", "query;value"), ("lora_targets", "query,,"), ("head", "classification:3"),
                     ("num_labels", "0"), ("serve_format", "int2"), ("group_size", "0"), ("serve_embeddings", "2")):
        view, w = _one({key: raw})
        assert w.startswith(key) and view.controls[key] == CONTROLS[key].default


def test_bad_compare_tokens_and_customs():
    view, warnings = decode({"compare": "bert-base,nope,c3", "c1.hidden_dim": "100", "c2.sharing": "some"})
    text = " | ".join(warnings)
    assert "'nope'" in text and "'c3'" in text  # named tokens that exist nowhere
    assert "c1: the config is not valid" in text and "must divide hidden_dim (100)" in text
    assert "c2: the config is not valid" in text and "sharing must be one of" in text
    names = [c.name for c in view.compare]
    # c1 and c2 kept nothing of what the link gave: not added as copies of their preset (issue 29: `?c1.hidden_dim=abc`
    # added an unrequested albert-base to the comparison); a custom with one usable field still is
    assert names == ["bert-base"]
    assert "c1: none of its fields could be used, so it is not added to the comparison" in warnings
    assert "c2: none of its fields could be used, so it is not added to the comparison" in warnings
    view, warnings = decode({"c1.hidden_dim": "abc", "c1.num_layers": "6"})
    assert [c.num_layers for c in view.compare][-1] == 6 and len(warnings) == 1


def test_too_long_and_repeated_values():
    view, w = _one({"name": "x" * 500})
    assert "too long" in w and view.config == PRESETS[DEFAULT_PRESET]
    view, warnings = decode({"seq_len": ["128", "256"]})  # a repeated key: the last wins, and it is said
    assert warnings == ["'seq_len': given 2 times ('128', '256'); the last one is used"] and view.controls["seq_len"] == 256
    view, warnings = decode({"seq_len": ["256", "256"]})  # the same value twice: nothing to say
    assert warnings == [] and view.controls["seq_len"] == 256


def test_too_many_compared_configs():
    view, warnings = decode({"compare": ",".join(list(PRESETS)[:7] * 2)})  # 14 names, within MAX_VALUE_LEN
    assert len(view.compare) == MAX_COMPARE and any("at most" in w for w in warnings)


def test_every_decoded_config_is_valid():
    view, _ = decode({"family": "bert", "embedding_dim": "128"})  # bert needs E == H
    try:
        ModelConfig(**view.config.to_dict())
    except ConfigError:  # pragma: no cover - the assertion below reports it
        raise AssertionError("decode returned an invalid config") from None
    assert view.config == PRESETS[DEFAULT_PRESET]


def test_family_fields_in_the_link():
    """Issue 10: the new fields travel as text (bools as 1/0), only where they differ; old links are unchanged."""
    cfg = PRESETS["deberta-v3-base"].replace(share_att_key=False, pos_att_type="c2p", name="mine")
    view = View(config=cfg, preset="deberta-v3-base")
    q = encode(view)
    assert q["share_att_key"] == "0" and q["pos_att_type"] == "c2p" and "position_buckets" not in q
    assert decode(q) == (view, [])
    assert decode({**q, "share_att_key": "true"})[0].config.share_att_key is True
    old = {"preset": "bert-large", "hidden_dim": "2048", "embedding_dim": "2048", "num_heads": "16"}
    view, warnings = decode(old)  # a link from before the families: same config, no new keys needed
    assert not warnings and view.config == PRESETS["bert-large"].replace(hidden_dim=2048, embedding_dim=2048)
    assert not {"position_offset", "relative_attention", "mlp_bias"} & set(encode(view))
    _, warnings = decode({"preset": "bert-base", "mlp_bias": "maybe"})
    assert any(w.startswith("mlp_bias: mlp_bias must be true or false") for w in warnings)


def test_fine_tuning_and_serving_controls_round_trip():
    """A LoRA link on ALBERT with a head and a serving format: the controls come back as given, and only what
    differs from the defaults is written."""
    ctl = dict(View().controls, train_mode="lora", lora_r=16, lora_alpha=32, lora_dropout=0.1,
               lora_targets="query,value", head="classification", num_labels=3, serve_format="int4", group_size=64,
               serve_embeddings=True, memory_tab="serving")
    view = View(controls=ctl)
    q = encode(view)
    assert q == {"train_mode": "lora", "lora_r": "16", "lora_alpha": "32", "lora_dropout": "0.1",
                 "lora_targets": "query,value", "head": "classification", "num_labels": "3", "serve_format": "int4",
                 "group_size": "64", "serve_embeddings": "1", "memory_tab": "serving"}
    assert decode(q) == (view, [])
    spaced, w = decode({"lora_targets": " query , value "})
    assert w == [] and spaced.controls["lora_targets"] == "query,value"  # written back as a clean comma list
    empty, w = decode({"lora_targets": ""})
    assert w == [] and empty.controls["lora_targets"] == ""  # empty: peft's default targets


def test_the_longest_compare_list_round_trips():
    """Found by hypothesis: twelve long preset names made a 201-character compare list that encode wrote and decode
    refused ('value too long')."""
    longest = sorted(PRESETS, key=len)[-MAX_COMPARE:]
    view = View(config=PRESETS["albert-base"], preset="albert-base", compare=tuple(PRESETS[n] for n in longest),
                controls={k: c.default for k, c in CONTROLS.items()})
    q = encode(view)
    assert len(q["compare"]) > 200
    assert decode(q) == (view, [])
