"""Paths and helpers for the deck renderer's tests (imported by test files and by
conftest.py; a module of its own because tests/ has a second conftest.py)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
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
