"""Test-writing exercises: for a part of the model the learner writes pytest tests instead
of the part, and the grader scores them against the catalogue of known mistakes.

``make exercises TESTS=1`` (or ``check_tests(1)`` in a notebook) runs the learner's test file
with pytest, in this process and in one session: every test runs once against the package's
code (it must pass: a test that fails on correct code is a false alarm, named as such) and
once against each known mistake of that exercise (each should make some test fail). The
report says which mistakes the tests catch, and for each survivor the property a test must
check to catch it (the mistake's ``hint``).

The stub's fixtures hand the tests the code under test through ``under_test(name)``: the
package's object when the file runs alone (``pytest exercises/tests01_attention.py``), a
mistake's while the grader runs it. A test that compares with transformer_lab's own object
under test (the answer key) would compare the code with itself; such tests are named and
not counted (compare with PyTorch's own modules, or check properties the paper states).
"""

from __future__ import annotations

import ast
import contextlib
import io
import os
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import torch

from .compare import _short_path
from .core import EXERCISES_DIR, Exercise, Mistake, mistake_namespace, one_thread
from .slides import slide_reference

_CURRENT: dict | None = None  # the names under test while the grader runs a learner's tests
PASSED, NOT_STARTED, PARTLY, WRONG = "passed", "not started", "partly done", "wrong"
ANSWERS_DIR = Path(__file__).resolve().parent / "answer_tests"


def under_test(name: str):
    """The object a learner's test checks, by its name in the exercise (``"attention_weights"``,
    ``"DecoderLayer"``): the package's, or a known mistake's while the grader runs the tests."""
    names = _CURRENT if _CURRENT is not None else _package_names()
    if name not in names:
        raise ValueError(f"under_test({name!r}): the names under test are {', '.join(sorted(names))}")
    return names[name]


def _package_names() -> dict:
    from . import EXERCISES
    return {name: obj for e in EXERCISES for name, obj in e.reference.items()}


@dataclass(frozen=True)
class TestsExercise:
    """A test-writing exercise: the learner's tests (exercises/<stem>.py) for the parts of
    exercise ``number``, scored against that exercise's known mistakes. ``example`` is the
    stub's example test: a file with no other test is not started."""

    __test__ = False  # a data class, not a pytest test class

    number: int
    stem: str
    title: str
    example: str

    @property
    def exercise(self) -> Exercise:
        from . import exercise
        return exercise(self.number)

    @property
    def path(self) -> Path:
        return EXERCISES_DIR / f"{self.stem}.py"

    @property
    def answer(self) -> Path:
        """Tests that catch every known mistake: the answer key of this exercise."""
        return ANSWERS_DIR / f"{self.stem}.py"

    def mistakes(self) -> list[Mistake]:
        """The known mistakes of the exercise's parts that can run (those with code)."""
        return [m for part in self.exercise.parts for m in part.mistakes if m.replace]


TESTS: tuple[TestsExercise, ...] = (
    TestsExercise(1, "tests01_attention", "tests for attention", "test_each_querys_weights_sum_to_one"),
    TestsExercise(2, "tests02_masks", "tests for the masks", "test_the_causal_mask_is_boolean"),
    TestsExercise(4, "tests04_multi_head_attention", "tests for multi-head attention",
                  "test_the_output_has_the_queries_shape"),
    TestsExercise(6, "tests06_positional_encoding", "tests for the positional encoding",
                  "test_row_0_is_sin_0_and_cos_0"),
    TestsExercise(10, "tests10_decoder_layer", "tests for the decoder layer", "test_the_output_has_the_targets_shape"),
    TestsExercise(15, "tests15_rotary", "tests for rotary positions", "test_rotation_keeps_the_shapes"),
    TestsExercise(16, "tests16_grouped_query_attention", "tests for grouped-query attention",
                  "test_the_output_has_the_queries_shape"),
)


def tests_exercise(number: int) -> TestsExercise:
    """The test-writing exercise for the parts of exercise ``number``."""
    numbers = [t.number for t in TESTS]
    if number not in numbers:
        raise ValueError(f"TESTS must be one of {', '.join(map(str, numbers))} (the exercises with a test-writing "
                         f"exercise), got {number!r}")
    return TESTS[numbers.index(number)]


tests_exercise.__test__ = False  # a lookup, not a test, wherever pytest finds it imported


# --------------------------------------------------------------------------- running the tests


@dataclass
class Outcome:
    failed: bool
    message: str = ""


