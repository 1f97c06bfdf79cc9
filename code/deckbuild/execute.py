"""Stage 2: execute the document's Python cells in one Jupyter kernel, with a cache.

Each cell's cache key hashes its source and options, the keys of the cells it depends on
(``depgraph``: a static reading of the names the cells share), the ``.py`` files under the
project's ``deckbuild: cache-sources`` folders and the execution set-up's version
(``partial``). When every key is in the cache no kernel starts at all. Otherwise a fresh
kernel runs the set-up, then, in document order, the cells whose keys changed and the
earlier cells they need for their state; every other cell keeps its cached outputs. A cell
re-run only for state must reproduce its cached outputs, or the whole document runs again
in order (the graph missed something); ``--no-cache`` always runs everything in order.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import math
import os
import shutil
import signal
import tempfile
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from .cells import effective_cell_options, strip_ansi
from . import partial
from .partial import EXEC_VERSION, Cache, cell_keys  # noqa: F401 - re-exported
from .errors import DeckError
from .source import Cell, Document

_QUIET_LOG = logging.getLogger("deckbuild.nbclient")
_QUIET_LOG.addHandler(logging.NullHandler())
_QUIET_LOG.propagate = False



@dataclass(frozen=True)
class KernelSettings:
    """Where cells find their imports, and what else invalidates the cache."""

    python_path: tuple[Path, ...] = ()     # prepended to the kernel's PYTHONPATH
    cache_sources: tuple[Path, ...] = ()   # folders whose files are part of the key
    quarto_version: str = "current"        # whose setup cell the kernel runs first
    cell_timeout: float | None = None      # seconds a cell may run (None: no limit)


def _source_files(folder: Path):
    """The files of a package folder that can change what its code does: every file (the
    ``.py`` modules and package data such as a script a cell embeds), except bytecode,
    hidden files and editors' backups."""
    for path in sorted(folder.rglob("*")):
        rel = path.relative_to(folder)
        if (path.is_file() and "__pycache__" not in rel.parts and path.suffix != ".pyc"
                and not any(p.startswith(".") for p in rel.parts) and not path.name.endswith("~")):
            yield path, rel


def source_hash(folders) -> str:
    """Hash of the source files under ``folders`` (the packages the cells import)."""
    h = hashlib.sha256()
    for folder in sorted(map(Path, folders)):
        for path, rel in _source_files(folder):
            h.update(f"{folder.name}/{rel}".encode() + b"\0" + path.read_bytes() + b"\0")
    return h.hexdigest()


def _version(text: str) -> tuple[int, ...]:
    return (10**6,) if text == "current" else tuple(int(x) for x in text.split("."))


def setup_code(doc_opts: dict, quarto_version: str = "current") -> str:
    """The matplotlib part of Quarto's Python setup cell, as the given Quarto version runs
    it (src/resources/jupyter/lang/python/setup.py): pyplot's figure size and dpi from the
    document's options, then the inline backend's formats with ``set_matplotlib_formats``.
    Until 1.7.32 that function is imported from ``IPython.display`` only; IPython 9
    removed it, the ImportError is swallowed, and a bare ``Figure`` then displays as
    text. From 1.7.33 it comes from ``matplotlib_inline.backend_inline`` first.
    Before 1.5.33 ``savefig.dpi`` is the document's dpi, later ``"figure"``. The cell ends
    with ``%reset``, as Quarto's does, so cells cannot rely on its names."""
    version = _version(quarto_version)
    savefig_dpi = repr("figure") if version >= (1, 5, 33) else doc_opts["fig-dpi"]
    formats_import = (
        "  try:\n"
        "    from matplotlib_inline.backend_inline import set_matplotlib_formats\n"
        "  except ImportError:\n"
        "    from IPython.display import set_matplotlib_formats\n"
        if version >= (1, 7, 33) else
        "  from IPython.display import set_matplotlib_formats\n")
    return (
        "try:\n"
        "  import matplotlib.pyplot as plt\n"
        f"  plt.rcParams['figure.figsize'] = ({doc_opts['fig-width']}, {doc_opts['fig-height']})\n"
        f"  plt.rcParams['figure.dpi'] = {doc_opts['fig-dpi']}\n"
        f"  plt.rcParams['savefig.dpi'] = {savefig_dpi}\n"
        f"{formats_import}"
        f"  set_matplotlib_formats({doc_opts['fig-format']!r})\n"
        "except Exception:\n"
        "  pass\n"
        # like Quarto's, the set-up leaves no names behind for the cells to rely on
        "%reset -f\n"
    )


