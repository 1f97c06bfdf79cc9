"""The exercises' grader: ``make exercises`` (all), ``make exercises N=1`` (one), or from a
notebook started at the repository's root::

    from exercises.grader import check
    check(1)                          # exercises/ex01_attention.py
    check(1, path="my_attention.py")  # a copy of the exercise elsewhere
    check(1, module=my_module)        # a module already imported
    check(1, solution=True)           # name the package's solution and its slide

Each exercise is compared with the package (the answer key) on seeded random inputs of
unequal sizes, checked against the properties the paper states, and, when wrong, matched
against the known mistakes, which the report names with the slide that explains them.
"""

from __future__ import annotations

from pathlib import Path
from types import ModuleType

from .beam import BEAM
from .core import Exercise, Mistake
from .decoder_layer import DECODER
from .decoding import GREEDY
from .grade import NOT_STARTED, PARTLY, PASSED, WRONG, Result, grade
from .inputs_attention import ATTENTION, EMBEDDING, POSITIONS
from .layers import ENCODER, RESIDUAL
from .masks_heads import HEADS, MASKS
from .multi_head import FEED_FORWARD, MULTI_HEAD
from .training import LABEL_SMOOTHING, LEARNING_RATE

EXERCISES: tuple[Exercise, ...] = (
    ATTENTION, MASKS, HEADS, MULTI_HEAD, EMBEDDING, POSITIONS, FEED_FORWARD, RESIDUAL, ENCODER, DECODER,
    LEARNING_RATE, LABEL_SMOOTHING, GREEDY, BEAM,
)

__all__ = ["EXERCISES", "NOT_STARTED", "PARTLY", "PASSED", "WRONG", "Mistake", "Result", "check", "exercise",
           "grade", "summary"]


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


def summary(results: list[Result]) -> str:
    """One line per exercise, then the counts."""
    counts = {s: sum(r.status == s for r in results) for s in (PASSED, WRONG, PARTLY, NOT_STARTED)}
    tally = ", ".join(f"{n} {s}" for s, n in counts.items() if n)
    noun = "exercise" if len(results) == 1 else "exercises"
    return "\n".join([r.headline() for r in results] + [f"{len(results)} {noun}: {tally}"])
