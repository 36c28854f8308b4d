"""The source text's worked BERT-base example, to the parameter."""

from hypothesis import given, settings
from hypothesis import strategies as st

from albert_core import PRESETS, ModelConfig, count_parameters
from albert_core.families import family


def test_bert_base_matches_source_text():
    c = count_parameters(PRESETS["bert-base"])
    assert c.embedding == 23_837_184
    assert round(c.embedding_pct, 1) == 21.8
    assert c.per_layer == 7_087_872
    assert c.all_layers == 85_054_464
    assert round(c.layers_pct, 1) == 77.7
    assert c.total == 109_482_240
    assert c.embedding + c.all_layers + c.pooler == c.total


def test_breakdown_sums_to_total():
    for cfg in PRESETS.values():  # with the pre-training heads where the family models them
        c = count_parameters(cfg, heads=family(cfg.family).HEADS is None)
        df = c.breakdown()
        assert int(df["params"].sum()) == c.total
        assert abs(df["pct"].sum() - 100) < 1e-9


@settings(max_examples=150, deadline=None)
@given(
    family=st.sampled_from(["bert", "albert"]), sharing=st.sampled_from(["none", "attention", "ffn", "all"]),
    V=st.integers(1, 10**7), E=st.integers(1, 4096), H_heads=st.integers(1, 64), head_dim=st.integers(1, 256),
    L=st.integers(1, 48), I=st.integers(1, 65536), groups=st.integers(1, 6), inner=st.integers(1, 3),
    heads=st.booleans(),
)
def test_closed_form_equals_sum_of_groups(family, sharing, V, E, H_heads, head_dim, L, I, groups, inner, heads):
    H = H_heads * head_dim
    g = groups if L % groups == 0 else 1
    cfg = ModelConfig(name="x", family=family, vocab_size=V, embedding_dim=H if family == "bert" else E,
                      hidden_dim=H, num_layers=L, num_heads=H_heads, intermediate_dim=I, sharing=sharing,
                      num_groups=g, inner_group_num=inner)
    c = count_parameters(cfg, heads=heads)
    by = {"embedding": 0, "layers": 0, "pooler": 0, "heads": 0}
    for grp in c.groups:
        by[grp.component] += grp.params
    assert (c.embedding, c.all_layers, c.pooler, c.heads) == (by["embedding"], by["layers"], by["pooler"], by["heads"])
    assert c.per_layer == sum(grp.per_copy for grp in c.groups if grp.component == "layers")
