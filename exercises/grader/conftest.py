"""pytest options of the grader (``make exercises N=1 SHOW=solution`` passes them) and the
report printed after the run: every exercise's report, then one line each."""

from __future__ import annotations

import pytest

from . import EXERCISES, exercise, summary
from .grade import NOT_STARTED

RESULTS = pytest.StashKey[list]()


def pytest_addoption(parser):
    group = parser.getgroup("exercises")
    group.addoption("--exercise", type=int, default=None, metavar="N", help="grade exercise N only")
    group.addoption("--solution", action="store_true", help="name the package's solution of every exercise graded")


def pytest_configure(config):
    config.stash[RESULTS] = []
    number = config.getoption("--exercise")
    if number is not None:
        try:
            exercise(number)
        except ValueError as error:
            raise pytest.UsageError(f"--exercise (make exercises N=...): {error}") from None


def pytest_generate_tests(metafunc):
    if "exercise" in metafunc.fixturenames:
        number = metafunc.config.getoption("--exercise")
        chosen = EXERCISES if number is None else (exercise(number),)
        metafunc.parametrize("exercise", chosen, ids=[e.stem for e in chosen])


def pytest_terminal_summary(terminalreporter, config):
    results = config.stash[RESULTS]
    if not results:
        return
    terminalreporter.section("exercises")
    for result in results:  # the table below says "not started"; one exercise alone gets its slide
        if result.status != NOT_STARTED or len(results) == 1:
            terminalreporter.write_line(result.report())
            terminalreporter.write_line("")
    terminalreporter.write_line(summary(results))
