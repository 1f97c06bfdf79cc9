"""The deck's claims (transformer_lab.teaching.claims and .deck_claims): every registered
claim holds on the model this checkout trains, each is stated by the slide it names, a false
one stops with the slide, the sentence and the measured value, and the rules that choose
what a slide shows have a margin.

`make test` runs this file twice: natively and under ATEN_CPU_CAPABILITY=default, where the
deck's models train again (the cache keys include the kernels) and every claim must still hold.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
import torch

import transformer_lab as tl
from transformer_lab import teaching as tt
from transformer_lab.teaching import cache, claims

REPO = Path(__file__).resolve().parents[1]
CHAPTERS = REPO / "slides" / "chapters"
CACHE = REPO / ".cache" / "transformer_lab"
USE = re.compile(r"claims\.(say|check)\(([^)]*)\)")
EVALUATED = [c for c in claims.all_claims() if c.kind != "timing"]


@pytest.fixture(scope="module")
def deck_context():
    """The deck's own context, on the deck's cache: after `make deck` the models load."""
    tt.set_cache_directory(CACHE)
    yield claims.Context(seed=0)
    tt.set_cache_directory(None)


@pytest.mark.slow
@pytest.mark.parametrize("claim", EVALUATED, ids=[c.id for c in EVALUATED])
def test_every_claim_holds_on_this_build(claim, deck_context):
    finding = claims.evaluate(claim, deck_context)
    assert finding.holds, finding.message()
    assert "{" not in finding.sentence and "}" not in finding.sentence, finding.sentence


def test_timings_are_generated_never_checked_against_another_machine():
    timing = [c for c in claims.all_claims() if c.kind == "timing"]
    assert timing, "the deck states timings"
    assert all(c.generated for c in timing)


def slide_uses() -> dict[str, set[str]]:
    """claim id -> the titles of the slides whose cells say or check it."""
    uses: dict[str, set[str]] = {}
    for path in sorted(CHAPTERS.glob("*.qmd")):
        title, in_code = None, False
        for line in path.read_text().splitlines():
            if line.startswith("```"):
                in_code = not in_code
            heading = None if in_code else re.match(r"^##? (.+?)(\s*\{[^}]*\})?\s*$", line)
            if heading:
                title = heading.group(1)
            for _, args in USE.findall(line):
                for cid in re.findall(r'"([^"]+)"', args):
                    uses.setdefault(cid, set()).add(title)
    return uses


def test_every_claim_is_stated_by_the_slide_it_names_and_every_slide_names_a_registered_claim():
    uses = slide_uses()
    registered = {c.id for c in claims.all_claims()}
    assert set(uses) <= registered, f"slides name unregistered claims: {sorted(set(uses) - registered)}"
    assert registered <= set(uses), f"claims no slide states: {sorted(registered - set(uses))}"
    for c in claims.all_claims():
        slide = re.sub(r" \((notes|alt text|the explorer's guide)\)$", "", c.slide)
        assert slide in uses[c.id], f"{c.id}: registered for slide {slide!r}, used on {sorted(uses[c.id])}"


def test_a_false_claim_stops_with_the_slide_the_sentence_and_the_measured_value():
    claim = claims.Claim("test-false", "A slide", "exact", "The answer is {x}.", lambda ctx: {"x": 41},
                         rule=lambda v: v["x"] == 42, rule_text="x is 42", shown="x = {x}")
    finding = claims.evaluate(claim, claims.Context())
    assert not finding.holds and finding.sentence == "The answer is 41."
    claims.register(claim)
    try:
        with pytest.raises(claims.ClaimError, match=r'slide "A slide".*\n  sentence: The answer is 41\.\n'
                                                    r"  rule: x is 42\n  measured: x = 41"):
            claims.say("test-false")
        with pytest.raises(claims.ClaimError, match="test-false"):
            claims.check("test-false")
    finally:
        del claims.REGISTRY["test-false"]


def test_claims_refuse_what_they_cannot_state():
    with pytest.raises(ValueError, match="kind must be one of"):
        claims.Claim("x", "s", "guess", "t", lambda ctx: {})
    with pytest.raises(ValueError, match="a rule needs its rule_text"):
        claims.Claim("x", "s", "model", "t", lambda ctx: {}, rule=lambda v: True)
    with pytest.raises(KeyError, match="no claim named 'nope' is registered"):
        claims.get("nope")
    with pytest.raises(ValueError, match="is registered already"):
        claims.register(claims.all_claims()[0])
    with pytest.raises(ValueError, match="does not fit the measured values"):
        claims.evaluate(claims.Claim("x", "s", "exact", "{missing}", lambda ctx: {"y": 1}), claims.Context())
    with pytest.raises(ValueError, match="seed must be a non-negative int"):
        claims.Context(seed=-1)


def test_the_opener_rule_lists_near_ties_so_a_claim_cannot_rest_on_a_tie_break():
    torch.manual_seed(0)
    data = tl.make_task("pronoun", seed=0, num_train=1000, num_validation=0, num_test=4)
    model = tl.Transformer(tl.TransformerConfig.tiny(len(data.src_vocab), len(data.tgt_vocab))).eval()
    pairs = [(tt.RUNNING_SENTENCE, "cat"), (tt.CONTRAST_SENTENCE, "road")]
    choice = tt.contrast_head(model, data.src_vocab, pairs, margin=2.0)
    ratio = choice.ratio
    assert choice.layer == model.config.num_layers - 1 and choice.head == int(ratio.argmax())
    assert choice.near[0] == choice.head
    assert set(choice.near) == {h for h in range(len(ratio)) if 2.0 * ratio[h] >= ratio[choice.head]}
    # the statistic is the worse of the two sentences' ratios, computed directly
    for h in range(len(ratio)):
        worst = min(float(w[h, right] / w[h, other]) for w, right, other in (
            (tt.encoder_attention(model, data.src_vocab, [s])[-1, 0, :, tt.noun_positions(s, n)[0]],
             *tt.noun_positions(s, n)[1:]) for s, n in pairs))
        assert float(ratio[h]) == pytest.approx(worst, rel=1e-5)
    assert tt.contrast_head(model, data.src_vocab, pairs, margin=1e9).near == tuple(
        ratio.argsort(descending=True).tolist())
    with pytest.raises(ValueError, match="margin must be a factor of at least 1"):
        tt.contrast_head(model, data.src_vocab, pairs, margin=0.5)


def test_the_cache_key_names_the_kernels_so_another_kernel_set_trains_again(monkeypatch):
    key = cache.cache_key("run", {"seed": 0})
    monkeypatch.setattr(cache, "kernels", lambda: {"torch": torch.__version__, "cpu_capability": "OTHER"})
    assert cache.cache_key("run", {"seed": 0}) != key
    # and ATEN_CPU_CAPABILITY=default really reaches the key, in a fresh process
    code = "from transformer_lab.teaching import cache; print(cache.kernels()['cpu_capability'])"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         env={"ATEN_CPU_CAPABILITY": "default", "PATH": "/usr/bin:/bin",
                              "PYTHONPATH": str(REPO / "code")})
    assert out.stdout.strip() == "DEFAULT"


def test_a_variant_seed_trains_another_model_with_the_same_settings():
    other = tt.PRONOUN_MODEL.with_seed(3)
    assert other.config.seed == 3 and other.config.replace(seed=0) == tt.PRONOUN_MODEL.config
    assert tt.PRONOUN_MODEL.with_seed(tt.PRONOUN_MODEL.config.seed) is tt.PRONOUN_MODEL


# ------------------------------------------------------------------ since 2017 (issue 32)
def since_context(em=None, loss=None, tokens_2l=None, no_warmup=(0.49, 0.21)) -> claims.Context:
    """A context whose since-2017 results are made up (no training): held-out exact match
    and loss per change, token accuracy at 2L per position scheme, and exact match without
    warm-up (pre-LN, post-LN)."""
    from transformer_lab.teaching import since2017 as s

    em = {"paper": 0.45, "rms_norm": 0.46, "swiglu": 0.58, "gqa": 0.49, "mqa": 0.18, "rotary": 0.74,
          "decoder_only": 0.175, **(em or {})}
    loss = {key: 0.5 for key in em} | (loss or {"decoder_only": 0.9})
    rows = tuple(s.ChangeRow(k, k, "", "", 100, 1.0, em[k], loss[k], 1.0, em[k] - em["paper"],
                             loss[k] - loss["paper"]) for k in em)
    tokens_2l = {"sinusoidal": 0.21, "learned": 0.11, "rotary": 0.39, "alibi": 0.37, **(tokens_2l or {})}
    positions = s.PositionsBeyondTraining(0, (1, 6), 12, tuple(
        s.PositionRow(name, "", 0.4, 0.0, acc, 2.0) for name, acc in tokens_2l.items()))
    warm = {("post-LN", True): 0.445, ("post-LN", False): no_warmup[1], ("pre-LN", True): 0.46,
            ("pre-LN", False): no_warmup[0]}
    warmup = s.WarmupAndLayerNorm(0, 100, 0.0088, 10, tuple(
        s.WarmupRow(n, w, 1.0, v, 0.5, True, (1.0,) * 16) for (n, w), v in warm.items()))
    ctx = claims.Context(seed=0)
    ctx._memo.update({"since-changes": s.ChangesCompared(0, s.DECK_BUDGET, rows), "since-positions": positions,
                      "since-warmup": warmup})
    return ctx


@pytest.mark.parametrize("claim_id, make, holds", [
    ("since-pre-ln", {}, True),
    ("since-pre-ln", {"no_warmup": (0.25, 0.21)}, False),         # 0.04 apart: within the margin
    ("since-positions", {}, True),
    ("since-positions", {"tokens_2l": {"alibi": 0.24}}, False),     # ALiBi only 0.03 above the sinusoids
    ("since-decoder-only", {}, True),
    ("since-decoder-only", {"em": {"decoder_only": 0.42}}, False),  # exact match only 0.03 below
    ("since-decoder-only", {"loss": {"decoder_only": 0.52}}, False),  # loss only 0.02 above
])
def test_since_2017_differences_are_claimed_only_with_a_margin(claim_id, make, holds):
    finding = claims.evaluate(claim_id, since_context(**make))
    assert finding.holds is holds, finding.shown
    assert "{" not in finding.sentence


def test_since_2017_rows_without_a_robust_effect_print_the_number_and_claim_no_difference():
    ctx = since_context(em={"rms_norm": 0.95})           # even a large gap is one run
    sentence = claims.evaluate("since-rms-norm", ctx).sentence
    assert sentence == "+0.500 exact match: one run cannot show a difference"
    assert "better" not in claims.evaluate("since-swiglu-deep", ctx).sentence
