"""What the ALBERT paper measured: its results tables as typed, frozen rows, beside albert_core's exact counts.

Source: Lan et al., "ALBERT: A Lite BERT for Self-supervised Learning of Language Representations", ICLR 2020,
arXiv 1909.11942 v6 (Tables 1-8 and 11-13; Tables 9, 10 and 14 report GLUE/SQuAD/RACE leaderboard runs and
fine-tuning hyperparameters, not architectures against scores, and are left out). Numbers are as printed,
inconsistencies included: INCONSISTENCIES names each one, and the rows it concerns say so in `notes`.

Every row's architecture follows the paper's own rules unless its table says otherwise: V = 30,000 (footnote 1),
FFN I = 4H and H/64 attention heads (Sec. 3.1), sequences of at most 512 tokens with two segments (Sec. 4.1).
`PaperRow.config()` turns a row into an albert_core ModelConfig, so every count beside a row is albert_core's
exact count (Hugging Face's layout, pooler included). Pure data: no Streamlit, no torch; pandas only inside
the functions that return tables.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import TYPE_CHECKING, Any

from ..config import ModelConfig
from .flops import forward_flops
from .params import count_parameters, linear

if TYPE_CHECKING:
    import pandas as pd

M = 1_000_000
PAPER = "Lan et al., ICLR 2020, arXiv 1909.11942 v6"
PAPER_V = 30_000  # SentencePiece vocabulary of every model in the paper (footnote 1)
PAPER_SEQ = 512  # pretraining sequences of at most 512 tokens (Sec. 4.1); 10% were drawn shorter
PAPER_BATCH = 4096  # pretraining batch (Sec. 4.1)
PAPER_STEPS = 125_000  # pretraining steps of every row unless its table says otherwise (Sec. 4.1)
TASKS = ("SQuAD1.1", "SQuAD2.0", "MNLI", "SST-2", "RACE")  # the five dev-set tasks of Tables 2-8 and 11-13

CAPTIONS: dict[int, str] = {  # each table's caption, as printed
    1: "The configurations of the main BERT and ALBERT models analyzed in this paper.",
    2: "Dev set results for models pretrained over BookCorpus and Wikipedia for 125k steps. Here and everywhere "
       "else, the Avg column is computed by averaging the scores of the downstream tasks to its left (the two "
       "numbers of F1 and EM for each SQuAD are first averaged).",
    3: "The effect of vocabulary embedding size on the performance of ALBERT-base.",
    4: "The effect of cross-layer parameter-sharing strategies, ALBERT-base configuration.",
    5: "The effect of sentence-prediction loss, NSP vs. SOP, on intrinsic and downstream tasks.",
    6: "The effect of controlling for training time, BERT-large vs ALBERT-xxlarge configurations.",
    7: "The effect of additional training data using the ALBERT-base configuration.",
    8: "The effect of removing dropout, measured for an ALBERT-xxlarge configuration.",
    11: "The effect of increasing the number of layers for an ALBERT-large configuration.",
    12: "The effect of increasing the hidden-layer size for an ALBERT-large 3-layer configuration.",
    13: "The effect of a deeper network using an ALBERT-xxlarge configuration.",
}
TOPICS: dict[int, str] = {  # what each table varies, in a few words (legends, headings)
    2: "models", 3: "E", 4: "sharing", 5: "SOP, NSP", 6: "equal time", 7: "more data", 8: "dropout, 1M steps",
    11: "depth", 12: "width", 13: "xxlarge depth",
}
SHARING_LABELS = {"none": "not-shared", "attention": "shared-attention", "ffn": "shared-FFN", "all": "all-shared"}


@dataclass(frozen=True)
class Architecture:
    """One network as the paper specifies it. E == H with family bert: BERT's V×H embedding."""

    family: str  # "bert" | "albert"
    E: int  # embedding width
    H: int  # hidden width
    L: int  # layers
    sharing: str  # albert_core's sharing mode: none / attention / ffn / all (Sec. 4.5's four strategies)
    V: int = PAPER_V  # footnote 1
    I: int = 0  # FFN width; 0 means the paper's 4H (Sec. 3.1)
    heads: int = 0  # attention heads; 0 means the paper's H/64 (Sec. 3.1)

    @property
    def ffn(self) -> int:
        return self.I or 4 * self.H  # Sec. 3.1: "feed-forward/filter size to be 4H"

    @property
    def num_heads(self) -> int:
        return self.heads or self.H // 64  # Sec. 3.1: "the number of attention heads to be H/64"

    def config(self, name: str) -> ModelConfig:
        """albert_core's ModelConfig of this network (P = 512, two segments, GELU: Sec. 4.1, as BERT)."""
        return ModelConfig(
            name=name, family=self.family, vocab_size=self.V, embedding_dim=self.E, hidden_dim=self.H,
            num_layers=self.L, num_heads=self.num_heads, intermediate_dim=self.ffn, dropout=0.1,
            attention_dropout=0.1, max_position=PAPER_SEQ, type_vocab_size=2, hidden_act="gelu",
            sharing=self.sharing, num_groups=1, inner_group_num=1,
        )

    def describe(self) -> str:
        """V=30,000 E=128 H=768 L=12 I=3,072 A=12, all-shared"""
        return (f"V={self.V:,} E={self.E:,} H={self.H:,} L={self.L} I={self.ffn:,} A={self.num_heads}, "
                f"{SHARING_LABELS[self.sharing]}")

    def network(self) -> tuple[int, ...]:
        """The network the paper trained, whatever its family label: google-research/albert's modeling.py adds
        no E→H projection when E == H (`if input_width != hidden_size`), so a not-shared ALBERT at E = H is BERT."""
        return (self.V, self.E, self.H, self.L, self.ffn, self.num_heads, ("none", "attention", "ffn", "all")
                .index(self.sharing))


