"""What the preview watches, and how: the files a build reads (the document and its
includes, ``_quarto.yml`` and ``_metadata.yml``, theme and CSS files, the logo, images, and
the ``cache-sources`` folders), through the operating system's change notifications
(``watchfiles``: inotify on Linux), never by walking the project.

The folders holding those files are watched one level deep, so ``.venv``, ``node_modules``,
``_output`` and ``.cache`` beside them are never looked into; only the ``cache-sources``
folders are watched with everything below them. Saving by rename (editors that write a
temporary file and move it over the original) is seen, since the folder is watched.
"""

from __future__ import annotations

import queue
import threading
from dataclasses import dataclass, field
from pathlib import Path

from . import schema, source
from .errors import DeckError
from .options import CONFIG_FILE, DIR_METADATA_FILE, Project, resolve_options

# Files of these kinds in a watched folder count as sources while the last build failed
# (a new file for an include or an image that was missing is then seen at once).
SOURCE_SUFFIXES = frozenset({".qmd", ".md", ".yml", ".yaml", ".scss", ".css", ".svg", ".png",
                             ".jpg", ".jpeg", ".gif", ".webp"})
READY_MS = 200        # a new watcher reports that it is running within this time
STEP_MS = 30          # changes are handed on once no new one came for this long...
DEBOUNCE_MS = 400     # ...or at the latest after this long


@dataclass(frozen=True)
class Sources:
    files: frozenset[Path] = frozenset()     # read by a build (some may not exist yet)
    trees: frozenset[Path] = frozenset()     # cache-sources: every file below counts

    @property
    def folders(self) -> frozenset[Path]:
        """The folders watched one level deep: those holding the files."""
        return frozenset(f.parent for f in self.files if f.parent.is_dir())

    def is_folder(self, path: Path) -> bool:
        """Whether ``path`` is a folder of the sources (a change to it, such as its removal
        or its creation anew, calls for new watchers)."""
        return path in self.trees or any(path == f.parent for f in self.files)

    def relevant(self, path: Path, loose: bool = False) -> bool:
        """Whether a change to ``path`` can change the deck; ``loose``: also any file of a
        source kind in a watched folder (after a failed build)."""
        if path in self.files:
            return True
        if any(path.is_relative_to(tree) for tree in self.trees):
            return not ({"__pycache__", ".git"} & set(path.parts)) and path.suffix != ".pyc"
        return loose and path.suffix.lower() in SOURCE_SUFFIXES and path.parent in self.folders

    def __or__(self, other: "Sources") -> "Sources":
        return Sources(self.files | other.files, self.trees | other.trees)


def _document_files(path: Path, project: Project | None, root: Path) -> set[Path]:
    """The document, its includes, and the theme, CSS, logo and images its options and
    markdown name; as many as can be found when the sources have an error."""
    files: set[Path] = set()
    try:
        doc = source.parse(path, root)
        for block in doc.blocks:
            lines = block.lines if isinstance(block, source.Markdown) else [block]
            files.update(Path(line.file) for line in lines)
        opts = resolve_options(project, path, doc.front)
        named = [*(opts.get("theme") or []), *(opts.get("css") or []), opts.get("logo")]
        files.update(Path(p) for p in named
                     if p and p not in schema.BUILTIN_THEMES and p != "brand"
                     and not p.startswith(("http:", "https:", "//")))
        files.update(source.check_resources(doc))
    except DeckError:
        pass
    return files


def sources_of(path: Path, project: Project | None) -> Sources:
    """Everything building ``path`` reads from the author's files (see the module docstring)."""
    path = Path(path).resolve()
    root = project.root.resolve() if project else path.parent
    files = {path}
    if project is not None:
        files.add(root / CONFIG_FILE)
        folder = root
        for part in path.parent.relative_to(root).parts:
            folder = folder / part
            files.add(folder / DIR_METADATA_FILE)
    files |= _document_files(path, project, root)
    trees = frozenset(Path(t).resolve() for t in (project.cache_sources if project else ()))
    return Sources(frozenset(f.resolve() for f in files), trees)


@dataclass
class _Group:
    """One watchfiles watcher (a thread) over some folders, recursive or not."""

    thread: threading.Thread
    stop: threading.Event
    ready: threading.Event


@dataclass
class Watcher:
    """Change notifications for a set of sources; ``aim`` points it at new ones."""

    changes: queue.Queue = field(default_factory=queue.Queue)
    groups: dict = field(default_factory=dict)    # (folders, recursive) -> _Group

    def aim(self, sources: Sources, anew: bool = False) -> None:
        """Watch ``sources``: new watchers start (and are running) before old ones stop,
        so no change falls between them. ``anew``: replace every watcher (a watched
        folder was removed or created again, which an old watcher no longer sees)."""
        wanted = {key for key in ((tuple(sorted(sources.folders)), False),
                                  (tuple(sorted(t for t in sources.trees if t.is_dir())), True))
                  if key[0]}
        old = dict(self.groups) if anew else {}
        if anew:
            self.groups.clear()
        started = [self._start(*key) for key in wanted - self.groups.keys()]
        for group in started:
            group.ready.wait(5 * READY_MS / 1000)
        for key in list(self.groups.keys() - wanted):
            self.groups.pop(key).stop.set()
        for group in old.values():
            group.stop.set()

    def _start(self, folders: tuple, recursive: bool) -> _Group:
        stop, ready = threading.Event(), threading.Event()
        thread = threading.Thread(target=self._run, args=(folders, recursive, stop, ready),
                                  name="deckbuild-watch", daemon=True)
        group = self.groups[(folders, recursive)] = _Group(thread, stop, ready)
        thread.start()
        return group

    def _run(self, folders, recursive: bool, stop: threading.Event, ready: threading.Event):
        import watchfiles

        try:
            for batch in watchfiles.watch(*folders, watch_filter=None, recursive=recursive,
                                          stop_event=stop, yield_on_timeout=True,
                                          rust_timeout=READY_MS, step=STEP_MS,
                                          debounce=DEBOUNCE_MS, raise_interrupt=False):
                ready.set()
                if batch:
                    self.changes.put({Path(p) for _, p in batch})
        except Exception:  # noqa: BLE001 - a folder gone meanwhile...: the next aim starts anew
            group = self.groups.get((folders, recursive))
            if group is not None and group.stop is stop:
                del self.groups[(folders, recursive)]
            self.changes.put(set())             # wakes the loop, which aims again
        finally:
            ready.set()

    def wait(self, timeout: float | None = None) -> set[Path]:
        """The paths changed since the last call (waits for the first one)."""
        try:
            paths = set(self.changes.get(timeout=timeout))
        except queue.Empty:
            return set()
        while True:
            try:
                paths |= self.changes.get_nowait()
            except queue.Empty:
                return paths

    def close(self) -> None:
        for group in self.groups.values():
            group.stop.set()
        for group in self.groups.values():
            group.thread.join(timeout=2)
        self.groups.clear()
