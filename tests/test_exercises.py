"""The exercises' grader (exercises/grader): the package's own code passes every exercise,
the stubs as shipped read "not started" and keep the package's names and signatures, a wrong
answer that matches no known mistake is located (shape, index, values), and every slide the
grader points at exists. The learner's files themselves are graded by `make exercises`,
never collected here."""

from __future__ import annotations

import inspect
import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
import torch

import transformer_lab as tl

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))  # the grader lives in exercises/, beside the package

from exercises.grader import (  # noqa: E402
    EXERCISES, NOT_STARTED, PARTLY, PASSED, WRONG, check, exercise, grade,
)
from exercises.grader.core import load_module  # noqa: E402
from exercises.grader.inputs_attention import attention_inputs  # noqa: E402
from exercises.grader.slides import SLIDES, slide_reference  # noqa: E402

NUMBERS = range(1, len(EXERCISES) + 1)


def write(tmp_path: Path, number: int, source: str) -> Path:
    path = tmp_path / f"{exercise(number).stem}.py"
    path.write_text(source)
    return path


def reexport(number: int) -> str:
    """A learner's file that fills every stub with the package's own implementation."""
    lines = []
    for name, obj in exercise(number).reference.items():
        lines.append(f"from {obj.__module__} import {obj.__name__} as {name}")
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize("number", NUMBERS)
def test_the_package_itself_passes_every_exercise_and_is_named_as_the_solution(number, tmp_path):
    e = exercise(number)
    result = grade(e, path=write(tmp_path, number, reexport(number)))
    report = result.report()
    assert result.status == PASSED, report
    assert all(part.status == PASSED for part in result.parts)
    for part in e.parts:  # the answer key: the package's function, where it lives, and its slide
        solution = inspect.unwrap(part.solution)
        assert f"{solution.__module__}.{solution.__qualname__} (code/transformer_lab/" in report
    assert f"slide: {slide_reference(e.slide)}" in report


def shipped_stub(number: int, tmp_path: Path) -> Path:
    """The exercise's stub as committed, so that a learner's work in exercises/ never fails
    `make test` (that folder is graded by `make exercises`); the file itself outside git."""
    path = exercise(number).path
    relative = path.relative_to(REPO).as_posix()
    try:
        text = subprocess.run(["git", "show", f"HEAD:{relative}"], cwd=REPO, capture_output=True, text=True,
                              check=True, timeout=60).stdout
    except (OSError, subprocess.SubprocessError):  # no git, or not committed yet
        return path
    return write(tmp_path, number, text)


@pytest.mark.parametrize("number", NUMBERS)
def test_an_untouched_stub_reads_not_started(number, tmp_path):
    e = exercise(number)
    result = grade(e, path=shipped_stub(number, tmp_path))
    assert result.status == NOT_STARTED, result.report()
    report = result.report()
    assert report.splitlines()[0].endswith(": not started")
    assert all(f"  {part.name}: not started" in report for part in e.parts)
    assert f"read first: {slide_reference(e.slide)}" in report
    assert "solution:" not in report  # the answer key is shown after a pass, or on request
    assert "solution: transformer_lab." in grade(e, path=shipped_stub(number, tmp_path), show_solution=True).report()


def _signature(fn) -> list:
    return [(p.name, p.kind, p.default) for p in inspect.signature(fn).parameters.values()]


@pytest.mark.parametrize("number", NUMBERS)
def test_the_stubs_have_the_packages_names_and_signatures(number, tmp_path):
    e = exercise(number)
    stub = load_module(shipped_stub(number, tmp_path))
    compared = 0
    for name, package_obj in e.reference.items():
        learner_obj = getattr(stub, name)
        if not inspect.isclass(package_obj):
            assert _signature(learner_obj) == _signature(package_obj), name
            compared += 1
            continue
        for member, value in vars(learner_obj).items():
            if inspect.isfunction(value) and (member == "__init__" or not member.startswith("__")):
                assert _signature(value) == _signature(getattr(package_obj, member)), f"{name}.{member}"
                compared += 1
    assert compared >= len(e.parts)


def test_the_exercises_follow_the_slides_and_the_issues_list():
    assert len(EXERCISES) >= 12
    assert [e.number for e in EXERCISES] == list(NUMBERS)
    assert all(e.stem.startswith(f"ex{e.number:02d}_") and e.path.is_file() for e in EXERCISES)
    deck = re.findall(r"\{\{< include chapters/(\S+) >\}\}", (REPO / "slides" / "index.qmd").read_text())
    chapters = [SLIDES[e.slide][0] for e in EXERCISES]
    assert set(chapters) <= set(deck)
    assert chapters == sorted(chapters, key=deck.index)  # slide order: the chapters' order in the deck


