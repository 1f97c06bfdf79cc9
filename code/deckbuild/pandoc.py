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

from . import diagrams, libs, mathmethod, partials, rawhtml
from .errors import DeckError, DeckWarning
from .libs import Layout
from .options import reveal_config
from .resources import FILTERS, RESOURCES, TEMPLATE, find_node_modules, read_resource
from .source import SHORTCODE_FORMAT

LUA_FILTERS = ["footer.lua", "conditional.lua", "callouts.lua", "tabsets.lua", "annotations.lua", "layout.lua", "figures.lua", "cells.lua", "project-paths.lua"]
# the extensions' filters run after conditional content is settled, before our own filters
# (Quarto runs a document's filters before its own unless `filters:` lists them after
# `quarto`); those listed after `quarto` run after ours
EXTENSIONS_BEFORE = "callouts.lua"
EXT_WARNING_RE = re.compile(r"^\[deckbuild-ext\] WARNING (?P<file>.*?):(?P<line>\d+|None|): (?P<text>.*)$")
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


def init_script(opts: dict, plugins: list[str] | tuple = ()) -> str:
    """The script that starts reveal.js: our helpers, then Reveal.initialize(config);
    ``plugins``: the reveal.js plugins extensions contribute (their global names)."""
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
    plugins = PLUGINS + (["RevealMath"] if "math" in config else []) + list(plugins)
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
                init: Path, project_offset: str = ".", template: Path = TEMPLATE,
                ext_stages: dict | None = None) -> list[str]:
    """The pandoc command line for one deck. ``project_offset``: the project root seen
    from the document's folder (paths starting with ``/`` are resolved against it);
    ``template``: the template, beside its partials (partials.py); ``ext_stages``: the
    extensions filter's stages ("pre", "post": its wrapper files) and "plan" (the plan's
    file), from :func:`extension_stages`."""
    args = [
        pandoc_path(), str(md), "-f", reader(opts), "-t", "revealjs", "--standalone",
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
        "-M", f"deckbuild-fig-cap-location={opts.get('fig-cap-location') or 'bottom'}",
        "-M", f"deckbuild-profiles={','.join(getattr(opts, 'profiles', ()))}",
        "-o", str(out),
    ]
    stages = ext_stages or {}
    if stages.get("plan"):
        args += ["-M", f"deckbuild-extensions={stages['plan']}"]
    for name in LUA_FILTERS:
        if name == EXTENSIONS_BEFORE and stages.get("pre"):
            args += ["--lua-filter", str(stages["pre"])]
        args += ["--lua-filter", str(FILTERS / name)]
    if stages.get("post"):
        args += ["--lua-filter", str(stages["post"])]
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
    if opts.get("footer"):     # read as markdown blocks by filters/footer.lua, as Quarto reads it
        args += ["-M", f"deckbuild-footer-markdown={opts['footer']}",
                 "-M", f"deckbuild-reader={reader(opts)}"]
    return args


def reader(opts: dict) -> str:
    """pandoc's reader with its extensions: the deck's ``from:`` (or ``reader:``), as Quarto
    passes it on (``markdown+emoji``), else Quarto's plain ``markdown``."""
    value = str(opts.get("from") or opts.get("reader") or "markdown")
    return value


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


def extension_stages(lua, md: Path, out: Path, layout: Layout, opts: dict, work_dir: Path,
                     doc_path: Path, project_root: Path, project_offset: str) -> dict:
    """The plan the extensions filter reads (resources/filters/extensions.lua), written to
    ``work_dir``, and a wrapper file per stage it has work in; {} when it has none (no
    extension code, no plugin, no shortcode marker in ``md``)."""
    has_markers = f"{{={SHORTCODE_FORMAT}}}" in md.read_text(encoding="utf-8")
    if lua is None or not (has_markers or lua.shortcodes or lua.pre or lua.post or lua.plugins):
        return {}
    manifest = work_dir / "extension-deps.json"
    manifest.write_text("[]", encoding="utf-8")
    libs_prefix = layout.reveal.rsplit("/", 1)[0]          # <stem>_files/libs
    variables = project_root / "_variables.yml"
    plan = {
        "shortcodes": [str(p) for p in lua.shortcodes],
        "filters": {"pre": [str(p) for p in lua.pre], "post": [str(p) for p in lua.post]},
        "plugins": lua.plugins,
        "input_file": str(doc_path), "input_dir": str(doc_path.parent),
        "output_file": out.name, "project_dir": str(project_root),
        "project_offset": project_offset,
        "quarto_version": str(getattr(opts, "quarto_version", "current")),
        "variables": _yaml_file(variables) if variables.is_file() else {},
        "deps": {"mode": "embed" if layout.embed else "linked",
                 "prefix": f"{libs_prefix}/quarto-contrib", "manifest": str(manifest)},
    }
    path = work_dir / "extension-plan.json"
    path.write_text(json.dumps(plan, default=str), encoding="utf-8")
    stages = {"plan": path, "manifest": manifest}
    runner = (FILTERS / "extensions.lua").as_posix()
    for stage in ("pre", "post"):
        if stage == "pre" or lua.post:
            wrapper = work_dir / f"extensions-{stage}.lua"
            wrapper.write_text(f"DECKBUILD_STAGE = {json.dumps(stage)}\n"
                               f"dofile({json.dumps(runner)})\n", encoding="utf-8")
            stages[stage] = wrapper
    return stages


