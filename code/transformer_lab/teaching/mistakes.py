"""The mistakes gallery's reimplementation bugs, computed: each one is a deliberately broken
copy of one step of the package, run beside the package's own on tiny sizes.

Two things per mistake:

- a **symptom**, what a learner who makes it sees (:func:`mask_polarity`,
  :func:`unshifted_target`, :func:`padding_in_loss`, :func:`positions_with_cache`,
  :func:`schedule_at_step_0`, :func:`missing_final_norm`, :func:`fp16_mask_fill`,
  :func:`eval_forgotten`): each returns a small frozen dataclass of the measured values, whose
  ``str`` is the lines a slide prints (words chosen by the values), in well under a second;
- the **broken copy** itself, registered in :data:`MISTAKES` and swapped into the package by
  :func:`made` (``with made("positions-from-zero"): ...``), so that the test suite can prove
  that the test the gallery names fails when the package makes the mistake
  (``tests/teaching/test_mistakes.py``).

Every helper draws its random numbers from its own ``seed`` inside a forked generator: the
caller's random stream is left as it was.
"""

from __future__ import annotations

import contextlib
import math
from dataclasses import dataclass
from typing import Callable, Iterator

import torch
from torch import Tensor, nn

from .. import attention as attention_module
from .. import layers as layers_module
from .. import multi_head_attention as mha_module
from .. import training as training_module
from ..attention import attention_weights
from ..data import BOS_ID, EOS_ID, PAD_ID, TranslationDataset, collate, make_task
from ..decoding import greedy_decode
from ..masks import causal_mask
from ..model import Transformer, TransformerConfig
from ..positional_encoding import PositionalEncoding
from ..training import LabelSmoothingLoss, WarmupSchedule, batch_loss_sum, make_optimizer


@contextlib.contextmanager
def _seeded(seed: int) -> Iterator[None]:
    """Run the block from ``torch.manual_seed(seed)`` and give the caller's stream back after."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        yield


def _tiny_model(vocab_size: int = 13, num_layers: int = 1, dropout: float = 0.0, **options) -> Transformer:
    config = TransformerConfig(vocab_size, vocab_size, d_model=16, num_heads=2, d_ff=32, num_layers=num_layers,
                               max_len=64, dropout=dropout, **options)
    return Transformer(config)


# ===================================================================== the broken copies
def attend_reading_mask_as_blocked(query, key, value, mask=None, dropout_p=0.0, **options):
    """Equation (1), as :class:`~transformer_lab.MultiHeadAttention` calls it
    (:func:`~transformer_lab.attention.attend`), with the mask read as
    ``nn.MultiheadAttention`` reads a boolean mask, True = blocked (the package's masks say
    True = may attend)."""
    return attention_module.attend(query, key, value, None if mask is None else ~mask, dropout_p, **options)


def unshifted_loss_sum(model, batch, loss_fn):
    """:func:`~transformer_lab.batch_loss_sum` with the target fed as it is scored: the
    decoder reads ``tgt_out`` (``y_1 .. y_n <eos>``) instead of ``tgt_in`` (``<bos> y_1 .. y_n``)."""
    logits = model(batch.src, batch.tgt_out)  # the token position t must predict is its input
    loss = loss_fn(logits, batch.tgt_out) * batch.tgt_tokens
    keep = batch.tgt_out != loss_fn.ignore_index
    return loss, ((logits.argmax(-1) == batch.tgt_out) & keep).sum()


def loss_counting_padding(self, logits: Tensor, target: Tensor) -> Tensor:
    """LabelSmoothingLoss.forward averaged over every position, padding included (the
    ``ignore_index`` forgotten, as in ``F.cross_entropy(..., label_smoothing=0.1)`` without it)."""
    log_p = torch.log_softmax(logits.float(), dim=-1)
    nll = -log_p.gather(-1, target.clamp(min=0).unsqueeze(-1)).squeeze(-1)
    return ((1.0 - self.smoothing) * nll + self.smoothing * -log_p.mean(dim=-1)).mean()


def smoothing_counting_padding(self, logits: Tensor, target: Tensor) -> Tensor:
    """LabelSmoothingLoss.forward whose correct-token term ignores padding but whose
    smoothing term (the cross-entropy against the uniform distribution) averages over every
    position, padding included."""
    log_p = torch.log_softmax(logits.float(), dim=-1)
    keep = target != self.ignore_index
    nll = -log_p.gather(-1, target.clamp(min=0).unsqueeze(-1)).squeeze(-1)
    correct = (nll * keep).sum() / keep.sum().clamp(min=1)
    return (1.0 - self.smoothing) * correct + self.smoothing * -log_p.mean(dim=-1).mean()


def positions_from_zero(self, length: int, offset: int, x: Tensor) -> Tensor:
    """PositionalEncoding.positions that ignores ``offset``: ``PE[0 : L]`` on every call, so
    with the key/value cache every new token is told it sits at position 0."""
    return self.table[:length].to(x.dtype)


def rate_without_step_0(step: int, d_model: int, warmup_steps: int = 4000, factor: float = 1.0) -> float:
    """Equation (3) as written, with no case for step 0: ``0 ** -0.5`` raises."""
    return factor * d_model**-0.5 * min(step**-0.5, step * warmup_steps**-1.5)


def rate_of_updates_done(self) -> list[float]:
    """WarmupSchedule.get_lr evaluated at ``last_epoch``, the updates already made, instead of
    ``last_epoch + 1``: the first update runs at step 0."""
    return [base * self.rate(self.last_epoch) for base in self.base_lrs]


def no_final_norm(self, x: Tensor) -> Tensor:
    """A pre-LN stack that builds its final LayerNorm but never applies it."""
    return x


def _weights_minus_1e9(query: Tensor, key: Tensor, mask: Tensor | None = None, *, bias: Tensor | None = None,
                       additive: bool) -> Tensor:
    scores = query @ key.transpose(-2, -1) / math.sqrt(query.size(-1))  # (..., T, S), in the inputs' dtype
    if bias is not None:
        scores = scores + bias.to(scores.dtype)
    if mask is not None:
        if additive:  # a float mask of 0 and -1e9, cast to the scores' dtype: -1e9 becomes -inf in float16
            scores = scores + ((~mask).float() * -1e9).to(scores.dtype)
        else:
            scores = scores.masked_fill(~mask, -1e9)  # float16 cannot hold -1e9: raises
    return torch.softmax(scores, dim=-1)


def weights_minus_1e9_added(query, key, mask=None, *, bias=None):
    """attention_weights with an additive -1e9 mask in the inputs' dtype and no float32 softmax."""
    return _weights_minus_1e9(query, key, mask, bias=bias, additive=True)