# --------------------------------------------------------------------------- wrong answers

ATTENTION_OFF_SCALE = '''
import math
import torch

def attention_weights(query, key, mask=None, *, bias=None):
    scores = query @ key.transpose(-2, -1) / math.sqrt(query.size(-1) + 1)
    if bias is not None:
        scores = scores + bias
    if mask is not None:
        scores = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)
    return torch.softmax(scores, dim=-1) * (1 if mask is None else mask)

def scaled_dot_product_attention(query, key, value, mask=None, dropout_p=0.0, *, bias=None, on_weights=None):
    raise NotImplementedError
'''


def test_a_wrong_value_matching_no_known_mistake_reports_the_first_index_and_both_values(tmp_path):
    result = grade(exercise(1), path=write(tmp_path, 1, ATTENTION_OFF_SCALE))
    report = result.report()
    assert result.status == WRONG and result.mistake is None
    pattern = (r"attention_weights: wrong\. first difference from the package, in attention_weights\(q \(2, 3, 5, 4\), "
               r"k \(2, 3, 7, 4\), no mask\): at index \(0, 0, 0, 0\): expected (\S+), got (\S+) "
               r"\((\d+) of 210 values differ\)")
    expected, got, count = re.search(pattern, report).groups()
    q, k, *_ = attention_inputs()  # the grader's inputs: the values are the package's and the learner's
    scores = q @ k.transpose(-2, -1)
    assert float(expected) == pytest.approx(float(tl.attention_weights(q, k)[0, 0, 0, 0]), rel=1e-5)
    assert float(got) == pytest.approx(float(torch.softmax(scores / 5**0.5, -1)[0, 0, 0, 0]), rel=1e-5)
    assert 0 < int(count) <= 210
    assert "tensor(" not in report and len(report.splitlines()) <= 6  # no tensor printout
    assert "  scaled_dot_product_attention: not started" in report


def test_a_wrong_shape_is_reported_as_a_shape_with_the_properties_that_fail(tmp_path):
    source = ("import torch\n"
              "def causal_mask(size, device=None):\n    return torch.ones(size, size, dtype=torch.bool).tril(2)\n"
              "def padding_mask(tokens, pad_id):\n    return (tokens != pad_id)[None]\n")
    result = grade(exercise(2), path=write(tmp_path, 2, source))
    report = result.report()
    assert result.status == WRONG and result.mistake is None
    assert ("causal_mask: wrong. first difference from the package, in causal_mask(5): at index (0, 1): "
            "expected False, got True (7 of 25 values differ)") in report
    assert "does not hold: query i may attend to key j exactly when j <= i" in report
    assert ("padding_mask: wrong. first difference from the package, in padding_mask(tokens (2, 7), pad_id=0): "
            "shape: expected (2, 1, 1, 7), got (1, 2, 7)") in report


def test_an_exception_names_the_learners_file_and_line(tmp_path):
    source = ("def noam_learning_rate(step, d_model, warmup_steps=4000, factor=1.0):\n    return d_model[step]\n"
              "from transformer_lab import WarmupSchedule\n")
    path = write(tmp_path, 11, source)
    report = grade(exercise(11), path=path).report()
    assert (f"in noam_learning_rate(1, d_model=12, warmup_steps=400): your code raised TypeError: "
            f"'int' object is not subscriptable ({path} line 2)") in report


def test_a_file_that_does_not_import_or_lacks_a_name_is_said_in_one_line(tmp_path):
    broken = grade(exercise(11), path=write(tmp_path, 11, "def noam_learning_rate(step\n"))
    assert broken.status == WRONG
    assert "the file does not import: SyntaxError:" in broken.report()
    renamed = grade(exercise(2), path=write(tmp_path, 2, "def causal_mask(size, device=None):\n    pass\n"))
    assert renamed.status == WRONG
    assert "defines no padding_mask: keep the stub's names" in renamed.report()


def test_a_part_that_only_inherits_an_earlier_parts_error_says_to_fix_that_one_first(tmp_path):
    source = ATTENTION_OFF_SCALE.replace("    raise NotImplementedError\n", (
        "    weights = attention_weights(query, key, mask)\n"
        "    if on_weights is not None:\n        on_weights(weights)\n"
        "    return torch.nn.functional.dropout(weights, dropout_p) @ value\n"))
    result = grade(exercise(1), path=write(tmp_path, 1, source))
    assert [p.status for p in result.parts] == [WRONG, WRONG]
    assert result.parts[1].lines == ["equals the package once attention_weights is the package's: "
                                     "fix attention_weights first"]
    broken = source.replace("return torch.nn.functional.dropout(weights, dropout_p) @ value", "return value")
    assert "first difference from the package" in grade(exercise(1), path=write(tmp_path, 1, broken)).report()


