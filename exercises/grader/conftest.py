"""pytest options of the grader (``make exercises N=1 SHOW=solution`` and ``make exercises
TESTS=1`` pass them) and the report printed after the run: every exercise's report, then one
line each. Without --exercise or --tests every exercise and every test-writing exercise is
graded."""

from __future__ import annotations

import pytest

from . import EXERCISES, TESTS, exercise, summary, tests_exercise
from .grade import NOT_STARTED

RESULTS = pytest.StashKey[list]()


def pytest_addoption(parser):
    group = parser.getgroup("exercises")
    group.addoption("--exercise", type=int, default=None, metavar="N", help="grade exercise N only")
    group.addoption("--tests", type=int, default=None, metavar="N",
                    help="run the tests written for exercise N's part (test-writing exercise N) only")
    group.addoption("--solution", action="store_true", help="name the package's solution of every exercise graded")


def pytest_configure(config):
    config.stash[RESULTS] = []
    number, tests = config.getoption("--exercise"), config.getoption("--tests")
    try:
        if number is not None:
            exercise(number)
        if tests is not None:
            tests_exercise(tests)
    except ValueError as error:
        option = "--exercise (make exercises N=...)" if number is not None else "--tests (make exercises TESTS=...)"
        raise pytest.UsageError(f"{option}: {error}") from None


def pytest_generate_tests(metafunc):
    number, tests = metafunc.config.getoption("--exercise"), metafunc.config.getoption("--tests")
    if "exercise" in metafunc.fixturenames:
        chosen = () if tests is not None and number is None else EXERCISES if number is None else (exercise(number),)
        metafunc.parametrize("exercise", chosen, ids=[e.stem for e in chosen])
    if "tests_exercise" in metafunc.fixturenames:
        chosen = () if number is not None and tests is None else TESTS if tests is None else (tests_exercise(tests),)
        metafunc.parametrize("tests_exercise", chosen, ids=[t.stem for t in chosen])


def pytest_collection_modifyitems(config, items):
    """Only the kind asked for (--exercise or --tests): the other test has no parameter
    left, and is dropped rather than reported as skipped."""
    empty = [item for item in items if any(str(m.kwargs.get("reason", "")).startswith("got empty parameter set")
                                           for m in item.iter_markers("skip"))]
    if empty:
        config.hook.pytest_deselected(items=empty)
        items[:] = [item for item in items if item not in empty]


def pytest_terminal_summary(terminalreporter, config):
    results = config.stash[RESULTS]
    if not results:
        return
    terminalreporter.section("exercises")
    chosen = config.getoption("--exercise") is not None or config.getoption("--tests") is not None
    for result in results:  # the table below says "not started"; an exercise asked for by number gets its slide
        if result.status != NOT_STARTED or chosen:
            terminalreporter.write_line(result.report())
            terminalreporter.write_line("")
    terminalreporter.write_line(summary(results))
