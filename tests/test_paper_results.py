"""The ALBERT paper's results tables (albert_core.estimate.paper_results) against its text and albert_core's exact counts.

Counting only (albert_core.estimate.params is analytic): no model is built, the whole file runs in about a second.
What each check holds (docs/parameters.md, "The paper's results tables", explains the numbers):
1. every row equals the transcription (tests/data/albert-paper-tables.md, the project's copy of the tables
   transcribed from the paper's v6 and checked twice), number for number, and every printed Avg is its row's
   mean to the paper's rounding (±0.05);
2. every printed parameter count is albert_core's exact count within the paper's rounding to whole millions,
   under the one accounting that fits (no E→H projection at E = H; not-shared rows without the pooler), except
   five wide rows (H ≥ 2,048), whose gaps are pinned; and within a documented relative tolerance per table in
   Hugging Face's layout;
3. the paper's inconsistencies are named where they apply, and the same network under the same training has
   the same scores and parameters in every table unless an inconsistency names the pair.
"""

import re
from dataclasses import FrozenInstanceError
from itertools import combinations
from pathlib import Path

import pytest

from albert_core.config import ModelConfig
from albert_core.estimate import paper_results as P
from albert_core.estimate.flops import forward_flops
from albert_core.estimate.params import count_parameters
from albert_core.presets import PRESETS

M = 1_000_000
ROOT = Path(__file__).resolve().parents[1]
TRANSCRIPTION = ROOT / "tests" / "data" / "albert-paper-tables.md"
PRINTED = [r for r in P.ROWS if r.params_m is not None]

# Rows whose printed count no accounting we found reproduces: (lo, hi) of printed - exact, in millions.
# All are wide (H >= 2,048) and all printed above our count; Hugging Face's model cards agree with our counts
# (58M, 223M for the released xlarge/xxlarge), so the gaps are pinned, not tolerated loosely.
UNREPRODUCED = {
    "t2-albert-xlarge": (1.2, 1.3),  # 60M; ours 58.72M (Table 12's H = 2,048 row prints the same 60M)
    "t12-h2048": (1.2, 1.3),
    "t2-albert-xxlarge": (12.3, 12.5),  # 235M; ours 222.60M (the text says 233M, Table 12 225M)
    "t12-h4096": (2.3, 2.5),  # 225M
    "t12-h6144": (3.4, 3.6),  # 499M; ours 495.52M
}
# max |exact - printed| / printed in Hugging Face's layout (pooler in, E→H projection always), by table: the
# observed maximum rounded up to the next 0.5% step, so a drift of a few tenths of a percent fails. Largest rows:
# Table 2 ALBERT-xxlarge -5.28%, Table 3 all-shared E = 64 -3.19%, Table 4 all-shared E = 128 -2.64%,
# Tables 11/12 ALBERT-large 18M -1.76% and H = 2,048 60M -2.13%.
TOLERANCE = {2: 0.055, 3: 0.035, 4: 0.030, 11: 0.020, 12: 0.025}


def named_together(a: P.PaperRow, b: P.PaperRow) -> bool:
    return any(a.key in i.rows and b.key in i.rows for i in P.INCONSISTENCIES)


def trained_alike(a: P.PaperRow, b: P.PaperRow) -> bool:
    return (a.training.steps, a.training.variant) == (b.training.steps, b.training.variant)


# ---- 1. the rows are the paper's --------------------------------------------------------------------------
def _printed_numbers(r: P.PaperRow) -> list[float]:
    """The numbers of r's line in its table, left to right, as the transcription prints them."""
    s = r.scores
    scores = [*s.squad11, *s.squad20, s.mnli, s.sst2, s.race, s.avg]
    a = r.arch
    if r.table == 2:
        return [r.params_m, *scores, r.speedup]
    if r.table in (3, 4):
        return [a.E, r.params_m, *scores]
    if r.table == 5:
        return [v for _, v in r.intrinsic] + scores
    if r.table == 6:
        return [r.training.steps / 1000, r.training.hours, *scores]
    if r.table in (11, 13):
        return [a.L, *([r.params_m] if r.table == 11 else []), *scores]
    if r.table == 12:
        return [a.H, r.params_m, *scores]
    return scores  # Tables 7 and 8