class _Session:
    """A pytest plugin that runs every test of the learner's file once per implementation
    (index 0 the package, then the mistakes) and keeps each outcome."""

    def __init__(self, implementations: list[dict]):
        self.implementations = implementations
        self.keys: dict[str, tuple[str, int]] = {}  # nodeid -> (test, implementation)
        self.outcomes: dict[tuple[str, int], Outcome] = {}
        self.tests: list[str] = []
        self.collection_errors: list[str] = []

    def pytest_generate_tests(self, metafunc):
        if "_implementation_under_test" in metafunc.fixturenames:
            n = len(self.implementations)
            metafunc.parametrize("_implementation_under_test", range(n), indirect=True,
                                 ids=[f"under-test-{i}" for i in range(n)])

    @pytest.fixture(autouse=True)
    def _implementation_under_test(self, request):
        global _CURRENT
        _CURRENT = self.implementations[request.param]
        torch.manual_seed(0)  # every implementation sees the same random inputs
        try:
            yield
        finally:
            _CURRENT = None

    def pytest_collection_modifyitems(self, items):
        for item in items:
            index = item.callspec.params.get("_implementation_under_test", 0) if hasattr(item, "callspec") else 0
            test = re.sub(r"-?under-test-\d+-?", "", item.name).replace("[]", "")
            self.keys[item.nodeid] = (test, index)
            if test not in self.tests:
                self.tests.append(test)

    def pytest_collectreport(self, report):
        if report.failed:
            self.collection_errors.append(_first_line(report.longreprtext))

    def pytest_runtest_logreport(self, report):
        if report.nodeid not in self.keys or report.skipped:
            return
        key = self.keys[report.nodeid]
        if report.failed:
            if key not in self.outcomes or not self.outcomes[key].failed:
                self.outcomes[key] = Outcome(True, _failure(report))
        elif report.when == "call":
            self.outcomes.setdefault(key, Outcome(False))


def _failure(report) -> str:
    crash = getattr(report.longrepr, "reprcrash", None)
    text = crash.message if crash is not None else str(report.longrepr)
    where = "while setting up (a fixture raised)" if report.when == "setup" else ""
    return " ".join(part for part in (_first_line(text), where) if part)


def _first_line(text: str) -> str:
    lines = [line.strip() for line in str(text).splitlines() if line.strip()]
    errors = [line for line in lines if line.startswith("E ")]
    line = errors[0][2:].strip() if errors else lines[0] if lines else ""
    return line if len(line) <= 160 else line[:157] + "..."