def weights_minus_1e9_filled(query, key, mask=None, *, bias=None):
    """attention_weights filling masked scores with -1e9 in the inputs' dtype."""
    return _weights_minus_1e9(query, key, mask, bias=bias, additive=False)


def eval_that_does_nothing(self: nn.Module) -> nn.Module:
    """``nn.Module.eval`` forgotten: the module stays in training mode, dropout on."""
    return self


@dataclass(frozen=True)
class Mistake:
    """One reimplementation bug: its ``key``, the line a learner writes (``wrong_line``) and
    ``swaps``: (owner, attribute name, broken copy) that :func:`made` puts in place."""

    key: str
    wrong_line: str
    swaps: tuple[tuple[object, str, Callable], ...]


MISTAKES: dict[str, Mistake] = {m.key: m for m in (
    Mistake("mask-polarity", "nn.MultiheadAttention(...)(x, x, x, attn_mask=tl.causal_mask(T))",
            ((mha_module, "attend", attend_reading_mask_as_blocked),)),
    Mistake("unshifted-target", "loss_fn(model(src, tgt), tgt)",
            ((training_module, "batch_loss_sum", unshifted_loss_sum),)),
    Mistake("padding-in-loss", "F.cross_entropy(logits, tgt, label_smoothing=0.1)",
            ((LabelSmoothingLoss, "forward", loss_counting_padding),)),
    Mistake("padding-in-smoothing", "smooth = -log_p.mean(-1).mean()",
            ((LabelSmoothingLoss, "forward", smoothing_counting_padding),)),
    Mistake("positions-from-zero", "x + self.table[:x.size(1)]",
            ((PositionalEncoding, "positions", positions_from_zero),)),
    Mistake("schedule-at-step-0", "d**-0.5 * min(step**-0.5, step * warmup**-1.5)",
            ((training_module, "noam_learning_rate", rate_without_step_0),)),
    Mistake("scheduler-from-step-0", "self.rate(self.last_epoch)",
            ((WarmupSchedule, "get_lr", rate_of_updates_done),)),
    Mistake("pre-ln-no-final-norm", "return x  # after the last pre-LN layer",
            ((layers_module._Stack, "final_norm", no_final_norm),)),
    Mistake("fp16-minus-1e9-added", "scores + ((~mask) * -1e9).half()",
            ((attention_module, "attention_weights", weights_minus_1e9_added),)),
    Mistake("fp16-minus-1e9-filled", "scores.masked_fill(~mask, -1e9)  # in float16",
            ((attention_module, "attention_weights", weights_minus_1e9_filled),)),
    Mistake("eval-forgotten", "out = model(src, tgt)  # no model.eval()",
            ((nn.Module, "eval", eval_that_does_nothing),)),
)}


