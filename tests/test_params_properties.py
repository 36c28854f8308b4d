"""Property tests: count_parameters equals the parameters PyTorch stores, for random configs.

Models are built on the meta device (no memory, no init), so hundreds of configs take seconds.
"""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from albert_core.config import HIDDEN_ACTS, SHARING_MODES, ConfigError, ModelConfig
from albert_core.engine.models import count_built, hf_model, reference_model
from albert_core.estimate.params import count_parameters
from albert_core.formats.hf import hf_expressible


@st.composite
def configs(draw, family=None, sharing=None):
    family = family or draw(st.sampled_from(["bert", "albert"]))
    heads = draw(st.integers(1, 8))
    hidden = heads * draw(st.integers(1, 16))
    layers = draw(st.integers(1, 8))
    sharing = sharing or draw(st.sampled_from(SHARING_MODES))
    divisors = [d for d in range(1, layers + 1) if layers % d == 0]
    return ModelConfig(
        name="p", family=family, vocab_size=draw(st.integers(1, 3000)),
        embedding_dim=hidden if family == "bert" else draw(st.integers(1, 96)), hidden_dim=hidden,
        num_layers=layers, num_heads=heads, intermediate_dim=draw(st.integers(1, 256)),
        max_position=draw(st.integers(1, 600)), type_vocab_size=draw(st.integers(1, 4)),
        hidden_act=draw(st.sampled_from(HIDDEN_ACTS)), sharing=sharing,
        num_groups=draw(st.sampled_from(divisors)), inner_group_num=draw(st.integers(1, 3)),
    )


@st.composite
def expressible_configs(draw):
    """Configs Hugging Face builds exactly: BERT unshared; ALBERT whole-layer sharing or unshared."""
    cfg = draw(configs())
    if cfg.family == "bert":
        return cfg.replace(sharing="none", num_groups=1, inner_group_num=1)
    if cfg.sharing in ("attention", "ffn"):
        return cfg.replace(num_groups=cfg.num_layers)
    return cfg


@settings(max_examples=150, deadline=None)
@given(configs())
def test_count_equals_reference_model(cfg):
    c = count_parameters(cfg)
    assert count_built(reference_model(cfg, device="meta")) == c.total
    assert c.embedding + c.all_layers + c.pooler == c.total
    assert c.heads == 0


@settings(max_examples=80, deadline=None)
@given(expressible_configs())
def test_count_equals_hf_model(cfg):
    assert hf_expressible(cfg)
    assert count_built(hf_model(cfg, device="meta")) == count_parameters(cfg).total


@settings(max_examples=40, deadline=None)
@given(expressible_configs())
def test_heads_count_equals_hf_for_pretraining(cfg):
    built = count_built(hf_model(cfg, device="meta", heads=True))  # tied decoder weight counted once
    c = count_parameters(cfg, heads=True)
    assert built == c.total
    assert c.total - c.heads == count_parameters(cfg).total


@settings(max_examples=60, deadline=None)
@given(configs(sharing="none"))
def test_sharing_never_adds_and_all_is_smallest(cfg):
    counts = {s: count_parameters(cfg.replace(sharing=s)).total for s in SHARING_MODES}
    assert counts["all"] <= counts["attention"] <= counts["none"]
    assert counts["all"] <= counts["ffn"] <= counts["none"]
    # sharing saves exactly the copies it stops storing
    H = cfg.hidden_dim
    per_att = 4 * (H * H + H) + 2 * H  # query, key, value, dense (weight + bias) and the attention LayerNorm
    saved = (cfg.num_layers - cfg.num_groups) * cfg.inner_group_num * per_att
    assert counts["none"] - counts["attention"] == saved


@pytest.mark.parametrize("changes, needle", [
    (dict(hidden_dim=768, num_heads=10), "num_heads (10) must divide hidden_dim (768)"),
    (dict(hidden_dim=0), "hidden_dim must be at least 1"),
    (dict(num_layers=-3), "num_layers must be at least 1"),
    (dict(vocab_size=0), "vocab_size must be at least 1"),
    (dict(num_heads=0), "num_heads must be at least 1"),
    (dict(intermediate_dim=-1), "intermediate_dim must be at least 1"),
    (dict(num_groups=5), "num_groups (5) must divide num_layers (12)"),
    (dict(num_groups=13), "num_groups (13) must be at most num_layers (12)"),
    (dict(family="bert"), "embedding_dim (128) must equal hidden_dim (768)"),
    (dict(sharing="some"), "sharing must be one of none, attention, ffn, all"),
    (dict(family="gpt"), "family must be one of bert, albert"),
    (dict(hidden_act="swish2"), "hidden_act must be one of"),
    (dict(dropout=1.5), "dropout must be at least 0 and below 1"),
    (dict(hidden_dim=10**7), "hidden_dim must be at most 1,048,576"),
])
def test_invalid_configs_say_what_to_change(changes, needle):
    base = ModelConfig()  # albert-base-like
    with pytest.raises(ConfigError) as e:
        base.replace(**changes)
    assert needle in str(e.value)
    assert isinstance(e.value, ValueError)


