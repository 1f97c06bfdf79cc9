"""The grader's rules (issue 31): it never names the wrong mistake, lets nothing buggy pass,
and says where a layer goes wrong.

- An exception matches a known mistake only on its type and its message, at the same call;
  a mistake that agrees only in part is "looks like", with what differs.
- Every known mistake changes some graded result, and no two give the same results, so the
  grader can tell each from the package and from every other (batch size 1, dropout and
  in-place cases among the graded ones).
- The package's and the mistakes' results are computed once per process: a kept result
  equals a fresh run.
- For the layer exercises an unnamed error is located at the first stage that differs.
"""

from __future__ import annotations

import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))  # the grader lives in exercises/, beside the package

from exercises.grader import EXERCISES, WRONG, exercise, grade  # noqa: E402
from exercises.grader.compare import Claim, Mutated, Raised, differences, normalise_message, value_difference  # noqa: E402
from exercises.grader.core import collect, observations  # noqa: E402

sys.path.insert(0, str(REPO / "tests"))
from test_exercises_mistakes import SOLUTIONS  # noqa: E402

PARTS = [(e, p) for e in EXERCISES for p in e.parts]
PART_IDS = [f"{e.number}-{p.name}" for e, p in PARTS]


def learner(tmp_path: Path, number: int, *edits: tuple[str, str]) -> Path:
    """A learner's own answer (tests/test_exercises_mistakes.py) with ``edits``."""
    source = SOLUTIONS[number]
    for old, new in edits:
        assert source.count(old) == 1, old
        source = source.replace(old, new)
    path = tmp_path / f"{exercise(number).stem}.py"
    path.write_text(source)
    return path


# --------------------------------------------------------------------------- exceptions


def test_an_exception_equals_another_only_on_its_type_and_its_normalised_message():
    error = Raised("ValueError", "mask of shape torch.Size([2, 1, 1, 7]) does not broadcast to (2, 3, 5, 5)")
    assert value_difference(error, Raised("ValueError", "mask of shape [2, 1, 1, 7] does not  broadcast to (2, 3, 5, 5,)")) is None
    assert value_difference(error, Raised("ValueError", "mask of shape (2, 1, 1, 7) does not broadcast to (2, 3, 7, 5)"))
    assert value_difference(error, Raised("TypeError", error.message))
    assert normalise_message("lr 4.0 eps 1e-09 at 0x7f3a") == normalise_message("lr 4 eps 1e-9 at 0x55e1")
    cat = "Sizes of tensors must match except in dimension {}. Expected size 4 but got size 1"
    assert normalise_message(cat.format(1)) != normalise_message(cat.format(3))


def test_an_exception_of_the_same_type_at_the_same_call_but_another_message_is_not_a_match(tmp_path):
    # Cross-attention values from the target: a ValueError at the first forward, the call
    # where "masks swapped" and two other known mistakes raise ValueErrors of their own.
    path = learner(tmp_path, 10, ("self.cross_attn(h, memory, memory,", "self.cross_attn(h, memory, h,"))
    result = grade(exercise(10), path=path)
    report = result.report()
    assert result.status == WRONG and result.mistake is None, report
    assert "known mistake" not in report and "looks like" not in report
    assert "your code raised ValueError: key and value must share (B, S)" in report
    swapped = next(m for m in exercise(10).parts[0].mistakes if m.name == "masks swapped")
    theirs = observations(exercise(10), exercise(10).parts[0], swapped)
    mine = collect(exercise(10).parts[0], SimpleNamespace(DecoderLayer=_load(path).DecoderLayer), str(path))
    assert isinstance(theirs[-1].value, Raised) and isinstance(mine[-1].value, Raised)
    assert theirs[-1].label == mine[-1].label and theirs[-1].value.type_name == mine[-1].value.type_name


def _load(path: Path):
    from exercises.grader.core import load_module
    return load_module(path)


