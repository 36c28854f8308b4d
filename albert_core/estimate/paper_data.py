"""The ALBERT paper's results tables as typed, frozen rows (albert_core.estimate.paper_results reads them beside
albert_core's exact counts, and re-exports every name here).

Source: Lan et al., "ALBERT: A Lite BERT for Self-supervised Learning of Language Representations", ICLR 2020,
arXiv 1909.11942 v6 (Tables 1-8 and 11-13). Numbers are as printed, inconsistencies included: INCONSISTENCIES names
each one, and the rows it concerns say so in `notes`. Pure data: no Streamlit, no torch, no pandas.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..config import ModelConfig
from .params import count_parameters

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
