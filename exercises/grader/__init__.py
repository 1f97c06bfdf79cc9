"""The exercises' grader: ``make exercises`` (all), ``make exercises N=1`` (one),
``make exercises TESTS=1`` (the tests you wrote for exercise 1's part), or from a notebook
started at the repository's root::

    from exercises.grader import check, check_tests
    check(1)                          # exercises/ex01_attention.py
    check(1, path="my_attention.py")  # a copy of the exercise elsewhere
    check(1, module=my_module)        # a module already imported
    check(1, solution=True)           # name the package's solution and its slide
    check_tests(1)                    # exercises/tests01_attention.py against the known mistakes

Each exercise is compared with the package (the answer key) on seeded random inputs of
unequal sizes, batch size 1 among them, with dropout where the part has it, and its inputs
are checked unchanged after every call. A wrong answer is named as a known mistake only
when every result equals that mistake's (an exception on its type and message); otherwise
the report gives the first difference, for a layer the first stage that differs, and the
mistakes it looks like. The test-writing exercises (testing.py) run the learner's tests
against the package and every known mistake of the part.
"""

from __future__ import annotations

from pathlib import Path
from types import ModuleType

from .beam import BEAM
from .core import Exercise, Mistake
from .decoder_layer import DECODER
from .decoding import GREEDY
from .grade import NOT_STARTED, PARTLY, PASSED, WRONG, Result, grade
from .grouped_query import GROUPED_QUERY
from .inputs_attention import ATTENTION, EMBEDDING, POSITIONS
from .layers import ENCODER, RESIDUAL
from .masks_heads import HEADS, MASKS
from .multi_head import FEED_FORWARD, MULTI_HEAD
from .rotary import ROTARY
from .testing import TESTS, TestsExercise, TestsResult, grade_tests, tests_exercise
from .training import LABEL_SMOOTHING, LEARNING_RATE

EXERCISES: tuple[Exercise, ...] = (
    ATTENTION, MASKS, HEADS, MULTI_HEAD, EMBEDDING, POSITIONS, FEED_FORWARD, RESIDUAL, ENCODER, DECODER,
    LEARNING_RATE, LABEL_SMOOTHING, GREEDY, BEAM, ROTARY, GROUPED_QUERY,
)

__all__ = ["EXERCISES", "NOT_STARTED", "PARTLY", "PASSED", "TESTS", "WRONG", "Mistake", "Result", "TestsExercise",
           "TestsResult", "check", "check_tests", "exercise", "grade", "grade_tests", "summary", "tests_exercise"]


def exercise(number: int) -> Exercise:
    """Exercise ``number`` (1-based, in slide order)."""
    if not isinstance(number, int) or not 1 <= number <= len(EXERCISES):
        raise ValueError(f"number must be an exercise number from 1 to {len(EXERCISES)}, got {number!r}")
    return EXERCISES[number - 1]


def check(number: int | None = None, *, path: str | Path | None = None, module: ModuleType | None = None,
          solution: bool = False) -> Result | list[Result]:
    """Grade exercise ``number`` (every exercise when None), print its report and return
    the Result (a list of them for every exercise)."""
    if number is None:
        if path is not None or module is not None:
            raise ValueError("path and module need an exercise number: check(1, path=...)")
        results = [grade(e, show_solution=solution) for e in EXERCISES]
        print("\n\n".join(r.report() for r in results))
        print("\n" + summary(results))
        return results
    result = grade(exercise(number), module=module, path=path, show_solution=solution)
    print(result.report())
    return result


def check_tests(number: int | None = None, *, path: str | Path | None = None,
                solution: bool = False) -> TestsResult | list[TestsResult]:
    """Run the tests written for exercise ``number``'s part (every test-writing exercise
    when None) against the package and its known mistakes, print the report and return the
    TestsResult (a list of them for every one)."""
    if number is None:
        if path is not None:
            raise ValueError("path needs an exercise number: check_tests(1, path=...)")
        results = [grade_tests(t, show_solution=solution) for t in TESTS]
        print("\n\n".join(r.report() for r in results))
        print("\n" + summary(results))
        return results
    result = grade_tests(tests_exercise(number), path=path, show_solution=solution)
    print(result.report())
    return result


def summary(results: list) -> str:
    """One line per exercise (and test-writing exercise), then the counts."""
    counts = {s: sum(r.status == s for r in results) for s in (PASSED, WRONG, PARTLY, NOT_STARTED)}
    tally = ", ".join(f"{n} {s}" for s, n in counts.items() if n)
    noun = "exercise" if len(results) == 1 else "exercises"
    return "\n".join([r.headline() for r in results] + [f"{len(results)} {noun}: {tally}"])