def _pre_cell(eff: dict) -> str:
    if eff["warning"]:
        return ""
    return ("import warnings as _deckbuild_warnings\n"
            "_deckbuild_wctx = _deckbuild_warnings.catch_warnings()\n"
            "_deckbuild_wctx.__enter__()\n_deckbuild_warnings.simplefilter('ignore')\n")


def _post_cell(eff: dict) -> str:
    return "" if eff["warning"] else "_deckbuild_wctx.__exit__(None, None, None)\n"


def _error_of(outputs: list) -> dict | None:
    return next((o for o in outputs if o.get("output_type") == "error"), None)


def _cell_detail(cell: Cell) -> str:
    return (f"  slide: {cell.slide_title or '(untitled)'}\n"
            f"  cell source:\n" + "\n".join("    " + l for l in cell.code.splitlines()))


def _raise_cell_error(cell: Cell, err: dict) -> None:
    tb = strip_ansi("\n".join(err.get("traceback", [])))
    detail = _cell_detail(cell) + "\n  traceback:\n" + "\n".join("    " + l for l in tb.splitlines())
    raise DeckError(f"cell {cell.index + 1} raised {err.get('ename')}: {err.get('evalue')}",
                    cell.file, cell.line, detail)


def _raise_timeout(cell: Cell, seconds: float) -> None:
    raise DeckError(f"cell {cell.index + 1} did not finish within {seconds:g} s and was "
                    "stopped; make it faster, or raise the limit with `deckbuild: "
                    "cell-timeout: <seconds>` in _quarto.yml (false: no limit) or "
                    "--cell-timeout", cell.file, cell.line, _cell_detail(cell)) from None


def _kill_group(pid: int | None) -> None:
    if not pid:
        return
    for sig in (signal.SIGKILL,):
        try:
            os.killpg(pid, sig)
        except (ProcessLookupError, PermissionError):
            try:
                os.kill(pid, sig)
            except ProcessLookupError:
                pass


def kernel_env(settings: KernelSettings) -> dict:
    """The kernel's environment: the project's python-path first on PYTHONPATH, and the
    inline matplotlib backend forced as Quarto forces it (src/execute/jupyter/jupyter-kernel.ts)."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(
        filter(None, [*map(str, settings.python_path), env.get("PYTHONPATH")]))
    env["MPLBACKEND"] = "module://matplotlib_inline.backend_inline"
    env.setdefault("PYDEVD_DISABLE_FILE_VALIDATION", "1")
    return env


@dataclass
class Run:
    """One kernel's work: which cells to run and why, what the cache already holds."""

    doc: Document
    effs: list
    plan: partial.Plan
    hits: list            # cache entries (None: not cached, or not to be used)
    graph: object
    rng_dir: Path
    progress: Callable


async def _hidden(client, code: str) -> list:
    """Run deckbuild's own code in the kernel (not a document cell); return its outputs."""
    import nbformat

    nbcell = nbformat.v4.new_code_cell(code)
    await client.async_execute_cell(nbcell, 0)
    return [dict(o) for o in nbcell.outputs]


async def _run_cell(client, run: Run, i: int, restore: str | None) -> dict:
    """Run cell ``i`` (its option set-up and RNG bookkeeping around it): its outputs, and
    the RNG state it started from and left."""
    import nbformat
    from nbclient.exceptions import CellTimeoutError

    cell, eff = run.doc.cells[i], run.effs[i]
    t = time.perf_counter()
    why = "" if run.plan.full else f" ({run.plan.run[i]})"
    run.progress(f"  cell {i + 1}/{len(run.effs)} {cell.file.name}:{cell.line} "
                 f"[{cell.slide_title[:40]}]{why} ...", end="")
    nbcell = nbformat.v4.new_code_cell(cell.code)
    try:
        if not run.plan.full and run.graph.imports[i]:
            await _hidden(client, "\n".join(run.graph.imports[i]))
        rng_in = partial.captured_hash(await _hidden(
            client, partial.capture_code(run.rng_dir, restore) + _pre_cell(eff)))
        await client.async_execute_cell(nbcell, 0)
        rng_out = partial.captured_hash(await _hidden(
            client, _post_cell(eff) + partial.capture_code(run.rng_dir)))
    except CellTimeoutError:
        run.progress(" timed out")
        _raise_timeout(cell, client.timeout)
    outputs = json.loads(json.dumps([dict(o) for o in nbcell.outputs], default=str))
    run.progress(f" {time.perf_counter() - t:.2f}s")
    err = _error_of(outputs)
    if err and not eff.get("error"):
        _raise_cell_error(cell, err)
    return {"outputs": outputs, "rng_in": rng_in, "rng_out": rng_out}


