"""Every family: count_parameters equals sum(p.numel()) of Hugging Face's AutoModel, on random config.json dicts.

Eight families (albert with groups and inner layers too). Each strategy draws a config.json as the
family's config class reads it (its own key names and options: RoBERTa pad offsets, ELECTRA/DeBERTa embedding_size, DeBERTa's buckets, spans, share_att_key, pos_att_type
subsets, position_biased_input, norm_rel_ebd; ModernBERT's bias flags and global/local mix). The config is
parsed by from_hf_config and the model is built by AutoConfig.for_model(model_type, **d) + AutoModel on the
meta device, independently of our own mapping (to_hf_config is checked separately through models.hf_model).
"""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from albert_core.config import HIDDEN_ACTS
from albert_core.engine.building import on_device
from albert_core.engine.models import count_built, hf_model
from albert_core.estimate.params import count_parameters, parameter_groups
from albert_core.formats.hf import from_hf_config, hf_expressible, to_hf_config

N = 100  # random configs per family (issue 10: at least 100)


def auto_count(d: dict) -> int:
    """sum(p.numel()) of AutoModel for the config.json d, built on the meta device."""
    from transformers import AutoConfig, AutoModel
    from transformers.utils import logging

    logging.set_verbosity_error()
    conf = AutoConfig.for_model(**d)
    with on_device("meta"):
        return count_built(AutoModel.from_config(conf))


@st.composite
def _core(draw, hidden_key="hidden_size", layers_key="num_hidden_layers", heads_key="num_attention_heads",
          ffn_key="intermediate_size", max_layers=4):
    heads = draw(st.integers(1, 6))
    return {"vocab_size": draw(st.integers(8, 3000)), hidden_key: heads * draw(st.integers(1, 12)),
            layers_key: draw(st.integers(1, max_layers)), heads_key: heads, ffn_key: draw(st.integers(1, 96))}


@st.composite
def bert_dicts(draw):
    return {"model_type": "bert", **draw(_core()), "max_position_embeddings": draw(st.integers(1, 600)),
            "type_vocab_size": draw(st.integers(1, 4)), "hidden_act": draw(st.sampled_from(HIDDEN_ACTS))}


@st.composite
def albert_dicts(draw):
    d = {"model_type": "albert", **draw(_core()), "embedding_size": draw(st.integers(1, 64)),
         "max_position_embeddings": draw(st.integers(1, 600)), "type_vocab_size": draw(st.integers(1, 4)),
         "hidden_act": draw(st.sampled_from(HIDDEN_ACTS)), "inner_group_num": draw(st.integers(1, 3))}
    layers = d["num_hidden_layers"]
    return {**d, "num_hidden_groups": draw(st.sampled_from([g for g in range(1, layers + 1) if layers % g == 0]))}


@st.composite
def roberta_dicts(draw):
    d = {"model_type": draw(st.sampled_from(["roberta", "xlm-roberta", "camembert"])), **draw(_core())}
    pad = draw(st.integers(0, 6))
    return {**d, "pad_token_id": pad, "max_position_embeddings": draw(st.integers(pad + 2, 600)),
            "type_vocab_size": draw(st.integers(1, 3)), "hidden_act": draw(st.sampled_from(HIDDEN_ACTS))}


@st.composite
def distilbert_dicts(draw):
    return {"model_type": "distilbert", **draw(_core("dim", "n_layers", "n_heads", "hidden_dim")),
            "max_position_embeddings": draw(st.integers(1, 600)), "activation": draw(st.sampled_from(HIDDEN_ACTS)),
            "dropout": draw(st.sampled_from([0.0, 0.1])), "sinusoidal_pos_embds": False}


@st.composite
def electra_dicts(draw):
    d = {"model_type": "electra", **draw(_core())}
    e = draw(st.one_of(st.integers(1, 64), st.just(d["hidden_size"])))  # the projection only when E != H
    return {**d, "embedding_size": e, "max_position_embeddings": draw(st.integers(1, 600)),
            "type_vocab_size": draw(st.integers(1, 3))}


@st.composite
def deberta_dicts(draw):
    d = {"model_type": "deberta-v2", **draw(_core()), "max_position_embeddings": draw(st.integers(1, 600)),
         "type_vocab_size": draw(st.integers(0, 3)), "relative_attention": draw(st.booleans()),
         "position_buckets": draw(st.sampled_from([-1, 0, 1, 7, 64])),
         "max_relative_positions": draw(st.sampled_from([-1, 0, 1, 9, 128])),
         "share_att_key": draw(st.booleans()),
         "pos_att_type": draw(st.sampled_from([None, "c2p", "p2c", "p2c|c2p", "c2p|p2c", ["c2p"], ["p2c", "c2p"]])),
         "position_biased_input": draw(st.booleans()),
         "norm_rel_ebd": draw(st.sampled_from(["none", "layer_norm", "layer_norm|none"]))}
    e = draw(st.sampled_from(["absent", "hidden", "other"]))
    if e != "absent":
        d["embedding_size"] = d["hidden_size"] if e == "hidden" else draw(st.integers(1, 64))
    return d