@pytest.mark.parametrize("number, edit, name", [
    (10, ("self.cross_attn(h, memory, memory,", "self.cross_attn(memory, h, h,"), "cross-attention queries from the memory"),
    (10, ("self.self_attn(h, h, h,", "self.self_attn(h, memory, memory,"), "self-attention reads the memory"),
    (13, ("dim=-2)", "dim=-1)"), None),
], ids=["queries-from-memory", "self-attention-reads-memory", "cache-along-features"])
def test_the_issues_three_misnamed_bugs_get_their_own_names(number, edit, name, tmp_path):
    source = SOLUTIONS[number].replace(*edit)  # the cache edit changes both concatenations
    path = tmp_path / f"{exercise(number).stem}.py"
    path.write_text(source)
    result = grade(exercise(number), path=path)
    assert result.mistake is not None, result.report()
    assert result.mistake.name == (name or "appended along the features")
    assert "masks swapped" not in result.report() and "appended along the heads" not in result.report()


def test_a_mistake_that_agrees_only_where_the_code_first_goes_wrong_is_looks_like_with_what_differs(tmp_path):
    # max instead of min, and the factor ignored too: the first results are those of
    # "max instead of min", the factor=2.0 ones are not.
    path = learner(tmp_path, 11, ("return factor * d_model ** -0.5 * min(", "return d_model ** -0.5 * max("))
    result = grade(exercise(11), path=path)
    report = result.report()
    assert result.mistake is None and result.headline().endswith("wrong"), report
    assert [m.name for m in result.parts[0].resembles] == ["max instead of min"]
    assert ('looks like known mistake "max instead of min" (the rate takes the max of step^-0.5 and step * '
            'warmup^-1.5; equation (3) takes the min, which rises during the warm-up and decays after it), but not '
            'exactly: in noam_learning_rate(200, 12, 400, factor=2.0) yours differs from what that mistake gives '
            '(expected 0.0408248, got 0.0204124; "expected" is the mistake\'s)') in report


# --------------------------------------------------------------------------- every mistake told apart


@pytest.mark.parametrize("exercise_, part", PARTS, ids=PART_IDS)
def test_every_known_mistake_changes_a_graded_result_and_no_two_give_the_same_results(exercise_, part):
    package = observations(exercise_, part)
    assert not [o for o in package if isinstance(o.value, (Raised, Mutated))]
    assert all(o.value.holds for o in package if isinstance(o.value, Claim))
    runs = {m.name: observations(exercise_, part, m) for m in part.mistakes if m.replace}
    for name, run in runs.items():
        assert differences(package, run), f"{name} gives the package's results on every graded case"
    names = sorted(runs)
    for i, a in enumerate(names):
        for b in names[i + 1:]:
            assert differences(runs[a], runs[b]), f"{a} and {b} give the same results: the grader cannot tell them apart"
    for mistake in part.mistakes:
        if mistake.detect is not None:
            assert not mistake.detect(SimpleNamespace(**exercise_.reference)), mistake.name


@pytest.mark.parametrize("exercise_, part", PARTS, ids=PART_IDS)
def test_a_kept_result_equals_a_fresh_run(exercise_, part):
    ns = SimpleNamespace(**exercise_.reference)
    assert not differences(observations(exercise_, part), collect(part, ns))
    for mistake in part.mistakes[:2]:
        if mistake.replace:
            fresh = collect(part, SimpleNamespace(**{**exercise_.reference, **mistake.replace}))
            assert not differences(observations(exercise_, part, mistake), fresh)


