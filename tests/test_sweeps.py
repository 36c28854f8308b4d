"""Sweeps: every row equals count_parameters of its config; invalid rows carry validate's reason."""

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from albert_core.config import _INT_FIELDS, FAMILIES, SHARING_MODES, ConfigError, ModelConfig
from albert_core.estimate.params import count_parameters, factorization_savings, sharing_savings
from albert_core.estimate.sweeps import COUNT_COLUMNS, embedding_sweep, grid, sharing_sweep, sweep
from albert_core.families import family
from albert_core.presets import PRESETS


def check_rows(df: pd.DataFrame, base: ModelConfig, fields: list[str], heads: bool = False) -> None:
    """Each row against the scalar model of record (or against ModelConfig's own error)."""
    for _, row in df.iterrows():
        changes = {f: row[f] for f in fields}
        changes = {f: (v.item() if hasattr(v, "item") else v) for f, v in changes.items()}
        fam = changes.get("family", base.family)
        own_width = fam in FAMILIES and family(fam).OWN_EMBEDDING_WIDTH  # an unknown family: as BERT (sweeps)
        if not own_width and "hidden_dim" in changes and "embedding_dim" not in changes:
            changes["embedding_dim"] = changes["hidden_dim"]  # sweeps: BERT's E follows a swept H
        try:
            cfg = base.replace(**changes)
        except (ConfigError, TypeError) as e:
            assert not row["valid"], f"{changes} accepted by the sweep but not by ModelConfig: {e}"
            assert isinstance(row["error"], str) and row["error"]
            if isinstance(e, ConfigError):
                assert row["error"] == str(e)
            continue
        assert row["valid"], f"{changes} is valid but the sweep says: {row['error']}"
        c = count_parameters(cfg, heads=heads)
        for col in COUNT_COLUMNS:
            assert int(row[col]) == getattr(c, col), (changes, col)
        assert row["embedding_pct"] == pytest.approx(c.embedding_pct, rel=1e-12)
        assert row["layers_pct"] == pytest.approx(c.layers_pct, rel=1e-12)
        assert row["name"] == base.name


@pytest.mark.parametrize("field", sorted(_INT_FIELDS))
@pytest.mark.parametrize("preset", ["bert-base", "albert-base"])
def test_every_int_field_sweeps_exactly(preset, field):
    base = PRESETS[preset]
    values = [1, 2, 3, 5, 6, 8, 12, 24, 64, 128, 768, 1000, 4096, 0, -4, 10**9, 2**31]
    df = sweep(base, field, values)
    assert len(df) == len(values) and list(df[field]) == values
    check_rows(df, base, [field])


@pytest.mark.parametrize("heads", [False, True])
def test_text_fields_and_heads(heads):
    base = PRESETS["albert-large"].replace(num_groups=4)
    for field, values in [("sharing", [*SHARING_MODES, "half"]), ("family", ["albert", "bert", "gpt"]),
                          ("hidden_act", ["gelu", "relu", "swish"]), ("dropout", [0.0, 0.5, 1.0, "x"])]:
        df = sweep(base, field, values, heads=heads)
        assert len(df) == len(values)
        check_rows(df, base, [field], heads=heads)


def test_invalid_rows_are_reported_not_raised():
    df = sweep(PRESETS["albert-base"], "hidden_dim", [768, 770, 0, "wide", 2.5, None])
    assert list(df["valid"]) == [True, False, False, False, False, False]
    assert "num_heads (12) must divide hidden_dim (770): try 11 heads" == df["error"][1]
    assert "at least 1" in df["error"][2] and "whole number" in df["error"][3]
    assert df["total"].isna().tolist() == [False, True, True, True, True, True]
    assert np.isnan(df["embedding_pct"][1])


def test_bert_hidden_sweep_moves_embedding_with_it():
    base = PRESETS["bert-base"]
    df = sweep(base, "hidden_dim", [384, 768, 1536])
    assert df["valid"].all()
    for h, total in zip(df["hidden_dim"], df["total"], strict=True):
        assert total == count_parameters(base.replace(hidden_dim=int(h), embedding_dim=int(h))).total


