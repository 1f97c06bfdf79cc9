"""The preview server: build the HTML, serve the output folder on 127.0.0.1, rebuild when
a source file changes (the operating system's notifications, see ``watch.py``).

The pages it serves carry a script (``resources/preview.js``, added as they are served,
never written into the deck) that waits for the next build: a build that changed the deck
reloads the page on the same slide; a failed one shows its error (message, file and line)
over the last good deck until a build succeeds.
"""

from __future__ import annotations

import errno
import functools
import html
import http.server
import json
import os
import sys
import threading
import traceback
import urllib.parse
import webbrowser
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from .build import BuildSettings, build_document, output_paths
from .errors import DeckError
from .options import load_project
from .resources import read_resource
from .watch import Sources, Watcher, sources_of

VERSION_PATH = "/__deckbuild/version"
LONG_POLL_S = 25.0        # a page's request for the next state is answered within this
IDLE_TIMEOUT_ENV = "DECKBUILD_PREVIEW_IDLE_TIMEOUT"
IDLE_TIMEOUT_S = 30.0     # a connection that sends nothing for this long is closed

ERROR_PAGE = """<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>deckbuild preview: build failed</title></head>
<body><pre id="deckbuild-error">deckbuild preview: the build failed and there is no deck to show
yet; fix the source and save to rebuild.

{error}</pre>
</body></html>"""


@dataclass
class PreviewState:
    """What the open pages follow. ``version`` counts the builds that changed a deck (a
    page reloads when it moves); ``generation`` counts every finished build."""

    version: int = 0
    generation: int = 0
    error: str = ""
    where: str = ""                 # file:line of the error, relative to the project
    changed: threading.Condition = field(default_factory=threading.Condition)

    def publish(self, wrote: bool, error: str = "", where: str = "") -> None:
        with self.changed:
            self.version += wrote
            self.generation += 1
            self.error, self.where = error, where
            self.changed.notify_all()

    def snapshot(self, after: int | None = None, timeout: float = LONG_POLL_S) -> dict:
        """The state now, or (``after``: a generation) once a later build has finished."""
        with self.changed:
            if after is not None:
                self.changed.wait_for(lambda: self.generation != after, timeout)
            return {"version": self.version, "generation": self.generation,
                    "error": self.error, "where": self.where}


def page_script(state: dict) -> bytes:
    """The script added to a served page: the state it was served at, then preview.js."""
    data = json.dumps(state).replace("</", "<\\/")
    return (f"<script>window.deckbuildPreview = {data};</script>\n"
            f"<script>\n{read_resource('preview.js')}</script>\n").encode()


def with_script(page: bytes, state: dict) -> bytes:
    """``page`` with the preview script before its last ``</body>`` (at the end if none)."""
    at = page.rfind(b"</body>")
    at = len(page) if at < 0 else at
    return page[:at] + page_script(state) + page[at:]


def allowed_host(header: str | None, bound: str) -> bool:
    """Only requests addressed to this machine by a loopback name or the bound address:
    a page on another site whose name was rebound to 127.0.0.1 (DNS rebinding) sends its
    own name in ``Host`` and is refused, so it cannot read the deck or the error text."""
    if not header:
        return False
    host = header.strip().lower()
    if host.startswith("["):                       # [::1]:4848
        host = host[1:host.find("]")] if "]" in host else host
    elif host.count(":") == 1:                     # name:port
        host = host.split(":")[0]
    return host in {"localhost", "127.0.0.1", "::1", bound.lower()}


def idle_timeout() -> float:
    """Seconds a connection may wait for its request: ``$DECKBUILD_PREVIEW_IDLE_TIMEOUT``
    when set (a positive number), else 30. Without one, every idle connection held a
    thread for ever."""
    value = os.environ.get(IDLE_TIMEOUT_ENV, "").strip()
    if not value:
        return IDLE_TIMEOUT_S
    try:
        seconds = float(value)
    except ValueError:
        seconds = 0.0
    if not seconds > 0 or seconds == float("inf"):
        raise DeckError(f"{IDLE_TIMEOUT_ENV} must be a positive number of seconds; got {value!r}")
    return seconds