@contextlib.contextmanager
def made(key: str) -> Iterator[Mistake]:
    """Run the block with the package making mistake ``key`` of :data:`MISTAKES`: its broken
    copies replace the package's (and ``transformer_lab.<name>`` where the package re-exports
    the replaced function), and everything is put back afterwards."""
    if key not in MISTAKES:
        raise KeyError(f"key must be one of {sorted(MISTAKES)}, got {key!r}")
    import transformer_lab

    mistake = MISTAKES[key]
    swaps = []
    for owner, name, broken in mistake.swaps:
        original = owner.__dict__[name] if isinstance(owner, type) else getattr(owner, name)
        swaps.append((owner, name, original, broken))
        if not isinstance(owner, type) and getattr(transformer_lab, name, None) is original:
            swaps.append((transformer_lab, name, original, broken))
    try:
        for owner, name, _, broken in swaps:
            setattr(owner, name, broken)
        yield mistake
    finally:
        for owner, name, original, _ in reversed(swaps):
            setattr(owner, name, original)


# ===================================================================== the symptoms
def _row(values) -> str:
    return " ".join("nan" if math.isnan(v) else f"{v:.2f}" for v in values)


@dataclass(frozen=True)
class MaskPolarity:
    """The package's causal mask (True = may attend) handed to ``nn.MultiheadAttention``
    (True = blocked): ``later``, the weight each query puts on later tokens; ``last_row``,
    the weights of the last query, which may see nothing under the flipped reading."""

    length: int
    later: tuple[float, ...]
    last_row: tuple[float, ...]
    flipped_later: float  # with ~mask, as nn.MultiheadAttention wants: the largest weight on a later token

    def __str__(self) -> str:
        return (f"query 0 → later: {self.later[0]:.2f} (must be 0)\n"
                f"query {self.length - 1}: {_row(self.last_row)}\n"
                f"with ~mask → later: {self.flipped_later:.2f}")


def mask_polarity(seed: int = 0, length: int = 4, d_model: int = 8, num_heads: int = 2) -> MaskPolarity:
    """Mistake (1): a True = may-attend mask given to ``nn.MultiheadAttention``."""
    with _seeded(seed):
        mha = nn.MultiheadAttention(d_model, num_heads, batch_first=True).eval()
        x = torch.randn(1, length, d_model)  # (B, T, D)
    mask = causal_mask(length)  # (T, T), True = may attend
    with torch.no_grad():
        _, wrong = mha(x, x, x, attn_mask=mask, need_weights=True)  # (1, T, T), heads averaged
        _, right = mha(x, x, x, attn_mask=~mask, need_weights=True)
    later = (wrong[0] * ~mask).sum(-1)  # (T,): NaN where the row is NaN
    return MaskPolarity(length, tuple(later.tolist()), tuple(wrong[0, -1].tolist()),
                        float((right[0] * ~mask).max()))


@dataclass(frozen=True)
class UnshiftedTarget:
    """A tiny model trained ``steps`` steps on the copy task with the shifted target
    (``tgt_in``, the package's) and with the unshifted one (the decoder reads ``tgt_out``, the
    tokens it is scored on): the training losses, the unshifted model's token accuracy under
    teacher forcing (when it may read the answer) and its greedy decodes (when it must write it)."""

    steps: int
    loss_shifted: float
    loss_unshifted: float
    reads_right: float  # token accuracy of the unshifted model, teacher-forced
    writes_right: int  # greedy decodes equal to the target
    examples: int

    def __str__(self) -> str:
        return (f"loss at step {self.steps}: {self.loss_shifted:.2f} shifted\n"
                f"{'':<{len(str(self.steps)) + 15}}{self.loss_unshifted:.2f} unshifted\n"
                f"unshifted, teacher-forced: {100 * self.reads_right:.0f}%\n"
                f"unshifted, greedy: {self.writes_right} of {self.examples} right")