def _transcribed() -> dict[int, list[tuple[list[str], list[float]]]]:
    """Table number -> its rows (text cells, numbers) from the transcription's Markdown tables."""
    out: dict[int, list[tuple[list[str], list[float]]]] = {}
    table = None
    for line in TRANSCRIPTION.read_text(encoding="utf-8").splitlines():
        head = re.match(r"### [\d.]+ Table (\d+)\.", line)
        if head:
            table, seen_header = int(head.group(1)), False
            continue
        if table is None or not line.startswith("|"):
            continue
        if not seen_header:  # the header line, then the |---| line
            seen_header = line.startswith("|---")
            continue
        cells = [c.strip().replace("**", "") for c in line.strip("|").split("|")]
        text = [c for c in cells if c and not re.search(r"\d", c)]
        nums = [float(x) for x in re.findall(r"\d+(?:\.\d+)?", " ".join(cells))]
        out.setdefault(table, []).append((text, nums))
    return out


def test_rows_equal_the_transcription():
    md = _transcribed()
    tables = sorted({r.table for r in P.ROWS})
    assert tables == [2, 3, 4, 5, 6, 7, 8, 11, 12, 13]
    for t in tables:
        ours = P.rows_of(t)
        assert [nums for _, nums in md[t]] == [pytest.approx(_printed_numbers(r)) for r in ours], f"Table {t}"
        for (text, _), r in zip(md[t], ours, strict=True):
            if t in (3, 4):
                assert P.SHARING_LABELS[r.arch.sharing] in text, (t, r.key, text)
            if t == 2:
                assert " ".join(text) == r.label
    # Table 1: the six models' printed parameters are Table 2's
    assert {r.label.replace(" ", "-"): r.params_m for r in P.rows_of(2)} == P.TABLE_1_PARAMS_M


def test_architectures_follow_section_3_1():
    for r in P.ROWS:
        cfg = r.config()
        assert cfg.vocab_size == 30_000 and cfg.intermediate_dim == 4 * cfg.hidden_dim  # footnote 1; Sec. 3.1
        assert cfg.num_heads == cfg.hidden_dim // 64 and cfg.max_position == 512  # Sec. 3.1; Sec. 4.1
        assert (cfg.family == "bert") == (r.label.startswith("BERT")), r.key
    assert {k: (a.H, a.L, a.E) for k, a in P.MODELS.items()} == {  # Table 1
        "BERT-base": (768, 12, 768), "BERT-large": (1024, 24, 1024), "ALBERT-base": (768, 12, 128),
        "ALBERT-large": (1024, 24, 128), "ALBERT-xlarge": (2048, 24, 128), "ALBERT-xxlarge": (4096, 12, 128)}
    assert len({r.key for r in P.ROWS}) == len(P.ROWS) == 43
    assert all(r.caption == P.CAPTIONS[r.table] for r in P.ROWS)


def test_rows_are_frozen():
    with pytest.raises(FrozenInstanceError):
        P.ROWS[0].scores.avg = 99.0  # type: ignore[misc]
    with pytest.raises(FrozenInstanceError):
        P.ROWS[0].arch.H = 1  # type: ignore[misc]


@pytest.mark.parametrize("row", P.ROWS, ids=[r.key for r in P.ROWS])
def test_avg_is_the_mean_of_its_row(row):
    # Table 2's caption: SQuAD F1 and EM averaged first, then the five tasks; printed to one decimal
    assert abs(row.scores.computed_avg() - row.scores.avg) <= 0.05 + 1e-9


# ---- 2. printed parameters against exact counts -------------------------------------------------------------
@pytest.mark.parametrize("row", PRINTED, ids=[r.key for r in PRINTED])
def test_printed_parameters_within_the_papers_rounding(row):
    exact = row.exact_params()
    if row.key in UNREPRODUCED:
        lo, hi = UNREPRODUCED[row.key]
        assert lo <= row.params_m - exact / M <= hi
        assert round(P.paper_convention(row) / M) != row.params_m
    else:
        # whole millions, as printed: our count less the E→H projection at E = H and, not-shared, the pooler
        assert round(P.paper_convention(row) / M) == row.params_m
        assert abs(P.paper_convention(row) - row.params_m * M) <= M / 2


@pytest.mark.parametrize("table", sorted(TOLERANCE))
def test_printed_parameters_within_documented_tolerance_per_table(table):
    worst = max(abs(r.exact_params() - r.params_m * M) / (r.params_m * M) for r in P.rows_of(table))
    assert worst <= TOLERANCE[table]
    assert worst > TOLERANCE[table] - 0.005  # the tolerance is the observed maximum, rounded up


def test_twenty_seven_of_thirty_two_printed_counts_reproduced():
    assert len(PRINTED) == 32
    assert {r.key for r in PRINTED if round(P.paper_convention(r) / M) != r.params_m} == set(UNREPRODUCED)