async def _run_plan(client, run: Run) -> dict:
    """The planned cells in document order, each from the RNG state a full ordered run
    gives it; raises ``partial.Diverged`` / ``partial.Mismatch`` when that cannot hold."""
    state, live, results = None, False, {}    # live: the kernel is in ``state`` already
    for i in range(len(run.effs)):
        hit = run.hits[i]
        if run.effs[i].get("eval") is False:
            continue
        if i not in run.plan.run:
            state, live = partial.follow(state, hit, i), False
            continue
        if hit is not None and state is not None and state != hit.get("rng_in") \
                and hit.get("rng_in") != hit.get("rng_out"):
            raise partial.Diverged(i)
        restore = None if live else (state or (hit or {}).get("rng_in"))
        if restore and not (run.rng_dir / f"{restore}.z").exists():
            raise partial.Mismatch(i)
        entry = await _run_cell(client, run, i, restore)
        if hit is not None and partial.comparable(entry["outputs"]) != partial.comparable(
                hit["outputs"]):
            raise partial.Mismatch(i)
        results[i] = entry
        state, live = entry["rng_out"], True
    return results


async def _run_setup(client, code: str, doc: Document) -> None:
    """Quarto's setup cell, run before the document's cells (under the same time limit)."""
    import nbformat
    from nbclient.exceptions import CellTimeoutError

    try:
        await client.async_execute_cell(nbformat.v4.new_code_cell(code), 0)
    except CellTimeoutError:
        raise DeckError(f"the kernel's setup cell (matplotlib set-up) did not finish within "
                        f"{client.timeout} s; raise `deckbuild: cell-timeout` in _quarto.yml "
                        "or --cell-timeout", doc.path) from None


async def _shutdown(client, km, pid, sock_dir: Path) -> None:
    try:
        if client.kc is not None:
            client.kc.stop_channels()
        if km.has_kernel:
            await asyncio.wait_for(km.shutdown_kernel(now=True), 5)
    except BaseException:  # noqa: BLE001 - shutting down must not mask the real error
        pass
    finally:
        _kill_group(pid)
        _KERNEL_PIDS.discard(pid)
        shutil.rmtree(sock_dir, ignore_errors=True)


async def _run_kernel(run: Run, doc_opts: dict, settings: KernelSettings) -> dict:
    import nbformat
    from jupyter_client.manager import AsyncKernelManager
    from nbclient import NotebookClient

    doc = run.doc
    km = AsyncKernelManager(kernel_name="python3", transport="ipc")
    # ipc sockets are files: give them an absolute home (the kernel runs in the doc's dir)
    sock_dir = Path(tempfile.mkdtemp(prefix="deckbuild-kernel-"))
    km.ip = str(sock_dir / "kernel")
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell("")]   # nbclient writes each executed cell here
    timeout = math.ceil(settings.cell_timeout) if settings.cell_timeout else None
    client = NotebookClient(nb, km=km, allow_errors=True, timeout=timeout,
                            resources={"metadata": {"path": str(doc.path.parent)}},
                            log=_QUIET_LOG)   # a timeout is reported by _raise_timeout
    pid = None
    t0 = time.perf_counter()
    global _RUNNING
    _RUNNING = asyncio.current_task()
    try:
        await km.start_kernel(cwd=str(doc.path.parent), env=kernel_env(settings))
        pid = getattr(km.provisioner, "pid", None)
        _KERNEL_PIDS.add(pid)
        await client.async_start_new_kernel_client()
        await _run_setup(client, setup_code(doc_opts, settings.quarto_version), doc)
        await _hidden(client, partial.install_code())
        run.progress(f"  kernel ready (pid {pid}) {time.perf_counter() - t0:.2f}s")
        return await _run_plan(client, run)
    finally:
        await _shutdown(client, km, pid, sock_dir)
        _RUNNING = None


_KERNEL_PIDS: set = set()
_INTERRUPTED = False
_RUNNING: asyncio.Task | None = None   # the task running the cells, while it runs