def test_heads_not_dividing_suggests_a_divisor():
    with pytest.raises(ConfigError, match=r"try 12 heads"):
        ModelConfig(hidden_dim=768, num_heads=11)


def test_every_problem_is_listed():
    with pytest.raises(ConfigError) as e:
        ModelConfig(hidden_dim=0, num_layers=0, vocab_size=-1)
    assert len(e.value.problems) == 3


def closed_form(V, E, H, L, I, P, T, groups, inner, sharing, factorized):
    """Independent Python-int formula (ALBERT Sec. 3.1; nn.Linear = weight + bias, LayerNorm = 2 per width)."""
    emb = (V + P + T) * E + 2 * E + ((E * H + H) if factorized else 0)
    att = 4 * (H * H + H) + 2 * H
    ffn = (H * I + I) + (I * H + H) + 2 * H
    n_att = (groups if sharing in ("all", "attention") else L) * inner
    n_ffn = (groups if sharing in ("all", "ffn") else L) * inner
    return emb + n_att * att + n_ffn * ffn + (H * H + H)


@pytest.mark.parametrize("family, sharing, groups, inner", [
    ("bert", "none", 1, 1), ("albert", "all", 1, 1), ("albert", "attention", 10, 2), ("albert", "ffn", 1000, 1),
    ("albert", "none", 1, 3),
])
def test_huge_configs_are_exact_python_ints(family, sharing, groups, inner):
    V, H, L, I, P = 10**7, 65_536, 1000, 4 * 65_536, 65_536
    E = H if family == "bert" else 4096
    cfg = ModelConfig(name="huge", family=family, vocab_size=V, embedding_dim=E, hidden_dim=H, num_layers=L,
                      num_heads=512, intermediate_dim=I, max_position=P, sharing=sharing, num_groups=groups,
                      inner_group_num=inner)
    c = count_parameters(cfg)
    expected = closed_form(V, E, H, L, I, P, 2, groups, inner, sharing, family == "albert")
    assert type(c.total) is int and c.total == expected
    assert c.total > 2**32  # far beyond int32
    assert c.embedding + c.all_layers + c.pooler == c.total
    df = c.breakdown()
    assert sum(int(x) for x in df["params"]) == c.total


def test_biggest_admitted_config_stays_exact():
    from albert_core.config import MAX_DIM, MAX_LAYERS, MAX_VOCAB

    cfg = ModelConfig(name="max", family="bert", vocab_size=MAX_VOCAB, embedding_dim=MAX_DIM, hidden_dim=MAX_DIM,
                      num_layers=MAX_LAYERS, num_heads=1, intermediate_dim=8 * MAX_DIM, max_position=MAX_DIM,
                      type_vocab_size=MAX_DIM, sharing="none", inner_group_num=1024)
    total = count_parameters(cfg).total
    assert total > 2**63  # would overflow int64
    assert total == closed_form(MAX_VOCAB, MAX_DIM, MAX_DIM, MAX_LAYERS, 8 * MAX_DIM, MAX_DIM, MAX_DIM, 1, 1024,
                                "none", False)


@pytest.mark.parametrize("changes, needle", [
    (dict(vocab_size=10**12), "vocab_size must be at most"),
    (dict(hidden_dim=2**21, embedding_dim=128), "hidden_dim must be at most"),
    (dict(num_layers=10**6), "num_layers must be at most"),
    (dict(vocab_size=10**7, hidden_dim=65_536, num_heads=3), "num_heads (3) must divide hidden_dim (65536)"),
])
def test_huge_invalid_configs_raise_clear_errors(changes, needle):
    with pytest.raises(ValueError) as e:
        ModelConfig(**changes)
    assert needle in str(e.value)