def test_depth_adds_no_parameters_when_all_layers_are_shared():
    # Table 11 prints 18M at every depth: with every layer shared, L changes the FLOPs, never the count
    t11 = P.rows_of(11)
    assert {r.exact_params() for r in t11} == {count_parameters(PRESETS["albert-large"]).total} == {17_683_968}
    layers = [forward_flops(r.config(), 512).layers for r in t11]
    assert [f // layers[0] for f in layers] == [r.arch.L for r in t11]


# ---- 3. inconsistencies, and the same network across tables -------------------------------------------------
def test_inconsistencies_named_with_the_papers_numbers():
    by = {i.key: i for i in P.INCONSISTENCIES}
    row = P.ROW_BY_KEY
    xxl = by["xxlarge-parameters"]
    assert row["t2-albert-xxlarge"].params_m == P.TABLE_1_PARAMS_M["ALBERT-xxlarge"] == 235
    assert row["t12-h4096"].params_m == 225
    assert "233M" in xxl.text and "235M" in xxl.text and "225M" in xxl.text
    assert row["t2-albert-xxlarge"].exact_params() == row["t12-h4096"].exact_params()  # the same weights
    assert f"{row['t12-h4096'].exact_params():,}" in xxl.text

    mnli = by["albert-base-mnli"]
    assert {row[k].scores.mnli for k in ("t2-albert-base", "t3-as-e128", "t7-no-data")} == {81.6}
    assert {row[k].scores.mnli for k in ("t4-e128-all", "t5-sop")} == {82.0}
    assert {row[k].scores.avg for k in mnli.rows} == {80.1}
    assert "81.6" in mnli.text and "82.0" in mnli.text

    ns = by["albert-base-not-shared-e128"]
    assert (row["t3-ns-e128"].scores.mnli, row["t3-ns-e128"].scores.avg) == (83.7, 81.7)
    assert (row["t4-e128-none"].scores.mnli, row["t4-e128-none"].scores.avg) == (83.2, 81.6)
    assert "83.7" in ns.text and "83.2" in ns.text

    assert row["t2-albert-xxlarge"].scores == row["t13-l24"].scores  # printed for 24 layers ...
    assert P.MODELS["ALBERT-xxlarge"].L == 12  # ... though Table 1 says 12
    assert row["t6-albert-xxlarge"].scores == row["t13-l12"].scores
    for i in P.INCONSISTENCIES:  # each row it names says so
        assert all(i in row[k].inconsistencies() for k in i.rows)


def _pairs():
    return list(combinations(P.ROWS, 2))


def test_same_network_same_training_same_scores_unless_named():
    explained: set[str] = set()
    compared = 0
    for a, b in _pairs():
        if a.arch.network() == b.arch.network() and trained_alike(a, b):
            compared += 1
            if a.scores != b.scores:
                assert named_together(a, b), (a.key, b.key)
                explained |= {i.key for i in P.INCONSISTENCIES if a.key in i.rows and b.key in i.rows}
        elif a.scores == b.scores and a.arch.network() != b.arch.network():  # one run printed for two networks
            assert named_together(a, b), (a.key, b.key)
            explained |= {i.key for i in P.INCONSISTENCIES if a.key in i.rows and b.key in i.rows}
    assert compared >= 15  # BERT-base in Tables 2/3/4, ALBERT-base in 2/3/4/5/7, Table 3 against 4, ...
    # every score inconsistency is needed: none is named that the tables do not show
    assert explained == {i.key for i in P.INCONSISTENCIES if i.what != "parameters"}


def test_same_stored_weights_same_printed_parameters_unless_named():
    for a, b in _pairs():
        if a.params_m and b.params_m and a.exact_params() == b.exact_params() and a.params_m != b.params_m:
            assert named_together(a, b), (a.key, b.key)
    # the not-shared E = 768 ALBERT-base is BERT-base (no projection at E = H in the original code): 108M both
    assert P.ROW_BY_KEY["t3-ns-e768"].arch.network() == P.ROW_BY_KEY["t2-bert-base"].arch.network()
    assert P.ROW_BY_KEY["t3-ns-e768"].scores == P.ROW_BY_KEY["t2-bert-base"].scores


# ---- matching a config to what the paper trained ---------------------------------------------------------------
def test_every_row_matches_its_own_config_and_presets_match_exactly():
    for r in P.ROWS:
        assert r in P.matches(r.config())
    assert "t2-albert-base" in {r.key for r in P.matches(PRESETS["albert-base"])}
    assert "t2-albert-xxlarge" in {r.key for r in P.matches(PRESETS["albert-xxlarge"])}
    assert P.matches(PRESETS["bert-base"]) == ()  # V = 30,522 (bert-base-uncased), the paper's 30,000
    row, diff = P.closest(PRESETS["bert-base"])
    assert row.key == "t2-bert-base" and diff == [("vocab_size", 30522, 30000)]
    assert {r.key for r in P.matches(PRESETS["bert-base"].replace(vocab_size=30000))} == {"t2-bert-base"}
    row, diff = P.closest(PRESETS["albert-xlarge"])  # Hugging Face's 16 heads, the paper's H/64 = 32
    assert row.key == "t2-albert-xlarge" and diff == [("num_heads", 16, 32)]


def test_no_interpolation_an_untrained_config_says_so():
    odd = PRESETS["albert-base"].replace(name="mine", embedding_dim=96)
    assert P.matches(odd) == ()
    text = P.match_text(odd)
    assert "not a network the paper trained" in text and "nothing is interpolated" in text
    assert "embedding_dim 96 here, 128 there" in text
    grouped = PRESETS["albert-base"].replace(num_groups=2)
    assert P.matches(grouped) == () and "num_groups" in P.match_text(grouped)
    other = PRESETS["roberta-base"]
    assert P.matches(other) == () and "family roberta here" in P.match_text(other)
    assert "exact network" in P.match_text(PRESETS["albert-base"])
    # dropout and activation are training choices, not the network
    assert P.matches(PRESETS["albert-base"].replace(dropout=0.0, hidden_act="relu")) == P.matches(PRESETS["albert-base"])
    assert isinstance(P.closest(ModelConfig())[0], P.PaperRow)


# ---- what albert_core computes beside the speedups ---------------------------------------------------------------
def test_speedup_table_flops_against_measured():
    t = P.speedup_table().set_index("model")
    assert list(t.index) == [r.label for r in P.rows_of(2)]
    large = t.loc["ALBERT large"]
    assert 1.0 < large["flops_vs_bert_large"] < 1.001 and large["measured_speedup"] == 1.7  # FLOPs: ≈1.0×
    assert t.loc["BERT large", "flops_vs_bert_large"] == 1.0
    assert 7.5 < t.loc["ALBERT xxlarge", "flops_vs_bert_large"] < 7.6
    # FLOPs alone under-predict every ALBERT model's measured speedup
    for m in ("ALBERT base", "ALBERT large", "ALBERT xlarge", "ALBERT xxlarge"):
        assert t.loc[m, "measured_speedup"] > t.loc[m, "flops_predicted_speedup"]
    for r in P.rows_of(2):
        assert t.loc[r.label, "allreduce_params"] == r.exact_params() == t.loc[r.label, "params_exact"]
        assert t.loc[r.label, "allreduce_bytes_fp32"] == 4 * r.exact_params()
    assert "1.0×" in P.TPU_NOTE and "1.7×" in P.TPU_NOTE and "TPU" in P.TPU_NOTE
    assert f"{large['flops_vs_bert_large']:.1f}×" == "1.0×"


def test_equal_time_table():
    t = P.equal_time_table().set_index("model")
    bert, xxl = t.loc["BERT-large 400k steps"], t.loc["ALBERT-xxlarge 125k steps"]
    assert (bert["steps"], bert["hours"], xxl["steps"], xxl["hours"]) == (400_000, 34, 125_000, 32)
    cfg = P.MODELS["BERT-large"].config("x")
    assert bert["run_flops"] == 3 * forward_flops(cfg, 512).total * 4096 * 400_000
    assert 2.3 < xxl["run_flops"] / bert["run_flops"] < 2.4  # more FLOPs in less time: the TPUs ran wider matmuls


def test_advice_beside_the_paper():
    e, d = P.ADVICE["embedding_dim"], P.ADVICE["dropout"]
    assert "between 64 and 256" in e and "Table 3" in e
    assert all(f"{P.ROW_BY_KEY[k].scores.avg:.1f}" in e for k in ("t3-as-e64", "t3-as-e128", "t3-as-e256"))
    assert "0.0 to 0.1" in d and "Table 8" in d and "90.4" in d and "90.7" in d and "+0.3" in d


def test_sharing_note_is_section_4_5():
    # Sec. 4.5: all-shared "-1.5 on Avg" at E = 128, "-2.5" at E = 768; attention "+0.1" at 128, "-0.7" at 768
    assert "costs 2.5 Avg points at E = 768 and 1.5 at E = 128" in P.SHARING_NOTE
    assert "costs 0.7 at E = 768 and gains 0.1 at E = 128" in P.SHARING_NOTE


def test_rows_table_is_tidy():
    df = P.rows_table()
    assert len(df) == len(P.ROWS) and df["key"].is_unique
    assert df["params_printed"].isna().sum() == len(P.ROWS) - len(PRINTED)
    assert (df["params_exact"] == [r.exact_params() for r in P.ROWS]).all()
    assert df.set_index("key").loc["t4-e128-none", "notes"].count("83.2") >= 1
    assert df["flops_per_token"].gt(0).all()
