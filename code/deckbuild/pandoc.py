"""Stage 5: pandoc turns the intermediate markdown into the reveal.js HTML.

pandoc comes from the ``pypandoc-binary`` wheel (not on PATH). Our own template, Lua
filters and browser script live in ``resources/``; reveal.js and KaTeX come from
``node_modules/``. With ``embed-resources`` they are embedded with ``--embed-resources``
(fonts included), so the file works from ``file://`` with no network; without it the
HTML links copies beside it (``libs.py``). A resource pandoc cannot fetch (a remote image
with no network, a missing file) is a warning: pandoc keeps its link, as under Quarto.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path

from . import mathmethod, partials, rawhtml
from .errors import DeckError, DeckWarning
from .libs import Layout
from .options import reveal_config
from .resources import FILTERS, RESOURCES, TEMPLATE, read_resource

LUA_FILTERS = ["callouts.lua", "tabsets.lua", "annotations.lua", "layout.lua", "figures.lua", "cells.lua", "project-paths.lua"]
FETCH_RE = re.compile(r"Could not fetch resource (.+?)(?:: |$)")
# citeproc's warning for a citation whose key no bibliography holds (Quarto warns too)
CITEPROC_MISSING_RE = re.compile(r"Citeproc: citation (\S+) not found")
# Quarto's default highlight style for light themes (arrow): the token colours measured in
# the corpus decks' quarto-syntax-highlighting CSS, as a pandoc theme of our own
HIGHLIGHT_THEME = RESOURCES / "highlight" / "light.theme"


def pandoc_path() -> str:
    import pypandoc

    return pypandoc.get_pandoc_path()


def highlight_option() -> str:
    """pandoc 3.8 renamed --highlight-style to --syntax-highlighting (the old name warns)."""
    import pypandoc

    version = tuple(int(x) for x in re.findall(r"\d+", pypandoc.get_pandoc_version())[:2])
    return "--syntax-highlighting" if version >= (3, 8) else "--highlight-style"


# The reveal.js plugins Quarto's revealjs format turns on by default that a presenter
# uses: speaker notes (S), search (Ctrl-Shift-F), zoom (Alt-click, Ctrl-click on Linux) from reveal.js itself,
# and a slide menu (M) of our own in place of Quarto's bundled menu plugin.
PLUGINS = ["RevealNotes", "RevealSearch", "RevealZoom", "DeckbuildMenu"]


def init_script(opts: dict) -> str:
    """The script that starts reveal.js: our helpers, then Reveal.initialize(config)."""
    config = reveal_config(opts)
    config.update(mathmethod.reveal_config(mathmethod.math_method(opts)))
    config["deckbuildMenu"] = {"openButton": opts["menu"] is not False}
    # Quarto's page defaults, applied by defaults.js before reveal.js starts
    config["deckbuild"] = {"autoStretch": opts.get("auto-stretch", True),
                           "centerTitleSlide": opts.get("center-title-slide", True),
                           "codeCopy": opts.get("code-copy", "hover"),
                           # footnotes at each slide's foot unless reference-location: document
                           "slideFootnotes": opts.get("reference-location") != "document",
                           "slideLevel": opts["slide-level"]}
    helpers = "\n".join(read_resource(name)
                        for name in ("deckbuild.js", "notes.js", "defaults.js", "menu.js", "print.js"))
    plugins = PLUGINS + (["RevealMath"] if "math" in config else [])
    config_json = json.dumps(config, indent=1).replace("</", "<\\/")
    return (f"<script>\n{helpers}\n</script>\n<script>\n"
            f"const deckbuildConfig = {config_json};\n"
            f"deckbuildConfig.plugins = [{', '.join(plugins)}];\n"
            "window.deckbuildPrepare(deckbuildConfig);\n"
            "window.deckbuildRegister(Reveal);\n"
            "window.deckbuildPrint(Reveal);\n"
            "Reveal.initialize(deckbuildConfig);\n"
            "</script>\n")


def pandoc_args(md: Path, out: Path, layout: Layout, opts: dict, src_dir: Path,
                init: Path, project_offset: str = ".", template: Path = TEMPLATE) -> list[str]:
    """The pandoc command line for one deck. ``project_offset``: the project root seen
    from the document's folder (paths starting with ``/`` are resolved against it);
    ``template``: the template, beside its partials (partials.py)."""
    args = [
        pandoc_path(), str(md), "-f", "markdown+emoji", "-t", "revealjs", "--standalone",
        *(["--embed-resources"] if layout.embed else []),
        "--template", str(template),
        *mathmethod.pandoc_args(mathmethod.math_method(opts), layout.katex),
        highlight_option(), str(HIGHLIGHT_THEME),
        "--slide-level", str(opts["slide-level"]),
        "--resource-path", os.pathsep.join([str(src_dir), str(md.parent)]),
        "-V", f"revealjs-url={layout.reveal}",
        "--include-after-body", str(init),
        "-M", f"deckbuild-slide-level={opts['slide-level']}",
        "-M", f"deckbuild-code-line-numbers={str(opts['code-line-numbers']).lower()}",
        "-M", f"deckbuild-callout-appearance={opts.get('callout-appearance', 'default')}",
        "-M", f"deckbuild-callout-icon={str(opts.get('callout-icon', True)).lower()}",
        "-M", f"deckbuild-project-offset={project_offset}",
        "-o", str(out),
    ]
    for name in LUA_FILTERS:
        args += ["--lua-filter", str(FILTERS / name)]
    args += citation_args(opts)    # after our filters: they resolve @fig- references first
    for sheet in layout.css:
        args += ["-c", sheet]
    if opts["incremental"]:
        args.append("--incremental")
    if opts.get("toc"):     # the TOC slide after the title slide (toc-slide.html)
        args += ["--toc", f"--toc-depth={int(opts.get('toc-depth') or 3)}"]
    for name in ("smaller", "scrollable"):   # document-wide: a class on the .reveal element
        if opts[name]:
            args += ["-V", f"deckbuild-{name}=true"]
    if layout.logo:
        args += ["-V", f"logo={layout.logo}"]
    if opts.get("title"):
        args += ["-M", f"pagetitle={_plain(str(opts['title']))}"]
    return args


def citation_args(opts: dict) -> list[str]:
    """pandoc's citeproc when the document names a bibliography, with its CSL style and
    citations linked to the references (Quarto's revealjs default, link-citations: true)."""
    bibliography = opts.get("bibliography")
    if not bibliography:
        return []
    args = ["--lua-filter", str(FILTERS / "citations.lua"), "--citeproc"]
    for path in bibliography if isinstance(bibliography, list) else [bibliography]:
        args += ["--bibliography", str(path)]
    if opts.get("csl"):
        args += ["--csl", str(opts["csl"])]
    return args + ["-M", f"link-citations={str(opts.get('link-citations', True)).lower()}"]


def _math_plugin(layout: Layout, opts: dict) -> str:
    """reveal.js's math plugin, which loads MathJax (only for html-math-method: mathjax)."""
    if mathmethod.math_method(opts).method != "mathjax":
        return ""
    return f'<script src="{layout.reveal}/plugin/math/math.js"></script>\n'


def run_pandoc(md: Path, out: Path, layout: Layout, opts: dict, src_dir: Path,
               work_dir: Path, origins: list | None = None, project_offset: str = ".",
               warnings: list | None = None) -> list[str]:
    """Run pandoc; an error names the .qmd file and line that the markdown line it reports
    came from (``origins``: (file, line) of each line of ``md``). Returns the resources
    pandoc could not fetch (it keeps their links); a citation no bibliography holds is a
    warning in ``warnings`` (citeproc prints it as key?, as under Quarto)."""
    init = work_dir / "init.html"
    init.write_text(_math_plugin(layout, opts) + init_script(opts))
    # large self-contained raw HTML blocks skip pandoc (rawhtml.py); its input keeps md's lines
    source, stashed = rawhtml.stash(md.read_text(encoding="utf-8"))
    if stashed:
        md = md.with_name(f"{md.stem}.pandoc.md")
        md.write_text(source, encoding="utf-8")
    template = partials.prepare(opts, work_dir)
    args = pandoc_args(md, out, layout, opts, src_dir, init, project_offset, template)
    proc = subprocess.run(args, cwd=src_dir, capture_output=True, text=True)
    fetch_failures = [m.group(1) for m in FETCH_RE.finditer(proc.stderr)]
    problems = [l for l in proc.stderr.splitlines()
                if re.search(r"Could not (find|load)|not found|ERROR", l)
                and not FETCH_RE.search(l) and not CITEPROC_MISSING_RE.search(l)]
    if warnings is not None:
        warnings += missing_citations(proc.stderr, md, origins or [])
    if proc.returncode != 0 or problems:
        text, where = to_source(proc.stderr.strip(), md, origins or [])
        lines = [l for l in text.splitlines() if l.strip()]
        msg = next((l for l in lines if l in problems), None) if problems else None
        msg = msg or (lines[0] if lines else "pandoc failed")
        file, line = where if where else (md, None)
        raise DeckError(f"pandoc: {msg}", file, line, text)
    html = out.read_text(encoding="utf-8")
    done = rawhtml.after_body(rawhtml.restore(html, stashed) if stashed else html)
    if done != html:
        out.write_text(done, encoding="utf-8")
    return fetch_failures


def missing_citations(stderr: str, md: Path, origins: list) -> list[DeckWarning]:
    """One warning per citation key citeproc found in no bibliography, at the .qmd line of
    its first use."""
    out = []
    lines = md.read_text(encoding="utf-8").splitlines()
    for key in dict.fromkeys(CITEPROC_MISSING_RE.findall(stderr)):
        at = next((i for i, l in enumerate(lines) if re.search(rf"@{re.escape(key)}\b", l)), None)
        place = (origins[at] if at is not None and at < len(origins) else None) or (md, None)
        out.append(DeckWarning(f"citation @{key} is in no bibliography: citeproc prints it as "
                               f"'{key}?' (Quarto warns too)", *place))
    return out


# Where pandoc's messages point into a file: `at "x.md" (line 3, column 1)` (errors) or
# `at x.md line 3 column 1` (warnings); a YAML block's own error adds
# `YAML parse exception at line 2, column 3` counted from the block's first line.
_POSITION_RES = (re.compile(r'"(?P<path>[^"]+)" \(line (?P<line>\d+), column (?P<col>\d+)\)'),
                 re.compile(r"(?P<path>\S+) line (?P<line>\d+) column (?P<col>\d+)"))
_YAML_LINE_RE = re.compile(r"YAML parse exception at line (\d+), column (\d+)")


def to_source(text: str, md: Path, origins: list) -> tuple[str, tuple | None]:
    """pandoc's message with every position in the intermediate markdown ``md`` replaced by
    the .qmd ``file:line`` it came from; and the first such place (None when none)."""
    first: list = []
    yaml_error = _YAML_LINE_RE.search(text)
    offset = int(yaml_error.group(1)) if yaml_error else 0   # the line inside the block

    def replace(m: re.Match) -> str:
        if Path(m.group("path")).name != md.name:
            return m.group(0)
        line = int(m.group("line")) + offset
        place = origins[line - 1] if 0 < line <= len(origins) else None
        if place is None:
            return m.group(0)
        first.append(place)
        return f"{place[0]}:{place[1]}"

    for pattern in _POSITION_RES:
        text = pattern.sub(replace, text)
    return text, (first[0] if first else None)


def _plain(text: str) -> str:
    return re.sub(r"[*_`$]", "", text)
