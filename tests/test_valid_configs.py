"""Every valid config renders every page: hypothesis draws VALID views across the whole range ModelConfig
accepts (every family, tiny and huge widths, 1 layer and thousands, vocab 1 to 10^7, max_position 1 to
10^6, every sharing mode and group count, compared configs, every page control value a link can carry),
encodes them with albert_core.share.encode and opens the link on every page but Verify's run, in AppTest.
No exception, ever; the sidebar shows the drawn config.
"""

import json

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from streamlit.testing.v1 import AppTest
from test_app_pages import APP

from albert_core.config import (
    FAMILIES,
    FIELD_NAMES,
    HIDDEN_ACTS,
    MAX_DIM,
    MAX_LAYERS,
    SHARING_MODES,
    ConfigError,
    ModelConfig,
)
from albert_core.estimate.sweeps import embedding_sweep
from albert_core.families import family
from albert_core.families.deberta_v2 import NORM_REL_EBD, POS_ATT_TYPES
from albert_core.presets import PRESETS
from albert_core.share import CONTROLS, MAX_COMPARE, PAGE_TABS, View, decode, encode

PAGES = ("overview", "parameters", "memory", "fit", "compute", "verify")  # Verify: the page, not its run
WIDTHS = st.integers(1, 64) | st.sampled_from([96, 128, 768, 1000, 4096, 65_536, MAX_DIM]) | st.integers(1, MAX_DIM)
LAYERS = st.integers(1, 48) | st.sampled_from([96, 192, 1000, 4096, MAX_LAYERS]) | st.integers(1, MAX_LAYERS)
NAMES = st.sampled_from(["x", "wide", "my model", "é 名前 🙂", "a" * 80, "**b** [l](javascript:x)"])