def test_grid_order_and_exactness():
    base = PRESETS["albert-base"]
    df = grid(base, sharing=["none", "ffn"], num_layers=[6, 12, 7], hidden_dim=[384, 768])
    assert len(df) == 12
    assert list(df["sharing"][:6]) == ["none"] * 6
    assert list(df["num_layers"][:6]) == [6, 6, 12, 12, 7, 7]
    assert list(df["hidden_dim"][:4]) == [384, 768, 384, 768]
    check_rows(df, base, ["sharing", "num_layers", "hidden_dim"])


def test_ten_thousand_rows_vectorized_and_exact():
    base = PRESETS["albert-xxlarge"]
    df = grid(base, vocab_size=np.arange(1000, 101_000, 1000), num_layers=range(1, 101))
    assert len(df) == 10_000 and df["valid"].all()
    sample = df.sample(200, random_state=0)
    check_rows(sample, base, ["vocab_size", "num_layers"])
    assert str(df["total"].dtype) == "Int64"


def test_huge_counts_switch_to_python_ints():
    base = ModelConfig(name="huge", family="bert", vocab_size=10**7, embedding_dim=65_536, hidden_dim=65_536,
                       num_layers=100_000, num_heads=1, intermediate_dim=8 * 2**20, sharing="none",
                       inner_group_num=1024)
    df = sweep(base, "hidden_dim", [2**16, 2**19, 2**20])
    assert df["total"].dtype == object
    assert max(df["total"]) > 2**63
    check_rows(df, base, ["hidden_dim"])
    # just below the switch stays int64, and exact
    small = sweep(PRESETS["bert-base"], "num_layers", [1, 12, 100_000])
    assert str(small["total"].dtype) == "Int64"
    check_rows(small, PRESETS["bert-base"], ["num_layers"])


@st.composite
def sweep_cases(draw):
    family = draw(st.sampled_from(["bert", "albert"]))
    heads = draw(st.integers(1, 16))
    hidden = heads * draw(st.integers(1, 64))
    layers = draw(st.integers(1, 24))
    base = ModelConfig(
        name="h", family=family, vocab_size=draw(st.integers(1, 10**6)),
        embedding_dim=hidden if family == "bert" else draw(st.integers(1, 512)), hidden_dim=hidden,
        num_layers=layers, num_heads=heads, intermediate_dim=draw(st.integers(1, 8192)),
        max_position=draw(st.integers(1, 4096)), sharing=draw(st.sampled_from(SHARING_MODES)),
        num_groups=draw(st.sampled_from([g for g in range(1, layers + 1) if layers % g == 0])),
        inner_group_num=draw(st.integers(1, 4)),
    )
    field = draw(st.sampled_from(sorted(_INT_FIELDS)))
    values = draw(st.lists(st.integers(-2, 5000), min_size=1, max_size=12))
    return base, field, values, draw(st.booleans())


@settings(max_examples=60, deadline=None)
@given(sweep_cases())
def test_random_sweeps_match_count_parameters(case):
    base, field, values, heads = case
    df = sweep(base, field, values, heads=heads)
    check_rows(df, base, [field], heads=heads)


def test_sharing_sweep_savings():
    base = PRESETS["albert-base"]
    df = sharing_sweep(base, num_groups=[1, 2, 3, 4, 5])
    assert len(df) == 4 * 5
    check_rows(df, base, ["sharing", "num_groups"])
    for _, row in df[df["valid"]].iterrows():
        cfg = base.replace(sharing=row["sharing"], num_groups=int(row["num_groups"]))
        assert row["saved_vs_none"] == sharing_savings(cfg)
    assert not df[(df["num_groups"] == 5) & (df["sharing"] != "none")]["valid"].any()  # 5 does not divide 12