@st.composite
def modernbert_dicts(draw):
    d = {"model_type": "modernbert", **draw(_core(max_layers=7))}
    d["hidden_size"] = 2 * d["hidden_size"]  # rotary: even head width
    ids = {k: 0 for k in ("pad_token_id", "bos_token_id", "eos_token_id", "cls_token_id", "sep_token_id")}
    return {**d, **ids, "max_position_embeddings": draw(st.integers(1, 9000)),
            "attention_bias": draw(st.booleans()), "mlp_bias": draw(st.booleans()), "norm_bias": draw(st.booleans()),
            "global_attn_every_n_layers": draw(st.integers(1, 4)), "local_attention": draw(st.sampled_from([2, 64, 128])),
            "hidden_activation": draw(st.sampled_from(["gelu", "silu", "relu"]))}


@st.composite
def mpnet_dicts(draw):
    """MPNetConfig: buckets of at least 32 (compute_position_bias makes 32); pad_token_id does not move the positions
    (padding_idx is fixed at 1), so it is drawn too."""
    return {"model_type": "mpnet", **draw(_core()), "max_position_embeddings": draw(st.integers(3, 600)),
            "relative_attention_num_buckets": draw(st.integers(32, 300)), "pad_token_id": draw(st.integers(0, 5)),
            "hidden_act": draw(st.sampled_from(HIDDEN_ACTS))}


STRATEGIES = {"bert": bert_dicts, "albert": albert_dicts, "roberta": roberta_dicts, "distilbert": distilbert_dicts, "electra": electra_dicts,
              "deberta-v2": deberta_dicts, "modernbert": modernbert_dicts, "mpnet": mpnet_dicts}


def check(d: dict) -> None:
    cfg = from_hf_config(d)
    c = count_parameters(cfg)
    built = auto_count(d)
    assert c.total == built, (d, c.total, built)
    assert sum(g.params for g in parameter_groups(cfg)) == c.total  # the breakdown adds up to the closed form
    assert c.embedding + c.all_layers + c.pooler == c.total and c.heads == 0
    assert hf_expressible(cfg)
    assert from_hf_config(to_hf_config(cfg)) == cfg  # our own config.json round-trips
    assert count_built(hf_model(cfg)) == built  # and Hugging Face builds the same from it


@pytest.mark.parametrize("family", sorted(STRATEGIES))
def test_count_equals_automodel(family):
    @settings(max_examples=N, deadline=None)
    @given(STRATEGIES[family]())
    def run(d):
        check(d)

    run()


@pytest.mark.parametrize("family", ["roberta", "distilbert", "electra", "deberta-v2", "modernbert", "mpnet"])
def test_heads_refused_with_a_reason(family):
    from albert_core.presets import PRESET_FAMILIES, PRESETS

    cfg = PRESETS[PRESET_FAMILIES[family][0]]
    with pytest.raises(ValueError, match=f"heads: for family '{family}'.*count the base model"):
        count_parameters(cfg, heads=True)
    with pytest.raises(ValueError, match="count the base model"):
        hf_model(cfg, heads=True)
    assert count_parameters(cfg, heads=False).heads == 0


@pytest.mark.parametrize("sharing", ["attention", "ffn", "all"])
@pytest.mark.parametrize("family", ["roberta", "distilbert", "electra", "deberta-v2", "modernbert", "mpnet"])
def test_sharing_stores_one_copy_per_group(family, sharing):
    """What-if sharing for any family: exactly the unshared copies go, nothing else changes."""
    from albert_core.estimate.params import stored_copies
    from albert_core.presets import PRESET_FAMILIES, PRESETS

    cfg = PRESETS[PRESET_FAMILIES[family][0]]
    shared = cfg.replace(sharing=sharing)
    groups_none = {g.module: g for g in parameter_groups(cfg)}
    for g in parameter_groups(shared):
        n = groups_none[g.module]
        if g.sublayer in ("attention", "ffn") and sharing in (g.sublayer, "all"):
            assert g.copies == n.copies - (cfg.num_layers - 1)
        else:
            assert g.copies == n.copies
    assert sum(g.params for g in parameter_groups(shared)) == count_parameters(shared).total
    assert stored_copies(shared, "attention") <= stored_copies(cfg, "attention")


SWEPT = ("vocab_size", "hidden_dim", "embedding_dim", "type_vocab_size", "max_position", "position_offset",
         "max_relative_positions", "position_buckets", "global_attn_every_n_layers", "local_attention")


@pytest.mark.parametrize("field", SWEPT)
@pytest.mark.parametrize("preset", ["roberta-base", "distilbert-base-uncased", "electra-small-discriminator",
                                    "deberta-v3-base", "ModernBERT-base"])
def test_sweeps_of_every_family_equal_count_parameters(preset, field):
    """albert_core.estimate.sweeps (vectorized family sizes and rules) against count_parameters / ConfigError row by row."""
    from albert_core.config import ConfigError
    from albert_core.estimate.sweeps import COUNT_COLUMNS, sweep
    from albert_core.families import family
    from albert_core.presets import PRESETS

    base = PRESETS[preset]
    values = [-2, -1, 0, 1, 2, 3, 64, 256, 768, 1000, 50000]
    df = sweep(base, field, values)
    for v, (_, row) in zip(values, df.iterrows(), strict=True):
        changes = {field: v}
        if field == "hidden_dim" and not family(base.family).OWN_EMBEDDING_WIDTH:
            changes["embedding_dim"] = v  # the sweep moves E with H where E is H
        try:
            cfg = base.replace(**changes)
        except ConfigError as e:
            assert not row["valid"] and row["error"] == str(e), (v, row["error"], str(e))
            continue
        assert row["valid"], (v, row["error"])
        c = count_parameters(cfg)
        assert [int(row[k]) for k in COUNT_COLUMNS] == [getattr(c, k) for k in COUNT_COLUMNS], v