def _divisors(n: int) -> list[int]:
    small = [d for d in range(1, int(n**0.5) + 1) if n % d == 0]
    return sorted(set(small + [n // d for d in small]))


@st.composite
def configs(draw) -> ModelConfig:
    fam = draw(st.sampled_from(FAMILIES))
    mod = family(fam)
    hidden = draw(WIDTHS)
    layers = draw(LAYERS)
    sharing = draw(st.sampled_from(SHARING_MODES))
    d = {
        "name": draw(NAMES), "family": fam, "hidden_dim": hidden, "num_layers": layers, "sharing": sharing,
        "num_heads": draw(st.sampled_from(_divisors(hidden))),
        "embedding_dim": draw(WIDTHS) if mod.OWN_EMBEDDING_WIDTH else hidden,
        "vocab_size": draw(st.integers(1, 10**7)), "max_position": draw(st.integers(1, 10**6)),
        "intermediate_dim": draw(WIDTHS | st.integers(1, 8 * MAX_DIM)),
        "num_groups": draw(st.sampled_from(_divisors(layers))) if sharing != "none" else 1,
        "inner_group_num": draw(st.sampled_from([1, 1, 2, 3, 1024])),
        "dropout": draw(st.floats(0, 0.999999)), "attention_dropout": draw(st.floats(0, 0.999999)),
        "hidden_act": draw(st.sampled_from(HIDDEN_ACTS)),
        "type_vocab_size": {True: draw(st.integers(1, 1000)), False: 0}.get(mod.SEGMENT_TABLE, draw(st.integers(0, 8))),
    }
    if fam == "roberta":
        d["position_offset"] = draw(st.integers(1, min(d["vocab_size"], 10**6)))
    if fam == "deberta-v2":
        d |= {"relative_attention": draw(st.booleans()), "share_att_key": draw(st.booleans()),
              "max_relative_positions": draw(st.sampled_from([-1, 1, 256, MAX_DIM])),
              "position_buckets": draw(st.sampled_from([-1, 1, 256, MAX_DIM])),
              "pos_att_type": draw(st.sampled_from(POS_ATT_TYPES)), "norm_rel_ebd": draw(st.sampled_from(NORM_REL_EBD)),
              "position_biased_input": draw(st.booleans())}
    if fam == "modernbert":
        d |= {"attention_bias": draw(st.booleans()), "mlp_bias": draw(st.booleans()), "norm_bias": draw(st.booleans()),
              "global_attn_every_n_layers": draw(st.integers(1, layers)), "local_attention": draw(WIDTHS)}
    try:
        return ModelConfig(**d)
    except ConfigError as e:  # the construction above must give valid configs only
        raise AssertionError(f"drawn config is invalid: {e}") from e


def control_values():
    parts = {}
    for name, c in CONTROLS.items():
        if c.kind == "int":
            parts[name] = st.integers(c.lo, c.hi)
        elif c.kind == "choice":
            parts[name] = st.sampled_from(c.choices)
        elif c.kind == "probability":  # 0 <= p < 1
            parts[name] = st.sampled_from([0.0, 0.1]) | st.floats(0, 0.999999)
        elif c.kind == "names":  # module names, some of them matching nothing in the drawn config
            parts[name] = st.sampled_from(["", "query,value", "q_lin,v_lin", "Wqkv", "dense", "not_a_module"])
        else:
            assert c.kind == "bool", (name, c.kind)
            parts[name] = st.booleans()
    return st.fixed_dictionaries(parts)


COMPARED = st.lists(st.sampled_from(list(PRESETS)).map(PRESETS.get) | configs(), max_size=3)
VIEWS = st.builds(lambda cfg, preset, compare, controls: View(cfg, preset, tuple(compare[:MAX_COMPARE]), controls),
                  configs(), st.sampled_from(list(PRESETS)), COMPARED, control_values())


# the pages in four parts, one test each (each under a minute on the 2-core machine; xdist runs them side by side):
# Memory and the Fit planner alone, the slowest (a deep drawn config's fine-tuning tensors, listed per max_position
# the planner tries)
PARTS = {"overview-parameters": ("overview", "parameters"), "memory": ("memory",), "fit": ("fit",),
         "compute-verify": ("compute", "verify")}
assert sum(PARTS.values(), ()) == PAGES


def _open_every_page(q: dict[str, str], view: View, pages=PAGES) -> None:
    at = AppTest.from_file(APP, default_timeout=120)
    at.query_params.update(q)
    # every sidebar section open: its widgets are drawn for the view's config too (closed ones are not drawn)
    at.session_state["_ae_open"] = {"model_fields": True, "more_fields": True, "import_export": True}
    at.run()
    for page in pages:
        if page != "overview":
            at.switch_page(f"pages/{page}.py").run()
        assert not at.exception, (page, q, [e.message for e in at.exception])
        assert at.title, (page, "no title")
        assert not at.sidebar.error, (page, [e.value for e in at.sidebar.error])
        assert at.sidebar.number_input(key="f.hidden_dim").value == view.config.hidden_dim, page


# 25 drawn views (40 until 2026-12-05; the CI run's 10 minutes) beside the hand-written examples below
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(VIEWS)
@example(decode({"preset": "bert-large", "family": "bert", "hidden_dim": "8", "num_heads": "1", "num_layers": "192",
                 "embedding_dim": "8"})[0])  # issue 8: this valid link crashed Parameters
@example(decode({"compare": "c1", "c1.preset": "electra-base-discriminator", "c1.num_layers": "4096",
                 "c1.inner_group_num": "1024", "optimizer": "adafactor"})[0])  # 4M stored layers: Memory took 173 s
@pytest.mark.parametrize("part", PARTS)
def test_every_valid_view_renders_every_page(part, view):
    q = encode(view)
    again, warnings = decode(q)
    assert not warnings and again.config == view.config  # a valid view's link is read back as is
    _open_every_page(q, view, PARTS[part])


@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(VIEWS)
@example(decode({"preset": "bert-large", "family": "bert", "hidden_dim": "8", "num_heads": "1", "num_layers": "192",
                 "embedding_dim": "8"})[0])
@pytest.mark.parametrize("page", PAGE_TABS)
def test_every_tab_of_a_valid_view_renders(page, view):
    """The chart pages draw only their open tab (ui/sections.lazy_tabs): open each tab of each, as clicking it
    would, and check every figure on it is drawn and titled, without exception (one page a test)."""
    at = AppTest.from_file(APP, default_timeout=120)
    at.query_params.update(encode(view))
    at.run()
    if page != "overview":
        at.switch_page(f"pages/{page}.py").run()
    for tab in PAGE_TABS[page]:
        at.session_state["_ae_controls"] = {**at.session_state["_ae_controls"], f"{page}_tab": tab}
        at.run()
        assert not at.exception, (page, tab, [e.message for e in at.exception])
        assert at.session_state["_ae_controls"][f"{page}_tab"] == tab
        for el in at.get("plotly_chart"):
            assert json.loads(el.proto.spec)["layout"]["title"]["text"], (page, tab, el.key)


def test_embedding_sweep_without_values_is_an_empty_table():
    """A sweep with no point (every candidate E above a tiny hidden_dim) is empty, not an error."""
    df = embedding_sweep(PRESETS["bert-base"].replace(hidden_dim=8, embedding_dim=8, num_heads=1), [])
    assert len(df) == 0 and {"embedding_dim", "embedding", "factorization_savings"} <= set(df.columns)


def test_the_strategy_reaches_the_extremes():
    """The drawn range covers what the docstring promises (a property of the strategy, checked on its own)."""
    seen: list[ModelConfig] = []

    @settings(max_examples=300, deadline=None, database=None, derandomize=True)
    @given(configs())
    def collect(cfg):
        seen.append(cfg)

    collect()
    assert {c.family for c in seen} == set(FAMILIES) and {c.sharing for c in seen} == set(SHARING_MODES)
    assert min(c.hidden_dim for c in seen) == 1 and max(c.hidden_dim for c in seen) == MAX_DIM
    assert min(c.num_layers for c in seen) == 1 and max(c.num_layers for c in seen) >= 4096
    assert min(c.vocab_size for c in seen) == 1 and max(c.vocab_size for c in seen) > 10**6
    assert any(c.sharing != "none" and 1 < c.num_groups < c.num_layers for c in seen)
    assert set(FIELD_NAMES) >= {"hidden_dim", "num_groups"}