def test_embedding_sweep_is_factorization_savings():
    base = PRESETS["albert-xxlarge"]
    df = embedding_sweep(base, [16, 64, 128, 256, 4096])
    for _, row in df.iterrows():
        assert row["factorization_savings"] == factorization_savings(base.replace(embedding_dim=int(row["embedding_dim"])))
    # E = H: the projection is pure cost, a negative saving of exactly one H×H Linear
    assert df["factorization_savings"].iloc[-1] == -(4096 * 4096 + 4096)
    # from a BERT base, the sweep factorizes it
    assert embedding_sweep(PRESETS["bert-base"], [128])["valid"].all()


@pytest.mark.parametrize("kwargs, needle", [
    (dict(), "at least one field"),
    (dict(width=[1, 2]), "unknown field 'width'"),
    (dict(hidden_dim=[]), "no values given for hidden_dim"),
])
def test_bad_sweep_arguments(kwargs, needle):
    with pytest.raises(ValueError, match=needle):
        grid(PRESETS["albert-base"], **kwargs)


def test_an_unknown_family_swept_with_hidden_dim_moves_embedding_dim_as_bert_does():
    """The draw that found check_rows following E only for "bert": a family no module models is swept as BERT
    (E follows H), so hidden_dim 0 there reports embedding_dim 0 too, as ModelConfig does for that config."""
    base = PRESETS["bert-base"].replace(name="h", vocab_size=1, embedding_dim=1, hidden_dim=1, num_layers=1,
                                        num_heads=1, intermediate_dim=1, max_position=1)
    df = grid(base, family=["gpt", "bert", "albert"], hidden_dim=[0, 5])
    check_rows(df, base, ["family", "hidden_dim"])
    gpt0 = df[(df["family"] == "gpt") & (df["hidden_dim"] == 0)].iloc[0]
    assert gpt0["error"].startswith("embedding_dim must be at least 1, got 0; hidden_dim must be at least 1")


@settings(max_examples=40, deadline=None)
@given(case=sweep_cases(), data=st.data())
def test_random_grids_match_count_parameters_and_validate(case, data):
    """Two or three fields at once, linked ones (heads/hidden/E, groups/layers) included: every row's count,
    and every invalid row's message, equal what count_parameters and ModelConfig say for that config."""
    base, _, _, heads = case
    fields = data.draw(st.lists(st.sampled_from(["hidden_dim", "num_heads", "embedding_dim", "num_groups",
                                                 "num_layers", "vocab_size", "sharing", "family"]),
                                min_size=2, max_size=3, unique=True))
    text = {"sharing": [*SHARING_MODES, "half"], "family": ["bert", "albert", "gpt"]}
    values = {f: (data.draw(st.lists(st.sampled_from(text[f]), min_size=1, max_size=3)) if f in text
                  else data.draw(st.lists(st.integers(-1, 40), min_size=1, max_size=6)))
              for f in fields}
    df = grid(base, heads=heads, **values)
    assert len(df) == np.prod([len(v) for v in values.values()])
    check_rows(df, base, fields, heads=heads)


@pytest.mark.parametrize("name", ["bert-base", "albert-xxlarge"])
def test_scaled_keeps_ratios_and_validity(name):
    from albert_core.estimate.sweeps import scaled

    cfg = PRESETS[name]
    wide = scaled(cfg, "hidden_dim", 2 * cfg.hidden_dim)
    assert wide.intermediate_dim == 2 * cfg.intermediate_dim  # FFN ratio kept
    assert wide.head_dim == cfg.head_dim  # head width kept, so the head count doubles
    assert wide.embedding_dim == (wide.hidden_dim if cfg.family == "bert" else cfg.embedding_dim)
    grouped = cfg.replace(sharing="all", num_groups=cfg.num_layers // 2 if cfg.num_layers % 2 == 0 else 1)
    assert scaled(grouped, "num_layers", 7).num_groups == 1  # uneven groups drop to one group
