"""The paper's reported results as data, each row cited: Tables 2, 3 and 4 of Vaswani et
al. (2017), arXiv:1706.03762 v7. Nothing here is computed by the package; the deck plots
these numbers (``plots_paper``) and the tests check that the charts show these rows.

- :data:`TABLE2`: BLEU on newstest2014 and training cost in FLOPs (Section 6.1).
- :data:`TABLE3`: variations of the base model on newstest2013 (EN-DE dev), perplexity per
  wordpiece and BLEU (Section 6.2). Rows are grouped (A) to (E) as in the paper.
- :data:`TABLE4`: English constituency parsing, F1 on WSJ section 23 (Section 6.3).
- :data:`TRAINING_RUNS`, :data:`DATASETS`, :data:`HARDWARE`, :data:`BATCH_TOKENS`: what
  training took, Sections 5.1 and 5.2 (steps, time per step, the total the paper states,
  the data and the machine).
"""

from __future__ import annotations

from dataclasses import dataclass

PAPER = "Vaswani et al. (2017), arXiv:1706.03762 v7"


@dataclass(frozen=True)
class Table2Row:
    """One model of Table 2: BLEU EN-DE / EN-FR and training cost (FLOPs); None = not reported."""

    model: str
    bleu_en_de: float | None
    bleu_en_fr: float | None
    cost_en_de: float | None
    cost_en_fr: float | None
    ensemble: bool = False
    ours: bool = False  # the paper's Transformer


TABLE2: tuple[Table2Row, ...] = (
    Table2Row("ByteNet", 23.75, None, None, None),
    Table2Row("Deep-Att + PosUnk", None, 39.2, None, 1.0e20),
    Table2Row("GNMT + RL", 24.6, 39.92, 2.3e19, 1.4e20),
    Table2Row("ConvS2S", 25.16, 40.46, 9.6e18, 1.5e20),
    Table2Row("MoE", 26.03, 40.56, 2.0e19, 1.2e20),
    Table2Row("Deep-Att + PosUnk Ensemble", None, 40.4, None, 8.0e20, ensemble=True),
    Table2Row("GNMT + RL Ensemble", 26.30, 41.16, 1.8e20, 1.1e21, ensemble=True),
    Table2Row("ConvS2S Ensemble", 26.36, 41.29, 7.7e19, 1.2e21, ensemble=True),
    Table2Row("Transformer (base)", 27.3, 38.1, 3.3e18, 3.3e18, ours=True),
    Table2Row("Transformer (big)", 28.4, 41.8, 2.3e19, 2.3e19, ours=True),
)


@dataclass(frozen=True)
class Table3Row:
    """One row of Table 3: what changed from the base model, and its dev-set results.
    ``params_m`` (millions) is None where the paper leaves the cell empty (the row has the
    base model's 65M, or the paper does not say)."""

    group: str  # "base", "A" to "E", "big"
    change: str
    ppl: float
    bleu: float
    params_m: float | None = None


TABLE3: tuple[Table3Row, ...] = (
    Table3Row("base", "base: N=6, d_model=512, h=8", 4.92, 25.8, 65),
    Table3Row("A", "h=1, d_k=d_v=512", 5.29, 24.9),
    Table3Row("A", "h=4, d_k=d_v=128", 5.00, 25.5),
    Table3Row("A", "h=16, d_k=d_v=32", 4.91, 25.8),
    Table3Row("A", "h=32, d_k=d_v=16", 5.01, 25.4),
    Table3Row("B", "d_k=16", 5.16, 25.1, 58),
    Table3Row("B", "d_k=32", 5.01, 25.4, 60),
    Table3Row("C", "N=2", 6.11, 23.7, 36),
    Table3Row("C", "N=4", 5.19, 25.3, 50),
    Table3Row("C", "N=8", 4.88, 25.5, 80),
    Table3Row("C", "d_model=256, d_k=d_v=32", 5.75, 24.5, 28),
    Table3Row("C", "d_model=1024, d_k=d_v=128", 4.66, 26.0, 168),
    Table3Row("C", "d_ff=1024", 5.12, 25.4, 53),
    Table3Row("C", "d_ff=4096", 4.75, 26.2, 90),
    Table3Row("D", "P_drop=0.0", 5.77, 24.6),
    Table3Row("D", "P_drop=0.2", 4.95, 25.5),
    Table3Row("D", "eps_ls=0.0", 4.67, 25.3),
    Table3Row("D", "eps_ls=0.2", 5.47, 25.7),
    Table3Row("E", "learned positional embedding", 4.92, 25.7),
    Table3Row("big", "big: N=6, d_model=1024, h=16, P_drop=0.3, 300K steps", 4.33, 26.4, 213),
)

#: What each group of Table 3 varies.
TABLE3_GROUPS: dict[str, str] = {
    "A": "number of heads at constant computation",
    "B": "attention key size d_k",
    "C": "model size (N, d_model, d_ff)",
    "D": "dropout and label smoothing",
    "E": "learned positions instead of sinusoids",
}


@dataclass(frozen=True)
class Table4Row:
    """One parser of Table 4: F1 on WSJ section 23 and how it was trained."""

    parser: str
    training: str  # "WSJ only", "semi-supervised", "multi-task", "generative"
    f1: float
    ours: bool = False


