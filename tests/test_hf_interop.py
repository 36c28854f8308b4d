"""config.json interop: exact round trips, plain HF dicts, and clear errors for bad ones."""

import json
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from albert_core.config import HIDDEN_ACTS, SHARING_MODES, ConfigError, ModelConfig
from albert_core.engine.building import on_device
from albert_core.engine.models import count_built, hf_model
from albert_core.estimate.params import count_parameters
from albert_core.formats.hf import EXPLORER_KEY, from_hf_config, hf_expressible, to_hf_config
from albert_core.presets import PRESETS


@st.composite
def configs(draw):
    family = draw(st.sampled_from(["bert", "albert"]))
    heads = draw(st.integers(1, 64))
    hidden = heads * draw(st.integers(1, 128))
    layers = draw(st.integers(1, 48))
    return ModelConfig(
        name=draw(st.text(st.characters(codec="utf-8"), min_size=1, max_size=80).filter(str.strip)),
        family=family, vocab_size=draw(st.integers(1, 10**7)),
        embedding_dim=hidden if family == "bert" else draw(st.integers(1, 4096)), hidden_dim=hidden,
        num_layers=layers, num_heads=heads, intermediate_dim=draw(st.integers(1, 20000)),
        dropout=draw(st.floats(0, 0.99)), attention_dropout=draw(st.floats(0, 0.99)),
        max_position=draw(st.integers(1, 8192)), type_vocab_size=draw(st.integers(1, 16)),
        hidden_act=draw(st.sampled_from(HIDDEN_ACTS)), sharing=draw(st.sampled_from(SHARING_MODES)),
        num_groups=draw(st.sampled_from([d for d in range(1, layers + 1) if layers % d == 0])),
        inner_group_num=draw(st.integers(1, 4)),
    )


@settings(max_examples=200, deadline=None)
@given(configs())
def test_round_trip_is_exact(cfg):
    d = to_hf_config(cfg)
    assert from_hf_config(d) == cfg
    assert from_hf_config(json.loads(json.dumps(d))) == cfg  # through real JSON text too


@settings(max_examples=40, deadline=None)
@given(layers=st.integers(1, 12), data=st.data())
def test_plain_albert_dict_counts_like_hf(layers, data):
    """A config.json as Hugging Face writes it (no EXPLORER_KEY), with groups and inner layers."""
    heads = data.draw(st.integers(1, 6))
    d = {
        "model_type": "albert", "vocab_size": data.draw(st.integers(2, 2000)),
        "embedding_size": data.draw(st.integers(1, 64)), "hidden_size": heads * data.draw(st.integers(1, 12)),
        "num_hidden_layers": layers, "num_attention_heads": heads,
        "intermediate_size": data.draw(st.integers(1, 200)),
        "num_hidden_groups": data.draw(st.sampled_from([g for g in range(1, layers + 1) if layers % g == 0])),
        "inner_group_num": data.draw(st.integers(1, 3)),
    }
    cfg = from_hf_config(d)
    assert hf_expressible(cfg)
    from transformers import AlbertConfig, AlbertModel

    with on_device("meta"):
        built = count_built(AlbertModel(AlbertConfig(**d)))  # straight from the dict, not via our builder
    assert count_parameters(cfg).total == built


def test_plain_hf_dicts_of_presets():
    for cfg in PRESETS.values():
        d = {k: v for k, v in to_hf_config(cfg).items() if k != EXPLORER_KEY}
        back = from_hf_config(d)
        assert count_parameters(back).total == count_parameters(cfg).total
        assert count_built(hf_model(back, device="meta")) == count_parameters(cfg).total


GOOD = {"model_type": "albert", "vocab_size": 30000, "hidden_size": 768, "num_hidden_layers": 12,
        "num_attention_heads": 12, "intermediate_size": 3072}


