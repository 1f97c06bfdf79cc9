"""What changed since 2017, measured on the machine that builds the deck.

Each later change is one module of the package handed to the paper's model
(:class:`~transformer_lab.Transformer`) through its parts, or a config option
(:data:`CHANGES`). These functions train and time them and return plain data (frozen
dataclasses of numbers) that a slide prints and a claim checks:

    changes = changes_compared(seed=0)              # one task, one budget, every change alone
    lengths = positions_beyond_training(seed=0)     # trained on 1..L symbols, tested on 2L
    warmup = warmup_and_layer_norm(seed=0)          # post-LN and pre-LN without warm-up
    cache = kv_cache_costs(seed=0)                  # bytes per token and time per step, MHA/GQA/MQA

The first three read one training run (:func:`since2017_run`): every model is trained
for the same number of steps on the same batches, in lock step (step s of every model,
then step s + 1), so each step of a change is timed beside the same step of the paper's
model and their time ratio is taken under the same machine conditions. Each model keeps
its own random stream (dropout), so a model's numbers do not depend on which other
models ran beside it; each starts from ``torch.manual_seed(seed)``. The run is cached
like the deck's models (:func:`~transformer_lab.teaching.cache.cached`, keyed by the seed,
the budget and the package's source) and runs PyTorch on one thread, as the deck does.

The task is ``reverse``: every output symbol is chosen by its position, so positions
matter, and inputs longer than any trained on can be made. The paper measures
translation; a toy task in a small budget measures how fast a change lets a small model
learn one mapping, not translation quality at scale. One seed, one small budget: a
difference in one run is not a claim; ``benchmarks/since2017_seeds.py`` runs seeds 0-4.

Shapes: none cross this module's boundary; results are numbers.
"""

from __future__ import annotations

import dataclasses
import math
import statistics
import time
from dataclasses import dataclass
from typing import Callable

import torch
from torch import nn

from .. import checks
from ..attention_positions import remove_positional_encoding
from ..data import BOS_ID, EOS_ID, TaskData, TokenBatchSampler, TranslationDataset, collate, make_task
from ..decoder_only import (DecoderOnlyConfig, DecoderOnlyTransformer, language_model_batch,
                            language_model_loss_sum)
from ..decoder_only_decoding import decoder_only_greedy_decode
from ..decoding import greedy_decode
from ..gated_feed_forward import GELUFeedForward, SwiGLU
from ..grouped_query_attention import GroupedQueryAttention
from ..model import Transformer, TransformerConfig, count_parameters
from ..multi_head_attention import KVCache
from ..rms_norm import use_rms_norm
from ..training import (PAPER_BETAS, PAPER_EPS, LabelSmoothingLoss, WarmupSchedule, batch_loss_sum,
                        noam_learning_rate)
from .cache import cached


# ---------------------------------------------------------------------------------- the budget
@dataclass(frozen=True)
class Budget:
    """What every model gets: the task (``reverse`` on strings of 1..``max_len`` symbols
    from ``alphabet``), the model's sizes (the paper's model at toy size), and the
    training (``steps`` updates of at most ``max_tokens`` tokens per side, Adam and the
    warm-up schedule of Section 5.3 with ``warmup_steps`` and ``lr_factor``, label
    smoothing and dropout as in Section 5.4). ``num_test`` held-out examples at lengths
    1..L and as many at length 2L; ``curve_every``: steps between recorded training losses."""

    max_len: int = 6
    alphabet: str = "0123456789"
    num_train: int = 4000
    num_test: int = 200
    steps: int = 160
    max_tokens: int = 512
    d_model: int = 32
    num_heads: int = 4
    d_ff: int = 128
    num_layers: int = 2
    dropout: float = 0.1
    warmup_steps: int = 100
    lr_factor: float = 0.5
    label_smoothing: float = 0.1
    curve_every: int = 10

    def __post_init__(self):
        for name in ("max_len", "num_train", "num_test", "steps", "max_tokens", "d_model", "num_heads", "d_ff",
                     "num_layers", "warmup_steps", "curve_every"):
            checks.positive_int(name, getattr(self, name))
        checks.fraction("dropout", self.dropout)
        checks.fraction("label_smoothing", self.label_smoothing)
        checks.positive_number("lr_factor", self.lr_factor)
        if self.num_heads % 2:
            raise ValueError(f"num_heads must be even (grouped-query attention uses num_heads / 2 key/value "
                             f"heads), got {self.num_heads}")

    def facts(self) -> list[str]:
        """The budget as short phrases a slide can join."""
        return [f"`reverse` task, strings of 1-{self.max_len} symbols from {len(self.alphabet)}",
                f"{self.steps} steps of at most {self.max_tokens} tokens",
                f"d_model {self.d_model}, {self.num_heads} heads, {self.num_layers}+{self.num_layers} layers",
                f"{self.num_test} held-out examples"]