def test_the_catalogue_grew_by_the_issues_mistakes():
    names = {(e.number, m.name) for e in EXERCISES for p in e.parts for m in p.mistakes}
    new = {(7, "ReLU moved after W_2"), (4, "scaled by sqrt(d_model)"), (9, "feed-forward residual missing"),
           (10, "feed-forward residual missing"), (2, "triu instead of tril"), (2, "padding mask of shape (B, 1, S)"),
           (3, "heads merged interleaved"), (4, "heads merged interleaved"), (13, "last token only, without the cache"),
           (14, "stops at the first k finished"), (11, "step and warmup_steps swapped"), (12, "no log_softmax"),
           (6, "positions counted from 1"), (1, "bias scaled with the scores"), (4, "mask read as True = masked"),
           (12, "padding counted in the smoothing term"), (6, "offset ignored"), (11, "first update at step 0"),
           (9, "pre-LN without a final LayerNorm"), (1, "-1e9 fill in float16"), (4, "dropout on in eval mode"),
           (7, "dropout on in eval mode"), (1, "on_weights after dropout"), (1, "dropout_p ignored"),
           (13, "squeeze drops the batch axis"), (14, "length penalty counts BOS"),
           (10, "cross-attention queries from the memory"), (10, "self-attention reads the memory"),
           (13, "appended along the features")}
    assert new <= names and len(new) >= 25
    for e in EXERCISES:  # each says what to change in one sentence and points at a slide of the table
        for p in e.parts:
            for m in p.mistakes:
                assert m.says.endswith(".") and m.says.count(". ") <= 1, m.name


def test_the_catalogue_names_the_rotary_and_grouped_query_mistakes_of_issue_32():
    names = {(e.number, p.name, m.name) for e in EXERCISES for p in e.parts for m in p.mistakes}
    rotary = {"pairs interleaved", "angle table interleaved", "rotated the other way", "offset ignored",
              "positions counted from 1", "exponent i/d", "only q rotated"}
    rotary_attention = {"values rotated too", "offset not passed", "keys used unrotated",
                        "rotated before the split into heads", "positions on the heads axis",
                        "input rotated instead of q and k"}
    grouped = {"key/value heads tiled", "cache holds the copies", "num_kv_heads ignored",
               "query heads grouped by num_kv_heads", "keys projected to d_model"}
    assert {(15, "RotaryEmbedding", n) for n in rotary} | {(15, "RotaryMultiHeadAttention", n) for n in rotary_attention} \
        | {(16, "GroupedQueryAttention", n) for n in grouped} == {x for x in names if x[0] in (15, 16)}


def test_what_rotary_attention_cannot_see_is_not_a_mistake(tmp_path):
    # The rotation is linear: q / sqrt(d_k) turned is q turned, / sqrt(d_k), so scaling the
    # queries before the rotation computes the package's scores; and moving every position by
    # one (the cache's too) leaves every m - n as it was. Both pass.
    scaled_first = learner(tmp_path, 15, ("        q, k = self.rotary(q, k, offset)\n",
                                          "        q = q / math.sqrt(self.d_k)\n        q, k = self.rotary(q, k, offset)\n"),
                           ("s = q @ k.transpose(-2, -1) / math.sqrt(self.d_k)", "s = q @ k.transpose(-2, -1)"))
    assert grade(exercise(15), path=scaled_first).status == "passed"
    shifted = learner(tmp_path, 15, ("q, k = self.rotary(q, k, offset)", "q, k = self.rotary(q, k, offset + 1)"))
    assert grade(exercise(15), path=shifted).status == "passed"
    # positions counted from 1 in the rotation itself: named there, invisible in the attention
    from_one = learner(tmp_path, 15, ("torch.arange(offset, offset + x.size(-2),",
                                      "torch.arange(offset + 1, offset + x.size(-2) + 1,"))
    result = grade(exercise(15), path=from_one)
    assert [p.status for p in result.parts] == [WRONG, "passed"], result.report()
    assert result.mistake.name == "positions counted from 1"


