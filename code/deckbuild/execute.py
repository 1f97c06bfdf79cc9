"""Stage 2: execute the document's Python cells, one kernel per chapter, with a cache.

The unit of execution and caching is the chapter (``units``): each runs in a fresh kernel
of its own (Quarto's setup cell, then the document's setup cells, then the chapter's
cells), up to one kernel per core at a time, and its outputs are cached whole under a key
of its source, the setup's and the package's. An edit re-runs only its chapter; a build
whose keys are all cached starts no kernel. ``--no-cache`` runs every chapter.

Each chapter must seed the random numbers it draws (under Quarto, which runs the document
in one kernel, it would otherwise start from the state the chapter before it left): a
chapter whose random generators move before any seeding call is an error naming the cell.
"""

from __future__ import annotations

import asyncio
import os
import re
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from .cells import effective_cell_options, strip_ansi
from .errors import DeckError
from .kernel import (CellTimeout, Kernel, KernelSettings, run_kernels, setup_code)
from .source import Cell, Document
from .units import (Unit, UnitCache, reads_another_chapter,
                    setup_cells, setup_rebinds, source_hash, unit_key, units_of)

HEARTBEAT = 10.0   # seconds between "still running" lines for a long cell

# Run in the kernel after the setup cells: wraps the seeding functions so that a chapter
# that draws random numbers before seeding them can be named. Leaves no names behind.
SEED_WATCH = r'''
def _deckbuild_seed_watch():
    import functools, random, sys, types
    watch = types.ModuleType("_deckbuild_seed_watch")
    watch.seeded, watch.start = set(), {}
    try:
        import numpy
    except ImportError:
        numpy = None

    def torch_state(torch):
        return torch.get_rng_state().numpy().tobytes()

    def states():
        out = {"random": repr(random.getstate())}
        if numpy is not None:
            s = numpy.random.get_state()
            out["numpy"] = s[1].tobytes() + repr((s[0], s[2], s[3], s[4])).encode()
        torch = sys.modules.get("torch")
        if torch is not None and "torch" in watch.start:
            out["torch"] = torch_state(torch)
        return out

    def wrap(owner, name, kind):
        f = getattr(owner, name, None)
        if f is None or getattr(f, "_deckbuild_seed", False):
            return
        @functools.wraps(f)
        def seeding(*args, **kwargs):
            watch.seeded.add(kind)
            return f(*args, **kwargs)
        seeding._deckbuild_seed = True
        setattr(owner, name, seeding)

    def watch_torch(torch):
        watch.start.setdefault("torch", torch_state(torch))
        wrap(torch, "manual_seed", "torch")
        wrap(torch.random, "manual_seed", "torch")

    class AfterImport:
        # torch imported by a chapter: watched from the moment its import finishes
        def find_spec(self, name, path=None, target=None):
            if name != "torch":
                return None
            sys.meta_path.remove(self)
            try:
                import importlib.util
                spec = importlib.util.find_spec(name)
            finally:
                sys.meta_path.insert(0, self)
            if spec is None or spec.loader is None:
                return spec
            run = spec.loader.exec_module
            def exec_module(module):
                run(module)
                watch_torch(module)
            spec.loader.exec_module = exec_module
            return spec

    def check():
        now = states()
        if any(now[k] != watch.start.get(k) for k in now if k not in watch.seeded):
            print("deckbuild:unseeded")

    wrap(random, "seed", "random")
    if numpy is not None:
        wrap(numpy.random, "seed", "numpy")
    if "torch" in sys.modules:
        watch_torch(sys.modules["torch"])
    else:
        sys.meta_path.insert(0, AfterImport())
    watch.start.update(states())
    watch.check = check
    sys.modules["_deckbuild_seed_watch"] = watch

_deckbuild_seed_watch()
del _deckbuild_seed_watch
'''
SEED_CHECK = "__import__('_deckbuild_seed_watch').check()\n"