#: The deck's budget. Its steps are set by the build's time (the whole set, 12 models and
#: the key/value cache's timings, cold at one thread in about 45 s); then L was chosen on
#: the paper's model alone (seeds 0 and 1) so that it learns the task in those steps
#: (held-out exact match about 0.45 at L = 6, 0.15 at L = 8), before any change was run.
DECK_BUDGET = Budget()


# --------------------------------------------------------------------------------- the changes
@dataclass(frozen=True)
class Change:
    """One change made since 2017: a ``key``, the ``label`` a table shows, the paper that
    introduced or analysed it (``source``), what it replaces (``replaces``), and how it
    builds the model from the paper's config (``build``)."""

    key: str
    label: str
    source: str
    replaces: str
    build: Callable[[TransformerConfig], nn.Module]


def _decoder_only(config: TransformerConfig) -> DecoderOnlyTransformer:
    """As many blocks as the encoder and the decoder together, the paper's sizes otherwise."""
    c = config
    return DecoderOnlyTransformer(DecoderOnlyConfig(
        c.tgt_vocab_size, d_model=c.d_model, num_heads=c.num_heads, d_ff=c.d_ff, num_layers=2 * c.num_layers,
        dropout=c.dropout, max_len=c.max_len, pad_id=c.pad_id))


