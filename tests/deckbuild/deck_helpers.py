"""Paths and helpers for the deck renderer's tests (imported by test files and by
conftest.py; a module of its own because tests/ has a second conftest.py)."""

from __future__ import annotations

import http.client
import json
import os
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).parent
DECKS = HERE / "decks"
REPO = HERE.parents[1]


def copy_deck(name: str, dest: Path) -> Path:
    target = dest / name
    shutil.copytree(DECKS / name, target, ignore=shutil.ignore_patterns("_output", ".cache"))
    return target


def run_cli(*args: str, cwd: Path | None = None, timeout: int = 120) -> subprocess.CompletedProcess:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO / "code"), env.get("PYTHONPATH")]))
    return subprocess.run([sys.executable, "-m", "deckbuild", *args], cwd=cwd or REPO,
                          capture_output=True, text=True, timeout=timeout, env=env)


VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source",
        "track", "wbr"}


class Node:
    """An element of a parsed HTML page: tag, attributes, children (Nodes and strings)."""

    def __init__(self, tag: str, attrs: dict, parent: "Node | None" = None):
        self.tag, self.attrs, self.parent, self.children = tag, attrs, parent, []

    @property
    def classes(self) -> list[str]:
        return (self.attrs.get("class") or "").split()

    def text(self) -> str:
        return "".join(c if isinstance(c, str) else c.text() for c in self.children)

    def elements(self) -> list["Node"]:
        return [c for c in self.children if isinstance(c, Node)]

    def find_all(self, tag: str | None = None, cls: str | None = None, **attrs) -> list["Node"]:
        """Descendants with this tag, class and attribute values, in document order."""
        out = []
        for child in self.elements():
            if ((tag is None or child.tag == tag) and (cls is None or cls in child.classes)
                    and all(child.attrs.get(k.replace("_", "-")) == v for k, v in attrs.items())):
                out.append(child)
            out += child.find_all(tag, cls, **attrs)
        return out

    def find(self, tag: str | None = None, cls: str | None = None, **attrs) -> "Node":
        found = self.find_all(tag, cls, **attrs)
        assert found, f"no <{tag or '*'} class={cls} {attrs}> in {self.tag}"
        return found[0]


def parse_html(text: str) -> Node:
    """A small HTML tree (enough for checking the structure of what pandoc writes)."""
    from html.parser import HTMLParser

    root = Node("#document", {})

    class Builder(HTMLParser):
        current = root

        def handle_starttag(self, tag, attrs):
            node = Node(tag, dict(attrs), self.current)
            self.current.children.append(node)
            if tag not in VOID:
                self.current = node

        def handle_endtag(self, tag):
            node = self.current
            while node is not root and node.tag != tag:
                node = node.parent
            if node is not root:
                self.current = node.parent

        def handle_data(self, data):
            self.current.children.append(data)

    Builder(convert_charrefs=True).feed(text)
    return root


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Preview:
    """A `deckbuild preview` process; its console goes to a file the test can read."""

    def __init__(self, target: Path, log: Path, port: int | None = None):
        self.port = port or free_port()
        self.log = log
        env = dict(os.environ, PYTHONPATH=str(REPO / "code"))
        with open(log, "w") as out:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "deckbuild", "preview", str(target), "--no-browser",
                 "--port", str(self.port)], stdout=out, stderr=subprocess.STDOUT, env=env)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def console(self) -> str:
        return self.log.read_text()

    def get(self, path: str, host: str | None = None) -> tuple[int, bytes]:
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=10)
        try:
            conn.putrequest("GET", path, skip_host=True)
            conn.putheader("Host", f"127.0.0.1:{self.port}" if host is None else host)
            conn.endheaders()
            response = conn.getresponse()
            return response.status, response.read()
        finally:
            conn.close()

    def state(self) -> dict:
        return json.loads(self.get("/__deckbuild/version")[1])

    def wait(self, ready, what: str, timeout: float = 90):
        deadline = time.time() + timeout
        while time.time() < deadline:
            assert self.proc.poll() is None, f"preview exited:\n{self.console()}"
            try:
                value = ready()
                if value:
                    return value
            except OSError:
                pass
            time.sleep(0.3)
        raise AssertionError(f"timed out waiting for {what}:\n{self.console()}")

    def stop(self):
        self.proc.terminate()
        self.proc.wait(timeout=30)


def open_deck(ctx, html: Path, size: tuple[int, int] | None = None,
              errors: list[str] | None = None):
    """A new page of the browser context ``ctx`` showing the built deck ``html`` once
    reveal.js is ready; ``size``: the viewport (default: the context's); ``errors``: a
    list the page's script errors are appended to."""
    page = ctx.new_page()
    if size is not None:
        page.set_viewport_size({"width": size[0], "height": size[1]})
    if errors is not None:
        page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(Path(html).resolve().as_uri(), wait_until="load")
    page.wait_for_function("() => window.Reveal && Reveal.isReady()", timeout=20000)
    return page

