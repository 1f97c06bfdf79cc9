"""One test per exercise and per test-writing exercise: passed, skipped while not started
(or partly done), failed with the grader's report when wrong. Run by ``make exercises``,
never by ``make test``."""

from __future__ import annotations

import pytest

from .conftest import RESULTS
from .grade import NOT_STARTED, PARTLY, PASSED, grade
from .testing import grade_tests


def test_exercise(exercise, request):
    result = grade(exercise, show_solution=request.config.getoption("--solution"))
    request.config.stash[RESULTS].append(result)
    if result.status in (NOT_STARTED, PARTLY):
        pytest.skip(result.status)
    if result.status != PASSED:
        pytest.fail(result.report(), pytrace=False)


def test_tests_exercise(tests_exercise, request):
    result = grade_tests(tests_exercise, show_solution=request.config.getoption("--solution"))
    request.config.stash[RESULTS].append(result)
    if result.status in (NOT_STARTED, PARTLY):
        pytest.skip(result.status)
    if result.status != PASSED:
        pytest.fail(result.report(), pytrace=False)