def interrupt_handler(signum, frame):
    """SIGINT/SIGTERM: kill our kernels at once, then unwind with KeyboardInterrupt.

    While cells run, the exception is not raised inside asyncio's event loop (asyncio would
    print the half-finished task's traceback on its way out): the task running the cells
    is cancelled instead, and ``execute`` turns its end into KeyboardInterrupt."""
    global _INTERRUPTED
    _INTERRUPTED = True
    kill_kernels()
    task = _RUNNING
    if task is not None and not task.done():
        task.get_loop().call_soon_threadsafe(task.cancel)
        return
    raise KeyboardInterrupt


def kill_kernels() -> None:
    """Kill every kernel this process started (used on Ctrl-C / SIGTERM)."""
    for pid in list(_KERNEL_PIDS):
        _kill_group(pid)


def _run(run: Run, doc_opts: dict, settings: KernelSettings) -> dict:
    try:
        results = asyncio.run(_run_kernel(run, doc_opts, settings))
        if _INTERRUPTED:   # the interrupt came while the kernel was shutting down
            raise KeyboardInterrupt
    except BaseException:
        if _INTERRUPTED:   # whatever nbclient made of the interrupt, it was one
            raise KeyboardInterrupt from None
        raise
    finally:
        kill_kernels()
    return results


def _execute_plan(run: Run, doc_opts: dict, settings: KernelSettings) -> dict:
    """Run the plan; on a random-state divergence run every later cell too, and when a
    re-run cell does not reproduce its outputs, run the whole document in order."""
    evaluated = [eff.get("eval") is not False for eff in run.effs]
    while True:
        if not run.plan.full:
            run.progress(run.plan.describe(len(run.effs)))
        try:
            return _run(run, doc_opts, settings)
        except partial.Diverged as exc:
            run.progress(f"\n  cell {exc.index + 1} now starts from another random state and "
                         "draws random numbers: running it and every later cell in order")
            forced = {j: f"random state changed before cell {exc.index + 1}"
                      for j in range(exc.index, len(run.effs)) if evaluated[j]}
            forced.update(run.plan.run)
            run.hits[exc.index:] = [None] * (len(run.effs) - exc.index)
            run.plan = partial.make_plan(run.graph, run.hits, evaluated, forced)
        except partial.Mismatch as exc:
            cell = run.doc.cells[exc.index]
            run.progress(f"\n  WARNING cell {exc.index + 1} ({cell.file.name}:{cell.line}) gave "
                         "other outputs when re-run for state than its cached ones: the "
                         "dependency analysis missed something; running every cell in order")
            run.hits = [None] * len(run.effs)
            run.plan = partial.make_plan(run.graph, run.hits, evaluated)


def execute(doc: Document, doc_opts: dict, cache_dir: Path, use_cache: bool,
            progress: Callable[[str], None],
            settings: KernelSettings = KernelSettings()) -> tuple[list[list], dict]:
    """Outputs for each cell (in order), and statistics for the progress report
    (``ran``: the indices of the cells that ran)."""
    cells = doc.cells
    if not cells:
        return [], {"cells": 0, "cached": 0, "ran": []}
    effs = [effective_cell_options(c, doc_opts) for c in cells]
    graph = partial.graph_of(doc, effs)
    keys = cell_keys(doc, doc_opts, source_hash(settings.cache_sources) + settings.quarto_version,
                     graph)
    cache = Cache(cache_dir)
    hits = [cache.get(k) for k in keys] if use_cache else [None] * len(cells)
    evaluated = [eff.get("eval") is not False for eff in effs]
    plan = partial.make_plan(graph, hits, evaluated)
    if not plan.run:
        return ([h["outputs"] if h else [] for h in hits],
                {"cells": len(cells), "cached": len(cells), "ran": []})
    run = Run(doc, effs, plan, hits, graph, cache.rng_dir, progress)
    results = _execute_plan(run, doc_opts, settings)
    for i, entry in results.items():
        hit = run.hits[i]
        # a cell run again keeps its outputs but may leave another random state than the
        # one recorded (a cache of its own answered this time): record what it did now
        if hit is None or (hit.get("rng_in"), hit.get("rng_out")) != (entry["rng_in"],
                                                                       entry["rng_out"]):
            cache.put(keys[i], entry)
    outputs = [results[i]["outputs"] if i in results else
               (run.hits[i]["outputs"] if run.hits[i] else []) for i in range(len(cells))]
    return outputs, {"cells": len(cells), "cached": len(cells) - len(results),
                     "ran": sorted(results)}
