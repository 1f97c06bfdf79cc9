"""The corpus side of the fidelity harness: where the decks are, what each one's meta.json
says, and building a deck's source with our renderer in a temporary copy (the corpus is
never written to)."""

from __future__ import annotations

import base64
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import time
import urllib.parse
from dataclasses import dataclass
from pathlib import Path

import fidelity_corpus_extra as fce

REPO = Path(__file__).resolve().parents[1]
CORPUS_ENV = "DECKBUILD_QUARTO_CORPUS"
# read by the renderer as the default of `deckbuild: quarto-version` (code/deckbuild/schema.py)
VERSION_ENV = "DECKBUILD_QUARTO_VERSION"
BUILD_TIMEOUT_S = 600
ERROR_CHARS = 1500  # how much of the renderer's error message a report keeps (head and tail)


# The shared corpus beside the checkout (read-only) and the extra corpus, kept out of the
# repository (benchmarks/fidelity_corpus_extra.py: its manifest, and how to restore it)
SHARED_CORPUS = REPO.parent / "shared" / "quarto-corpus"


def default_corpus(extra: Path | None = None, notify=None) -> list[Path]:
    """$DECKBUILD_QUARTO_CORPUS (folders joined by the path separator), else the shared
    corpus beside the repository and the extra corpus (``extra``, else
    $DECKBUILD_QUARTO_CORPUS_EXTRA, else ../quarto-corpus-extra), which is skipped, with a
    message to ``notify``, where it is absent."""
    env = os.environ.get(CORPUS_ENV)
    if env:
        return [Path(p) for p in env.split(os.pathsep) if p]
    extra = extra or fce.default_folder()
    if (extra / "README.md").is_file() or any(extra.glob("*/meta.json")):
        return [SHARED_CORPUS, extra]
    if notify:
        notify(f"[fidelity] extra corpus not found at {extra}: measuring the shared corpus only "
               f"(rebuild it with `python benchmarks/fidelity_corpus_extra.py restore`, or "
               f"name it with --extra or ${fce.EXTRA_ENV})")
    return [SHARED_CORPUS]


@dataclass
class Deck:
    name: str
    folder: Path
    meta: dict

    @property
    def held_out(self) -> bool:
        """Chosen before any tuning on it (meta.json's held_out)."""
        return bool(self.meta.get("held_out"))

    @property
    def quarto_version(self) -> str:
        return self.meta.get("quarto_version", "unknown")

    def rendered_as(self, as_newest: bool = False) -> str | None:
        """The Quarto release our renderer draws the deck as: the one that rendered its
        reference (None: the newest rules, with ``as_newest`` or an unknown version)."""
        version = self.quarto_version
        if as_newest or not re.fullmatch(r"\d+\.\d+(\.\d+)?", version):
            return None
        return version

    @property
    def qmd(self) -> str:
        """The deck's .qmd, relative to its source/ folder."""
        return _relative(self.meta, "corpus_source_qmd", "source/")

    @property
    def quarto_html(self) -> Path:
        return self.folder / "quarto" / _relative(self.meta, "corpus_html", "quarto/")


def _relative(meta: dict, field: str, prefix: str) -> str:
    value = meta.get(field)
    if not isinstance(value, str) or not value:
        raise ValueError(f"meta.json: {field} must be a path string, got {value!r}")
    return value[len(prefix):] if value.startswith(prefix) else value


def load_decks(corpus: Path | list[Path], names: list[str] | None = None) -> list[Deck]:
    """The decks of one or more corpus folders (folders with a meta.json), all or those
    named, in corpus order, each corpus sorted by name."""
    corpora = [corpus] if isinstance(corpus, Path) else list(corpus)
    found: dict[str, Path] = {}
    for folder in corpora:
        if not folder.is_dir():
            raise FileNotFoundError(f"corpus folder not found: {folder} (pass --corpus or set "
                                    f"{CORPUS_ENV})")
        for p in sorted(folder.glob("*/meta.json")):
            if p.parent.name in found:
                raise ValueError(f"deck {p.parent.name} is in two corpora: "
                                 f"{found[p.parent.name]} and {p.parent}")
            found[p.parent.name] = p.parent
    unknown = [n for n in names or [] if n not in found]
    if unknown:
        raise ValueError(f"--deck: no deck named {', '.join(unknown)} in "
                         f"{', '.join(map(str, corpora))}; expected one of {', '.join(found)}")
    return [Deck(n, found[n], json.loads((found[n] / "meta.json").read_text()))
            for n in (names or list(found))]