def inside(path: str, folder: str) -> bool:
    """Whether ``path``, every symlink followed, is ``folder`` or lies under it."""
    try:
        real, root = os.path.realpath(path), os.path.realpath(folder)
    except (OSError, ValueError):
        return False
    return real == root or real.startswith(root.rstrip(os.sep) + os.sep)


def _after(query: str) -> int | None:
    values = urllib.parse.parse_qs(query).get("after")
    try:
        return int(values[0]) if values else None
    except ValueError:
        return None


class Handler(http.server.SimpleHTTPRequestHandler):
    """The output folder's files; pages with the preview script; the state for pages."""

    def __init__(self, *args, state: PreviewState, bound: str, timeout: float = IDLE_TIMEOUT_S,
                 **kwargs):
        # the socket timeout (set by StreamRequestHandler.setup): a connection that sends
        # no request within it is closed, and its thread ends
        self.state, self.bound, self.timeout = state, bound, timeout
        super().__init__(*args, **kwargs)

    def _refused(self) -> bool:
        """Answer a request that must not be served (bad Host, NUL in the path, a path
        that leads out of the served folder through a symlink)."""
        if not allowed_host(self.headers.get("Host"), self.bound):
            self.send_error(403, "Host not allowed: open the deck at 127.0.0.1 or localhost")
            return True
        if "\0" in urllib.parse.unquote(self.path):
            self.send_error(400, "NUL byte in the path")
            return True
        if not inside(self.translate_path(self.path), self.directory):
            self.send_error(404, "File not found")
            return True
        return False

    def do_GET(self):  # noqa: N802
        if self._refused():
            return
        path, _, query = self.path.partition("?")
        if path == VERSION_PATH:
            body = json.dumps(self.state.snapshot(_after(query))).encode()
            self._send(200, "application/json", body)
        elif path.endswith((".html", "/")):
            self._page(path)
        elif path == "/favicon.ico" and not Path(self.translate_path(path)).is_file():
            self._send(204, "image/x-icon", b"")     # no 404 in the page's console
        else:
            super().do_GET()

    def _page(self, path: str) -> None:
        """A page with the preview script; the state is read before the file, so a page
        is never older than the version it says it is."""
        now = self.state.snapshot()
        file = Path(self.translate_path(path))
        file = file / "index.html" if file.is_dir() else file
        if file.is_file():
            self._send(200, "text/html; charset=utf-8", with_script(file.read_bytes(), now))
        elif now["error"]:
            page = ERROR_PAGE.format(error=html.escape(now["error"])).encode()
            self._send(500, "text/html; charset=utf-8", with_script(page, now))
        else:
            super().do_GET()        # a folder's listing, or 404

    def do_HEAD(self):  # noqa: N802
        if not self._refused():
            super().do_HEAD()

    def _send(self, status: int, content_type: str, body: bytes) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Cache-Control", "no-store")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *a):
        pass


class PreviewServer(http.server.ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, address, handler, emit):
        self.emit = emit
        super().__init__(address, handler)

    def handle_error(self, request, client_address):
        """One line for a request that failed (a browser closing the connection early...),
        never a traceback on the console the author watches for build errors."""
        exc = sys.exc_info()[1]
        self.emit(f"[deckbuild] request from {client_address[0]} failed: "
                  f"{type(exc).__name__}: {exc}")


def _listen(port: int, state: PreviewState, serve_dir: Path, emit) -> PreviewServer:
    """Bind the port first, so a port in use is reported before anything is built."""
    host = "127.0.0.1"
    try:
        handler = functools.partial(Handler, state=state, bound=host, directory=str(serve_dir),
                                    timeout=idle_timeout())
        return PreviewServer((host, port), handler, emit)
    except OSError as exc:
        hint = ("another preview may be running; " if exc.errno == errno.EADDRINUSE else "")
        raise DeckError(f"cannot serve the preview on {host}:{port}: {exc.strerror} "
                        f"({hint}choose another port with --port)") from None


def _where(exc: DeckError, root: Path) -> str:
    """``file:line`` of an error, the file relative to the project when inside it."""
    if exc.file is None:
        return ""
    file = Path(exc.file)
    shown = file.relative_to(root) if file.is_absolute() and file.is_relative_to(root) else file
    return f"{shown}:{exc.line}" if exc.line else str(shown)


