"""The preview server: build the HTML, serve the output folder on 127.0.0.1, rebuild
when a source file changes; the open page polls a version number and reloads itself."""

from __future__ import annotations

import functools
import http.server
import json
import threading
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
  let seen = null;
  setInterval(function () {
    fetch('/__deckbuild/version').then(r => r.json()).then(v => {
      if (seen !== null && v.version !== seen) location.reload();
      seen = v.version;
    }).catch(() => {});
  }, 700);
})();
</script>"""


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


def _handler(state: PreviewState, directory: Path):
    class Handler(http.server.SimpleHTTPRequestHandler):
        def do_GET(self):  # noqa: N802
            if self.path.startswith(VERSION_PATH):
                body = json.dumps({"version": state.version, "error": state.error}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Cache-Control", "no-store")
                self.end_headers()
                self.wfile.write(body)
                return
            super().do_GET()

        def log_message(self, *a):
            pass

    return functools.partial(Handler, directory=str(directory))


def serve(targets: list, port: int, open_browser: bool, use_cache: bool,
          emit: Callable[..., None]) -> int:
    """Build ``targets`` ((document, project) pairs), serve them and rebuild on change."""
    doc, project = targets[0]
    root = project.root if project else doc.parent
    settings = BuildSettings(html_only=True, use_cache=use_cache, extra_js=LIVE_RELOAD_JS)
    state = PreviewState()

    def rebuild():
        try:
            for d, p in targets:
                build_document(d, settings, emit, p)
            state.error = ""
        except DeckError as exc:
            state.error = str(exc)
            emit(f"\nERROR {exc}")
        state.version += 1

    rebuild()
    html, _ = output_paths(doc, project)
    serve_dir = html.parent if project is None else project.output_dir
    server = http.server.ThreadingHTTPServer(("127.0.0.1", port), _handler(state, serve_dir))
    url = f"http://127.0.0.1:{server.server_address[1]}/{html.relative_to(serve_dir).as_posix()}"
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
    return 0


def _watch(root: Path, rebuild: Callable[[], None], emit) -> None:
    seen = watched_files(root)
    while True:
        time.sleep(0.5)
        now = watched_files(root)
        if now != seen:
            changed = sorted(set(now.items()) ^ set(seen.items()))
            emit(f"[deckbuild] changed: {Path(changed[0][0]).relative_to(root)}")
            rebuild()
            seen = watched_files(root)