# Table 1's six models (Sec. 3.2); FFN 4H and H/64 heads (Sec. 3.1)
MODELS: dict[str, Architecture] = {
    "BERT-base": Architecture("bert", 768, 768, 12, "none"),
    "BERT-large": Architecture("bert", 1024, 1024, 24, "none"),
    "ALBERT-base": Architecture("albert", 128, 768, 12, "all"),
    "ALBERT-large": Architecture("albert", 128, 1024, 24, "all"),
    "ALBERT-xlarge": Architecture("albert", 128, 2048, 24, "all"),
    "ALBERT-xxlarge": Architecture("albert", 128, 4096, 12, "all"),
}
TABLE_1_PARAMS_M: dict[str, int] = {  # Table 1's Parameters column, as printed (millions)
    "BERT-base": 108, "BERT-large": 334, "ALBERT-base": 12, "ALBERT-large": 18, "ALBERT-xlarge": 60,
    "ALBERT-xxlarge": 235,
}


@dataclass(frozen=True)
class Scores:
    """Dev-set scores as printed: SQuAD as (F1, EM), the other tasks' accuracy, and the printed Avg."""

    squad11: tuple[float, float]
    squad20: tuple[float, float]
    mnli: float
    sst2: float
    race: float
    avg: float

    def task_scores(self) -> tuple[float, float, float, float, float]:
        """The five numbers the Avg averages (Table 2's caption: each SQuAD's F1 and EM averaged first)."""
        return (sum(self.squad11) / 2, sum(self.squad20) / 2, self.mnli, self.sst2, self.race)

    def computed_avg(self) -> float:
        return sum(self.task_scores()) / 5  # Table 2's caption


@dataclass(frozen=True)
class Training:
    """How a row was pretrained, where its table departs from Sec. 4.1 (125k steps, SOP, BookCorpus+Wikipedia)."""

    steps: int = PAPER_STEPS
    variant: str = ""  # what the table changed ("" = as Sec. 4.1): "NSP instead of SOP", "without dropout", ...
    hours: float | None = None  # wall-clock pretraining time (Table 6 only)