CHANGES: dict[str, Change] = {change.key: change for change in (
    Change("paper", "the paper's model", "Vaswani et al., 2017", "",
           lambda c: Transformer(c)),
    Change("pre_ln", "pre-LN", "Xiong et al., 2020", "post-LN",
           lambda c: Transformer(c.replace(norm_first=True))),
    Change("rms_norm", "RMSNorm", "Zhang & Sennrich, 2019", "LayerNorm",
           lambda c: use_rms_norm(Transformer(c))),
    Change("learned", "learned positions", "Table 3 (E); Gehring et al., 2017", "sinusoids",
           lambda c: Transformer(c.replace(positional="learned"))),
    Change("rotary", "rotary positions", "Su et al., 2021", "sinusoids",
           lambda c: remove_positional_encoding(Transformer(c, self_attention=GroupedQueryAttention.factory(
               positions="rotary")))),
    Change("alibi", "ALiBi", "Press et al., 2022", "sinusoids",
           lambda c: remove_positional_encoding(Transformer(c, self_attention=GroupedQueryAttention.factory(
               positions="alibi")))),
    Change("gelu", "GELU", "Hendrycks & Gimpel, 2016", "ReLU",
           lambda c: Transformer(c, feed_forward=GELUFeedForward.from_config)),
    Change("swiglu", "SwiGLU", "Shazeer, 2020", "ReLU",
           lambda c: Transformer(c, feed_forward=SwiGLU.from_config)),
    Change("gqa", "grouped-query attention (h/2 key/value heads)", "Ainslie et al., 2023", "multi-head",
           lambda c: Transformer(c, self_attention=GroupedQueryAttention.factory(c.num_heads // 2),
                                 cross_attention=GroupedQueryAttention.factory(c.num_heads // 2))),
    Change("mqa", "multi-query attention (1 key/value head)", "Shazeer, 2019", "multi-head",
           lambda c: Transformer(c, self_attention=GroupedQueryAttention.factory(1),
                                 cross_attention=GroupedQueryAttention.factory(1))),
    Change("decoder_only", "decoder-only (pre-LN, 2N blocks)", "Radford et al., 2018", "encoder-decoder",
           _decoder_only),
)}

#: The changes the deck trains (every one above but GELU, to stay within the build's budget).
DECK_CHANGES = ("paper", "pre_ln", "rms_norm", "learned", "rotary", "alibi", "swiglu", "gqa", "mqa", "decoder_only")
#: Position schemes compared beyond the training lengths, by their change's key.
POSITION_KINDS = {"sinusoidal": "paper", "learned": "learned", "rotary": "rotary", "alibi": "alibi"}
#: The two extra models trained without warm-up (the paper's post-LN, and pre-LN).
NO_WARMUP = {"post_ln_no_warmup": "paper", "pre_ln_no_warmup": "pre_ln"}


# ------------------------------------------------------------------------------------- results
@dataclass(frozen=True)
class Evaluation:
    """A model on held-out examples: greedy ``exact_match`` (share of outputs equal to the
    reference), ``token_accuracy`` and ``loss`` (cross-entropy per target token, no
    smoothing) under teacher forcing, and the number of ``examples``. ``finite`` is False
    when the model's outputs were NaN or inf (a diverged run): then exact match and
    accuracy are 0 and the loss is inf."""

    exact_match: float
    token_accuracy: float
    loss: float
    examples: int
    finite: bool = True


@dataclass(frozen=True)
class TrainedModel:
    """One model of the run: its key, parameters, median training step (milliseconds),
    the median over steps of its step time divided by the paper's same step
    (``step_time_ratio``), the training loss every ``curve_every`` steps, held-out
    evaluations at lengths 1..L (``held_out``) and at 2L (``at_2l``)."""

    key: str
    parameters: int
    step_ms: float
    step_time_ratio: float
    train_loss: tuple[float, ...]
    held_out: Evaluation
    at_2l: Evaluation | None


@dataclass(frozen=True)
class Since2017Run:
    """Every model of one seed's run (see the module docstring), by key, with the budget,
    the seed, the training seconds of the whole run and the thread count it ran on."""

    seed: int
    budget: Budget
    models: dict[str, TrainedModel]
    train_seconds: float
    threads: int

    def model(self, key: str) -> TrainedModel:
        checks.one_of("key", key, self.models)
        return self.models[key]


@dataclass(frozen=True)
class ChangeRow:
    """A change against the paper's model: ``exact_match`` and ``loss`` held out,
    ``parameters`` (and their ratio to the paper's), the step time ratio (interleaved),
    and the differences to the paper's exact match and loss."""

    key: str
    label: str
    source: str
    replaces: str
    parameters: int
    parameter_ratio: float
    exact_match: float
    loss: float
    step_time_ratio: float
    exact_match_change: float
    loss_change: float


@dataclass(frozen=True)
class ChangesCompared:
    seed: int
    budget: Budget
    rows: tuple[ChangeRow, ...]

    def row(self, key: str) -> ChangeRow:
        return {r.key: r for r in self.rows}[checks.one_of("key", key, [r.key for r in self.rows])]


@dataclass(frozen=True)
class PositionRow:
    """A position scheme trained on 1..L symbols: held out at 1..L and at 2L."""

    positions: str
    source: str
    trained_exact_match: float
    exact_match_2l: float
    token_accuracy_2l: float
    loss_2l: float


@dataclass(frozen=True)
class PositionsBeyondTraining:
    seed: int
    trained_lengths: tuple[int, int]
    tested_length: int
    rows: tuple[PositionRow, ...]


@dataclass(frozen=True)
class WarmupRow:
    """A normalisation placement trained with or without the warm-up of Section 5.3:
    the final training loss (mean of the last recorded tenth), held-out exact match and
    loss, whether training stayed finite, and the loss curve."""

    norm: str
    warmup: bool
    final_train_loss: float
    exact_match: float
    loss: float
    finite: bool
    train_loss: tuple[float, ...]


@dataclass(frozen=True)
class WarmupAndLayerNorm:
    seed: int
    warmup_steps: int
    peak_learning_rate: float
    curve_every: int
    rows: tuple[WarmupRow, ...]

    def row(self, norm: str, warmup: bool) -> WarmupRow:
        for r in self.rows:
            if (r.norm, r.warmup) == (norm, warmup):
                return r
        raise ValueError(f"norm must be 'post-LN' or 'pre-LN' and warmup a bool, got {norm!r}, {warmup!r}")


# ---------------------------------------------------------------------------------- the run
def _task(budget: Budget, seed: int) -> tuple[TaskData, TranslationDataset, TranslationDataset, TranslationDataset]:
    """The training split and the two held-out sets (1..L and exactly 2L symbols)."""
    options = dict(min_len=1, max_len=budget.max_len, alphabet=budget.alphabet)
    data = make_task("reverse", seed, num_train=budget.num_train, num_validation=0, num_test=budget.num_test,
                     **options)
    long = make_task("reverse", seed + 1, num_train=0, num_validation=0, num_test=budget.num_test,
                     min_len=2 * budget.max_len, max_len=2 * budget.max_len, alphabet=budget.alphabet)
    vocab = data.src_vocab  # one vocabulary on both sides: every symbol of the alphabet occurs in training
    return (data, TranslationDataset(data.train, vocab, vocab), TranslationDataset(data.test, vocab, vocab),
            TranslationDataset(long.test, vocab, vocab))


def _config(budget: Budget, vocab_size: int) -> TransformerConfig:
    b = budget
    return TransformerConfig(vocab_size, vocab_size, d_model=b.d_model, num_heads=b.num_heads, d_ff=b.d_ff,
                             num_layers=b.num_layers, dropout=b.dropout, max_len=4 * b.max_len + 8,
                             shared_vocab=True)


def _loss_sum(model: nn.Module, batch, loss_fn: LabelSmoothingLoss,
              lm_batch=None) -> tuple[torch.Tensor, torch.Tensor]:
    """Summed loss and correct predictions; a decoder-only model reads the batch as one
    sequence per example (``lm_batch``, made here unless given)."""
    if isinstance(model, DecoderOnlyTransformer):
        return language_model_loss_sum(model, lm_batch or language_model_batch(batch), loss_fn)
    return batch_loss_sum(model, batch, loss_fn)


@torch.no_grad()
def evaluate_model(model: nn.Module, dataset: TranslationDataset, max_tokens: int = 2048,
                   extra_length: int = 5) -> Evaluation:
    """Greedy exact match, token accuracy and loss of an encoder-decoder or a decoder-only
    ``model`` on ``dataset`` (outputs up to source length + ``extra_length`` tokens)."""
    was_training = model.training
    model.eval()
    sampler = TokenBatchSampler(dataset.src_lengths, dataset.tgt_lengths, max_tokens, shuffle=False, pool_size=None)
    loss_fn = LabelSmoothingLoss(0.0)
    loss = correct = tokens = exact = 0
    vocab = dataset.tgt_vocab
    try:
        for indices in sampler:
            batch = collate([dataset[i] for i in indices])
            batch_loss, right = _loss_sum(model, batch, loss_fn)
            loss, correct, tokens = loss + float(batch_loss), correct + int(right), tokens + batch.tgt_tokens
            max_len = batch.src.size(1) + extra_length
            if isinstance(model, DecoderOnlyTransformer):
                out = decoder_only_greedy_decode(model, batch.src, max_len, BOS_ID, EOS_ID)
            else:
                out = greedy_decode(model, batch.src, max_len, BOS_ID, EOS_ID)
            for hypothesis, reference in zip(out.tolist(), batch.tgt_out.tolist()):
                exact += vocab.decode(hypothesis) == vocab.decode(reference)
    except FloatingPointError:  # a diverged model: its logits are NaN
        return Evaluation(0.0, 0.0, math.inf, len(dataset), finite=False)
    finally:
        model.train(was_training)
    if not math.isfinite(loss):
        return Evaluation(0.0, 0.0, math.inf, len(dataset), finite=False)
    return Evaluation(exact / len(dataset), correct / tokens, loss / tokens, len(dataset))


def _schedule(optimizer, budget: Budget, warmup: bool):
    """Equation (3) of Section 5.3, or the same curve without its warm-up: the peak
    learning rate from the first step, then the same inverse-square-root decay."""
    if warmup:
        return WarmupSchedule(optimizer, budget.d_model, budget.warmup_steps, budget.lr_factor)
    peak = budget.warmup_steps
    return torch.optim.lr_scheduler.LambdaLR(optimizer, lambda done: noam_learning_rate(
        max(done + 1, peak), budget.d_model, budget.warmup_steps, budget.lr_factor))


class _Trainee:
    """A model, its optimiser, schedule and random stream, and what its steps measured."""

    def __init__(self, key: str, model: nn.Module, budget: Budget, warmup: bool):
        self.key, self.model = key, model
        # Section 5.3's Adam; the fused kernel (one call for every parameter) is the same
        # update with less per-tensor overhead, which dominates a step of a model this small
        self.optimizer = torch.optim.Adam(model.parameters(), lr=1.0, betas=PAPER_BETAS, eps=PAPER_EPS, fused=True)
        self.scheduler = _schedule(self.optimizer, budget, warmup)
        self.rng = torch.get_rng_state()
        self.times: list[float] = []
        self.losses: list[float] = []

    def step(self, batch, lm_batch, loss_fn: LabelSmoothingLoss) -> None:
        """One update on ``batch`` (``lm_batch``: the same examples as sequences, made
        outside the timed step); its time and loss are recorded."""
        torch.set_rng_state(self.rng)  # its own dropout stream, whatever ran before
        start = time.perf_counter()
        self.model.train()
        self.optimizer.zero_grad(set_to_none=True)
        loss, _ = _loss_sum(self.model, batch, loss_fn, lm_batch)
        (loss / batch.tgt_tokens).backward()
        self.optimizer.step()
        self.scheduler.step()
        self.times.append(time.perf_counter() - start)
        self.losses.append(float(loss.detach()) / batch.tgt_tokens)
        self.rng = torch.get_rng_state()


def _build(key: str, config: TransformerConfig, seed: int) -> nn.Module:
    torch.manual_seed(seed)  # every model starts from the same stream: shared shapes get the same weights
    return CHANGES[key].build(config)


def train_since2017(seed: int = 0, budget: Budget = DECK_BUDGET, changes: tuple[str, ...] = DECK_CHANGES,
                    threads: int = 1) -> Since2017Run:
    """Train the ``changes`` (keys of :data:`CHANGES`, the paper's first) and the two
    models without warm-up in lock step on the same batches, then evaluate them. Not
    cached: :func:`since2017_run` is."""
    if not isinstance(seed, int) or isinstance(seed, bool):
        raise TypeError(f"seed must be an int, got {type(seed).__name__}")
    if not isinstance(budget, Budget):
        raise TypeError(f"budget must be a Budget, got {type(budget).__name__}")
    changes = tuple(changes)
    for key in changes:
        checks.one_of("changes", key, CHANGES)
    if not changes or changes[0] != "paper" or len(set(changes)) != len(changes):
        raise ValueError(f"changes must start with 'paper' and name each change once, got {changes}")
    checks.positive_int("threads", threads)
    previous_threads = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        return _train(seed, budget, changes, threads)
    finally:
        torch.set_num_threads(previous_threads)


def _train(seed: int, budget: Budget, changes: tuple[str, ...], threads: int) -> Since2017Run:
    data, train, held_out, long = _task(budget, seed)
    config = _config(budget, len(data.src_vocab))
    plan = [(key, key, True) for key in changes]
    plan += [(extra, base, False) for extra, base in NO_WARMUP.items() if base in changes]
    trainees = [_Trainee(key, _build(base, config, seed), budget, warmup) for key, base, warmup in plan]
    sampler = TokenBatchSampler(train.src_lengths, train.tgt_lengths, budget.max_tokens, seed=seed)
    loss_fn = LabelSmoothingLoss(budget.label_smoothing)
    start, epoch, done = time.perf_counter(), 0, 0
    while done < budget.steps:
        sampler.set_epoch(epoch)
        for indices in sampler:
            if done == budget.steps:
                break
            batch = collate([train[i] for i in indices])
            lm_batch = language_model_batch(batch)
            for trainee in trainees:  # step `done` of every model, one after the other
                trainee.step(batch, lm_batch, loss_fn)
            done += 1
        epoch += 1
    train_seconds = time.perf_counter() - start
    paper_times = trainees[0].times
    models = {}
    for trainee in trainees:
        every = budget.curve_every
        curve = tuple(statistics.fmean(trainee.losses[i: i + every]) for i in range(0, budget.steps, every))
        models[trainee.key] = TrainedModel(
            trainee.key, count_parameters(trainee.model), 1000 * statistics.median(trainee.times),
            statistics.median(t / p for t, p in zip(trainee.times, paper_times)), curve,
            evaluate_model(trainee.model, held_out),
            evaluate_model(trainee.model, long) if trainee.key in POSITION_KINDS.values() else None)
    return Since2017Run(seed, budget, models, train_seconds, threads)


def _encode(run: Since2017Run) -> dict:
    return dataclasses.asdict(run)


def _decode(stored: dict) -> Since2017Run:
    evaluation = lambda e: None if e is None else Evaluation(**e)  # noqa: E731
    models = {key: TrainedModel(**{**m, "train_loss": tuple(m["train_loss"]),
                                   "held_out": evaluation(m["held_out"]), "at_2l": evaluation(m["at_2l"])})
              for key, m in stored["models"].items()}
    return Since2017Run(stored["seed"], Budget(**stored["budget"]), models, stored["train_seconds"],
                        stored["threads"])


def since2017_run(seed: int = 0, budget: Budget = DECK_BUDGET, changes: tuple[str, ...] = DECK_CHANGES) -> Since2017Run:
    """:func:`train_since2017` at one thread, cached (:func:`~transformer_lab.teaching.cache.cached`)
    by seed, budget, changes and the package's source."""
    inputs = {"seed": seed, "budget": budget, "changes": list(changes)}
    return _decode(cached("since2017-run", lambda: _encode(train_since2017(seed, budget, changes)), inputs=inputs))


# ------------------------------------------------------------------------- what slides read
def changes_compared(seed: int = 0, budget: Budget = DECK_BUDGET,
                     changes: tuple[str, ...] = DECK_CHANGES) -> ChangesCompared:
    """Every change alone against the paper's model, same task and budget (one row each,
    the paper's first)."""
    run = since2017_run(seed, budget, changes)
    paper = run.model("paper")
    rows = []
    for key in changes:
        model, change = run.model(key), CHANGES[key]
        rows.append(ChangeRow(
            key, change.label, change.source, change.replaces, model.parameters,
            model.parameters / paper.parameters, model.held_out.exact_match, model.held_out.loss,
            model.step_time_ratio, model.held_out.exact_match - paper.held_out.exact_match,
            model.held_out.loss - paper.held_out.loss))
    return ChangesCompared(seed, budget, tuple(rows))


def positions_beyond_training(seed: int = 0, budget: Budget = DECK_BUDGET,
                              changes: tuple[str, ...] = DECK_CHANGES) -> PositionsBeyondTraining:
    """Sinusoidal, learned, rotary and ALiBi positions in the paper's model, trained on
    1..L symbols, tested on L (held out) and 2L."""
    run = since2017_run(seed, budget, changes)
    rows = []
    for name, key in POSITION_KINDS.items():
        if key in changes:
            m = run.model(key)
            rows.append(PositionRow(name, CHANGES[key].source if key != "paper" else "Vaswani et al., 2017",
                                    m.held_out.exact_match, m.at_2l.exact_match, m.at_2l.token_accuracy,
                                    m.at_2l.loss))
    return PositionsBeyondTraining(seed, (1, budget.max_len), 2 * budget.max_len, tuple(rows))


def warmup_and_layer_norm(seed: int = 0, budget: Budget = DECK_BUDGET,
                          changes: tuple[str, ...] = DECK_CHANGES) -> WarmupAndLayerNorm:
    """Post-LN (the paper's) and pre-LN, each with and without the warm-up of Section 5.3
    (without: the schedule's peak rate from the first step), same budget otherwise."""
    run = since2017_run(seed, budget, changes)
    rows = []
    for norm, with_key, without_key in (("post-LN", "paper", "post_ln_no_warmup"),
                                        ("pre-LN", "pre_ln", "pre_ln_no_warmup")):
        for warmup, key in ((True, with_key), (False, without_key)):
            m = run.model(key)
            tail = m.train_loss[-max(1, len(m.train_loss) // 10):]
            rows.append(WarmupRow(norm, warmup, statistics.fmean(tail), m.held_out.exact_match, m.held_out.loss,
                                  m.held_out.finite and all(math.isfinite(x) for x in m.train_loss), m.train_loss))
    peak = noam_learning_rate(budget.warmup_steps, budget.d_model, budget.warmup_steps, budget.lr_factor)
    return WarmupAndLayerNorm(seed, budget.warmup_steps, peak, budget.curve_every, tuple(rows))


# --------------------------------------------------------------------- the key/value cache
@dataclass(frozen=True)
class CacheRow:
    """One attention kind in a decoder-only model: key/value heads, bytes its cache holds
    per generated token (all layers, keys and values, measured on the tensors held after
    decoding), their ratio to multi-head attention's, and the median time of one decoding
    step at the short and the long context (milliseconds) and its ratio to multi-head's."""

    attention: str
    source: str
    num_kv_heads: int
    bytes_per_token: int
    bytes_ratio: float
    step_ms_short: float
    step_ms_long: float
    time_ratio_short: float
    time_ratio_long: float


@dataclass(frozen=True)
class KVCacheCosts:
    """The sizes the rows were measured at (a decoder-only model, float32) and the rows."""

    seed: int
    d_model: int
    num_heads: int
    num_layers: int
    batch: int
    short_context: int
    long_context: int
    rows: tuple[CacheRow, ...]


CACHE_KINDS = (("multi-head", "Vaswani et al., 2017", None), ("grouped-query", "Ainslie et al., 2023", 2),
               ("multi-query", "Shazeer, 2019", 1))


def _cache_model(num_kv_heads: int | None, d_model: int, num_heads: int, num_layers: int, seed: int) -> DecoderOnlyTransformer:
    """The paper's multi-head attention for ``num_kv_heads=None``, else grouped-query."""
    torch.manual_seed(seed)
    config = DecoderOnlyConfig(64, d_model=d_model, num_heads=num_heads, d_ff=4 * d_model, num_layers=num_layers,
                               num_kv_heads=num_kv_heads, dropout=0.0, max_len=8192)
    return DecoderOnlyTransformer(config).eval()


@torch.no_grad()
def _bytes_per_token(model: DecoderOnlyTransformer, seed: int) -> int:
    """Decode 16 tokens after a 16-token prompt (batch 2) and divide the bytes the cache
    holds by the tokens it holds keys and values for."""
    generator = torch.Generator().manual_seed(seed)
    prompt = torch.randint(4, 64, (2, 16), generator=generator)
    cache = model.new_cache()
    logits = model.decode(prompt, cache=cache)
    for _ in range(16):
        logits = model.decode(logits[:, -1:].argmax(-1), cache=cache)
    return cache.nbytes() // (prompt.size(0) * cache.length)


@torch.no_grad()
def _step_times(models: list[DecoderOnlyTransformer], batch: int, context: int, rounds: int, seed: int) -> list[float]:
    """Median seconds of one cached decoding step after ``context`` positions, per model,
    the models interleaved round by round. The cache is filled with random keys and values
    of the right shapes (a step's work does not depend on their values) and put back
    before every step, so every step reads the same ``context`` positions."""
    generator = torch.Generator().manual_seed(seed)
    filled = []
    for model in models:
        layer = model.layers[0].self_attn
        shape = (batch, getattr(layer, "num_kv_heads", model.config.num_heads), context, model.config.d_model
                 // model.config.num_heads)
        filled.append([(torch.randn(shape, generator=generator), torch.randn(shape, generator=generator))
                       for _ in model.layers])
    token = torch.randint(4, 64, (batch, 1), generator=generator)
    times: list[list[float]] = [[] for _ in models]
    for round_ in range(rounds + 1):  # the first round warms up
        for i, model in enumerate(models):
            cache = model.new_cache()
            cache.layers = [KVCache(k, v) for k, v in filled[i]]
            start = time.perf_counter()
            model.decode(token, cache=cache)
            if round_:
                times[i].append(time.perf_counter() - start)
    return [statistics.median(t) for t in times]


def measure_kv_cache(seed: int = 0, d_model: int = 256, num_heads: int = 8, num_layers: int = 4, batch: int = 4,
                     short_context: int = 32, long_context: int = 2048, rounds: int = 15,
                     threads: int = 1) -> KVCacheCosts:
    """Bytes per token and decoding time per step of multi-head, grouped-query (2 key/value
    heads) and multi-query attention in one decoder-only model size. Not cached:
    :func:`kv_cache_costs` is."""
    previous_threads = torch.get_num_threads()
    torch.set_num_threads(checks.positive_int("threads", threads))
    try:
        models = [_cache_model(kv, d_model, num_heads, num_layers, seed) for _, _, kv in CACHE_KINDS]
        sizes = [_bytes_per_token(m, seed) for m in models]
        short = _step_times(models, batch, short_context, rounds, seed)
        long = _step_times(models, batch, long_context, rounds, seed)
    finally:
        torch.set_num_threads(previous_threads)
    rows = tuple(CacheRow(name, source, kv or num_heads, size, size / sizes[0], 1000 * s, 1000 * l,
                          s / short[0], l / long[0])
                 for (name, source, kv), size, s, l in zip(CACHE_KINDS, sizes, short, long))
    return KVCacheCosts(seed, d_model, num_heads, num_layers, batch, short_context, long_context, rows)


def kv_cache_costs(seed: int = 0, **sizes) -> KVCacheCosts:
    """:func:`measure_kv_cache`, cached by seed, sizes and the package's source."""
    stored = cached("since2017-kv-cache", lambda: dataclasses.asdict(measure_kv_cache(seed, **sizes)),
                    inputs={"seed": seed, **sizes})
    return KVCacheCosts(**{**stored, "rows": tuple(CacheRow(**r) for r in stored["rows"])})
