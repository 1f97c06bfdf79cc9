"""One Jupyter kernel: started with Quarto's environment and set-up cell, running cells
one at a time, always shut down (and killed with its process group on Ctrl-C).

Quarto starts the kernel in the document's folder with the inline matplotlib backend
forced (src/execute/jupyter/jupyter-kernel.ts) and runs its Python setup cell first
(src/resources/jupyter/lang/python/setup.py); :func:`setup_code` writes the part of that
cell that changes what cells produce, for the Quarto version the project names.
"""

from __future__ import annotations

import asyncio
import logging
import math
import os
import shutil
import signal
import tempfile
from dataclasses import dataclass
from pathlib import Path

_QUIET_LOG = logging.getLogger("deckbuild.nbclient")
_QUIET_LOG.addHandler(logging.NullHandler())
_QUIET_LOG.propagate = False


@dataclass(frozen=True)
class KernelSettings:
    """Where cells find their imports, and what else invalidates the cache."""

    python_path: tuple[Path, ...] = ()     # prepended to the kernel's PYTHONPATH
    cache_sources: tuple[Path, ...] = ()   # folders whose files are part of the key
    cache_env: tuple[str, ...] = ()        # environment variables whose values are part of the key
    quarto_version: str = "current"        # whose setup cell the kernel runs first
    cell_timeout: float | None = None      # seconds a cell may run (None: no limit)
    jobs: int | None = None                # kernels at once (None: one per core)
    run_alone: tuple[Path, ...] = ()       # chapters run with no other kernel busy


def _version(text: str) -> tuple[int, ...]:
    return (10**6,) if text == "current" else tuple(int(x) for x in text.split("."))


def setup_code(doc_opts: dict, quarto_version: str = "current") -> str:
    """The matplotlib part of Quarto's Python setup cell, as the given Quarto version runs
    it: pyplot's figure size and dpi from the document's options, then the inline backend's
    formats with ``set_matplotlib_formats``. Until 1.7.32 that function is imported from
    ``IPython.display`` only; IPython 9 removed it, the ImportError is swallowed, and a bare
    ``Figure`` then displays as text. From 1.7.33 it comes from
    ``matplotlib_inline.backend_inline`` first. Before 1.5.33 ``savefig.dpi`` is the
    document's dpi, later ``"figure"``. The cell ends with ``%reset``, as Quarto's does, so
    cells cannot rely on its names."""
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


def kernel_env(settings: KernelSettings) -> dict:
    """The kernel's environment: the project's python-path first on PYTHONPATH, and the
    inline matplotlib backend forced as Quarto forces it."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(
        filter(None, [*map(str, settings.python_path), env.get("PYTHONPATH")]))
    env["MPLBACKEND"] = "module://matplotlib_inline.backend_inline"
    env.setdefault("PYDEVD_DISABLE_FILE_VALIDATION", "1")
    return env


class CellTimeout(Exception):
    """A cell ran past the time limit; the kernel has been stopped."""


class Kernel:
    """A kernel in ``cwd``; ``async with Kernel(...) as k`` starts it and always shuts it down."""

    def __init__(self, settings: KernelSettings, cwd: Path):
        self.settings, self.cwd = settings, cwd
        self.pid: int | None = None
        self._sock_dir = Path(tempfile.mkdtemp(prefix="deckbuild-kernel-"))

    async def __aenter__(self) -> "Kernel":
        import nbformat
        from jupyter_client.manager import AsyncKernelManager
        from nbclient import NotebookClient

        self.km = AsyncKernelManager(kernel_name="python3", transport="ipc")
        self.km.ip = str(self._sock_dir / "kernel")   # ipc sockets are files: an absolute home
        nb = nbformat.v4.new_notebook()
        nb.cells = [nbformat.v4.new_code_cell("")]    # nbclient writes each executed cell here
        limit = self.settings.cell_timeout
        self.client = NotebookClient(nb, km=self.km, allow_errors=True,
                                     timeout=math.ceil(limit) if limit else None,
                                     resources={"metadata": {"path": str(self.cwd)}},
                                     log=_QUIET_LOG)
        try:
            # No IPython history: the builds' kernels would share one SQLite file, and two
            # renders at once made a kernel print "The history saving thread hit an unexpected
            # error (OperationalError: database is locked)" into a slide's output.
            await self.km.start_kernel(cwd=str(self.cwd), env=kernel_env(self.settings),
                                       extra_arguments=["--HistoryManager.enabled=False"])
            self.pid = getattr(self.km.provisioner, "pid", None)
            _KERNEL_PIDS.add(self.pid)
            await self.client.async_start_new_kernel_client()
        except BaseException:
            await self.__aexit__(None, None, None)
            raise
        return self

    async def run(self, code: str) -> list[dict]:
        """Run ``code`` as one cell: its outputs as plain JSON-able dicts."""
        import json

        import nbformat
        from nbclient.exceptions import CellTimeoutError

        cell = nbformat.v4.new_code_cell(code)
        try:
            await self.client.async_execute_cell(cell, 0)
        except CellTimeoutError:
            raise CellTimeout from None
        return json.loads(json.dumps([dict(o) for o in cell.outputs], default=str))

    async def __aexit__(self, *exc) -> None:
        try:
            if getattr(self, "client", None) is not None and self.client.kc is not None:
                self.client.kc.stop_channels()
            if self.km.has_kernel:
                await asyncio.wait_for(self.km.shutdown_kernel(now=True), 5)
        except BaseException:  # noqa: BLE001 - shutting down must not mask the real error
            pass
        finally:
            _kill_group(self.pid)
            _KERNEL_PIDS.discard(self.pid)
            shutil.rmtree(self._sock_dir, ignore_errors=True)


def _kill_group(pid: int | None) -> None:
    if not pid:
        return
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


_KERNEL_PIDS: set = set()
_INTERRUPTED = False
_RUNNING: asyncio.Task | None = None   # the task running the kernels, while it runs


def run_kernels(main) -> object:
    """``asyncio.run(main)`` where Ctrl-C (see :func:`interrupt_handler`) kills every kernel
    and ends in KeyboardInterrupt, whatever nbclient made of it."""
    async def guarded():
        global _RUNNING
        _RUNNING = asyncio.current_task()
        try:
            return await main
        finally:
            _RUNNING = None

    try:
        result = asyncio.run(guarded())
        if _INTERRUPTED:   # the interrupt came while the kernels were shutting down
            raise KeyboardInterrupt
        return result
    except BaseException:
        if _INTERRUPTED:
            raise KeyboardInterrupt from None
        raise
    finally:
        kill_kernels()


def interrupt_handler(signum, frame):
    """SIGINT/SIGTERM: kill our kernels at once, then unwind with KeyboardInterrupt.

    While cells run, the exception is not raised inside asyncio's event loop (asyncio would
    print the half-finished tasks' tracebacks on its way out): the task running the kernels
    is cancelled instead, and :func:`run_kernels` turns its end into KeyboardInterrupt."""
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