@dataclass(frozen=True)
class PaperRow:
    """One row of a results table: the network, how it was trained, what it scored, what the paper printed."""

    key: str  # unique id: "t3-ns-e64"
    table: int
    label: str  # the row as the table names it
    arch: Architecture
    scores: Scores
    params_m: int | None = None  # the Parameters column as printed (millions); None where the table has none
    speedup: float | None = None  # Table 2: training data throughput relative to BERT-large (Sec. 4.3)
    training: Training = field(default_factory=Training)
    intrinsic: tuple[tuple[str, float], ...] = ()  # Table 5: MLM, NSP, SOP accuracy
    notes: tuple[str, ...] = ()  # what a reader must know about this row (see also INCONSISTENCIES)

    @property
    def caption(self) -> str:
        return CAPTIONS[self.table]

    @property
    def name(self) -> str:
        return f"Table {self.table}: {self.label}"

    def config(self) -> ModelConfig:
        """albert_core's config of this row's network (exact counts and FLOPs come from it)."""
        return self.arch.config(f"paper T{self.table} {self.label}")

    def exact_params(self) -> int:
        return count_parameters(self.config()).total

    def inconsistencies(self) -> tuple[Inconsistency, ...]:
        return tuple(i for i in INCONSISTENCIES if self.key in i.rows)


def _s(squad11: str, squad20: str, mnli: float, sst2: float, race: float, avg: float) -> Scores:
    a, b = (float(x) for x in squad11.split("/"))
    c, d = (float(x) for x in squad20.split("/"))
    return Scores((a, b), (c, d), mnli, sst2, race, avg)


_WARM = "warm-started from the previous depth's checkpoint (Sec. A.1)"
_XXL_1M = "intermediate evaluation at around 1M steps (Sec. 4.8)"


def _t3(sharing: str, E: int) -> Architecture:
    return Architecture("albert", E, 768, 12, sharing)  # ALBERT-base: H = 768, L = 12 (Table 1)