def _copy_batches(seed: int, batch_size: int = 32):
    data = make_task("copy", seed=seed, num_train=256, num_validation=0, num_test=32, min_len=3, max_len=6)
    train = TranslationDataset(data.train, data.src_vocab, data.tgt_vocab)
    order = torch.randperm(len(train), generator=torch.Generator().manual_seed(seed))
    batches = [collate([train[int(i)] for i in idx]) for idx in order.split(batch_size)]
    test = TranslationDataset(data.test, data.src_vocab, data.tgt_vocab)
    return data, batches, collate([test[i] for i in range(len(test))])


def unshifted_target(seed: int = 0, steps: int = 12) -> UnshiftedTarget:
    """Mistake (2): the decoder reads the token it must predict. Same data, same model, same
    steps, one line changed (:func:`unshifted_loss_sum` for
    :func:`~transformer_lab.batch_loss_sum`)."""
    data, batches, test = _copy_batches(seed)
    losses = {}
    for name, step_loss in (("shifted", batch_loss_sum), ("unshifted", unshifted_loss_sum)):
        with _seeded(seed):
            model = _tiny_model(len(data.tgt_vocab))
            optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
            loss_fn = LabelSmoothingLoss(0.0)
            for step in range(steps):
                batch = batches[step % len(batches)]
                loss, _ = step_loss(model, batch, loss_fn)
                optimizer.zero_grad()
                (loss / batch.tgt_tokens).backward()
                optimizer.step()
        losses[name] = float(loss.detach()) / batch.tgt_tokens
    model.eval()
    with torch.no_grad():
        _, correct = unshifted_loss_sum(model, test, loss_fn)
    out = greedy_decode(model, test.src, max_len=test.tgt_out.size(1) + 1, bos_id=BOS_ID, eos_id=EOS_ID)
    wrote = sum(data.tgt_vocab.decode(o) == ref for o, (_, ref) in zip(out.tolist(), data.test))
    return UnshiftedTarget(steps, losses["shifted"], losses["unshifted"], int(correct) / test.tgt_tokens, wrote,
                           len(data.test))


@dataclass(frozen=True)
class PaddingInLoss:
    """The same two target sentences, padded to ``lengths`` (a longer batch-mate adds
    padding): for the package's loss and the two broken copies, the loss at each padded
    length and the largest gradient the loss sends to the logits of padding positions (at
    the longest padding)."""

    lengths: tuple[int, ...]
    losses: dict[str, tuple[float, ...]]
    padding_gradient: dict[str, float]

    NAMES = {"package": "package", "padding": "no ignore", "smoothing": "smoothing"}

    def __str__(self) -> str:
        head = "".join(f"{f'T={n}':>7}" for n in self.lengths)
        lines = [f"{'':<9}{head}  pad grad"]
        for key, name in self.NAMES.items():
            cells = "".join(f"{v:>7.3f}" for v in self.losses[key])
            grad = self.padding_gradient[key]
            lines.append(f"{name:<9}{cells}  {grad:.0e}" if grad else f"{name:<9}{cells}  0")
        return "\n".join(lines)


def padding_in_loss(seed: int = 0, lengths: tuple[int, ...] = (6, 12)) -> PaddingInLoss:
    """Mistake (3): padding counted in the loss, or only in its smoothing term. A tiny
    initialised model reads two target sentences (3 and 5 tokens) padded to each length;
    the real positions' logits do not change (padding keys are masked), so a loss that
    changes is counting the padding."""
    with _seeded(seed):
        model = _tiny_model().eval()
        src = torch.randint(3, 13, (2, 5))  # (B, S)
        words = torch.randint(3, 13, (2, 5))
    losses = {"package": [], "padding": [], "smoothing": []}
    gradient = {}
    smoothed = LabelSmoothingLoss(0.1, ignore_index=PAD_ID)
    forwards = {"package": LabelSmoothingLoss.forward, "padding": loss_counting_padding,
                "smoothing": smoothing_counting_padding}
    for length in lengths:
        tgt = torch.full((2, length + 1), PAD_ID)
        tgt[:, 0] = BOS_ID
        tgt[0, 1:4], tgt[0, 4] = words[0, :3], EOS_ID  # <bos> 3 tokens <eos>
        tgt[1, 1:6], tgt[1, 6] = words[1, :5], EOS_ID  # <bos> 5 tokens <eos>: T = 6 at least
        tgt_in = tgt[:, :-1].masked_fill(tgt[:, :-1] == EOS_ID, PAD_ID)
        tgt_out = tgt[:, 1:]
        with torch.no_grad():
            logits = model(src, tgt_in)  # (B, T, V)
        for key, forward in forwards.items():
            leaf = logits.clone().requires_grad_()
            loss = forward(smoothed, leaf, tgt_out)
            loss.backward()
            losses[key].append(float(loss.detach()))
            gradient[key] = float(leaf.grad[tgt_out == PAD_ID].abs().max())  # the last length's
    return PaddingInLoss(tuple(lengths), {k: tuple(v) for k, v in losses.items()}, gradient)