def _pre_cell(eff: dict) -> str:
    if eff["warning"]:
        return ""
    return ("import warnings as _deckbuild_warnings\n"
            "_deckbuild_wctx = _deckbuild_warnings.catch_warnings()\n"
            "_deckbuild_wctx.__enter__()\n_deckbuild_warnings.simplefilter('ignore')\n")


def _post_cell(eff: dict) -> str:
    return "" if eff["warning"] else "_deckbuild_wctx.__exit__(None, None, None)\n"


def _cell_detail(cell: Cell) -> str:
    return (f"  slide: {cell.slide_title or '(untitled)'}\n"
            f"  cell source:\n" + "\n".join("    " + l for l in cell.code.splitlines()))


def _cell_error(doc: Document, cell: Cell, err: dict) -> DeckError:
    known = reads_another_chapter(doc, cell, err)
    if known is not None:
        known.detail = _cell_detail(cell)
        return known
    tb = strip_ansi("\n".join(err.get("traceback", [])))
    detail = _cell_detail(cell) + "\n  traceback:\n" + "\n".join("    " + l for l in tb.splitlines())
    return DeckError(f"cell {cell.index + 1} raised {err.get('ename')}: {err.get('evalue')}"
                     f"{_missing_module_hint(err)}", cell.file, cell.line, detail)


def _missing_module_hint(err: dict) -> str:
    """For a module the cells import and the kernel's Python lacks: what to install, where.
    (The kernel is ipykernel's python3, which runs the interpreter running deckbuild.)"""
    m = re.match(r"No module named '([\w.]+)'", str(err.get("evalue", "")))
    if err.get("ename") != "ModuleNotFoundError" or not m:
        return ""
    top = m.group(1).split(".")[0]
    return (f" (the deck's cells need the package that provides '{top}', which the Python "
            f"running the cells lacks: install it with `{sys.executable} -m pip install "
            f"{top}` (or its distribution name), then build again)")


def _timeout_error(cell: Cell, seconds: float | None) -> DeckError:
    return DeckError(f"cell {cell.index + 1} did not finish within {seconds:g} s and was "
                     "stopped; make it faster, or raise the limit with `deckbuild: "
                     "cell-timeout: <seconds>` in _quarto.yml (false: no limit) or "
                     "--cell-timeout", cell.file, cell.line, _cell_detail(cell))


def _unseeded_error(unit: Unit, cell: Cell) -> DeckError:
    return DeckError(
        f"{unit.name} draws random numbers before seeding them (cell {cell.index + 1}): under "
        "Quarto, which runs the whole document in one kernel, they would depend on the "
        "chapters before it. Seed them at the top of the chapter (random.seed, numpy.random.seed or torch.manual_seed)",
        cell.file, cell.line, _cell_detail(cell))


@dataclass
class Run:
    """One build's execution: the document, what runs, and how progress is reported."""

    doc: Document
    effs: list[dict]
    settings: KernelSettings
    setup_code: str
    progress: Callable
    running: dict = field(default_factory=dict)   # unit name -> (cell, start time)
    pids: dict = field(default_factory=dict)      # unit name -> its kernel's process id
    setup_outputs: list | None = None             # the setup cells', from a chapter's kernel
    setup_claimed: bool = False                   # a chapter's kernel is producing them

    def evaluated(self, cell: Cell) -> bool:
        return self.effs[cell.index].get("eval") is not False


async def _run_cell(kernel: Kernel, run: Run, unit: Unit, cell: Cell, watch: bool,
                    report: bool = True) -> list:
    eff = run.effs[cell.index]
    t = time.perf_counter()
    run.running[unit.name] = (cell, t)
    try:
        if _pre_cell(eff):
            await kernel.run(_pre_cell(eff))
        outputs = await kernel.run(cell.code)
        after = await kernel.run(_post_cell(eff) + (SEED_CHECK if watch else ""))
    except CellTimeout:
        run.progress(f"  cell {cell.index + 1} {cell.file.name}:{cell.line} timed out")
        raise _timeout_error(cell, run.settings.cell_timeout) from None
    finally:
        run.running.pop(unit.name, None)
    if report:
        run.progress(f"  cell {cell.index + 1}/{len(run.effs)} {cell.file.name}:{cell.line} "
                     f"[{cell.slide_title[:40]}] {time.perf_counter() - t:.2f}s")
    err = next((o for o in outputs if o.get("output_type") == "error"), None)
    if err and not eff.get("error"):
        raise _cell_error(run.doc, cell, err)
    if any("deckbuild:unseeded" in "".join(o.get("text", "")) for o in after):
        raise _unseeded_error(unit, cell)
    return outputs