ROWS: tuple[PaperRow, ...] = (
    # ---- Table 2: the six models at 125k steps, with the measured speedup against BERT-large ----------------
    PaperRow("t2-bert-base", 2, "BERT base", MODELS["BERT-base"], _s("90.4/83.2", "80.4/77.6", 84.5, 92.8, 68.2, 82.3),
             108, 4.7),
    PaperRow("t2-bert-large", 2, "BERT large", MODELS["BERT-large"],
             _s("92.2/85.5", "85.0/82.2", 86.6, 93.0, 73.9, 85.2), 334, 1.0),
    PaperRow("t2-albert-base", 2, "ALBERT base", MODELS["ALBERT-base"],
             _s("89.3/82.3", "80.0/77.1", 81.6, 90.3, 64.0, 80.1), 12, 5.6),
    PaperRow("t2-albert-large", 2, "ALBERT large", MODELS["ALBERT-large"],
             _s("90.6/83.9", "82.3/79.4", 83.5, 91.7, 68.5, 82.4), 18, 1.7),
    PaperRow("t2-albert-xlarge", 2, "ALBERT xlarge", MODELS["ALBERT-xlarge"],
             _s("92.5/86.1", "86.1/83.1", 86.4, 92.4, 74.8, 85.5), 60, 0.6,
             notes=("Sec. 3.1's H/64 gives 32 heads, as google-research/albert's README lists; Hugging Face's "
                    "albert-xlarge-v2 config.json (this app's albert-xlarge preset) has 16. Heads change neither "
                    "the parameters nor the FLOPs.",)),
    PaperRow("t2-albert-xxlarge", 2, "ALBERT xxlarge", MODELS["ALBERT-xxlarge"],
             _s("94.1/88.3", "88.1/85.1", 88.0, 95.2, 82.3, 88.7), 235, 0.3),
    # ---- Table 3: ALBERT-base at E = 64 ... 768, not-shared and all-shared -----------------------------------
    *(PaperRow(f"t3-{'ns' if sh == 'none' else 'as'}-e{E}", 3, f"ALBERT base {SHARING_LABELS[sh]} E={E}",
               _t3(sh, E), sc, p)
      for sh, E, p, sc in (
          ("none", 64, 87, _s("89.9/82.9", "80.1/77.8", 82.9, 91.5, 66.7, 81.3)),
          ("none", 128, 89, _s("89.9/82.8", "80.3/77.3", 83.7, 91.5, 67.9, 81.7)),
          ("none", 256, 93, _s("90.2/83.2", "80.3/77.4", 84.1, 91.9, 67.3, 81.8)),
          ("none", 768, 108, _s("90.4/83.2", "80.4/77.6", 84.5, 92.8, 68.2, 82.3)),
          ("all", 64, 10, _s("88.7/81.4", "77.5/74.8", 80.8, 89.4, 63.5, 79.0)),
          ("all", 128, 12, _s("89.3/82.3", "80.0/77.1", 81.6, 90.3, 64.0, 80.1)),
          ("all", 256, 16, _s("88.8/81.5", "79.1/76.3", 81.5, 90.3, 63.4, 79.6)),
          ("all", 768, 31, _s("88.6/81.5", "79.2/76.6", 82.0, 90.6, 63.3, 79.8)),
      )),
    # ---- Table 4: the four sharing strategies at E = 768 and E = 128 ------------------------------------------
    *(PaperRow(f"t4-e{E}-{sh}", 4, f"ALBERT base E={E} {SHARING_LABELS[sh]}", _t3(sh, E), sc, p)
      for E, sh, p, sc in (
          (768, "all", 31, _s("88.6/81.5", "79.2/76.6", 82.0, 90.6, 63.3, 79.8)),
          (768, "attention", 83, _s("89.9/82.7", "80.0/77.2", 84.0, 91.4, 67.7, 81.6)),
          (768, "ffn", 57, _s("89.2/82.1", "78.2/75.4", 81.5, 90.8, 62.6, 79.5)),
          (768, "none", 108, _s("90.4/83.2", "80.4/77.6", 84.5, 92.8, 68.2, 82.3)),
          (128, "all", 12, _s("89.3/82.3", "80.0/77.1", 82.0, 90.3, 64.0, 80.1)),
          (128, "attention", 64, _s("89.9/82.8", "80.7/77.9", 83.4, 91.9, 67.6, 81.7)),
          (128, "ffn", 38, _s("88.9/81.6", "78.6/75.6", 82.3, 91.7, 64.4, 80.2)),
          (128, "none", 89, _s("89.9/82.8", "80.3/77.3", 83.2, 91.5, 67.9, 81.6)),
      )),
    # ---- Table 5: the sentence-prediction loss, ALBERT-base (SOP is ALBERT's own, Sec. 4.1) -------------------
    PaperRow("t5-none", 5, "ALBERT base, no sentence-prediction loss", MODELS["ALBERT-base"],
             _s("88.6/81.5", "78.1/75.3", 81.5, 89.9, 61.7, 79.0), training=Training(variant="no sentence-prediction loss"),
             intrinsic=(("MLM", 54.9), ("NSP", 52.4), ("SOP", 53.3))),
    PaperRow("t5-nsp", 5, "ALBERT base, NSP", MODELS["ALBERT-base"], _s("88.4/81.5", "77.2/74.6", 81.6, 91.1, 62.3, 79.2),
             training=Training(variant="NSP instead of SOP"), intrinsic=(("MLM", 54.5), ("NSP", 90.5), ("SOP", 52.0))),
    PaperRow("t5-sop", 5, "ALBERT base, SOP", MODELS["ALBERT-base"], _s("89.3/82.3", "80.0/77.1", 82.0, 90.3, 64.0, 80.1),
             intrinsic=(("MLM", 54.0), ("NSP", 78.9), ("SOP", 86.5))),
    # ---- Table 6: equal training time, BERT-large 400k steps against ALBERT-xxlarge 125k ----------------------
    PaperRow("t6-bert-large", 6, "BERT-large 400k steps", MODELS["BERT-large"],
             _s("93.5/87.4", "86.9/84.3", 87.8, 94.6, 77.3, 87.2), training=Training(400_000, "400k steps", 34)),
    PaperRow("t6-albert-xxlarge", 6, "ALBERT-xxlarge 125k steps", MODELS["ALBERT-xxlarge"],
             _s("94.0/88.1", "88.3/85.3", 87.8, 95.4, 82.5, 88.7), training=Training(hours=32)),
    # ---- Table 7: additional data (XLNet's and RoBERTa's, Sec. 4.7), ALBERT-base ----------------------------------
    PaperRow("t7-no-data", 7, "ALBERT base, no additional data", MODELS["ALBERT-base"],
             _s("89.3/82.3", "80.0/77.1", 81.6, 90.3, 64.0, 80.1)),
    PaperRow("t7-data", 7, "ALBERT base, with additional data", MODELS["ALBERT-base"],
             _s("88.8/81.7", "79.1/76.3", 82.4, 92.8, 66.0, 80.8), training=Training(variant="with additional data")),
    # ---- Table 8: dropout, ALBERT-xxlarge at around 1M steps ---------------------------------------------------
    PaperRow("t8-dropout", 8, "ALBERT xxlarge, with dropout", MODELS["ALBERT-xxlarge"],
             _s("94.7/89.2", "89.6/86.9", 90.0, 96.3, 85.7, 90.4), training=Training(1_000_000, "with dropout, ~1M steps"),
             notes=(_XXL_1M,)),
    PaperRow("t8-no-dropout", 8, "ALBERT xxlarge, without dropout", MODELS["ALBERT-xxlarge"],
             _s("94.8/89.5", "89.9/87.2", 90.4, 96.5, 86.1, 90.7),
             training=Training(1_000_000, "without dropout, ~1M steps"), notes=(_XXL_1M,)),
    # ---- Table 11: depth, ALBERT-large (all-shared: 18M at every depth) -----------------------------------------
    *(PaperRow(f"t11-l{L}", 11, f"ALBERT-large {L} layer{'s' if L > 1 else ''}", Architecture("albert", 128, 1024, L, "all"), sc, 18,
               training=Training(variant=_WARM) if L >= 3 else Training(),
               notes=((f"Not Table 2's ALBERT-large row (Avg 82.4): {_WARM}.",) if L == 24 else ()))
      for L, sc in (
          (1, _s("31.1/22.9", "50.1/50.1", 66.4, 80.8, 40.1, 52.9)),
          (3, _s("79.8/69.7", "64.4/61.7", 77.7, 86.7, 54.0, 71.2)),
          (6, _s("86.4/78.4", "73.8/71.1", 81.2, 88.9, 60.9, 77.2)),
          (12, _s("89.8/83.3", "80.7/77.9", 83.3, 91.7, 66.7, 81.5)),
          (24, _s("90.3/83.3", "81.8/79.0", 83.3, 91.5, 68.7, 82.1)),
          (48, _s("90.0/83.1", "81.8/78.9", 83.4, 91.9, 66.9, 81.8)),
      )),
    # ---- Table 12: width, ALBERT-large with 3 layers (FFN 4H, H/64 heads) ---------------------------------------
    *(PaperRow(f"t12-h{H}", 12, f"ALBERT-large 3 layers H={H}", Architecture("albert", 128, H, 3, "all"), sc, p,
               notes=(("The same network and scores as Table 11's 3-layer row.",) if H == 1024 else ()))
      for H, p, sc in (
          (1024, 18, _s("79.8/69.7", "64.4/61.7", 77.7, 86.7, 54.0, 71.2)),
          (2048, 60, _s("83.3/74.1", "69.1/66.6", 79.7, 88.6, 58.2, 74.6)),
          (4096, 225, _s("85.0/76.4", "71.0/68.1", 80.3, 90.4, 60.4, 76.3)),
          (6144, 499, _s("84.7/75.8", "67.8/65.4", 78.1, 89.1, 56.0, 74.0)),
      )),
    # ---- Table 13: depth, ALBERT-xxlarge -------------------------------------------------------------------------
    PaperRow("t13-l12", 13, "ALBERT-xxlarge 12 layers", Architecture("albert", 128, 4096, 12, "all"),
             _s("94.0/88.1", "88.3/85.3", 87.8, 95.4, 82.5, 88.7)),
    PaperRow("t13-l24", 13, "ALBERT-xxlarge 24 layers", Architecture("albert", 128, 4096, 24, "all"),
             _s("94.1/88.3", "88.1/85.1", 88.0, 95.2, 82.3, 88.7)),
)
ROW_BY_KEY: dict[str, PaperRow] = {r.key: r for r in ROWS}


