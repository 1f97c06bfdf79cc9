"""Stage 5: pandoc turns the intermediate markdown into one self-contained reveal.js file.

pandoc comes from the ``pypandoc-binary`` wheel (not on PATH). Our own template, Lua
filters and browser script live in ``resources/``; reveal.js and KaTeX come from
``node_modules/`` and are embedded with ``--embed-resources`` (fonts included), so the
file works from ``file://`` with no network.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path

from .errors import DeckError
from .options import reveal_config

RESOURCES = Path(__file__).parent / "resources"
FILTERS = ["callouts.lua", "cells.lua"]


def pandoc_path() -> str:
    import pypandoc

    return pypandoc.get_pandoc_path()


def node_dir(root: Path, package: str) -> Path:
    path = root / "node_modules" / package
    if not path.is_dir():
        raise DeckError(f"npm package {package} not found: run `make deck` (npm ci) first",
                        root / "package.json")
    return path


def init_script(opts: dict, extra_js: str = "") -> str:
    """The script that starts reveal.js: our helpers, then Reveal.initialize(config)."""
    config = reveal_config(opts)
    helpers = (RESOURCES / "deckbuild.js").read_text()
    config_json = json.dumps(config, indent=1).replace("</", "<\\/")
    return (f"<script>\n{helpers}\n</script>\n<script>\n"
            f"const deckbuildConfig = {config_json};\n"
            "deckbuildConfig.plugins = [RevealNotes, RevealSearch, RevealZoom];\n"
            "window.deckbuildRegister(Reveal);\n"
            "Reveal.initialize(deckbuildConfig);\n"
            f"</script>\n{extra_js}")


def run_pandoc(md: Path, out: Path, css: Path, opts: dict, root: Path, src_dir: Path,
               work_dir: Path, extra_js: str = "") -> None:
    init = work_dir / "init.html"
    init.write_text(init_script(opts, extra_js))
    katex = node_dir(root, "katex") / "dist"
    reveal = node_dir(root, "reveal.js")
    args = [
        pandoc_path(), str(md), "-f", "markdown+emoji", "-t", "revealjs",
        "--standalone", "--embed-resources",
        "--template", str(RESOURCES / "template.html"),
        f"--katex={katex.as_posix()}/",
        "--slide-level", str(opts.get("slide-level", 2)),
        "--resource-path", os.pathsep.join([str(src_dir), str(work_dir)]),
        "-V", f"revealjs-url={reveal.as_posix()}",
        "-c", str(css),
        "--include-after-body", str(init),
        "-M", f"deckbuild-slide-level={opts.get('slide-level', 2)}",
        "-M", f"deckbuild-code-line-numbers={str(opts.get('code-line-numbers', True)).lower()}",
        "-o", str(out),
    ]
    for name in FILTERS:
        args += ["--lua-filter", str(RESOURCES / "filters" / name)]
    if opts.get("incremental"):
        args.append("--incremental")
    if opts.get("logo"):
        args += ["-V", f"logo={opts['logo']}"]
    if opts.get("title"):
        args += ["-M", f"pagetitle={_plain(str(opts['title']))}"]
    proc = subprocess.run(args, cwd=src_dir, capture_output=True, text=True)
    problems = [l for l in proc.stderr.splitlines()
                if re.search(r"Could not (fetch|find|load)|not found|ERROR", l)]
    if proc.returncode != 0 or problems:
        msg = (problems or proc.stderr.strip().splitlines() or ["pandoc failed"])[0]
        raise DeckError(f"pandoc: {msg}", md, None, proc.stderr.strip())


def _plain(text: str) -> str:
    return re.sub(r"[*_`$]", "", text)