TABLE4: tuple[Table4Row, ...] = (
    Table4Row("Vinyals & Kaiser et al. (2014)", "WSJ only", 88.3),
    Table4Row("Petrov et al. (2006)", "WSJ only", 90.4),
    Table4Row("Zhu et al. (2013)", "WSJ only", 90.4),
    Table4Row("Dyer et al. (2016)", "WSJ only", 91.7),
    Table4Row("Transformer (4 layers)", "WSJ only", 91.3, ours=True),
    Table4Row("Zhu et al. (2013)", "semi-supervised", 91.3),
    Table4Row("Huang & Harper (2009)", "semi-supervised", 91.3),
    Table4Row("McClosky et al. (2006)", "semi-supervised", 92.1),
    Table4Row("Vinyals & Kaiser et al. (2014)", "semi-supervised", 92.1),
    Table4Row("Transformer (4 layers)", "semi-supervised", 92.7, ours=True),
    Table4Row("Luong et al. (2015)", "multi-task", 93.0),
    Table4Row("Dyer et al. (2016)", "generative", 93.3),
)

#: Section 6.3's set-up of the parsing experiment.
PARSING_SETUP: dict[str, str] = {
    "model": "4 layers, d_model = 1024",
    "WSJ only": "WSJ part of the Penn Treebank, about 40K training sentences, 16K-token vocabulary",
    "semi-supervised": "about 17M sentences (high-confidence and BerkleyParser corpora), 32K-token vocabulary",
    "decoding": "maximum output length input + 300, beam size 21, alpha = 0.3",
}


@dataclass(frozen=True)
class TrainingRun:
    """How long one of the paper's models trained (Section 5.2): its ``steps``, the time of
    one step in seconds, and the total as the paper states it (``stated_total``, in
    ``stated_hours``)."""

    model: str
    steps: int
    seconds_per_step: float
    stated_total: str
    stated_hours: float

    @property
    def hours(self) -> float:
        """steps x seconds per step, in hours: the stated total, recomputed."""
        return self.steps * self.seconds_per_step / 3600


TRAINING_RUNS: tuple[TrainingRun, ...] = (
    TrainingRun("base", 100_000, 0.4, "12 hours", 12.0),     # "each training step took about 0.4 seconds"
    TrainingRun("big", 300_000, 1.0, "3.5 days", 84.0),
)
#: Section 6.1: Table 2's training cost is "the training time, the number of GPUs used, and
#: an estimate of the sustained single-precision floating-point capacity of each GPU"
#: multiplied; for the P100 the paper uses 9.5 TFLOPS.
GPUS, P100_FLOPS = 8, 9.5e12


def training_flops(run: TrainingRun) -> float:
    """Table 2's estimate for ``run``, recomputed as Section 6.1 describes it: the stated
    training time x 8 GPUs x 9.5 TFLOPS (3.3e18 for base, 2.3e19 for big)."""
    return run.stated_hours * 3600 * GPUS * P100_FLOPS
#: Section 5.2: "We trained our models on one machine with 8 NVIDIA P100 GPUs."
HARDWARE = "one machine with 8 NVIDIA P100 GPUs"
#: Section 5.1: each batch held "approximately 25000 source tokens and 25000 target tokens".
BATCH_TOKENS = 25_000


@dataclass(frozen=True)
class Dataset:
    """One training set of Section 5.1: its size (``sentence_pairs``, and ``size`` in the
    paper's words) and its vocabulary."""

    name: str
    sentence_pairs: int
    size: str
    vocabulary: str


DATASETS: tuple[Dataset, ...] = (
    Dataset("WMT 2014 English-German", 4_500_000, "about 4.5 million sentence pairs",
            "byte-pair encoding, about 37,000 tokens shared by source and target"),
    Dataset("WMT 2014 English-French", 36_000_000, "36M sentences", "32,000 word pieces"),
)


def table3_base() -> Table3Row:
    """Table 3's base row, the reference every variation is compared against."""
    return next(row for row in TABLE3 if row.group == "base")


def table3_effects(groups: tuple[str, ...] = ("A", "B", "C", "D", "E")) -> list[tuple[Table3Row, float, float]]:
    """Each row of the given groups with its change from the base row: (row, BLEU
    difference, perplexity difference). Positive BLEU and negative perplexity are better."""
    unknown = set(groups) - set(TABLE3_GROUPS) - {"big"}
    if unknown:
        raise ValueError(f"groups must be among {sorted(TABLE3_GROUPS) + ['big']}, got {sorted(unknown)}")
    base = table3_base()
    return [(row, round(row.bleu - base.bleu, 2), round(row.ppl - base.ppl, 2))
            for row in TABLE3 if row.group in groups]


def table4_best_by_training() -> list[tuple[str, tuple[Table4Row, ...], Table4Row | None]]:
    """For each training regime of Table 4, in the paper's order: the best other parsers
    (every row that ties at the best F1, in the table's order: semi-supervised, McClosky et
    al., 2006, and Vinyals & Kaiser, 2014, both 92.1) and the Transformer's row (None
    where the paper has no Transformer row)."""
    regimes = list(dict.fromkeys(row.training for row in TABLE4))
    out = []
    for regime in regimes:
        rows = [row for row in TABLE4 if row.training == regime]
        others = [row for row in rows if not row.ours]
        best = max(row.f1 for row in others)
        ours = next((row for row in rows if row.ours), None)
        out.append((regime, tuple(row for row in others if row.f1 == best), ours))
    return out


def table2_best_previous(pair: str) -> Table2Row:
    """The previous model (not the paper's) with the highest BLEU on ``pair`` ("en_de" or
    "en_fr"), ensembles included."""
    if pair not in ("en_de", "en_fr"):
        raise ValueError(f"pair must be 'en_de' or 'en_fr', got {pair!r}")
    rows = [r for r in TABLE2 if not r.ours and getattr(r, f"bleu_{pair}") is not None]
    return max(rows, key=lambda r: getattr(r, f"bleu_{pair}"))


def table2_row(model: str) -> Table2Row:
    """The row of Table 2 named ``model``."""
    for row in TABLE2:
        if row.model == model:
            return row
    raise ValueError(f"model must be one of {[r.model for r in TABLE2]}, got {model!r}")