@dataclass(frozen=True)
class Inconsistency:
    """A place where the paper prints two numbers for one thing (Table 2's caption defines the Avg)."""

    key: str
    what: str  # the column or fact: "parameters", "MNLI", "scores"
    rows: tuple[str, ...]  # the rows it concerns (PaperRow.key)
    text: str


INCONSISTENCIES: tuple[Inconsistency, ...] = (
    Inconsistency(
        "xxlarge-parameters", "parameters", ("t2-albert-xxlarge", "t12-h4096"),
        "ALBERT-xxlarge's parameters: 235M in Tables 1 and 2, 233M in Sec. 3.2's text, and 225M for the same "
        "weights in Table 12 (H = 4096, all layers shared, so its 3 layers store what 12 store). albert_core "
        "counts 222,595,584 (Hugging Face's albert-xxlarge model cards: 223M); no accounting reproduces any of "
        "the three."),
    Inconsistency(
        "albert-base-mnli", "MNLI", ("t2-albert-base", "t3-as-e128", "t7-no-data", "t4-e128-all", "t5-sop"),
        "The ALBERT-base row (E = 128, all-shared, 125k steps, SOP) has MNLI 81.6 in Tables 2, 3 and 7 but 82.0 "
        "in Tables 4 and 5; every other score is the same, and both print Avg 80.1 (81.6 gives 80.05, 82.0 "
        "gives 80.13)."),
    Inconsistency(
        "albert-base-not-shared-e128", "MNLI", ("t3-ns-e128", "t4-e128-none"),
        "The not-shared ALBERT-base at E = 128 has MNLI 83.7 and Avg 81.7 in Table 3, but MNLI 83.2 and Avg 81.6 "
        "in Table 4; each Avg is its own row's (81.65 and 81.55)."),
    Inconsistency(
        "xxlarge-depth", "scores", ("t2-albert-xxlarge", "t13-l24", "t6-albert-xxlarge", "t13-l12"),
        "Table 2's ALBERT-xxlarge row prints the scores of Table 13's 24-layer network, although Table 1 gives "
        "ALBERT-xxlarge 12 layers (and Table 6's ALBERT-xxlarge at 125k steps is Table 13's 12-layer row). The "
        "parameters are the same at either depth (all layers shared); the FLOPs double at 24."),
)