def run_tests(path: Path, implementations: list[dict]) -> _Session:
    """Run the test file at ``path`` once per implementation, in this process, and return
    the session's record. The modules the file imported are dropped afterwards, so a
    notebook that checks again sees the file's new text."""
    session = _Session(implementations)
    before = set(sys.modules)
    args = [str(path), "-q", "-p", "no:cacheprovider", "--import-mode=importlib", "-o", "addopts=",
            "--rootdir", str(EXERCISES_DIR.parent), "-W", "ignore::DeprecationWarning"]
    output = io.StringIO()
    # Without the installed pytest plugins (hypothesis, anyio): pytest would rewrite the
    # asserts of their whole packages on first import, 20 seconds on a busy machine.
    autoload = os.environ.get("PYTEST_DISABLE_PLUGIN_AUTOLOAD")
    os.environ["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"
    try:
        with torch.random.fork_rng(devices=[]), one_thread(), contextlib.redirect_stdout(output), \
                contextlib.redirect_stderr(output):
            pytest.main(args, plugins=[session])
    finally:
        if autoload is None:
            del os.environ["PYTEST_DISABLE_PLUGIN_AUTOLOAD"]
        else:
            os.environ["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = autoload
    for name in set(sys.modules) - before:
        if name.startswith(("exercises.tests", "tests", "_pytest_learner")) or path.stem in name:
            sys.modules.pop(name, None)
    return session


# --------------------------------------------------------------------------- the answer key


def answer_key_uses(path: Path, names: list[str]) -> dict[str, int]:
    """The tests (and fixtures) of the file at ``path`` that use transformer_lab's own
    objects under test, ``names``, directly or through a fixture of the file: {test: line}."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    modules, aliases = set(), set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            modules |= {(a.asname or a.name).split(".")[0] for a in node.names if a.name.startswith("transformer_lab")}
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("transformer_lab"):
            aliases |= {a.asname or a.name for a in node.names if a.name in names}
            modules |= {a.asname or a.name for a in node.names if a.name not in names}
    functions = {n.name: n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}
    direct = {}
    for name, fn in functions.items():
        for node in ast.walk(fn):
            hit = (isinstance(node, ast.Name) and node.id in aliases) or (
                isinstance(node, ast.Attribute) and node.attr in names and _root(node) in modules | aliases)
            if hit:
                direct[name] = node.lineno
                break
    uses = dict(direct)
    changed = True
    while changed:  # a test inherits the use from the fixtures it requests
        changed = False
        for name, fn in functions.items():
            if name in uses:
                continue
            for arg in fn.args.args:
                if arg.arg in uses and arg.arg in functions:
                    uses[name] = uses[arg.arg]
                    changed = True
                    break
    return {name: line for name, line in uses.items() if name.startswith("test")}


def _root(node: ast.AST) -> str:
    while isinstance(node, ast.Attribute):
        node = node.value
    return node.id if isinstance(node, ast.Name) else ""


# --------------------------------------------------------------------------- grading


@dataclass
class TestsResult:
    """What the grader found for a learner's test file: ``status``, the ``caught`` mistakes
    (each with the tests that caught it), the ``survivors``, the ``false_alarms`` (tests that
    fail on the package's code) and the tests ``not_counted`` (they use the answer key)."""

    __test__ = False

    exercise: TestsExercise
    status: str
    path: str
    tests: list[str] = field(default_factory=list)
    caught: dict[str, list[str]] = field(default_factory=dict)
    survivors: list[Mistake] = field(default_factory=list)
    false_alarms: dict[str, str] = field(default_factory=dict)
    not_counted: dict[str, int] = field(default_factory=dict)
    problem: str = ""
    show_solution: bool = False

    @property
    def total(self) -> int:
        return len(self.caught) + len(self.survivors)

    def headline(self) -> str:
        t = self.exercise
        what = self.status if self.status in (NOT_STARTED,) or self.problem else \
            f"{self.status}: {len(self.caught)} of {self.total} mistakes caught"
        if self.false_alarms:
            what += f", {len(self.false_alarms)} false alarm{'s' if len(self.false_alarms) > 1 else ''}"
        return f"T{t.number:<2d} {t.title:<52} {what}"

    def report(self) -> str:
        t = self.exercise
        head = f"Tests for exercise {t.number}, {t.exercise.title} ({self.path}): {self.status}"
        if self.status != NOT_STARTED and not self.problem:
            head += f", {len(self.caught)} of {self.total} known mistakes caught"
        lines = [head]
        if self.problem:
            lines.append(f"  {self.problem}")
        if self.status == NOT_STARTED:
            lines.append(f"  only the example test, {t.example}, so far: write yours below it")
        elif self.tests and not self.problem:
            alarms = len(self.false_alarms)
            lines.append(f"  {len(self.tests)} test{'s' if len(self.tests) > 1 else ''}; on the package's correct "
                         f"code {'all pass' if not alarms else f'{alarms} fail'}")
        for test, message in self.false_alarms.items():
            lines.append(f"  false alarm: {test} fails on the package's correct code ({message}); a test must "
                         f"pass on correct code, so it catches nothing until it does")
        for test, line in self.not_counted.items():
            lines.append(f"  not counted: {test} uses transformer_lab's own {', '.join(t.exercise.reference)} "
                         f"(line {line}), the answer key, so it compares the code with itself when the grader "
                         f"runs it; check properties, or compare with PyTorch's own modules")
        if self.status != NOT_STARTED and not self.problem:
            for name, tests in self.caught.items():
                more = f" and {len(tests) - 2} more" if len(tests) > 2 else ""
                lines.append(f'  caught: "{name}" by {", ".join(tests[:2])}{more}')
            for mistake in self.survivors:
                lines.append(f'  survives: "{mistake.name}". Catch it with {mistake.hint}.')
        if self.show_solution or self.status == PASSED:
            lines.append(f"  tests that catch every known mistake: {_short_path(str(t.answer))}")
        if self.status != PASSED:
            lines.append(f"  read: {slide_reference(t.exercise.slide)}")
        return "\n".join(lines)


def grade_tests(exercise: TestsExercise, path: str | Path | None = None, show_solution: bool = False) -> TestsResult:
    """Run the learner's tests (the file at ``path``, by default exercises/<stem>.py) against
    the package and every known mistake of the exercise, and score them."""
    path = Path(path) if path is not None else exercise.path
    result = TestsResult(exercise, WRONG, _short_path(str(path)), show_solution=show_solution)
    if not path.is_file():
        result.problem = f"there is no file {result.path}"
        return result
    try:
        not_counted = answer_key_uses(path, list(exercise.exercise.reference))
    except SyntaxError as error:
        result.problem = f"the file does not import: SyntaxError: {error.msg} (line {error.lineno})"
        return result
    mistakes = exercise.mistakes()
    package = dict(exercise.exercise.reference)
    implementations = [package] + [vars(mistake_namespace(exercise.exercise, m)) for m in mistakes]
    session = run_tests(path, implementations)
    if session.collection_errors:
        result.problem = f"the tests do not run: {session.collection_errors[0]}"
        return result
    result.tests = session.tests
    if not session.tests:
        result.problem = "the file holds no test (a function whose name starts with test)"
        return result
    if set(session.tests) <= {exercise.example}:
        result.status = NOT_STARTED
        return result
    result.false_alarms = {t: o.message for t in session.tests
                           if (o := session.outcomes.get((t, 0))) is not None and o.failed}
    result.not_counted = {t: line for t, line in not_counted.items()
                          if any(s.split("[")[0] == t for s in session.tests)}
    counted = [t for t in session.tests if t not in result.false_alarms and t.split("[")[0] not in result.not_counted]
    for i, mistake in enumerate(mistakes, start=1):
        catchers = [t for t in counted if (o := session.outcomes.get((t, i))) is not None and o.failed]
        if catchers:
            result.caught[mistake.name] = catchers
        else:
            result.survivors.append(mistake)
    if result.false_alarms:
        result.status = WRONG
    elif result.survivors:
        result.status = PARTLY
    else:
        result.status = PASSED
    return result
