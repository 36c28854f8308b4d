"""The source text's worked BERT-base example, to the parameter."""

from albert_core import PRESETS, count_parameters


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
    for cfg in PRESETS.values():
        c = count_parameters(cfg, heads=True)
        df = c.breakdown()
        assert int(df["params"].sum()) == c.total
        assert abs(df["pct"].sum() - 100) < 1e-9