# ---- matching a user's config to what the paper trained (no interpolation) -----------------------------------
# the fields that make a network the paper's: its family, shape, heads, sharing layout, positions and segments.
# Not compared: dropout and activation (training choices), the name.
MATCH_FIELDS = ("family", "vocab_size", "embedding_dim", "hidden_dim", "num_layers", "num_heads", "intermediate_dim",
                "sharing", "num_groups", "inner_group_num", "max_position", "type_vocab_size")
_DEFAULT_EXTRA = {f.name: f.default for f in fields(ModelConfig)
                  if f.name not in MATCH_FIELDS + ("name", "dropout", "attention_dropout", "hidden_act")}


def differences(cfg: ModelConfig, row: PaperRow) -> list[tuple[str, Any, Any]]:
    """(field, cfg's value, the paper row's value) for every architecture field where they differ."""
    paper = row.config()
    out = [(f, getattr(cfg, f), getattr(paper, f)) for f in MATCH_FIELDS if getattr(cfg, f) != getattr(paper, f)]
    out += [(f, getattr(cfg, f), v) for f, v in _DEFAULT_EXTRA.items() if getattr(cfg, f) != v]
    return out


def matches(cfg: ModelConfig) -> tuple[PaperRow, ...]:
    """Every row whose network is exactly cfg's (MATCH_FIELDS equal, no family-specific field set)."""
    return tuple(r for r in ROWS if not differences(cfg, r))


def closest(cfg: ModelConfig) -> tuple[PaperRow, list[tuple[str, Any, Any]]]:
    """The row whose network differs from cfg in the fewest fields (then the nearest in exact parameters), and
    those differences. Nothing is interpolated: this only says what the paper did not train."""
    n = count_parameters(cfg).total

    def rank(r: PaperRow) -> tuple[int, float, int]:
        return (len(differences(cfg, r)), abs(r.exact_params() - n) / max(n, 1), r.table)

    best = min(ROWS, key=rank)
    return best, differences(cfg, best)


def match_text(cfg: ModelConfig, tables: tuple[int, ...] | None = None) -> str:
    """One sentence: which rows (of `tables`; None: all) the paper trained with cfg's exact network, or that it
    did not, and the closest."""
    every = matches(cfg)
    got = tuple(r for r in every if tables is None or r.table in tables)
    if got:
        avgs = ", ".join(f"Table {r.table} {r.label}: Avg {r.scores.avg:.1f}" for r in got)
        return f"{cfg.name}: the paper trained this exact network ({avgs})."
    if every:
        where = ", ".join(dict.fromkeys(str(r.table) for r in every))
        return f"{cfg.name}: not in Table {', '.join(str(t) for t in tables or ())}; the paper trained it in Table {where}."
    row, diff = closest(cfg)
    shown = "; ".join(f"{f} {_v(a)} here, {_v(b)} there" for f, a, b in diff[:4])
    more = f"; {len(diff) - 4} more" if len(diff) > 4 else ""
    return (f"{cfg.name}: not a network the paper trained, so no score is shown for it (nothing is interpolated). "
            f"Closest: {row.name} ({shown}{more}).")


