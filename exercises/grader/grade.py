"""Grade one exercise: run each part on the learner's code, the package and the known
mistakes (see core.py), and write the report a learner reads."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType, SimpleNamespace

import torch

from .compare import Mutated, Raised, _short_path, differences
from .core import (Exercise, Mistake, NotStarted, Part, collect, load_module, observations, one_thread,
                   probe_stages, solution_line)
from .slides import slide_reference
from .stages import locate

PASSED, NOT_STARTED, PARTLY, WRONG = "passed", "not started", "partly done", "wrong"


@dataclass
class PartResult:
    part: Part
    status: str
    lines: list[str] = field(default_factory=list)
    mistake: Mistake | None = None  # a known mistake every result of which equals the learner's
    resembles: tuple[Mistake, ...] = ()  # "looks like": agrees where the learner's code first goes wrong


@dataclass
class Result:
    """What the grader found: ``status`` (passed, not started, partly done, wrong), the
    known ``mistake`` it diagnosed if any, and ``report()``, the text a learner reads."""

    exercise: Exercise
    status: str
    parts: list[PartResult]
    path: str
    show_solution: bool = False
    problem: str = ""  # the file does not import or lacks a name

    @property
    def mistake(self) -> Mistake | None:
        return next((p.mistake for p in self.parts if p.mistake is not None), None)

    def headline(self) -> str:
        e = self.exercise
        what = self.status
        if self.mistake is not None:
            what = f"wrong: {self.mistake.name}"
        return f"{e.number:2d}  {e.title:<52} {what}"

    def report(self) -> str:
        e = self.exercise
        lines = [f"Exercise {e.number}, {e.title} ({self.path}): {self.status}"]
        if self.problem:
            lines.append(f"  {self.problem}")
        for part in self.parts:
            lines += [f"  {part.part.name}: {part.status}" + (f". {part.lines[0]}" if part.lines else "")]
            lines += [f"    {line}" for line in part.lines[1:]]
        if self.status == PASSED or self.show_solution:
            lines.append(f"  {solution_line(e)}")
        elif self.status in (NOT_STARTED, PARTLY):
            lines.append(f"  read first: {slide_reference(e.slide)}")
        return "\n".join(lines)


def grade(exercise: Exercise, module: ModuleType | None = None, path: str | Path | None = None,
          show_solution: bool = False) -> Result:
    """Grade the learner's ``module`` (or the file at ``path``, by default the exercise's
    own file under exercises/)."""
    path = Path(path) if path is not None else exercise.path
    shown = _short_path(str(getattr(module, "__file__", None) or path))
    result = Result(exercise, WRONG, [], shown, show_solution)
    if module is None:
        try:
            module = load_module(path)
        except Exception as error:  # a syntax error, a failing import: the learner's to fix
            result.problem = f"the file does not import: {_import_problem(error, str(path))}"
            return result
    missing = [name for name in exercise.reference if not hasattr(module, name)]
    if missing:
        result.problem = f"{shown} defines no {', '.join(missing)}: keep the stub's names"
        return result
    learner_file = getattr(module, "__file__", None)
    for part in exercise.parts:
        graded = grade_part(exercise, part, module, learner_file)
        if graded.status == WRONG:  # an earlier part's error is said instead of a diagnosis of this one
            graded = _after_earlier_parts(exercise, part, module, learner_file, result.parts) or graded
        result.parts.append(graded)
    result.status = _overall([p.status for p in result.parts])
    return result


def _after_earlier_parts(exercise: Exercise, part: Part, module, learner_file, earlier: list[PartResult]):
    """A part that calls an earlier, wrong part of the learner's (scaled_dot_product_attention
    calling attention_weights) is graded again with the package's version of that part; if it
    passes then, the report says to fix the earlier part first."""
    wrong = {p.part.name: exercise.reference[p.part.name] for p in earlier
             if p.status == WRONG and p.part.name in exercise.reference}
    if not wrong or not isinstance(module, ModuleType):
        return None
    saved = {name: getattr(module, name) for name in wrong}
    try:
        for name, package_obj in wrong.items():
            setattr(module, name, package_obj)  # the learner's functions read their module's globals
        retry = grade_part(exercise, part, module, learner_file)
    finally:
        for name, obj in saved.items():
            setattr(module, name, obj)
    if retry.status != PASSED:
        return None
    names = " and ".join(wrong)
    return PartResult(part, WRONG, [f"equals the package once {names} is the package's: fix {names} first"])


def _import_problem(error: Exception, path: str) -> str:
    if isinstance(error, SyntaxError):
        return f"SyntaxError: {error.msg} (line {error.lineno})"
    return str(Raised.from_exception(error, path))


def _overall(statuses: list[str]) -> str:
    if WRONG in statuses:
        return WRONG
    if all(s == PASSED for s in statuses):
        return PASSED
    if all(s == NOT_STARTED for s in statuses):
        return NOT_STARTED
    return PARTLY


def grade_part(exercise: Exercise, part: Part, module, learner_file: str | None) -> PartResult:
    try:
        learner = collect(part, module, learner_file)
    except NotStarted:
        return PartResult(part, NOT_STARTED)
    reference = observations(exercise, part)
    broken = [o for o in reference if isinstance(o.value, (Raised, Mutated))]
    if broken:  # the answer key itself failed: the grader's bug, not the learner's
        raise RuntimeError(f"exercise {exercise.number}, {part.name}: the package gave {broken[0].value} "
                           f"in {broken[0].label}")
    found = differences(reference, learner)
    failing = failing_properties(part, module)
    if not found and not failing:
        checked = "; ".join(p.says for p in part.properties)
        lines = [f"equals the package on all {len(reference)} results"]
        return PartResult(part, PASSED, lines + ([f"checked: {checked}"] if checked else []))
    mutated = next((o for o in learner if isinstance(o.value, Mutated)), None)
    if mutated is not None:  # the diagnosis itself: every later result would read the changed input
        lines = [f"in {mutated.label}: {mutated.value}", f"see {slide_reference(exercise.slide)}"]
        return PartResult(part, WRONG, lines)
    mistake, resembles = diagnose(exercise, part, module, learner)
    if mistake is not None:
        lines = [f'known mistake "{mistake.name}": {mistake.says}', f"see {slide_reference(mistake.slide)}"]
        return PartResult(part, WRONG, lines, mistake)
    if not found:
        lines = ["equals the package on these inputs, but a property of the paper does not hold"]
    else:
        _, label, what = found[0]
        lines = [f"first difference from the package, in {label}: {what}"]
        lines += stage_lines(exercise, part, module, learner_file, label)
    lines += [f"does not hold: {says}" for says in failing]
    lines += [looks_like(m, differs) for m, differs in resembles]
    slides = [exercise.slide] + [m.slide for m, _ in resembles]
    lines += [f"see {slide_reference(key)}" for key in dict.fromkeys(slides)]
    return PartResult(part, WRONG, lines, resembles=tuple(m for m, _ in resembles))


def looks_like(mistake: Mistake, differs: tuple[str, str]) -> str:
    label, what = differs
    return (f'looks like known mistake "{mistake.name}" ({mistake.says.rstrip(".")}), but not exactly: in {label} '
            f'yours differs from what that mistake gives ({what}; "expected" is the mistake\'s)')


def stage_lines(exercise: Exercise, part: Part, module, learner_file: str | None, label: str) -> list[str]:
    """The first stage of the layer call ``label`` that differs from the package's (layer
    exercises only), found by running both with their stages recorded."""
    if part.stages is None:
        return []
    try:
        mine = probe_stages(part, module, label, learner_file)
        package = probe_stages(part, SimpleNamespace(**exercise.reference), label)
        if mine is None or package is None or package.module is None:
            return []
        return locate(part.stages, package, mine, package.module)
    except Exception:  # the locator only adds to the report: a layer it cannot read gets the first difference alone
        return []


Resemblance = tuple[Mistake, tuple[str, str]]  # a mistake, and (label, what differs) where it parts from the learner's


def diagnose(exercise: Exercise, part: Part, module, learner) -> tuple[Mistake | None, list[Resemblance]]:
    """The known mistake of ``part`` whose every result equals the learner's (a detected
    mistake of structure comes first), else the mistakes the learner's code looks like:
    those that agree with it where it first departs from the package but differ later,
    each with the first place they differ; the closest first, ties kept together."""
    for mistake in part.mistakes:
        if mistake.detect is not None:
            try:
                if mistake.detect(module):
                    return mistake, []
            except Exception:  # a detector that cannot read the module did not match
                pass
    reference = observations(exercise, part)
    found = differences(reference, learner)
    if not found:  # only a property fails: no mistake, each of which changes a result, is this one
        return None, []
    first = found[0][0]
    close = []
    for mistake in part.mistakes:
        if mistake.detect is not None or not mistake.replace:
            continue
        theirs = observations(exercise, part, mistake)
        apart = differences(theirs, learner)
        if not apart:
            return mistake, []
        mine_first = differences(reference, theirs)
        if not mine_first or mine_first[0][0] != first or apart[0][0] <= first:
            continue  # it goes wrong elsewhere, or not the way the learner's code does there
        agreeing = min(len(theirs), len(learner)) - len(apart)
        close.append((agreeing, mistake, apart[0][1:]))
    if not close:
        return None, []
    best = max(a for a, _, _ in close)
    return None, [(m, differs) for a, m, differs in close if a == best]


def failing_properties(part: Part, module) -> list[str]:
    failing = []
    for prop in part.properties:
        with torch.random.fork_rng(devices=[]), one_thread():
            torch.manual_seed(0)
            try:
                holds = bool(prop.holds(module))
            except Exception:  # raising counts as not holding
                holds = False
        if not holds:
            failing.append(prop.says)
    return failing
