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
from .resources import FILTERS, TEMPLATE, node_package, read_resource

LUA_FILTERS = ["callouts.lua", "figures.lua", "cells.lua"]


def pandoc_path() -> str:
    import pypandoc

    return pypandoc.get_pandoc_path()


# The reveal.js plugins Quarto's revealjs format turns on by default that a presenter
# uses: speaker notes (S), search (Ctrl-Shift-F), zoom (Alt-click) from reveal.js itself,
# and a slide menu (M) of our own in place of Quarto's bundled menu plugin.
PLUGINS = ["RevealNotes", "RevealSearch", "RevealZoom", "DeckbuildMenu"]


def init_script(opts: dict, extra_js: str = "") -> str:
    """The script that starts reveal.js: our helpers, then Reveal.initialize(config)."""
    config = reveal_config(opts)
    config["deckbuildMenu"] = {"openButton": opts["menu"] is not False}
    helpers = read_resource("deckbuild.js") + "\n" + read_resource("menu.js")
    config_json = json.dumps(config, indent=1).replace("</", "<\\/")
    return (f"<script>\n{helpers}\n</script>\n<script>\n"
            f"const deckbuildConfig = {config_json};\n"
            f"deckbuildConfig.plugins = [{', '.join(PLUGINS)}];\n"
            "window.deckbuildRegister(Reveal);\n"
            "Reveal.initialize(deckbuildConfig);\n"
            f"</script>\n{extra_js}")


def pandoc_args(md: Path, out: Path, css: Path, opts: dict, node_modules: Path,
                src_dir: Path, init: Path) -> list[str]:
    """The pandoc command line for one deck."""
    katex = node_package(node_modules, "katex") / "dist"
    reveal = node_package(node_modules, "reveal.js")
    args = [
        pandoc_path(), str(md), "-f", "markdown+emoji", "-t", "revealjs",
        "--standalone", "--embed-resources",
        "--template", str(TEMPLATE),
        f"--katex={katex.as_posix()}/",
        "--slide-level", str(opts["slide-level"]),
        "--resource-path", os.pathsep.join([str(src_dir), str(md.parent)]),
        "-V", f"revealjs-url={reveal.as_posix()}",
        "-c", str(css),
        "--include-after-body", str(init),
        "-M", f"deckbuild-slide-level={opts['slide-level']}",
        "-M", f"deckbuild-code-line-numbers={str(opts['code-line-numbers']).lower()}",
        "-o", str(out),
    ]
    for name in LUA_FILTERS:
        args += ["--lua-filter", str(FILTERS / name)]
    for sheet in opts.get("css") or []:
        args += ["-c", sheet]
    if opts["incremental"]:
        args.append("--incremental")
    if opts.get("logo"):
        args += ["-V", f"logo={opts['logo']}"]
    if opts.get("title"):
        args += ["-M", f"pagetitle={_plain(str(opts['title']))}"]
    return args


def run_pandoc(md: Path, out: Path, css: Path, opts: dict, node_modules: Path, src_dir: Path,
               work_dir: Path, extra_js: str = "") -> None:
    init = work_dir / "init.html"
    init.write_text(init_script(opts, extra_js))
    args = pandoc_args(md, out, css, opts, node_modules, src_dir, init)
    proc = subprocess.run(args, cwd=src_dir, capture_output=True, text=True)
    problems = [l for l in proc.stderr.splitlines()
                if re.search(r"Could not (fetch|find|load)|not found|ERROR", l)]
    if proc.returncode != 0 or problems:
        msg = (problems or proc.stderr.strip().splitlines() or ["pandoc failed"])[0]
        raise DeckError(f"pandoc: {msg}", md, None, proc.stderr.strip())


def _plain(text: str) -> str:
    return re.sub(r"[*_`$]", "", text)