def _v(v: Any) -> str:
    return f"{v:,}" if isinstance(v, int) and not isinstance(v, bool) else str(v)


# ---- what albert_core computes beside the paper's numbers ----------------------------------------------------
def flops_per_token(cfg: ModelConfig, seq_len: int = PAPER_SEQ) -> float:
    """Forward matmul FLOPs per token of one sequence of seq_len tokens (albert_core.estimate.flops; a training step is 3×,
    the same ratio between models)."""
    return forward_flops(cfg, min(seq_len, cfg.max_position)).per_token


def paper_convention(row: PaperRow) -> int:
    """The count that rounds to the printed figure on every row up to H = 1,024 (docs/parameters.md): our exact
    count less the E→H projection at E = H (google-research/albert's modeling.py has none there) and, for
    not-shared rows, less the pooler. What fits the printed numbers, not what the authors say they counted."""
    cfg = row.config()
    c = count_parameters(cfg)
    n = c.total - (c.pooler if cfg.sharing == "none" else 0)
    if cfg.factorized and cfg.embedding_dim == cfg.hidden_dim:
        n -= linear(cfg.embedding_dim, cfg.hidden_dim)
    return n


def rows_records(rows: tuple[PaperRow, ...] = ROWS) -> list[dict[str, Any]]:
    """One dict per paper row (plain Python values, None where the paper prints nothing): its network, printed
    and exact parameters, the scores, the speedup, FLOPs per token at 512 tokens and the notes."""
    out = []
    for r in rows:
        cfg = r.config()
        c = count_parameters(cfg)
        exact = c.total
        out.append(dict(
            table=r.table, row=r.label, key=r.key, family=cfg.family, vocab_size=cfg.vocab_size,
            embedding_dim=cfg.embedding_dim, hidden_dim=cfg.hidden_dim, num_layers=cfg.num_layers,
            intermediate_dim=cfg.intermediate_dim, num_heads=cfg.num_heads, sharing=cfg.sharing,
            steps=r.training.steps, training=r.training.variant or "as Sec. 4.1",
            params_printed=r.params_m * M if r.params_m is not None else None, params_exact=exact,
            params_embedding=c.embedding,
            params_diff_pct=100 * (exact - r.params_m * M) / (r.params_m * M) if r.params_m else None,
            squad11_f1=r.scores.squad11[0], squad11_em=r.scores.squad11[1], squad20_f1=r.scores.squad20[0],
            squad20_em=r.scores.squad20[1], mnli=r.scores.mnli, sst2=r.scores.sst2, race=r.scores.race,
            avg=r.scores.avg, speedup=r.speedup,
            flops_per_token=flops_per_token(cfg),
            notes=" ".join((*r.notes, *(i.text for i in r.inconsistencies()))),
        ))
    return out


def rows_table(rows: tuple[PaperRow, ...] = ROWS) -> pd.DataFrame:
    """rows_records as a tidy DataFrame (one row per paper row)."""
    import pandas as pd

    df = pd.DataFrame(rows_records(rows))
    df["params_printed"] = df["params_printed"].astype("Int64")  # no printed count: <NA>, not a float
    return df


def rows_of(*tables: int) -> tuple[PaperRow, ...]:
    return tuple(r for r in ROWS if r.table in tables)


