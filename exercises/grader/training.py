"""Exercises 11 and 12: the warm-up learning rate (equation 3) and label smoothing."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

import transformer_lab as tl

from .core import Exercise, Mistake, Part, Property
from .inputs import B, PAD, T, V, generator, randn

# --------------------------------------------------------------------------- 11 learning rate

WARMUP, D_SMALL = 400, 12
STEPS = (1, 2, 100, 399, 400, 401, 1600, 10000)


def run_learning_rate(ns, rec):
    for step in STEPS:
        rec(f"noam_learning_rate({step}, d_model={D_SMALL}, warmup_steps={WARMUP})",
            lambda: ns.noam_learning_rate(step, D_SMALL, WARMUP))
    for step in (200, 800):
        rec(f"noam_learning_rate({step}, {D_SMALL}, {WARMUP}, factor=2.0)",
            lambda: ns.noam_learning_rate(step, D_SMALL, WARMUP, 2.0))
    rec("noam_learning_rate(4000, d_model=512) (the paper's warm-up, by default)",
        lambda: ns.noam_learning_rate(4000, 512))
    rec("noam_learning_rate(0, 12, 400) (before the first update)", lambda: ns.noam_learning_rate(0, D_SMALL, WARMUP))


def _rate(formula, *, zero=True):
    def noam_learning_rate(step, d_model, warmup_steps=4000, factor=1.0):
        if step == 0 and zero:
            return 0.0
        return factor * formula(step, d_model, warmup_steps)
    return noam_learning_rate


def _ignoring_factor(step, d_model, warmup_steps=4000, factor=1.0):
    return tl.noam_learning_rate(step, d_model, warmup_steps)


def _peak_at_warmup(ns) -> bool:
    rates = [ns.noam_learning_rate(s, D_SMALL, WARMUP) for s in range(1, 3 * WARMUP)]
    peak = max(range(len(rates)), key=rates.__getitem__) + 1
    return peak == WARMUP and abs(rates[WARMUP - 1] - (D_SMALL * WARMUP) ** -0.5) < 1e-9


def _linear_then_inverse_sqrt(ns) -> bool:
    rate = lambda s: ns.noam_learning_rate(s, D_SMALL, WARMUP)  # noqa: E731
    rising = abs(rate(100) - 2 * rate(50)) < 1e-9
    falling = abs(rate(1600) - rate(400) / 2) < 1e-9
    return rising and falling


def run_schedule(ns, rec):
    weights, biases = nn.Parameter(torch.zeros(2)), nn.Parameter(torch.zeros(1))
    optimizer = torch.optim.SGD([{"params": [weights], "lr": 2.0}, {"params": [biases], "lr": 0.5}], lr=1.0)
    schedule = rec.call(f"WarmupSchedule(SGD with base learning rates 2.0 and 0.5, d_model={D_SMALL}, "
                        f"warmup_steps=4)", lambda: ns.WarmupSchedule(optimizer, D_SMALL, 4))
    rates = []

    def updates():
        for _ in range(8):
            rates.append([group["lr"] for group in optimizer.param_groups])
            optimizer.step()
            schedule.step()
        return rates
    rec("the two groups' learning rates of updates 1 to 8 (optimizer.step(), then schedule.step())", updates)


class _ScheduleFromZero(tl.WarmupSchedule):
    def get_lr(self):
        return [base * self.rate(self.last_epoch) for base in self.base_lrs]


class _ScheduleWithoutBase(tl.WarmupSchedule):
    def get_lr(self):
        return [self.rate(self.last_epoch + 1) for _ in self.base_lrs]


LEARNING_RATE = Exercise(11, "ex11_learning_rate", "warm-up learning rate (equation 3) and its scheduler",
                         "learning-rate",
                         {"noam_learning_rate": tl.noam_learning_rate, "WarmupSchedule": tl.WarmupSchedule}, (
    Part("noam_learning_rate", run_learning_rate, tl.noam_learning_rate, mistakes=(
        Mistake("max instead of min", "the rate takes the max of step^-0.5 and step * warmup^-1.5; equation "
                "(3) takes the min, which rises during the warm-up and decays after it.", "learning-rate",
                {"noam_learning_rate": _rate(lambda s, d, w: d**-0.5 * max(s**-0.5, s * w**-1.5))}),
        Mistake("warm-up never ends", "the rate is d_model^-0.5 * step * warmup^-1.5 at every step, so it "
                "grows for ever; equation (3) takes min(step^-0.5, step * warmup^-1.5).", "learning-rate",
                {"noam_learning_rate": _rate(lambda s, d, w: d**-0.5 * s * w**-1.5)}),
        Mistake("no warm-up", "the rate is d_model^-0.5 * step^-0.5 from the first step, with no linear "
                "warm-up; a post-LN Transformer needs the warm-up to train.", "learning-rate",
                {"noam_learning_rate": _rate(lambda s, d, w: d**-0.5 * s**-0.5)}),
        Mistake("warmup_steps^-0.5", "the warm-up branch uses warmup_steps^-0.5; equation (3) has "
                "warmup_steps^-1.5, so that the two branches meet at step = warmup_steps.", "learning-rate",
                {"noam_learning_rate": _rate(lambda s, d, w: d**-0.5 * min(s**-0.5, s * w**-0.5))}),
        Mistake("d_model^0.5", "the rate is multiplied by d_model^0.5; equation (3) has d_model^-0.5, so "
                "wider models take smaller steps.", "learning-rate",
                {"noam_learning_rate": _rate(lambda s, d, w: d**0.5 * min(s**-0.5, s * w**-1.5))}),
        Mistake("step counted from 0", "the rate of update n is computed for n + 1 (a scheduler counting "
                "from 0), so the peak comes one step early.", "learning-rate",
                {"noam_learning_rate": _rate(lambda s, d, w: d**-0.5 * min((s + 1) ** -0.5, (s + 1) * w**-1.5))}),
        Mistake("factor ignored", "factor does not scale the rate; it multiplies the whole curve.",
                "learning-rate", {"noam_learning_rate": _ignoring_factor}),
        Mistake("step 0 divides by zero", "step 0 raises (0 ** -0.5); the package returns 0.0 before the "
                "first update.", "gallery-schedule-at-step-0",
                {"noam_learning_rate": _rate(lambda s, d, w: d**-0.5 * min(s**-0.5, s * w**-1.5), zero=False)}),
        Mistake("step and warmup_steps swapped", "the warm-up branch is warmup_steps * step^-1.5; equation (3) "
                "has step * warmup_steps^-1.5, which rises linearly until step = warmup_steps (yours never "
                "rises and then falls as step^-1.5).", "learning-rate",
                {"noam_learning_rate": _rate(lambda s, d, w: d**-0.5 * min(s**-0.5, w * s**-1.5))}),
    ), properties=(
        Property("the peak is at step = warmup_steps and equals (d_model * warmup_steps)^-0.5", _peak_at_warmup),
        Property("linear during the warm-up, 1/sqrt(step) after it", _linear_then_inverse_sqrt),
    )),
    Part("WarmupSchedule.get_lr", run_schedule, tl.WarmupSchedule.get_lr, mistakes=(
        Mistake("first update at step 0", "the rate of step last_epoch is used, so the first update runs "
                "at step 0, with learning rate 0 (or a division by zero): last_epoch counts the updates "
                "already made, so the next one is update last_epoch + 1.", "gallery-schedule-at-step-0",
                {"WarmupSchedule": _ScheduleFromZero}),
        Mistake("base learning rate ignored", "every parameter group gets the bare rate; the scheduler "
                "multiplies each group's base learning rate (self.base_lrs) by it, as PyTorch's schedulers "
                "do.", "learning-rate", {"WarmupSchedule": _ScheduleWithoutBase}),
    )),
))

# --------------------------------------------------------------------------- 12 label smoothing


def smoothing_inputs():
    g = generator()
    logits = 3 * randn(g, B, T, V)
    target = torch.randint(3, V, (B, T), generator=g)
    target[1, -2:] = PAD
    return logits, target


def run_label_smoothing(ns, rec):
    logits, target = smoothing_inputs()
    rec.watch(logits=logits, target=target)
    for smoothing in (0.1, 0.3, 0.0):
        loss_fn = rec.call(f"LabelSmoothingLoss(smoothing={smoothing}, ignore_index={PAD})",
                           lambda: ns.LabelSmoothingLoss(smoothing, PAD))
        rec(f"smoothing={smoothing}: loss of logits (2, 5, 11) against target (2, 5) with 2 padding positions",
            lambda: loss_fn(logits, target))
    loss_fn = rec.call(f"LabelSmoothingLoss(smoothing=0.1, ignore_index={PAD})",
                       lambda: ns.LabelSmoothingLoss(0.1, PAD))
    rec("batch size 1, smoothing=0.1: loss of logits (1, 5, 11) against target (1, 5) with 2 padding positions",
        lambda: loss_fn(logits[1:], target[1:]))


class _Smoothed(tl.LabelSmoothingLoss):
    """Cross-entropy against a target distribution chosen by ``q``, averaged or summed."""

    average_over_padding = False
    reduce = "mean"
    log_softmax = True

    def q(self, target, vocab):
        return self.target_distribution(target, vocab)

    def forward(self, logits, target):
        log_p = torch.log_softmax(logits.float(), dim=-1) if self.log_softmax else logits.float()  # (B, T, V)
        loss = self.pointwise(self.q(target, logits.size(-1)), log_p)  # (B, T)
        keep = torch.ones_like(target, dtype=torch.bool) if self.average_over_padding else target != self.ignore_index
        total = (loss * keep).sum()
        return total if self.reduce == "sum" else total / keep.sum()

    @staticmethod
    def pointwise(q, log_p):
        return -(q * log_p).sum(-1)


class _OverWrongTokens(_Smoothed):
    def q(self, target, vocab):
        q = torch.full((*target.shape, vocab), self.smoothing / (vocab - 1))
        return q.scatter(-1, target.unsqueeze(-1), 1.0 - self.smoothing)


class _PaddingColumnZero(_Smoothed):
    def q(self, target, vocab):
        q = torch.full((*target.shape, vocab), self.smoothing / (vocab - 2))
        q[..., self.ignore_index] = 0.0
        return q.scatter(-1, target.unsqueeze(-1), 1.0 - self.smoothing)


class _PaddingAveraged(_Smoothed):
    average_over_padding = True


class _Summed(_Smoothed):
    reduce = "sum"


class _KL(_Smoothed):
    @staticmethod
    def pointwise(q, log_p):
        return (q * (q.clamp(min=1e-30).log() - log_p)).sum(-1)


class _NoLogSoftmax(_Smoothed):
    log_softmax = False


class _PaddingInSmoothing(tl.LabelSmoothingLoss):
    def forward(self, logits, target):
        log_p = torch.log_softmax(logits.float(), dim=-1)  # (B, T, V)
        nll = F.nll_loss(log_p.flatten(0, -2), target.flatten(), ignore_index=self.ignore_index)
        uniform = -log_p.mean(dim=-1).mean()  # over every position, padding included
        return (1.0 - self.smoothing) * nll + self.smoothing * uniform


class _NoSmoothing(_Smoothed):
    def q(self, target, vocab):
        return F.one_hot(target, vocab).float()


def _equals_cross_entropy(ns) -> bool:
    logits, target = smoothing_inputs()
    expected = F.cross_entropy(logits.view(-1, V), target.view(-1), ignore_index=PAD, label_smoothing=0.2)
    return torch.allclose(ns.LabelSmoothingLoss(0.2, PAD)(logits, target), expected, atol=1e-5)


def _padding_counts_for_nothing(ns) -> bool:
    logits, target = smoothing_inputs()
    edited = logits.clone()
    edited[1, -2:] = 10 * randn(generator(4), 2, V)
    loss_fn = ns.LabelSmoothingLoss(0.1, PAD)
    return torch.allclose(loss_fn(logits, target), loss_fn(edited, target), atol=1e-6)


LABEL_SMOOTHING = Exercise(12, "ex12_label_smoothing", "label smoothing", "label-smoothing",
                           {"LabelSmoothingLoss": tl.LabelSmoothingLoss}, (
    Part("LabelSmoothingLoss", run_label_smoothing, tl.LabelSmoothingLoss, mistakes=(
        Mistake("spread over V - 1 tokens", "the smoothing mass goes to the V - 1 wrong tokens only, the "
                "convention of tensor2tensor; this exercise asks for the package's, which spreads it over "
                "all V tokens, the correct one included (smoothing / V each, as "
                "F.cross_entropy(label_smoothing=...) does).", "label-smoothing",
                {"LabelSmoothingLoss": _OverWrongTokens}),
        Mistake("padding column kept at zero", "the smoothing mass avoids the padding token and the correct "
                "one (smoothing / (V - 2) each, the Annotated Transformer's convention); the package spreads "
                "it over all V tokens.", "label-smoothing", {"LabelSmoothingLoss": _PaddingColumnZero}),
        Mistake("padding averaged in", "padding positions count in the average; their targets are "
                "ignore_index and must count for nothing, in the sum and in the number of positions.",
                "gallery-padding-in-loss", {"LabelSmoothingLoss": _PaddingAveraged}),
        Mistake("summed, not averaged", "the loss is summed over the positions; the package averages it over "
                "the positions that are not padding.", "label-smoothing", {"LabelSmoothingLoss": _Summed}),
        Mistake("KL divergence", "the loss is KL(q || p), the cross-entropy minus the entropy of the "
                "smoothed targets: same gradients, a different value; the package reports the cross-entropy.",
                "label-smoothing", {"LabelSmoothingLoss": _KL}),
        Mistake("smoothing ignored", "the loss is the plain cross-entropy against one-hot targets; with "
                "smoothing > 0 the target puts 1 - smoothing + smoothing / V on the correct token.",
                "label-smoothing", {"LabelSmoothingLoss": _NoSmoothing}),
        Mistake("no log_softmax", "the logits are used as log-probabilities; the cross-entropy needs "
                "log_softmax(logits), so that the loss does not change when a constant is added to a "
                "position's logits.", "label-smoothing", {"LabelSmoothingLoss": _NoLogSoftmax}),
        Mistake("padding counted in the smoothing term", "the smoothing term, the cross-entropy against the "
                "uniform distribution, is averaged over every position, padding included (only the "
                "correct-token term ignores it); padding positions must count for nothing in both.",
                "gallery-padding-in-loss", {"LabelSmoothingLoss": _PaddingInSmoothing}),
    ), properties=(
        Property("equals F.cross_entropy(label_smoothing=0.2, ignore_index=0)", _equals_cross_entropy),
        Property("the logits at padding positions change nothing", _padding_counts_for_nothing),
    )),
))
