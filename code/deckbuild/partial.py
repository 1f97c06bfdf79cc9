"""What a build must run: cache keys from the cells' dependency graph, the cache itself,
and the plan of a partial run (the changed cells, the cells that depend on them, and the
earlier cells that rebuild the state they read).

A cell's key hashes its code and options, the keys of the cells it depends on (see
``depgraph``), the import statements that bound the modules it uses, the package source
and the execution set-up's version: an edit re-keys only that cell and its dependents.

Random numbers stay exact. Before and after every cell the kernel records the state of
the ``random``, NumPy and PyTorch (CPU) generators (those already imported) as a hash,
and keeps the state itself in a side folder. A partial run restores, before each cell it
runs, the state that cell starts from in a full ordered run; when a cell leaves the
generators in a state the next cells were not run from, and one of them draws random
numbers, every cell from there on runs again in order (``Diverged``).
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
from dataclasses import dataclass, field
from pathlib import Path

from .cells import coalesce_streams, effective_cell_options
from .depgraph import Graph, build_graph
from .source import Document

EXEC_VERSION = "5"   # bump when the kernel set-up changes what cells produce


class Cache:
    """One JSON file per key: the cell's outputs and its entry and exit RNG-state hashes."""

    def __init__(self, directory: Path):
        self.dir = directory
        self.rng_dir = directory / "rng"

    def _path(self, key: str) -> Path:
        return self.dir / key[:2] / f"{key}.json"

    def get(self, key: str) -> dict | None:
        path = self._path(key)
        if not path.exists():
            return None
        try:
            entry = json.loads(path.read_text())
        except (OSError, ValueError):
            return None
        ok = isinstance(entry, dict) and isinstance(entry.get("outputs"), list)
        return entry if ok else None

    def put(self, key: str, entry: dict) -> None:
        path = self._path(key)
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".tmp{os.getpid()}")
        tmp.write_text(json.dumps(entry))
        os.replace(tmp, path)


def graph_of(doc: Document, effs: list[dict]) -> Graph:
    """The dependency graph; a cell that is not evaluated contributes no names."""
    codes = ["" if eff.get("eval") is False else cell.code for cell, eff in zip(doc.cells, effs)]
    setup = {c.index for c in doc.cells if c.options.get("label") == "setup"}
    return build_graph(codes, setup)


def cell_keys(doc: Document, doc_opts: dict, pkg_hash: str, graph: Graph | None = None) -> list[str]:
    effs = [effective_cell_options(c, doc_opts) for c in doc.cells]
    graph = graph or graph_of(doc, effs)
    base = f"{EXEC_VERSION}|{sys.version_info[:2]}|{pkg_hash}|{doc.path.name}"
    keys: list[str] = []
    for cell, eff in zip(doc.cells, effs):
        i = cell.index
        payload = json.dumps({"base": base, "code": cell.code, "options": eff,
                              "deps": [keys[j] for j in sorted(graph.deps[i])],
                              "imports": graph.imports[i]}, sort_keys=True, default=str)
        keys.append(hashlib.sha256(payload.encode()).hexdigest())
    return keys


@dataclass
class Plan:
    """Cells to run (index -> why), in document order."""

    run: dict = field(default_factory=dict)
    full: bool = False

    def describe(self, total: int) -> str:
        kinds = {}
        for why in self.run.values():
            kind = why.split(" ", 1)[0]
            kinds[kind] = kinds.get(kind, 0) + 1
        detail = ", ".join(f"{n} {k}" for k, n in sorted(kinds.items()))
        return f"  plan: {len(self.run)} of {total} cells run ({detail})"


def make_plan(graph: Graph, hits: list, evaluated: list[bool], forced: dict | None = None) -> Plan:
    """Stale cells (no cache entry), the ``forced`` ones, and the ancestors of both."""
    run: dict = dict(forced or {})
    for i, hit in enumerate(hits):
        if hit is None and evaluated[i] and i not in run:
            stale_dep = next((j for j in sorted(graph.deps[i]) if hits[j] is None and evaluated[j]),
                             None)
            run[i] = "changed" if stale_dep is None else f"depends on cell {stale_dep + 1}"
    for i in sorted(run, reverse=True):
        for j in graph.ancestors[i]:
            if j not in run and evaluated[j]:
                run[j] = f"state for cell {i + 1}"
    run = {i: run[i] for i in sorted(run)}
    full = all(i in run for i in range(len(hits)) if evaluated[i])
    return Plan(run, full)