def speedup_table() -> pd.DataFrame:
    """Table 2's six models: exact parameters, FLOPs per token against BERT-large's, the speed FLOPs alone would
    predict (their inverse), the measured speedup, and what each data-parallel step all-reduces.

    Speedup (Sec. 4.3): training data throughput relative to BERT-large, measured on Cloud TPU v3 (Sec. 4.1);
    not reproduced here. A data-parallel step all-reduces one gradient per stored parameter (Li et al. 2020,
    "PyTorch Distributed", Sec. 3: DDP all-reduces every parameter's gradient each step); float32: 4 bytes each.
    """
    import pandas as pd

    ref = flops_per_token(MODELS["BERT-large"].config("BERT-large"))
    out = []
    for r in rows_of(2):
        cfg = r.config()
        n = count_parameters(cfg).total
        f = flops_per_token(cfg)
        out.append(dict(model=r.label, params_exact=n, params_printed=(r.params_m or 0) * M,
                        flops_per_token=f, flops_vs_bert_large=f / ref, flops_predicted_speedup=ref / f,
                        measured_speedup=r.speedup, allreduce_params=n, allreduce_bytes_fp32=4 * n,
                        avg=r.scores.avg))
    return pd.DataFrame(out)


def equal_time_table() -> pd.DataFrame:
    """Table 6: BERT-large for 400k steps (34 h) against ALBERT-xxlarge for 125k (32 h), with the FLOPs each run
    spent: 3 × forward (Kaplan et al. 2020 Sec. 2.1) × batch 4096 × steps, at 512 tokens per sequence (Sec. 4.1;
    10% of sequences were shorter, so these are upper bounds)."""
    import pandas as pd

    out = []
    for r in rows_of(6):
        cfg = r.config()
        per_seq = forward_flops(cfg, PAPER_SEQ).total
        run = 3 * per_seq * PAPER_BATCH * r.training.steps
        hours = r.training.hours or 0.0
        out.append(dict(model=r.label, steps=r.training.steps, hours=hours, params_exact=count_parameters(cfg).total,
                        flops_per_token=per_seq / PAPER_SEQ, run_flops=run, flops_per_hour=run / hours if hours else None,
                        avg=r.scores.avg))
    return pd.DataFrame(out)


# ---- the source texts' advice, against what the paper measured ------------------------------------------------
def _avg(key: str) -> float:
    return ROW_BY_KEY[key].scores.avg


ADVICE: dict[str, str] = {
    # "ALBERT › Key Parameters": "Values between 64-256 are reasonable starting points."; Table 3
    "embedding_dim": (
        f"Source text: values between 64 and 256 are reasonable starting points. The paper (Table 3, ALBERT-base): "
        f"all-shared, Avg {_avg('t3-as-e64'):.1f} at E = 64, {_avg('t3-as-e128'):.1f} at 128 (the best, ALBERT's "
        f"choice), {_avg('t3-as-e256'):.1f} at 256, {_avg('t3-as-e768'):.1f} at 768; not-shared, larger is better "
        f"but not by much ({_avg('t3-ns-e64'):.1f} to {_avg('t3-ns-e768'):.1f})."),
    # "ALBERT › Key Parameters": "Standard values range from 0.0 to 0.1."; Table 8
    "dropout": (
        f"Source text: standard values range from 0.0 to 0.1. The paper (Table 8, ALBERT-xxlarge at about 1M steps): "
        f"removing dropout raised the Avg from {_avg('t8-dropout'):.1f} to {_avg('t8-no-dropout'):.1f} "
        f"(+{_avg('t8-no-dropout') - _avg('t8-dropout'):.1f})."),
}

# Sec. 4.5's reading of Table 4, with Table 4's own numbers (not-shared minus each strategy, at E = 768 and 128)
SHARING_NOTE = (
    f"Sharing everything costs {_avg('t4-e768-none') - _avg('t4-e768-all'):.1f} Avg points at E = 768 and "
    f"{_avg('t4-e128-none') - _avg('t4-e128-all'):.1f} at E = 128; sharing only the attention costs "
    f"{_avg('t4-e768-none') - _avg('t4-e768-attention'):.1f} at E = 768 and gains "
    f"{_avg('t4-e128-attention') - _avg('t4-e128-none'):.1f} at E = 128 (Table 4, Sec. 4.5). Group sharing "
    "(num_groups > 1) was not measured: a config with groups matches no row.")

TPU_NOTE = (
    "The paper's speedups are training data throughput relative to BERT-large, measured on Cloud TPU v3 (Sec. 4.1, "
    "4.3); this app does not reproduce them. FLOPs alone do not explain them: ALBERT-large costs about 1.0× "
    "BERT-large's FLOPs per token, yet the paper measured 1.7×.")