@pytest.mark.parametrize("change, needle", [
    ({"model_type": "gpt2"}, "model_type"),
    ({"model_type": None}, "model_type"),
    ({"vocab_size": None}, "vocab_size"),
    ({"hidden_size": "big"}, "hidden_size"),
    ({"num_hidden_layers": 2.5}, "num_hidden_layers"),
    ({"num_attention_heads": True}, "num_attention_heads"),
    ({"intermediate_size": [3072]}, "intermediate_size"),
    ({"hidden_dropout_prob": "lots"}, "hidden_dropout_prob"),
    ({"hidden_act": 3}, "hidden_act"),
    ({"num_attention_heads": 7}, "num_attention_heads (7) must divide hidden_size (768)"),
    ({EXPLORER_KEY: [1]}, EXPLORER_KEY),
    ({EXPLORER_KEY: {"sharing": 5}}, "sharing"),
])
def test_bad_dicts_name_the_field(change, needle):
    d = dict(GOOD, **change)
    with pytest.raises(ValueError) as e:
        from_hf_config(d)
    assert needle in str(e.value)


@pytest.mark.parametrize("missing", ["vocab_size", "hidden_size", "num_hidden_layers", "num_attention_heads",
                                     "intermediate_size"])
def test_missing_field_is_named(missing):
    d = {k: v for k, v in GOOD.items() if k != missing}
    with pytest.raises(ConfigError, match=f"missing field '{missing}'"):
        from_hf_config(d)


def test_a_config_the_app_cannot_build_is_said_in_the_files_keys():
    """A new user's review: num_hidden_layers 0 in a config.json was refused as "num_layers must be at least 1", a
    key the file does not have."""
    with pytest.raises(ConfigError) as e:
        from_hf_config(dict(GOOD, num_hidden_layers=0, num_attention_heads=7, embedding_size=0))
    said = e.value.problems
    assert "num_hidden_layers must be at least 1, got 0" in said and "embedding_size must be at least 1, got 0" in said
    assert any(p.startswith("num_attention_heads (7) must divide hidden_size (") for p in said), said
    assert not [p for p in said if re.search(r"\b(num_layers|num_heads|hidden_dim|embedding_dim)\b", p)], said


@pytest.mark.parametrize("not_a_dict", [None, [], "albert", 3])
def test_not_an_object(not_a_dict):
    with pytest.raises(ConfigError, match="JSON object"):
        from_hf_config(not_a_dict)


def test_hf_defaults_fill_optional_fields():
    cfg = from_hf_config(GOOD)
    assert (cfg.embedding_dim, cfg.hidden_act, cfg.max_position, cfg.sharing) == (128, "gelu_new", 512, "all")
    bert = from_hf_config(dict(GOOD, model_type="bert"))
    assert (bert.embedding_dim, bert.hidden_act, bert.dropout, bert.sharing) == (768, "gelu", 0.1, "none")


LAYOUTS = [
    dict(family="bert", sharing="none"), dict(family="bert", sharing="all", num_groups=2),
    dict(family="albert", sharing="all", num_groups=2, inner_group_num=2), dict(family="albert", sharing="none"),
    dict(family="albert", sharing="attention", num_groups=2), dict(family="albert", sharing="ffn", inner_group_num=2),
]


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("kind", ["hf", "reference"])
def test_layer_modules_and_hf_built_config_match_the_built_model(layout, kind):
    """models.layer_modules counts the layer modules PyTorch creates; hf_built_config counts what HF builds."""
    from albert_core.engine.models import hf_model, layer_modules, reference_model
    from albert_core.formats.hf import hf_built_config

    base = dict(name="t", vocab_size=50, hidden_dim=32, num_heads=4, intermediate_dim=64, num_layers=4)
    embedding = {"embedding_dim": 32} if layout["family"] == "bert" else {"embedding_dim": 16}
    cfg = ModelConfig(**base, **embedding, **layout)
    model = hf_model(cfg) if kind == "hf" else reference_model(cfg)
    def distinct(*names: str) -> int:
        return len({id(m) for m in model.modules() if type(m).__name__ in names})

    built = distinct("BertLayer", "AlbertLayer") if kind == "hf" else max(distinct("Attention"), distinct("FeedForward"))
    assert built == layer_modules(cfg, kind)
    if kind == "hf":
        assert sum(p.numel() for p in model.parameters()) == count_parameters(hf_built_config(cfg)).total
        assert hf_built_config(cfg).name == cfg.name