def _yaml_file(path: Path) -> dict:
    import yaml

    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    return data if isinstance(data, dict) else {}


def copy_dependencies(stages: dict, layout: Layout) -> None:
    """A linked deck's copies of the files the extensions' HTML dependencies name, in
    ``<stem>_files/libs/quarto-contrib/<name>-<version>/`` as Quarto places them (a
    stylesheet's own url()s copied beside it)."""
    if not stages or layout.embed or layout.files_dir is None:
        return
    for item in json.loads(stages["manifest"].read_text(encoding="utf-8")):
        libs.copy_resource(Path(item["src"]), layout.files_dir / "libs" / "quarto-contrib" / item["dest"])


def extension_warnings(stderr: str) -> list[DeckWarning]:
    """The warnings the extensions filter printed, with the file and line they name."""
    out = []
    for line in stderr.splitlines():
        m = EXT_WARNING_RE.match(line)
        if m:
            where = m.group("line")
            out.append(DeckWarning(m.group("text"), Path(m.group("file")) if m.group("file") else None,
                                   int(where) if where.isdigit() else None))
    return out


def run_pandoc(md: Path, out: Path, layout: Layout, opts: dict, src_dir: Path,
               work_dir: Path, origins: list | None = None, project_offset: str = ".",
               warnings: list | None = None, lua=None, doc_path: Path | None = None,
               project_root: Path | None = None) -> list[str]:
    """Run pandoc; an error names the .qmd file and line that the markdown line it reports
    came from (``origins``: (file, line) of each line of ``md``). Returns the resources
    pandoc could not fetch (it keeps their links); a citation no bibliography holds is a
    warning in ``warnings`` (citeproc prints it as key?, as under Quarto)."""
    init = work_dir / "init.html"
    diagram = ""
    if diagrams.MERMAID_MARK in md.read_text(encoding="utf-8"):
        diagram = diagrams.mermaid_script(find_node_modules(src_dir), opts)
    plugins = [p["name"] for p in lua.plugins if p["register"]] if lua is not None else []
    init.write_text(_math_plugin(layout, opts) + init_script(opts, plugins) + diagram)
    # large self-contained raw HTML blocks skip pandoc (rawhtml.py); its input keeps md's lines
    source, stashed = rawhtml.stash(md.read_text(encoding="utf-8"))
    if stashed:
        md = md.with_name(f"{md.stem}.pandoc.md")
        md.write_text(source, encoding="utf-8")
    template = partials.prepare(opts, work_dir)
    doc_path = doc_path or md
    stages = extension_stages(lua, md, out, layout, opts, work_dir, doc_path,
                              project_root or doc_path.parent, project_offset)
    args = pandoc_args(md, out, layout, opts, src_dir, init, project_offset, template, stages)
    proc = subprocess.run(args, cwd=src_dir, capture_output=True, text=True)
    if warnings is not None:
        warnings += extension_warnings(proc.stderr)
    fetch_failures = [m.group(1) for m in FETCH_RE.finditer(proc.stderr)]
    problems = [l for l in proc.stderr.splitlines()
                if re.search(r"Could not (find|load)|not found|ERROR", l)
                and not FETCH_RE.search(l) and not CITEPROC_MISSING_RE.search(l)
                and not EXT_WARNING_RE.match(l)]
    if warnings is not None:
        warnings += missing_citations(proc.stderr, md, origins or [])
    if proc.returncode != 0 or problems:
        text, where = to_source(proc.stderr.strip(), md, origins or [])
        lines = [l for l in text.splitlines() if l.strip()]
        msg = next((l for l in lines if l in problems), None) if problems else None
        msg = msg or (lines[0] if lines else "pandoc failed")
        file, line = where if where else (md, None)
        raise DeckError(f"pandoc: {msg}", file, line, text)
    copy_dependencies(stages, layout)
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