def test_a_cache_that_holds_the_copies_is_told_by_what_it_holds(tmp_path):
    # its outputs are the package's: the cache's shape is the difference
    path = learner(tmp_path, 16, (
        "        k = k.repeat_interleave(self.h // self.g, dim=1)\n        v = v.repeat_interleave(self.h // self.g, dim=1)\n",
        ""), ("            v = self.split_heads(self.w_v(value), self.g, self.d_v)\n",
              "            v = self.split_heads(self.w_v(value), self.g, self.d_v)\n"
              "            k, v = k.repeat_interleave(self.h // self.g, 1), v.repeat_interleave(self.h // self.g, 1)\n"))
    part = exercise(16).parts[0]
    mine = collect(part, SimpleNamespace(GroupedQueryAttention=_load(path).GroupedQueryAttention), str(path))
    package = observations(exercise(16), part)
    found = differences(package, mine)
    assert [label for _, label, _ in found] == [
        "the self-attention cache after 7 positions: (cache.k, cache.v), 2 key/value heads each",
        "the static cache: (cache.k, cache.v)"]
    assert found[0][2] == "item 0: shape: expected (2, 2, 7, 3), got (2, 4, 7, 3)"
    assert grade(exercise(16), path=path).mistake.name == "cache holds the copies"


# --------------------------------------------------------------------------- nothing buggy passes


def test_every_exercise_with_a_batch_is_graded_at_batch_size_1():
    batchless = {"causal_mask", "sinusoidal_positional_encoding", "noam_learning_rate", "WarmupSchedule.get_lr",
                 "gnmt_length_penalty"}
    for e, part in PARTS:
        labels = [o.label for o in observations(e, part)]
        assert any("batch size 1" in label for label in labels) or part.name in batchless, (e.number, part.name)


def test_code_that_is_right_at_batch_size_2_and_wrong_at_1_is_wrong(tmp_path):
    path = learner(tmp_path, 2, ("return (tokens != pad_id).unsqueeze(1).unsqueeze(2)",
                                 "return (tokens != pad_id).unsqueeze(1).unsqueeze(2).squeeze(0)"))
    report = grade(exercise(2), path=path).report()
    assert ("padding_mask: wrong. first difference from the package, in batch size 1: padding_mask(tokens (1, 7), "
            "pad_id=5): shape: expected (1, 1, 1, 7), got (1, 1, 7)") in report


def test_scaled_dot_product_attention_is_graded_with_dropout_whatever_the_draw(tmp_path):
    # What is checked under dropout holds whatever the draw: a learner who draws other random
    # numbers first still passes, and kept weights scaled by the wrong factor do not.
    path = learner(tmp_path, 1, ("    weights = torch.nn.functional.dropout(weights, dropout_p)\n",
                                 "    torch.rand(3)  # another random stream\n"
                                 "    weights = torch.nn.functional.dropout(weights, dropout_p)\n"))
    assert grade(exercise(1), path=path).status == "passed"
    path = learner(tmp_path, 1, ("weights = torch.nn.functional.dropout(weights, dropout_p)",
                                 "weights = torch.nn.functional.dropout(weights, dropout_p) * (1 - dropout_p / 2)"))
    report = grade(exercise(1), path=path).report()
    assert ("the factor that scales the kept weights, 1 / (1 - p): expected 2, got 1.5") in report
    assert "known mistake" not in report


def test_multi_head_attention_whose_dropout_never_acts_is_wrong(tmp_path):
    path = learner(tmp_path, 4, ("w = self.drop(s.softmax(-1))", "w = s.softmax(-1)"))
    report = grade(exercise(4), path=path).report()
    assert ("in dropout=0.5 in training, 2048 draws: their mean is the output in eval mode: does not hold: every one "
            "of the 2048 draws gave the same output: nothing was dropped") in report
    path = learner(tmp_path, 4, ("w = self.drop(s.softmax(-1))", "w = self.drop(s.softmax(-1)) * (1 - self.drop.p)"))
    assert "standard errors from the output without dropout" in grade(exercise(4), path=path).report()


