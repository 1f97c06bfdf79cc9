"""The test-writing exercises (exercises/tests*.py, graded by exercises/grader/testing.py):
a learner's tests run against the package and against every known mistake of the part; the
report names the mistakes caught, the survivors with the property that would catch each,
the false alarms and the tests that lean on the answer key. The answer tests catch every
known mistake, so each is catchable by a test a learner could write."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))  # the grader lives in exercises/, beside the package

from exercises.grader import NOT_STARTED, PARTLY, PASSED, TESTS, WRONG, check_tests, grade_tests, tests_exercise  # noqa: E402
from exercises.grader.slides import slide_reference  # noqa: E402

IDS = [t.stem for t in TESTS]


def shipped(t, tmp_path: Path) -> Path:
    """The stub as committed (a learner's edits in exercises/ never fail make test)."""
    relative = t.path.relative_to(REPO).as_posix()
    try:
        text = subprocess.run(["git", "show", f"HEAD:{relative}"], cwd=REPO, capture_output=True, text=True,
                              check=True, timeout=60).stdout
    except (OSError, subprocess.SubprocessError):
        text = t.path.read_text()
    path = tmp_path / t.path.name
    path.write_text(text)
    return path


def test_seven_parts_have_a_test_writing_exercise_and_every_mistake_there_a_hint():
    assert {t.number for t in TESTS} >= {1, 2, 4, 6, 10, 15, 16}
    for t in TESTS:
        assert t.path.is_file() and not t.path.name.startswith("test_")  # make test never collects them
        for mistake in t.mistakes():
            assert mistake.hint.startswith(("a test", "any test")), (t.number, mistake.name)
    with pytest.raises(ValueError, match="TESTS must be one of 1, 2, 4, 6, 10, 15, 16 .*, got 3"):
        tests_exercise(3)


@pytest.mark.parametrize("t", TESTS, ids=IDS)
def test_a_shipped_stub_reads_not_started_and_its_example_passes_on_the_package(t, tmp_path):
    result = grade_tests(t, path=shipped(t, tmp_path))
    assert result.status == NOT_STARTED, result.report()
    assert result.tests == [t.example]
    report = result.report()
    assert f"only the example test, {t.example}, so far" in report
    assert f"read: {slide_reference(t.exercise.slide)}" in report


@pytest.mark.parametrize("t", TESTS, ids=IDS)
def test_the_answer_tests_pass_on_the_package_and_catch_every_known_mistake(t):
    result = grade_tests(t, path=t.answer, show_solution=True)
    assert result.status == PASSED, result.report()
    assert not result.false_alarms and not result.not_counted and not result.survivors
    assert set(result.caught) == {m.name for m in t.mistakes()}
    assert f"{len(result.caught)} of {len(result.caught)} known mistakes caught" in result.report()


LEARNERS_ATTENTION_TESTS = '''
import math

import torch

from exercises.grader.testing import under_test
import pytest

B, H, T, S, K = 2, 3, 5, 7, 4


@pytest.fixture
def attention_weights():
    return under_test("attention_weights")


@pytest.fixture
def qk():
    g = torch.Generator().manual_seed(0)
    return torch.randn(B, H, T, K, generator=g), torch.randn(B, H, S, K, generator=g)


def test_each_querys_weights_sum_to_one(attention_weights, qk):
    q, k = qk
    torch.testing.assert_close(attention_weights(q, k).sum(-1), torch.ones(B, H, T))


def test_a_masked_key_gets_zero_weight(attention_weights, qk):
    q, k = qk
    mask = torch.ones(T, S, dtype=torch.bool)
    mask[:, -1] = False
    assert bool((attention_weights(q, k, mask)[..., -1] == 0).all())


def test_weights_are_at_most_a_third(attention_weights, qk):  # false: one key may take most of the weight
    q, k = qk
    assert bool((attention_weights(q, k) <= 1 / 3).all())
'''


def test_a_learners_tests_are_scored_caught_survivors_with_hints_and_false_alarms(tmp_path):
    path = tmp_path / "my_attention_tests.py"
    path.write_text(LEARNERS_ATTENTION_TESTS)
    result = grade_tests(tests_exercise(1), path=path)
    report = result.report()
    assert result.status == WRONG, report  # a false alarm makes it wrong
    assert list(result.false_alarms) == ["test_weights_are_at_most_a_third"]
    assert "false alarm: test_weights_are_at_most_a_third fails on the package's correct code (assert False" in report
    # the false alarm fails everywhere and catches nothing: the other two tests catch two mistakes
    assert result.caught == {"softmax over the queries": ["test_each_querys_weights_sum_to_one"],
                             "mask inverted": ["test_a_masked_key_gets_zero_weight"]}
    survivors = {m.name for m in result.survivors}
    assert {"mask after the softmax", "divided by d_k", "not scaled", "empty row uniform", "dropout_p ignored"} <= survivors
    assert ('survives: "empty row uniform". Catch it with a test that a query whose mask hides every key gets all-zero '
            'weights.') in report
    assert len(result.caught) + len(survivors) == len(tests_exercise(1).mistakes())
    assert f"{len(result.caught)} of {len(tests_exercise(1).mistakes())} known mistakes caught" in report
    path.write_text(LEARNERS_ATTENTION_TESTS.split("\n\ndef test_weights_are_at_most_a_third")[0] + "\n")
    assert grade_tests(tests_exercise(1), path=path).status == PARTLY


def test_a_test_that_compares_with_the_answer_key_is_not_counted(tmp_path):
    path = tmp_path / "tests.py"
    path.write_text(LEARNERS_ATTENTION_TESTS.split("\n\ndef test_weights_are_at_most_a_third")[0] + '''

from transformer_lab import attention_weights as key_answer


@pytest.fixture
def expected(qk):
    return key_answer(*qk)


def test_equals_the_package(attention_weights, qk, expected):
    torch.testing.assert_close(attention_weights(*qk), expected)
''')
    result = grade_tests(tests_exercise(1), path=path)
    assert list(result.not_counted) == ["test_equals_the_package"]
    assert "not counted: test_equals_the_package uses transformer_lab's own attention_weights" in result.report()
    assert all("test_equals_the_package" not in tests for tests in result.caught.values())
    assert "divided by d_k" in {m.name for m in result.survivors}  # it would have caught it


def test_a_file_that_does_not_run_is_said_in_one_line(tmp_path):
    path = tmp_path / "tests.py"
    path.write_text("def test_x(:\n    pass\n")
    assert "the file does not import: SyntaxError" in grade_tests(tests_exercise(2), path=path).report()
    path.write_text("import no_such_module_here\n\ndef test_x():\n    pass\n")
    result = grade_tests(tests_exercise(2), path=path)
    assert result.status == WRONG and "the tests do not run:" in result.report()


def test_check_tests_prints_the_report_in_a_notebook(tmp_path, capsys):
    result = check_tests(2, path=tests_exercise(2).answer)
    assert result.status == PASSED
    assert capsys.readouterr().out.strip() == result.report()


def _stub_fixtures(number: int) -> str:
    """The fixtures of a test-writing stub as committed, without its example test."""
    text = tests_exercise(number).path.read_text()
    return text.split('"""', 2)[2].split("\n# Your tests below")[0]


LEARNERS_GQA_TESTS = '''

import torch.nn.functional as F


def test_the_keys_have_num_kv_heads_heads(make_gqa):
    assert make_gqa(4, 2).w_k.weight.shape == (2 * 3, D)


def test_multi_query_equals_pytorchs_grouped_heads(make_gqa, inputs):
    query, memory, padding = inputs
    module = make_gqa(4, 1)
    q = module.w_q(query).view(B, T, 4, 3).transpose(1, 2)
    k, v = (w(memory).view(B, S, 1, 3).transpose(1, 2) for w in (module.w_k, module.w_v))
    out = F.scaled_dot_product_attention(q, k, v, attn_mask=padding, enable_gqa=True)
    expected = module.w_o(out.transpose(1, 2).reshape(B, T, D))
    torch.testing.assert_close(module(query, memory, memory, mask=padding), expected)


def test_the_cache_holds_a_head_per_query_head(make_gqa, inputs):  # false: it holds num_kv_heads heads
    _, x, _ = inputs
    module, cache = make_gqa(4, 2), tl.KVCache()
    for t in range(S):
        module(x[:, t : t + 1], x[:, t : t + 1], x[:, t : t + 1], cache=cache)
    assert cache.k.size(1) == 4
'''


def test_a_learners_grouped_query_tests_are_scored_with_what_would_catch_each_survivor(tmp_path):
    path = tmp_path / "my_gqa_tests.py"
    path.write_text(_stub_fixtures(16) + LEARNERS_GQA_TESTS)
    result = grade_tests(tests_exercise(16), path=path)
    report = result.report()
    assert result.status == WRONG, report
    assert list(result.false_alarms) == ["test_the_cache_holds_a_head_per_query_head"]
    shapes, by_pytorch = "test_the_keys_have_num_kv_heads_heads", "test_multi_query_equals_pytorchs_grouped_heads"
    assert result.caught == {
        "num_kv_heads ignored": [shapes, by_pytorch],
        "query heads grouped by num_kv_heads": [by_pytorch],
        "keys projected to d_model": ["test_the_output_has_the_queries_shape", shapes, by_pytorch]}  # forward raises
    # with one key/value head every mapping is right, and the false alarm counts for nothing
    assert [m.name for m in result.survivors] == ["key/value heads tiled", "cache holds the copies"]
    assert ('survives: "cache holds the copies". Catch it with a test that after decoding with a KVCache, cache.k has '
            'shape (B, num_kv_heads, S, d_k).') in report
    assert "3 of 5 known mistakes caught" in report