def _fresh(targets: list) -> list:
    """The targets with their project read again (an edit to _quarto.yml counts)."""
    return [(doc, load_project(project.root) if project else None) for doc, project in targets]


def _rebuilder(targets: list, settings: BuildSettings, state: PreviewState, root: Path, emit):
    def rebuild() -> bool:
        """Build every target; any error is shown (console and page), never fatal.
        Returns whether the build succeeded."""
        wrote = False
        try:
            for d, p in _fresh(targets):
                wrote |= not build_document(d, settings, emit, p).up_to_date
        except DeckError as exc:
            emit(f"\nERROR {exc}")
            state.publish(wrote, str(exc), _where(exc, root))
            return False
        except Exception as exc:  # noqa: BLE001 - the preview outlives a deckbuild bug
            emit(f"\nERROR (unexpected, a deckbuild bug) {traceback.format_exc()}")
            state.publish(wrote, f"{type(exc).__name__}: {exc}")
            return False
        state.publish(wrote)
        return True
    return rebuild


def _sources(targets: list) -> Callable[[], Sources]:
    def current() -> Sources:
        try:
            fresh = _fresh(targets)
        except DeckError:
            fresh = targets                 # a broken _quarto.yml: watch what we knew
        return functools.reduce(Sources.__or__, (sources_of(d, p) for d, p in fresh), Sources())
    return current


def serve(targets: list, port: int, open_browser: bool, use_cache: bool,
          emit: Callable[..., None], cell_timeout: float | bool | None = None) -> int:
    """Build ``targets`` ((document, project) pairs), serve them and rebuild on change."""
    doc, project = targets[0]
    root = project.root if project else doc.parent
    settings = BuildSettings(html_only=True, use_cache=use_cache, cell_timeout=cell_timeout)
    state = PreviewState()
    out_html, _ = output_paths(doc, project)
    serve_dir = out_html.parent if project is None else project.output_dir
    server = _listen(port, state, serve_dir, emit)
    rebuild = _rebuilder(targets, settings, state, root, emit)
    watcher = Watcher()
    sources = _sources(targets)
    watcher.aim(sources())          # before the first build: a save during it is seen
    ok = rebuild()
    url = f"http://127.0.0.1:{server.server_address[1]}/{out_html.relative_to(serve_dir).as_posix()}"
    emit(f"[deckbuild] preview at {url}  (watching the files the build reads under {root}; "
         "Ctrl-C to stop)")
    threading.Thread(target=server.serve_forever, daemon=True).start()
    if open_browser:
        try:
            webbrowser.open(url)
        except Exception:  # noqa: BLE001 - no browser is not an error for a server
            pass
    try:
        watch(watcher, sources, rebuild, emit, root, ok)
    finally:
        watcher.close()
        server.shutdown()
        server.server_close()
    return 0


def watch(watcher: Watcher, sources: Callable[[], Sources], rebuild: Callable[[], bool],
          emit, root: Path, ok: bool = True) -> None:
    """Rebuild on every change to the sources, for ever. A file saved while a build runs
    is reported afterwards and builds again; the sources are found again after each build
    (a new include is watched from then on)."""
    current = sources()
    watcher.aim(current)
    while True:
        paths = watcher.wait(timeout=1.0)
        moved = sorted(p for p in paths if current.is_folder(p))
        # a folder removed or made again needs new watchers (the rebuild below reads the
        # files in it); a watcher that failed is started again
        watcher.aim(current, anew=bool(moved))
        changed = sorted(p for p in paths if current.relevant(p, loose=not ok)) or moved
        if not changed:
            continue
        first = changed[0].relative_to(root) if changed[0].is_relative_to(root) else changed[0]
        more = f" and {len(changed) - 1} more" if len(changed) > 1 else ""
        emit(f"[deckbuild] changed: {first}{more}")
        ok = rebuild()
        # after a failed build, also the files found before (a missing include's folder)
        current = sources() if ok else sources() | current
        watcher.aim(current)