@pytest.mark.parametrize("number, edit, label, name", [
    (8, ("        y = x + self.dropout(sublayer_output)\n", "        x += self.dropout(sublayer_output)\n        y = x\n"),
     "post-LN, dropout=0.0: residual(x, sublayer_output, norm)", "x"),
    (1, ("    scores = query @ key.transpose(-2, -1) / math.sqrt(query.size(-1))\n",
         "    query /= math.sqrt(query.size(-1))\n    scores = query @ key.transpose(-2, -1)\n"),
     "attention_weights(q (2, 3, 5, 4), k (2, 3, 7, 4), no mask)", "query"),
    (15, ("        return x * angle.cos() + rotate_half(x) * angle.sin()\n",
          "        turned = rotate_half(x) * angle.sin()\n        return x.mul_(angle.cos()).add_(turned)\n"),
     "forward(q (2, 3, 5, 8), k = q)", "q"),
], ids=["residual-x", "attention-query", "rotary-q"])
def test_an_input_changed_in_place_is_the_diagnosis_at_the_call_that_changed_it(number, edit, label, name, tmp_path):
    result = grade(exercise(number), path=learner(tmp_path, number, edit))
    report = result.report()
    assert result.status == WRONG and result.mistake is None
    assert f"in {label}: your code changed its input `{name}` in place" in report
    assert "sublayer_input" not in report.split("changed its input")[0]


def test_a_loss_that_writes_into_its_target_is_caught(tmp_path):
    path = learner(tmp_path, 12, ("        V = logits.size(-1)\n",
                                  "        V = logits.size(-1)\n        target.masked_fill_(target == self.ignore_index, 1)\n"))
    report = grade(exercise(12), path=path).report()
    assert "your code changed its input `target` in place" in report


# --------------------------------------------------------------------------- where a layer goes wrong


@pytest.mark.parametrize("number, edit, stage, agree", [
    (4, ("/ math.sqrt(self.d_k)", "/ math.sqrt(self.d_k + 1)"),
     "first stage that differs from the package's: the weights: softmax(Q K^T / sqrt(d_k)) of every head (B, H, T, S): "
     "at index (0, 0, 0, 0)", "the stages before it agree: the projections; the split into heads"),
    (4, ("q = self.split_heads(self.w_q(query), self.d_k)", "q = self.split_heads(self.w_k(query), self.d_k)"),
     "first stage that differs from the package's: the projections: Q W^Q (w_q's output): your code does not call "
     "self.w_q here (the package does)", None),
    (4, ("return x.transpose(1, 2).reshape(B, T, H * Kv)", "return x.transpose(1, 2).reshape(B, T, H * Kv).flip(-1)"),
     "first stage that differs from the package's: the merge: Concat(head_1, ..., head_h) (w_o's input, (B, T, H*Kv))",
     "the stages before it agree: the projections; the split into heads; the weights; the mixed values"),
    (7, ("torch.relu(self.w_1(x))", "torch.relu(self.w_1(x)) * 0.5"),
     "first stage that differs from the package's: the hidden activations: max(0, x W_1 + b_1), dropped out in training "
     "(w_2's input): at index", "the stages before it agree: w_1"),
    (9, ("return self.norm2(x + self.dropout(self.feed_forward(x)))",
         "return self.norm2(x + self.dropout(self.feed_forward(x.relu())))"),
     "first stage that differs from the package's: sub-layer 2 (the feed-forward network): its inputs: at index",
     "the stages before it agree: sub-layer 1 (the self-attention); residual 1; norm1"),
    (9, ("            return x + self.dropout(self.feed_forward(self.norm2(x)))\n",
         "            return x + self.dropout(self.feed_forward(self.norm1(x)))\n"),
     "first stage that differs from the package's: norm2: its input, residual 1, x + Dropout(sub-layer 1): your code "
     "does not call self.norm2 here (the package does)", "the stages before it agree: norm1; sub-layer 1 (the self-attention)"),
    (10, ("self.cross_attn(h, memory, memory,", "self.cross_attn(h, memory, h,"),
     "first stage that differs from the package's: sub-layer 2 (the cross-attention): its inputs: value: shape: expected "
     "(2, 7, 12), got (2, 5, 12)", "the stages before it agree: sub-layer 1 (the masked self-attention); residual 1; norm1"),
    (10, ("        return self._sub(x, self.norm3, self.feed_forward)\n",
          "        return self._sub(x, self.norm3, self.feed_forward) + x\n"),
     "first stage that differs from the package's: the layer's output: at index (0, 0, 0)",
     "residual 3; norm3"),
    (15, ("s = q @ k.transpose(-2, -1) / math.sqrt(self.d_k)", "s = q @ k.transpose(-2, -1) / math.sqrt(self.d_k + 1)"),
     "first stage that differs from the package's: the weights: softmax(Q K^T / sqrt(d_k)) of every head (B, H, T, S): "
     "at index (0, 0, 0, 0)",
     "the stages before it agree: the projections; the split into heads; the rotation's inputs; the rotation"),
    (15, ("q, k = self.rotary(q, k, offset)", "q, k = self.rotary(q * 1.1, k, offset)"),
     "first stage that differs from the package's: the rotation's inputs: each head's q (B, H, T, K) and k (B, H, S, K) "
     "(self.rotary's input): q: at index (0, 0, 0, 0)", "the stages before it agree: the projections; the split into heads"),
    (16, ("k = k.repeat_interleave(self.h // self.g, dim=1)", "k = k.repeat_interleave(self.h // self.g, dim=1).flip(1)"),
     "first stage that differs from the package's: the mixed values: weights @ V of every query head, with its group's "
     "values (B, H, T, Kv): at index", "the stages before it agree: the projections; the split into heads"),
    # the package stacks a group's query heads as more queries, (B, G, h/G * T, S); this learner
    # copies the key/value heads, (B, H, T, S): their weights are compared head by head
    (16, ("out = tl.scaled_dot_product_attention(q, k, v, mask, p)",
          "out = torch.nn.functional.dropout(tl.attention_weights(q, k, mask), p) @ v.flip(-1)"),
     "first stage that differs from the package's: the mixed values: weights @ V of every query head, with its group's "
     "values (B, H, T, Kv): at index", "the stages before it agree: the projections; the split into heads; the weights"),
], ids=["mha-weights", "mha-projection", "mha-merge", "ffn-activation", "encoder-ffn-input", "encoder-pre-ln-norm2",
        "decoder-cross-value", "decoder-output", "rotary-weights", "rotary-input", "gqa-copies", "gqa-weights-per-head"])
