"""The preview server: build the HTML, serve the output folder on 127.0.0.1, rebuild
when a source file changes; the open page polls a version number and reloads itself."""

from __future__ import annotations

import errno
import functools
import html
import http.server
import json
import sys
import threading
import traceback
import urllib.parse
import time
import webbrowser
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from .build import BuildSettings, build_document, output_paths
from .errors import DeckError

WATCHED = ("**/*.qmd", "**/*.yml", "**/*.scss", "**/*.py", "**/*.svg", "**/*.png", "**/*.jpg",
           "**/*.md")
SKIPPED = ("node_modules", ".venv", ".git", ".cache")
VERSION_PATH = "/__deckbuild/version"

LIVE_RELOAD_JS = """<script>
(function () {
  if (!location.protocol.startsWith("http")) return;   // only when served by preview
  let seen = null, box = null;
  function show(error) {                  // the last build's error, over the last good deck
    if (!error) { if (box) box.remove(); box = null; return; }
    if (!box) {
      box = document.createElement("pre");
      box.id = "deckbuild-error";
      box.style.cssText = "position:fixed;inset:1em;z-index:10000;margin:0;padding:1em;" +
        "overflow:auto;background:#fff8f8;color:#700;border:3px solid #c00;font:14px monospace;" +
        "white-space:pre-wrap";
      document.body.appendChild(box);
    }
    box.textContent = "deckbuild preview: the last build failed (the deck below is the " +
      "last good one); fix the source and save to rebuild.\n\n" + error;
  }
  setInterval(function () {
    fetch('/__deckbuild/version').then(r => r.json()).then(v => {
      if (seen !== null && v.version !== seen) location.reload();
      seen = v.version;
      show(v.error);
    }).catch(() => {});
  }, 700);
})();
</script>"""

ERROR_PAGE = """<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>deckbuild preview: build failed</title></head>
<body><pre id="deckbuild-error">deckbuild preview: the build failed and there is no deck to show
yet; fix the source and save to rebuild.

{error}</pre>
{script}</body></html>"""


@dataclass
class PreviewState:
    version: int = 0
    error: str = ""


def watched_files(root: Path) -> dict[str, float]:
    """Modification times of every source file under ``root`` (outputs and tools skipped)."""
    out = {}
    for pattern in WATCHED:
        for f in root.glob(pattern):
            parts = f.relative_to(root).parts
            if parts[0] in SKIPPED or parts[0].startswith("_output") or "__pycache__" in parts:
                continue
            try:
                out[str(f)] = f.stat().st_mtime
            except OSError:
                pass
    return out


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


def _handler(state: PreviewState, directory: Path, bound: str):
    class Handler(http.server.SimpleHTTPRequestHandler):
        def _refused(self) -> bool:
            """Answer a request that must not be served (bad Host, NUL in the path)."""
            if not allowed_host(self.headers.get("Host"), bound):
                self.send_error(403, "Host not allowed: open the deck at 127.0.0.1 or localhost")
                return True
            if "\0" in urllib.parse.unquote(self.path):
                self.send_error(400, "NUL byte in the path")
                return True
            return False

        def do_GET(self):  # noqa: N802
            if self._refused():
                return
            if self.path.startswith(VERSION_PATH):
                body = json.dumps({"version": state.version, "error": state.error}).encode()
                self._send(200, "application/json", body)
                return
            if state.error and self.path.split("?")[0].endswith((".html", "/")) \
                    and not Path(self.translate_path(self.path)).is_file():
                page = ERROR_PAGE.format(error=html.escape(state.error), script=LIVE_RELOAD_JS)
                self._send(500, "text/html; charset=utf-8", page.encode())
                return
            super().do_GET()

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

    return functools.partial(Handler, directory=str(directory))


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
        return PreviewServer((host, port), _handler(state, serve_dir, host), emit)
    except OSError as exc:
        hint = ("another preview may be running; " if exc.errno == errno.EADDRINUSE else "")
        raise DeckError(f"cannot serve the preview on {host}:{port}: {exc.strerror} "
                        f"({hint}choose another port with --port)") from None


def _rebuilder(targets: list, settings: BuildSettings, state: PreviewState, emit):
    def rebuild():
        """Build every target; any error is shown (console and page), never fatal."""
        try:
            for d, p in targets:
                build_document(d, settings, emit, p)
            state.error = ""
        except DeckError as exc:
            state.error = str(exc)
            emit(f"\nERROR {exc}")
        except Exception as exc:  # noqa: BLE001 - the preview outlives a deckbuild bug
            state.error = f"{type(exc).__name__}: {exc}"
            emit(f"\nERROR (unexpected, a deckbuild bug) {traceback.format_exc()}")
        state.version += 1
    return rebuild


def serve(targets: list, port: int, open_browser: bool, use_cache: bool,
          emit: Callable[..., None], cell_timeout: float | bool | None = None) -> int:
    """Build ``targets`` ((document, project) pairs), serve them and rebuild on change."""
    doc, project = targets[0]
    root = project.root if project else doc.parent
    settings = BuildSettings(html_only=True, use_cache=use_cache, extra_js=LIVE_RELOAD_JS,
                             cell_timeout=cell_timeout)
    state = PreviewState()
    out_html, _ = output_paths(doc, project)
    serve_dir = out_html.parent if project is None else project.output_dir
    server = _listen(port, state, serve_dir, emit)
    rebuild = _rebuilder(targets, settings, state, emit)
    rebuild()
    url = f"http://127.0.0.1:{server.server_address[1]}/{out_html.relative_to(serve_dir).as_posix()}"
    emit(f"[deckbuild] preview at {url}  (watching {root}; Ctrl-C to stop)")
    threading.Thread(target=server.serve_forever, daemon=True).start()
    if open_browser:
        try:
            webbrowser.open(url)
        except Exception:  # noqa: BLE001 - no browser is not an error for a server
            pass
    try:
        _watch(root, rebuild, emit)
    finally:
        server.shutdown()
        server.server_close()
    return 0


def _watch(root: Path, rebuild: Callable[[], None], emit) -> None:
    seen = watched_files(root)
    while True:
        time.sleep(0.5)
        now = watched_files(root)
        if now != seen:
            changed = sorted(set(now.items()) ^ set(seen.items()))
            emit(f"[deckbuild] changed: {Path(changed[0][0]).relative_to(root)}")
            # the snapshot is taken before the build: a file saved while it runs is seen
            # as a change afterwards and builds again, instead of being missed
            seen = now
            rebuild()