@dataclass(frozen=True)
class PositionsWithCache:
    """A tiny initialised model decodes a target one token at a time with the key/value
    cache, its positions taken as ``PE[0 : 1]`` at every step (:func:`positions_from_zero`):
    the largest difference of each step's logits from the full forward pass, and the same
    with the package's ``PE[t]``."""

    broken: tuple[float, ...]
    package: tuple[float, ...]

    def __str__(self) -> str:
        return (f"max |cached − full|, per step\n"
                f"PE[0]: {' '.join(f'{d:.2f}' for d in self.broken)}\n"
                f"PE[t]: {' '.join(f'{d:.2f}' for d in self.package)}")


def positions_with_cache(seed: int = 0, length: int = 5) -> PositionsWithCache:
    """Mistake (4): every generated token gets position 0."""
    with _seeded(seed):
        model = _tiny_model(num_layers=2).eval()
        src, tgt = torch.randint(3, 13, (1, 6)), torch.randint(3, 13, (1, length))
    diffs = {}
    for name in ("broken", "package"):
        context = made("positions-from-zero") if name == "broken" else contextlib.nullcontext()
        with torch.no_grad(), context:
            full = model(src, tgt)  # (1, T, V): the whole target at once, offsets not involved
            memory, cache = model.encode(src), model.new_cache()
            steps = [model.decode(tgt[:, t:t + 1], memory, cache=cache) for t in range(length)]
        diffs[name] = tuple(float((s[0, 0] - full[0, t]).abs().max()) for t, s in enumerate(steps))
    return PositionsWithCache(diffs["broken"], diffs["package"])


@dataclass(frozen=True)
class ScheduleAtStep0:
    """Equation (3) evaluated at step 0: what the formula does there, and the rates of the
    first updates with the package's :class:`~transformer_lab.WarmupSchedule` (update n uses
    step n) and with a scheduler that evaluates the updates already made (update n uses n - 1)."""

    error: str
    package: tuple[float, ...]
    from_zero: tuple[float, ...]

    def __str__(self) -> str:
        scale = 1e7
        rates = lambda values: " ".join(f"{scale * v:.2f}" for v in values)
        return (f"rate(0): {self.error}\n"
                f"×10⁻⁷: {rates(self.package)} (package)\n"
                f"       {rates(self.from_zero)} (from 0)")


def schedule_at_step_0(d_model: int = 512, warmup_steps: int = 4000, updates: int = 3) -> ScheduleAtStep0:
    """Mistake (5): equation (3) has step_num^-0.5, so step 0 has no rate."""
    try:
        rate_without_step_0(0, d_model, warmup_steps)
        error = "no error"
    except ZeroDivisionError as e:
        error = type(e).__name__
    seen = {}
    for name in ("package", "from_zero"):
        optimizer = make_optimizer(nn.Linear(2, 2))
        context = made("scheduler-from-step-0") if name == "from_zero" else contextlib.nullcontext()
        with context:
            scheduler = WarmupSchedule(optimizer, d_model, warmup_steps)
            rates = []
            for _ in range(updates):
                rates.append(optimizer.param_groups[0]["lr"])
                optimizer.step()
                scheduler.step()
        seen[name] = tuple(rates)
    return ScheduleAtStep0(error, seen["package"], seen["from_zero"])


@dataclass(frozen=True)
class PreLNWithoutFinalNorm:
    """A pre-LN encoder stack at initialisation: the root mean square of its output without
    the final LayerNorm (the last layer's residual sum) and with it, for each depth."""

    depths: tuple[int, ...]
    without: tuple[float, ...]
    with_norm: tuple[float, ...]

    def __str__(self) -> str:
        return (f"RMS of the output\n"
                f"N:          {''.join(f'{n:>6}' for n in self.depths)}\n"
                f"no norm:    {''.join(f'{v:>6.2f}' for v in self.without)}\n"
                f"final norm: {''.join(f'{v:>6.2f}' for v in self.with_norm)}")


