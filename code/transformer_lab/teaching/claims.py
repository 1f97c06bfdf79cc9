"""Sentences about computed results, as code: a slide says only what its build measured.

The deck is built on machines we never see: other CPU kernels, other PyTorch builds, other
seeds train other models and time other speeds. A sentence typed after reading one build
("head 2 reads *road*", "the GRU runs at about 25 GMAC/s") is a copy of that build, and
copies drift. So every sentence of the deck about a trained model's behaviour, a timing, a
decode or a count that another build could change is a :class:`Claim`, registered here by
``transformer_lab.teaching.deck_claims``:

- a **checked** claim has a fixed sentence and a rule: the build measures the value and stops
  with a :class:`ClaimError` naming the slide, the sentence and the measured value when the
  rule fails, as a failing cell does (under real Quarto too: the same cell raises);
- a **generated** claim has no rule: its sentence is written from the measured value (its
  words, "faster" or "slower", chosen by the value too), so it holds by construction.

In the deck, an ``output: asis`` cell (also inside a ``.notes`` div) prints a claim, or a
hidden cell checks a sentence typed in the slide (a title, an alt text)::

    print(tt.claims.say("opener-tired-reads-cat"))    # the sentence, or ClaimError
    tt.claims.check("title-layer-1-reads-the-animal")   # nothing printed, or ClaimError

Claims read the deck's trained models through a :class:`Context`, so the tests and
``benchmarks/claims_matrix.py`` can evaluate every registered claim on other seeds and
kernels (:func:`evaluate`, :data:`REGISTRY`). A number a cell computes from fixed inputs
and prints in the same cell (a parameter count, a hand-worked head) is generated where it is
computed and is not registered; a claim is registered when another build could make it false.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field
from typing import Any, Callable

KINDS = {
    "model": "about a trained model: evaluated on every variant of the claims matrix",
    "seeded": "about a computation from random numbers (an initialised model): evaluated per seed",
    "exact": "about a computation from fixed inputs: the same on every machine up to rounding",
    "timing": "about a timing on the build's machine: generated from the measured value",
}


class ClaimError(AssertionError):
    """A registered sentence that does not hold on this build: the message names the slide,
    the sentence, the rule and the measured value."""


@dataclass
class Context:
    """What claims are measured on: the deck's trained models for one ``seed`` (the deck
    itself: 0), each trained once (:mod:`~transformer_lab.teaching.cache`), and a memo for
    statistics several claims share (:meth:`memo`)."""

    seed: int = 0
    _memo: dict = field(default_factory=dict, repr=False)

    def __post_init__(self):
        if not isinstance(self.seed, int) or isinstance(self.seed, bool) or self.seed < 0:
            raise ValueError(f"seed must be a non-negative int, got {self.seed!r}")

    def memo(self, key: str, compute: Callable[[], Any]) -> Any:
        """``compute()`` once per context: a statistic that several claims read."""
        if key not in self._memo:
            self._memo[key] = compute()
        return self._memo[key]

    @property
    def pronoun(self):
        """The pronoun model (``tt.PRONOUN_MODEL`` with this context's seed), a RunResult."""
        from .deck_models import PRONOUN_MODEL
        return self.memo("pronoun", lambda: PRONOUN_MODEL.with_seed(self.seed).result())

    @property
    def dates(self):
        """The dates model (``tt.DATES_MODEL`` with this context's seed), a RunResult."""
        from .deck_models import DATES_MODEL
        return self.memo("dates", lambda: DATES_MODEL.with_seed(self.seed).result())


@dataclass(frozen=True)
class Claim:
    """One sentence of the deck about a computed result.

    ``id``: how cells and tests name it. ``slide``: the title of the slide that states it,
    as in the chapter's source (``"notes"`` parts say so: ``"... (notes)"``). ``kind``: one of
    :data:`KINDS`. ``text``: the sentence, a ``str.format`` template filled from the values
    ``measure(context)`` returns (a dict). ``rule``: a function of those values, true when
    the sentence holds (``None``: generated, holds by construction); ``rule_text`` says the
    rule in words. ``shown``: a template of the measured values for messages and the matrix.
    """

    id: str
    slide: str
    kind: str
    text: str
    measure: Callable[[Context], dict]
    rule: Callable[[dict], bool] | None = None
    rule_text: str = ""
    shown: str = ""

    def __post_init__(self):
        if self.kind not in KINDS:
            raise ValueError(f"kind must be one of {sorted(KINDS)}, got {self.kind!r}")
        if (self.rule is None) != (self.rule_text == ""):
            raise ValueError(f"claim {self.id!r}: a rule needs its rule_text and a rule_text its rule")

    @property
    def generated(self) -> bool:
        return self.rule is None


@dataclass(frozen=True)
class Finding:
    """A claim evaluated on one context: whether it holds, the sentence as it reads there,
    and the measured values (``shown``: the claim's summary of them)."""

    claim: Claim
    holds: bool
    sentence: str
    values: dict
    shown: str

    def message(self) -> str:
        c = self.claim
        return (f"slide \"{c.slide}\": the claim {c.id!r} does not hold on this build.\n"
                f"  sentence: {self.sentence}\n  rule: {c.rule_text}\n  measured: {self.shown}\n"
                f"A slide states only what its build measures: change the demonstration or the "
                f"sentence (transformer_lab/teaching/deck_claims.py), not the check.")


REGISTRY: dict[str, Claim] = {}
_deck_context: Context | None = None


def register(claim: Claim) -> Claim:
    """Add ``claim`` to :data:`REGISTRY` (its id must be new)."""
    if not isinstance(claim, Claim):
        raise TypeError(f"claim must be a Claim, got {type(claim).__name__}")
    if claim.id in REGISTRY:
        raise ValueError(f"a claim with id {claim.id!r} is registered already")
    REGISTRY[claim.id] = claim
    return claim


def claim(id: str, slide: str, kind: str, text: str, *, rule: Callable[[dict], bool] | None = None,
          rule_text: str = "", shown: str = "") -> Callable[[Callable[[Context], dict]], Claim]:
    """Decorator: register the decorated ``measure(context) -> dict`` as a :class:`Claim`."""
    def decorate(measure: Callable[[Context], dict]) -> Claim:
        return register(Claim(id, slide, kind, text, measure, rule, rule_text, shown))
    return decorate


def _load() -> None:
    from . import deck_claims  # noqa: F401  (registers the deck's claims on import)


def get(id: str) -> Claim:
    """The registered claim named ``id``."""
    _load()
    if id not in REGISTRY:
        known = ", ".join(sorted(REGISTRY))
        raise KeyError(f"no claim named {id!r} is registered (transformer_lab/teaching/deck_claims.py); "
                       f"known: {known}")
    return REGISTRY[id]


def all_claims() -> list[Claim]:
    """Every registered claim, in the order the deck registers them."""
    _load()
    return list(REGISTRY.values())


def deck_context() -> Context:
    """The context of the deck's own build: seed 0, one per process."""
    global _deck_context
    if _deck_context is None:
        _deck_context = Context(seed=0)
    return _deck_context


def _format(template: str, values: dict) -> str:
    try:
        return template.format(**values)
    except (KeyError, IndexError, ValueError) as e:
        raise ValueError(f"template {template!r} does not fit the measured values {sorted(values)}: {e}") from None


def evaluate(claim_or_id: Claim | str, context: Context | None = None) -> Finding:
    """Measure ``claim_or_id`` on ``context`` (default: the deck's) and apply its rule."""
    c = get(claim_or_id) if isinstance(claim_or_id, str) else claim_or_id
    ctx = deck_context() if context is None else context
    values = c.measure(ctx)
    if not isinstance(values, dict):
        raise TypeError(f"claim {c.id!r}: measure must return a dict of values, got {type(values).__name__}")
    holds = True if c.rule is None else bool(c.rule(values))
    shown = _format(c.shown, values) if c.shown else ", ".join(
        f"{k} = {_short(v)}" for k, v in values.items() if not k.startswith("_"))
    return Finding(c, holds, _format(c.text, values), values, shown)


def _short(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.3g}" if math.isfinite(value) else str(value)
    if dataclasses.is_dataclass(value):
        return type(value).__name__
    text = str(value)
    return text if len(text) <= 60 else text[:57] + "..."


def say(id: str, context: Context | None = None) -> str:
    """The sentence of claim ``id`` as this build measures it; raises :class:`ClaimError`
    (naming the slide, the sentence and the measured value) when its rule fails."""
    finding = evaluate(id, context)
    if not finding.holds:
        raise ClaimError(finding.message())
    return finding.sentence


def check(*ids: str, context: Context | None = None) -> None:
    """Like :func:`say` for sentences typed in the slide (a title, an alt text): raises
    :class:`ClaimError` for the first that does not hold; returns nothing, so the cell
    that calls it shows nothing."""
    if not ids:
        raise ValueError("check needs at least one claim id")
    for id in ids:
        finding = evaluate(id, context)
        if not finding.holds:
            raise ClaimError(finding.message())