def test_an_unnamed_layer_error_is_located_at_the_first_stage_that_differs(number, edit, stage, agree, tmp_path):
    result = grade(exercise(number), path=learner(tmp_path, number, edit))
    report = result.report()
    assert result.status == WRONG and result.mistake is None, report
    assert f"    {stage}" in report
    if agree is not None:
        assert agree in report


def test_stages_computed_out_of_sight_are_said_and_the_ones_seen_compared(tmp_path):
    # heads split inline (no split_heads call) and scaled wrongly: the split is not seen,
    # the weights are still located
    path = learner(tmp_path, 4, ("q = self.split_heads(self.w_q(query), self.d_k)",
                                 "q = self.w_q(query).view(query.size(0), -1, self.h, self.d_k).transpose(1, 2)"),
                   ("/ math.sqrt(self.d_k)", "/ math.sqrt(self.d_k + 1)"))
    report = grade(exercise(4), path=path).report()
    assert "first stage that differs from the package's: the weights" in report
    assert "not seen in your code (computed another way, not compared): the split into heads: the queries" in report


@pytest.mark.parametrize("number, index", [(4, 0), (7, 0), (9, 0), (10, 0), (15, 1), (16, 0)])
def test_each_layer_exercise_records_its_stages(number, index):
    part = exercise(number).parts[index]
    assert part.stages is not None
    label = observations(exercise(number), part)[-3 if number == 10 else 0].label
    from exercises.grader.core import probe_stages
    log = probe_stages(part, SimpleNamespace(**exercise(number).reference), label)
    assert log is not None and log.module is not None and len(log.order) >= 4