def missing_final_norm(seed: int = 0, depths: tuple[int, ...] = (1, 6, 24)) -> PreLNWithoutFinalNorm:
    """Mistake (6): pre-LN layers leave x + Sublayer(LayerNorm(x)) unnormalised, so a stack
    without its final LayerNorm hands the raw residual sum to what comes next."""
    from ..layers import Encoder

    without, with_norm = [], []
    for depth in depths:
        with _seeded(seed):
            encoder = Encoder(depth, 16, 2, 32, dropout=0.0, norm_first=True).eval()
            x = torch.randn(4, 10, 16)  # (B, S, D), unit variance like the scaled embeddings
        with torch.no_grad():
            with_norm.append(float(encoder(x).pow(2).mean().sqrt()))
            with made("pre-ln-no-final-norm"):
                without.append(float(encoder(x).pow(2).mean().sqrt()))
    return PreLNWithoutFinalNorm(tuple(depths), tuple(without), tuple(with_norm))


@dataclass(frozen=True)
class Fp16MaskFill:
    """Half-precision scores with a mask, one query seeing two keys and one seeing none:
    what ``masked_fill(~mask, -1e9)`` does, what an additive -1e9 mask becomes, and the
    weights of both rows from the broken copy and from the package."""

    filled: str
    minus_1e9: float  # -1e9 as float16 holds it
    added: tuple[tuple[float, ...], ...]
    package: tuple[tuple[float, ...], ...]

    def __str__(self) -> str:
        return (f"masked_fill: {self.filled}\n"
                f"-1e9 in float16: {self.minus_1e9}\n"
                f"added, row 0: {_row(self.added[0])}\n"
                f"added, row 1: {_row(self.added[1])}\n"
                f"package, row 1: {_row(self.package[1])}")


def fp16_mask_fill(seed: int = 0) -> Fp16MaskFill:
    """Mistake (7): -1e9 is outside float16's range (its lowest value is -65504)."""
    with _seeded(seed):
        q, k = torch.randn(2, 4).half(), torch.randn(3, 4).half()  # (T, K), (S, K)
    mask = torch.tensor([[True, True, False], [False, False, False]])  # query 1 may see nothing
    try:
        weights_minus_1e9_filled(q, k, mask)
        filled = "no error"
    except RuntimeError as e:
        filled = type(e).__name__
    added = weights_minus_1e9_added(q, k, mask)
    package = attention_weights(q, k, mask)
    return Fp16MaskFill(filled, float(torch.tensor(-1e9, dtype=torch.float16)),
                        tuple(tuple(r) for r in added.float().tolist()),
                        tuple(tuple(r) for r in package.float().tolist()))


@dataclass(frozen=True)
class EvalForgotten:
    """One tiny model with the paper's P_drop = 0.1 called twice on the same input: the
    largest difference between the two calls' logits in training mode (``model.eval()``
    forgotten) and in evaluation mode, and the probability of the first token's top
    prediction in each of ``calls`` calls in training mode."""

    train_difference: float
    eval_difference: float
    top_probabilities: tuple[float, ...]

    def __str__(self) -> str:
        return (f"two calls, max |Δ logit|\n"
                f"  training mode: {self.train_difference:.2f}\n"
                f"  after eval():  {self.eval_difference:.2f}\n"
                f"p(top), {len(self.top_probabilities)} calls: {' '.join(f'{p:.2f}' for p in self.top_probabilities)}")


def eval_forgotten(seed: int = 0, calls: int = 3) -> EvalForgotten:
    """Mistake (8): dropout stays on at inference, so the same input gives other outputs."""
    with _seeded(seed):
        model = _tiny_model(num_layers=2, dropout=0.1)
        src, tgt = torch.randint(3, 13, (1, 6)), torch.randint(3, 13, (1, 5))
        with torch.no_grad():
            train = [model(src, tgt) for _ in range(max(calls, 2))]  # (1, T, V) each
            model.eval()
            evaluated = [model(src, tgt) for _ in range(2)]
    top = int(train[0][0, 0].argmax())
    return EvalForgotten(float((train[0] - train[1]).abs().max()), float((evaluated[0] - evaluated[1]).abs().max()),
                         tuple(float(t[0, 0].softmax(-1)[top]) for t in train[:calls]))