class Diverged(Exception):
    """Cell ``index`` draws random numbers from a state other than the one it was run from."""

    def __init__(self, index: int):
        super().__init__(index)
        self.index = index


class Mismatch(Exception):
    """A cell re-run to rebuild state gave other outputs than its cached ones."""

    def __init__(self, index: int):
        super().__init__(index)
        self.index = index


def follow(state: str | None, hit: dict, index: int) -> str | None:
    """The RNG state after a cached cell that is not run, starting from ``state``."""
    rin, rout = hit.get("rng_in"), hit.get("rng_out")
    if state is None or state == rin:
        return rout
    if rin == rout:      # draws nothing: the state passes through
        return state
    raise Diverged(index)


def comparable(outputs: list) -> list:
    """What a re-run must reproduce: text exactly, and which kinds of image it showed
    (an SVG's ids and a PNG's bytes may differ between runs of the same code)."""
    out = []
    for o in coalesce_streams(outputs):     # the kernel may split one print in two
        kind = o.get("output_type")
        if kind == "stream":
            out.append((kind, o.get("name"), "".join(o.get("text", ""))))
        elif kind == "error":
            out.append((kind, o.get("ename"), o.get("evalue")))
        else:
            data = o.get("data", {})
            out.append((kind, sorted(data), {k: "".join(v) if isinstance(v, list) else v
                                              for k, v in data.items() if k.startswith("text/")}))
    return out


RNG_HELPER = r'''
import hashlib, os, pickle, sys, zlib

def _state():
    st = {}
    if "random" in sys.modules:
        st["random"] = sys.modules["random"].getstate()
    np = sys.modules.get("numpy")
    if np is not None and hasattr(np, "random"):
        s = np.random.get_state()
        st["numpy"] = (s[0], s[1].tobytes(), int(s[2]), int(s[3]), float(s[4]))
    torch = sys.modules.get("torch")
    if torch is not None and hasattr(torch, "get_rng_state"):
        st["torch"] = torch.get_rng_state().numpy().tobytes()
    return st

def capture(folder):
    data = pickle.dumps(_state(), protocol=4)
    h = hashlib.sha256(data).hexdigest()[:32]
    path = os.path.join(folder, h + ".z")
    if not os.path.exists(path):
        os.makedirs(folder, exist_ok=True)
        tmp = "%s.%d" % (path, os.getpid())
        with open(tmp, "wb") as f:
            f.write(zlib.compress(data))
        os.replace(tmp, path)
    print("rng:" + h)

def restore(folder, h):
    with open(os.path.join(folder, h + ".z"), "rb") as f:
        st = pickle.loads(zlib.decompress(f.read()))
    if "random" in st:
        import random
        random.setstate(st["random"])
    if "numpy" in st:
        import numpy
        s = st["numpy"]
        numpy.random.set_state((s[0], numpy.frombuffer(s[1], dtype=numpy.uint32).copy(), *s[2:]))
    if "torch" in st:
        import torch
        torch.set_rng_state(torch.frombuffer(bytearray(st["torch"]), dtype=torch.uint8))
'''


def install_code() -> str:
    """A hidden cell: the RNG helper as module ``_deckbuild_rng`` (no names left behind)."""
    return (f"exec(compile({RNG_HELPER!r}, '<deckbuild-rng>', 'exec'), __import__('sys').modules"
            ".setdefault('_deckbuild_rng', __import__('types').ModuleType('_deckbuild_rng'))"
            ".__dict__)\n")


def capture_code(folder: Path, restore: str | None = None) -> str:
    pre = (f"__import__('_deckbuild_rng').restore({str(folder)!r}, {restore!r})\n"
           if restore else "")
    return pre + f"__import__('_deckbuild_rng').capture({str(folder)!r})\n"


def captured_hash(outputs) -> str | None:
    for o in outputs:
        text = "".join(o.get("text", "")) if o.get("output_type") == "stream" else ""
        for line in text.splitlines():
            if line.startswith("rng:"):
                return line[4:].strip()
    return None