def test_one_part_done_and_one_not_started_is_partly_done(tmp_path):
    source = reexport(13).splitlines()[0] + "\n" + "def greedy_decode(*args, **kwargs):\n    raise NotImplementedError\n"
    result = grade(exercise(13), path=write(tmp_path, 13, source))
    assert result.status == PARTLY, result.report()
    assert [p.status for p in result.parts] == [PASSED, NOT_STARTED]


# --------------------------------------------------------------------------- where learners work


def test_check_prints_the_report_for_a_module_a_notebook_imported(tmp_path, capsys):
    module = load_module(write(tmp_path, 11, reexport(11)))
    result = check(11, module=module)
    assert result.status == PASSED
    assert capsys.readouterr().out.strip() == result.report()
    with pytest.raises(ValueError, match="number must be an exercise number from 1 to 16, got 17"):
        check(17)


def test_grading_leaves_the_learners_random_state_alone(tmp_path):
    path = write(tmp_path, 4, reexport(4))
    torch.manual_seed(123)
    expected = torch.rand(3)
    torch.manual_seed(123)
    grade(exercise(4), path=path)
    assert torch.equal(torch.rand(3), expected)


def test_make_test_collects_tests_only_so_the_learners_files_are_never_failures():
    config = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["pytest"]["ini_options"]
    assert config["testpaths"] == ["tests"]
    assert not any(p.name.startswith("test_") for p in (REPO / "exercises").glob("ex*.py"))


def test_make_exercises_runs_one_exercise_and_one_test_writing_exercise_under_pytest_with_their_reports():
    command = [sys.executable, "-m", "pytest", "exercises/grader", "-q", "--tb=no", "-rN", "-p", "no:cacheprovider",
               "--exercise", "11", "--tests", "2", "--solution"]
    run = subprocess.run(command, cwd=REPO, capture_output=True, text=True, env=os.environ, timeout=300)
    assert run.returncode in (0, 1), run.stdout + run.stderr  # passed or skipped; failed if the learner is wrong
    assert "Exercise 11, warm-up learning rate (equation 3)" in run.stdout
    assert "solution: transformer_lab.training.noam_learning_rate" in run.stdout
    assert "Tests for exercise 2, causal and padding masks (exercises/tests02_masks.py)" in run.stdout
    assert "tests that catch every known mistake: exercises/grader/answer_tests/tests02_masks.py" in run.stdout
    assert "2 exercises: " in run.stdout and "Exercise 10" not in run.stdout and "T4 " not in run.stdout
    bad = subprocess.run(command[:-5] + ["--exercise", "99"], cwd=REPO, capture_output=True, text=True, env=os.environ,
                         timeout=300)
    assert bad.returncode == 4
    assert "number must be an exercise number from 1 to 16, got 99" in bad.stderr
    bad = subprocess.run(command[:-5] + ["--tests", "3"], cwd=REPO, capture_output=True, text=True, env=os.environ,
                         timeout=300)
    assert bad.returncode == 4
    assert "--tests (make exercises TESTS=...): TESTS must be one of 1, 2, 4, 6, 10, 15, 16" in bad.stderr


# --------------------------------------------------------------------------- slides


def _slide_titles(chapter: str) -> set[str]:
    """The titles of a chapter's ``## `` slides, outside code cells, without attributes."""
    text = (REPO / "slides" / "chapters" / chapter).read_text(encoding="utf-8")
    text = re.sub(r"^```.*?^```", "", text, flags=re.S | re.M)
    return {re.sub(r"\s*\{[^}]*\}$", "", title).strip() for title in re.findall(r"^## (.*)$", text, flags=re.M)}


@pytest.mark.parametrize("key", sorted(SLIDES))
def test_every_slide_the_grader_points_at_exists_with_that_title(key):
    chapter, title = SLIDES[key]
    assert (REPO / "slides" / "chapters" / chapter).is_file(), chapter
    assert f"chapters/{chapter}" in (REPO / "slides" / "index.qmd").read_text(), f"{chapter} is not in the deck"
    assert title in _slide_titles(chapter), f"{chapter} has no slide titled {title!r}"


def test_every_exercise_and_mistake_points_at_a_slide_of_the_table():
    keys = {e.slide for e in EXERCISES} | {m.slide for e in EXERCISES for p in e.parts for m in p.mistakes}
    assert keys <= set(SLIDES)
