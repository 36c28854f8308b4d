"""config.json of every family: published presets built by Hugging Face, keys that are not modelled refused by
name, and the family's own defaults (sharing, segment table, position offset)."""

import json

import pytest
from test_families_params import auto_count

from albert_core.config import ConfigError, ModelConfig
from albert_core.estimate.params import count_parameters
from albert_core.formats.hf import from_hf_config
from albert_core.formats.upload import parse_upload
from albert_core.presets import HUB_CONFIGS, PRESET_FAMILIES, PRESETS

BERT_BASE = {"model_type": "bert", "vocab_size": 30522, "hidden_size": 768, "num_hidden_layers": 12,
             "num_attention_heads": 12, "intermediate_size": 3072}


@pytest.mark.parametrize("name", sorted(HUB_CONFIGS))
def test_preset_total_equals_what_hugging_face_builds(name):
    _, d = HUB_CONFIGS[name]
    assert count_parameters(PRESETS[name]).total == auto_count(d)


def test_presets_are_grouped_by_family_and_old_names_stay():
    assert sorted(n for names in PRESET_FAMILIES.values() for n in names) == sorted(PRESETS)  # every preset, once
    assert {"bert-base", "albert-base", "albert-xxlarge"} <= set(PRESET_FAMILIES["bert"] + PRESET_FAMILIES["albert"])
    for fam, names in PRESET_FAMILIES.items():
        assert all(PRESETS[n].family == fam for n in names)
    assert set(PRESET_FAMILIES) == {"bert", "albert", "roberta", "distilbert", "electra", "deberta-v2", "modernbert", "mpnet"}


def test_roberta_positions_are_offset_by_the_pad_index():
    cfg = PRESETS["roberta-base"]
    assert (cfg.max_position, cfg.position_offset, cfg.type_vocab_size) == (512, 2, 1)  # 514 rows = 512 + pad + 1
    assert PRESETS["ModernBERT-base"].max_position == 8192 and PRESETS["deberta-v3-base"].position_biased_input is False


def test_decoder_bert_is_refused_not_miscounted():
    """Issue 10: counted 109,482,240 where Hugging Face builds 137,849,088."""
    d = {**BERT_BASE, "is_decoder": True, "add_cross_attention": True}
    assert auto_count(d) == 137_849_088  # what we would have miscounted
    with pytest.raises(ConfigError) as e:
        from_hf_config(d)
    assert "is_decoder=true is not supported" in str(e.value)
    assert "add_cross_attention=true is not supported" in str(e.value)
    assert from_hf_config({**BERT_BASE, "is_decoder": False, "add_cross_attention": False})  # off is fine


@pytest.mark.parametrize("model_type,key,value", [
    ("bert", "position_embedding_type", "relative_key"),
    ("bert", "position_embedding_type", "relative_key_query"),
    ("roberta", "position_embedding_type", "relative_key"),
    ("electra", "add_cross_attention", True),
    ("albert", "position_embedding_type", "relative_key"),
    ("bert", "chunk_size_feed_forward", 64),
    ("bert", "pruned_heads", {"0": [1]}),
    ("bert", "adapters", {"a": 1}),
    ("deberta-v2", "conv_kernel_size", 3),
    ("deberta-v2", "attention_head_size", 32),
    ("deberta-v2", "pos_att_type", "p2p|c2p"),
    ("distilbert", "sinusoidal_pos_embds", True),
    ("modernbert", "embedding_dropout", 0.1),
    ("modernbert", "layer_types", ["full_attention"] * 12),
    ("modernbert", "is_decoder", True),
    ("bert", "hidden_act", "swish_new"),
    ("modernbert", "hidden_activation", "mish"),
])
def test_keys_that_are_not_modelled_are_refused_by_name(model_type, key, value):
    if model_type in ("bert", "albert"):
        base = {**BERT_BASE, "model_type": model_type}
    else:  # the first published config.json of that model_type
        base = next(d for _, d in HUB_CONFIGS.values() if d["model_type"] == model_type)
    d = {**base, key: value}
    with pytest.raises(ConfigError) as e:
        from_hf_config(d)
    assert key in str(e.value)
    from_hf_config(base)  # the same config without the key is fine


def test_explorer_config_without_sharing_gets_the_family_default():
    """Issue 10: a bert config without `sharing` was counted with every layer shared (31,515,648)."""
    bert = {k: v for k, v in PRESETS["bert-base"].to_dict().items() if k != "sharing"}
    cfg = ModelConfig.from_dict(bert)
    assert cfg.sharing == "none" and count_parameters(cfg).total == 109_482_240
    up = parse_upload("bert.json", json.dumps(bert).encode())
    assert isinstance(up, ModelConfig) and count_parameters(up).total == 109_482_240
    albert = {k: v for k, v in PRESETS["albert-base"].to_dict().items() if k != "sharing"}
    assert ModelConfig.from_dict(albert).sharing == "all"
    for fam in ("roberta", "distilbert", "electra", "deberta-v2", "modernbert"):
        d = {k: v for k, v in PRESETS[PRESET_FAMILIES[fam][0]].to_dict().items() if k != "sharing"}
        assert ModelConfig.from_dict(d).sharing == "none"
    plain = {**BERT_BASE, "albert_explorer": {"name": "mine"}}  # our config.json, no sharing inside
    assert from_hf_config(plain).sharing == "none"


@pytest.mark.parametrize("changes,fragment", [
    ({"family": "bert", "position_offset": 2}, "position_offset is a field of roberta"),
    ({"family": "roberta", "position_offset": 0}, "position_offset must be at least 1 for family 'roberta'"),
    ({"family": "distilbert", "type_vocab_size": 2}, "type_vocab_size must be 0 for family 'distilbert'"),
    ({"family": "bert", "type_vocab_size": 0}, "type_vocab_size must be at least 1 for family 'bert'"),
    ({"family": "roberta", "position_offset": 2, "embedding_dim": 128}, "embedding_dim (128) must equal hidden_dim"),
    ({"family": "bert", "relative_attention": True}, "relative_attention is a field of deberta-v2"),
    ({"family": "bert", "mlp_bias": False}, "mlp_bias is a field of modernbert"),
    ({"family": "deberta-v2", "type_vocab_size": 0, "pos_att_type": "p2p"}, "pos_att_type must be one of"),
    ({"family": "deberta-v2", "type_vocab_size": 0, "position_buckets": 0}, "position_buckets must be -1"),
])
def test_family_rules_say_what_to_change(changes, fragment):
    with pytest.raises(ConfigError) as e:
        PRESETS["bert-base"].replace(**changes)
    assert fragment in str(e.value)


def test_bool_fields_from_text_and_json():
    from albert_core.config import coerce_field

    assert coerce_field("mlp_bias", "0") is False and coerce_field("mlp_bias", "true") is True
    assert coerce_field("share_att_key", True) is True
    for bad in (1, 0.0, "maybe", None):
        with pytest.raises(ValueError, match="share_att_key must be true or false"):
            coerce_field("share_att_key", bad)