async def _start(kernel: Kernel, run: Run) -> None:
    """Quarto's setup cell, under the same time limit as the cells."""
    try:
        await kernel.run(run.setup_code)
    except CellTimeout:
        raise DeckError(f"the kernel's setup cell (matplotlib set-up) did not finish within "
                        f"{run.settings.cell_timeout} s; raise `deckbuild: cell-timeout` in "
                        "_quarto.yml or --cell-timeout", run.doc.path) from None


async def _run_unit(run: Run, unit: Unit) -> list[list]:
    """Outputs of each of the unit's cells, run in a fresh kernel after the set-up. A
    chapter's kernel runs the document's setup cells first (their outputs are the
    document's own); from the first cell that is not set-up on, random draws must be
    seeded."""
    t0 = time.perf_counter()
    async with Kernel(run.settings, run.doc.path.parent) as kernel:
        run.pids[unit.name] = kernel.pid
        await _start(kernel, run)
        run.progress(f"  {unit.name}: kernel ready (pid {kernel.pid}) "
                     f"{time.perf_counter() - t0:.2f}s")
        if unit.chapter is not None:
            first, run.setup_claimed = not run.setup_claimed, True   # its outputs are kept
            setup = [await _run_cell(kernel, run, unit, cell, watch=False, report=first)
                     if run.evaluated(cell) else [] for cell in setup_cells(run.doc)]
            if first:
                run.setup_outputs = setup            # the document's own, if it needs them
        watching, outputs = False, []
        for cell in unit.cells:
            if not watching and not cell.setup:
                await kernel.run(SEED_WATCH)
                watching = True
            outputs.append(await _run_cell(kernel, run, unit, cell, watching)
                           if run.evaluated(cell) else [])
    run.progress(f"  {unit.name}: {len(unit.cells)} cells, {time.perf_counter() - t0:.1f}s")
    return outputs


async def _heartbeat(run: Run) -> None:
    """A line every HEARTBEAT seconds for each cell that has run that long."""
    while True:
        await asyncio.sleep(HEARTBEAT)
        now = time.perf_counter()
        for cell, t in list(run.running.values()):
            if now - t >= HEARTBEAT:
                run.progress(f"  ... still running: cell {cell.index + 1} {cell.file.name}:"
                             f"{cell.line} [{cell.slide_title[:40]}] {now - t:.0f}s")