@dataclass
class Build:
    ok: bool
    html: Path | None
    error: str
    seconds: float


def _error_message(stderr: str, returncode: int, src: Path) -> str:
    """The renderer's error: from its first ERROR line on, else the tail of its stderr;
    paths in the temporary copy written as source/...; a long one keeps its head and tail."""
    lines = stderr.replace(f"{src}{os.sep}", "source/").strip().splitlines()
    first = next((n for n, line in enumerate(lines) if line.startswith("ERROR")), None)
    text = "\n".join(lines[first:] if first is not None else lines[-12:])
    text = text or f"the renderer exited with status {returncode} and printed nothing"
    half = ERROR_CHARS // 2
    return text if len(text) <= ERROR_CHARS else f"{text[:half]} [...] {text[-half:]}"


def build(deck: Deck, workdir: Path, timeout: int = BUILD_TIMEOUT_S,
          as_version: str | None = None) -> Build:
    """Copy the deck's source/ into ``workdir`` and render its qmd with our renderer
    (``python -m deckbuild render <qmd> --html-only``, this repository's code first), as
    Quarto ``as_version`` ($DECKBUILD_QUARTO_VERSION; None: the newest rules). The deck's
    files are not edited: its own ``deckbuild: quarto-version``, if any, wins."""
    src = workdir / "source"
    shutil.copytree(deck.folder / "source", src, symlinks=False)
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO / "code"), env.get("PYTHONPATH")]))
    env.setdefault("DECKBUILD_NODE_MODULES", str(REPO / "node_modules"))
    env.pop(VERSION_ENV, None)
    if as_version:
        env[VERSION_ENV] = as_version
    t = time.perf_counter()
    try:
        proc = subprocess.run([sys.executable, "-m", "deckbuild", "render", str(src / deck.qmd),
                               "--html-only"], cwd=src, capture_output=True, text=True,
                              timeout=timeout, env=env)
    except subprocess.TimeoutExpired:
        return Build(False, None, f"the renderer ran past {timeout} s", time.perf_counter() - t)
    seconds = time.perf_counter() - t
    html = [Path(line) for line in proc.stdout.splitlines() if line.endswith(".html")]
    if proc.returncode != 0 or not html or not html[-1].exists():
        return Build(False, None, _error_message(proc.stderr, proc.returncode, src), seconds)
    return Build(True, html[-1], "", seconds)


class ImageNames:
    """Names for images embedded as data: URLs (our renderer embeds every resource): the
    file of the deck's source or Quarto's output with the same bytes, else data:<sha1>."""

    def __init__(self, *folders: Path):
        self.by_hash: dict[str, str] = {}
        for folder in folders:
            for p in sorted(folder.rglob("*")):
                if p.is_file() and p.stat().st_size < 50_000_000:
                    self.by_hash.setdefault(hashlib.sha1(p.read_bytes()).hexdigest(), p.name)

    def name(self, src: str) -> str:
        if not src.startswith("data:"):
            return src
        head, _, data = src.partition(",")
        try:
            raw = base64.b64decode(data) if head.endswith(";base64") else urllib.parse.unquote_to_bytes(data)
        except ValueError:
            return "data:undecodable"
        digest = hashlib.sha1(raw).hexdigest()
        return self.by_hash.get(digest, f"data:{digest[:12]}")

    def resolve(self, capture: dict) -> None:
        """Replace every data: image text of a capture (fidelity_browser) by its name."""
        for slide in capture["slides"]:
            for e in slide["elements"]:
                if e["kind"] in ("image", "logo"):
                    e["text"] = self.name(e["text"])