def _cpu_seconds(pid: int) -> float | None:
    """CPU time a process has used (Linux /proc; None where it cannot be read)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return None


class Cores:
    """How many kernels are busy: one that is starting, or used at least a fifth of a
    core over the last look. A kernel waiting (for a result another chapter is computing
    under ``tt.cached``'s lock, say) does not count, so another chapter can start."""

    def __init__(self):
        self.seen: dict[int, tuple[float, float]] = {}   # pid -> (cpu seconds, wall time)

    def busy(self, pids: list[int | None]) -> int:
        count, now = 0, time.monotonic()
        for pid in pids:
            cpu = None if pid is None else _cpu_seconds(pid)
            before = self.seen.get(pid)
            if cpu is not None:
                self.seen[pid] = (cpu, now)
            if cpu is None or before is None or (cpu - before[0]) >= 0.2 * (now - before[1]):
                count += 1
        return count


def _may_start(unit: Unit, running: dict, run: Run, cores: Cores, jobs: int,
               alone: set) -> bool:
    """Whether ``unit`` may start now: fewer than ``jobs`` kernels busy, and no chapter of
    ``run-alone`` (``alone``: they measure time) running or starting beside another."""
    if running and alone & {unit.name, *running}:
        return False
    return cores.busy([run.pids.get(n) for n in running]) < jobs


async def _run_units(run: Run, units: list[Unit], cache: UnitCache) -> dict:
    """Run ``units`` in document order (those of ``run-alone`` last, each alone), each as
    soon as fewer kernels than ``jobs`` (one per core) are busy; each one's outputs are
    cached as soon as it finishes. The first error cancels the others (their kernels are
    shut down) and is raised."""
    jobs = max(1, run.settings.jobs or os.cpu_count() or 1)
    alone = {u.name for u in units if u.chapter and u.chapter.resolve() in run.settings.run_alone}
    # the chapters that run alone go last, one after the other (by then the results they
    # share with other chapters, trained models say, are cached: they time, not train)
    pending = sorted(units, key=lambda u: u.name in alone)
    running, done, cores = {}, {}, Cores()
    beat = asyncio.create_task(_heartbeat(run))
    try:
        while pending or running:
            while pending and _may_start(pending[0], running, run, cores, jobs, alone):
                unit = pending.pop(0)
                running[unit.name] = asyncio.create_task(_run_unit(run, unit))
            finished, _ = await asyncio.wait(running.values(), timeout=0.5,
                                             return_when=asyncio.FIRST_COMPLETED)
            for name in [n for n, t in running.items() if t in finished]:
                unit = next(u for u in units if u.name == name)
                done[name] = running.pop(name).result()     # raises the unit's error
                cache.put(unit, done[name])
        return done
    finally:
        for task in [*running.values(), beat]:
            task.cancel()
        await asyncio.gather(*running.values(), beat, return_exceptions=True)


def execute(doc: Document, doc_opts: dict, cache_dir, use_cache: bool,
            progress: Callable[[str], None],
            settings: KernelSettings = KernelSettings()) -> tuple[list[list], dict]:
    """Outputs for each cell (in order), and statistics for the progress report
    (``ran``: the indices of the cells that ran; ``units``/``units_run``: chapters)."""
    cells = doc.cells
    if not cells:
        return [], {"cells": 0, "cached": 0, "ran": [], "units": 0, "units_run": 0}
    setup_rebinds(doc)
    effs = [effective_cell_options(c, doc_opts) for c in cells]
    code = setup_code(doc_opts, settings.quarto_version)
    context = {"setup": code, "sources": source_hash(settings.cache_sources),
               "env": {name: os.environ.get(name) for name in settings.cache_env},
               "quarto": settings.quarto_version, "document": doc.path.name,
               "python_path": [str(p) for p in settings.python_path]}
    units = units_of(doc)
    setup = setup_cells(doc)
    for unit in units:
        unit.key = unit_key(unit, setup, effs, context)
    cache = UnitCache(cache_dir, progress)
    found = {u.name: cache.get(u) if use_cache else None for u in units}
    stale = [u for u in units if found[u.name] is None
             and any(effs[c.index].get("eval") is not False for c in u.cells)]
    # the document's own cells, when they are all setup cells, run in every chapter's
    # kernel anyway: their outputs come from the first chapter that runs
    borrowed = next((u for u in stale if u.chapter is None and all(c.setup for c in u.cells)
                     and any(v.chapter for v in stale)), None)
    if stale:
        run = Run(doc, effs, settings, code, progress)
        progress(f"  running {len(stale)} of {len(units)} "
                 f"{'chapters' if len(units) > 1 else 'units'}: "
                 + ", ".join(u.name for u in stale))
        found.update(run_kernels(_run_units(run, [u for u in stale if u is not borrowed], cache)))
        if borrowed is not None:
            found[borrowed.name] = run.setup_outputs
            cache.put(borrowed, run.setup_outputs)
    by_cell = {}
    for unit in units:
        for cell, outs in zip(unit.cells, found[unit.name] or [[] for _ in unit.cells]):
            by_cell[cell.index] = outs
    ran = sorted(c.index for u in stale for c in u.cells)
    return ([by_cell[c.index] for c in cells],
            {"cells": len(cells), "cached": len(cells) - len(ran), "ran": ran,
             "units": len(units), "units_run": len(stale)})
