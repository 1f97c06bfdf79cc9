"""Stage 1 (continued): read a .qmd file into front matter and a list of blocks.

Includes (``{{< include file >}}``) are expanded first, keeping for every line the file
and line it came from, so every later error can name the original place. Then the text
is split into markdown chunks and executable ``{python}`` cells with their ``#|`` options.
"""

from __future__ import annotations

import json
import re
import urllib.parse
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from . import diagrams
from .blocks import Scanner, cell_fence, closes_cell_fence, track_code_fence
from .errors import DeckError, DeckWarning
from .files import read_source
from .options import Source, load_yaml
from .schema import CELL_OPTIONS, FIGURE_OPTIONS, QUARTO_SHORTCODES, SHORTCODES_IN_LUA

INCLUDE_RE = re.compile(r"^\s*\{\{<\s*include\s+(?P<path>[^\s>]+)\s*>\}\}\s*$")
ESCAPED_SHORTCODE_RE = re.compile(r"\{\{</\*(.*?)\*/>\}\}")
SHORTCODE_RE = re.compile(r"\{\{<\s*(\w[\w-]*)")
EXEC_INFO_RE = re.compile(r"^\{(?P<engine>[A-Za-z][\w-]*)(?P<rest>[^}]*)\}$")
OPTION_LINE_RE = re.compile(r"^#\|\s?(?P<text>.*)$")
# an image's address may hold spaces (pandoc reads `![](My Assets/a b.jpg)` as
# My%20Assets/a%20b.jpg) or be in <...>; a quoted title may follow
# or balanced parentheses (`a (1).png`)
IMAGE_RE = re.compile(r"!\[[^\]]*\]\(\s*<?(?P<src>(?:[^()\s<>\"]|\([^()\s]*\))(?:[^()<>\"\n]|\([^()\n]*\))*?)>?"
                      r"(?:\s+\"[^\"]*\")?\s*\)")
# pandoc's fenced divs: at least three colons, then attributes or one class name
DIV_OPEN_RE = re.compile(r"^ {0,3}:{3,}\s*(\{.*\}|[^\s{}:][^\s{}]*)\s*:*\s*$")
DIV_CLOSE_RE = re.compile(r"^ {0,3}:{3,}\s*$")
BACKGROUND_RE = re.compile(r"background-(?:image|video|iframe)=\"?(?P<src>[^\"\s}]+)\"?")
# raw HTML that loads a file: <img src=...>, <video>, <audio>, <source>, <iframe>, <embed>
HTML_SRC_RE = re.compile(r"""<(?:img|video|audio|source|iframe|embed)\b[^>]*?\bsrc\s*=\s*["'](?P<src>[^"']+)["']""",
                         re.I)

@dataclass
class Line:
    text: str
    file: Path
    lineno: int
    chapter: Path | None = None   # the file the document included it through (None: its own)


@dataclass
class Markdown:
    lines: list[Line]


@dataclass
class Cell:
    """One executable ``{python}`` cell."""

    index: int          # 0-based among the document's cells
    code: str           # source without the #| option lines
    options: dict       # only the options written on the cell
    option_lines: list[str]
    file: Path
    line: int           # line of the opening fence
    slide_title: str    # title of the slide the cell sits on
    fence: str = "```"
    chapter: Path | None = None   # the included file it belongs to (None: the document's own)
    setup: bool = False           # the document's own, before its first include (see execute)

    def where(self) -> str:
        return f"{self.file}:{self.line}"


@dataclass
class Document:
    path: Path
    front: Source
    blocks: list = field(default_factory=list)   # Markdown | Cell, in order
    warnings: list[DeckWarning] = field(default_factory=list)   # every stage adds its own
    root: Path | None = None     # the project root ("/" paths start there)
    remote: list = field(default_factory=list)   # (url, file, line) of remote images

    @property
    def cells(self) -> list[Cell]:
        return [b for b in self.blocks if isinstance(b, Cell)]


def split_front_matter(text: str, path: Path) -> tuple[Source, list[str], int]:
    """Return (front matter, body lines, line number of the first body line)."""
    lines = text.splitlines()
    if lines and lines[0].strip() == "---":
        for i in range(1, len(lines)):
            if lines[i].strip() in ("---", "..."):
                yaml_text = "\n".join(lines[1:i])
                data = load_yaml(yaml_text, path, first_line=2)
                return Source(data, path, 2, yaml_text), lines[i + 1:], i + 2
        raise DeckError("front matter opened with '---' is never closed", path, 1)
    return Source({}, path, 1, ""), lines, 1


def include_target(name: str, base: Path, root: Path) -> Path:
    """The file an include names, as Quarto resolves it (src/core/handlers/base.ts,
    resolvePath): relative to the folder of the document being rendered, also when the
    include sits in an included file; a path starting with ``/`` is relative to the
    project root (the document's folder for a single file)."""
    return ((root / name.lstrip("/")) if name.startswith("/") else (base / name)).resolve()


def expand_includes(lines: list[str], path: Path, first: int, root: Path,
                    stack: tuple[Path, ...] = (), chapter: Path | None = None,
                    base: Path | None = None) -> list[Line]:
    """Expand ``{{< include >}}`` recursively; each output line remembers its origin, and
    the chapter it belongs to: the file the document itself included (nested includes
    belong to their chapter). ``base``: the document's folder (see :func:`include_target`)."""
    base = base or path.parent
    out: list[Line] = []
    fence: str | None = None
    for offset, text in enumerate(lines):
        lineno = first + offset
        m = INCLUDE_RE.match(text)
        if m and fence is None:
            target_name = m.group("path").strip("\"'")
            target = include_target(target_name, base, root)
            if not target.is_file():
                raise DeckError(_missing_include(target_name, target, path, base), path, lineno)
            if target in stack or target == path.resolve():
                raise DeckError(f"include cycle: {target_name} includes itself", path, lineno)
            inc_text = read_source(target)
            front, body, body_first = split_front_matter(inc_text, target)
            out.extend(expand_includes(body, target, body_first, root,
                                       stack + (path.resolve(),), chapter or target, base))
            continue
        fence, _ = track_code_fence(fence, text)
        out.append(Line(text, path, lineno, chapter))
    return out


def _missing_include(name: str, target: Path, path: Path, base: Path) -> str:
    message = f"included file not found: {name} (looked for {target})"
    if not name.startswith("/") and path.parent.resolve() != base.resolve() \
            and (path.parent / name).is_file():
        message += (f"; Quarto resolves an include against the folder of the document "
                    f"being rendered ({base}), not of the file holding the include")
    return message


def check_divs(lines: list[Line]) -> None:
    """Every fenced div (``::: {.callout-note}``) must be closed: pandoc would close it at
    the end of the document and nest every later slide inside it. Code blocks and HTML
    comments are skipped as pandoc skips them; a closing ``:::`` closes the innermost open
    div, as in pandoc."""
    opened: list[Line] = []
    scanner = Scanner()
    for line in lines:
        text = scanner.visible(line.text)
        if DIV_CLOSE_RE.match(text) and opened:
            opened.pop()
        elif DIV_OPEN_RE.match(text):
            opened.append(line)
    if opened:
        first = opened[-1]
        raise DeckError(f"unclosed div '{first.text.strip()}': no closing ':::' before the end "
                        "of the document (pandoc would put every later slide inside it)",
                        first.file, first.lineno)


def _title_of(line: str, slide_level: int) -> str | None:
    m = re.match(r"^(#{1,6})\s+(.*?)\s*(\{.*\})?\s*$", line)
    if m and len(m.group(1)) <= slide_level:
        return m.group(2)
    return None


def parse_cell_options(option_lines: list[Line], file: Path, fence_line: int,
                       warnings: list[DeckWarning]) -> dict:
    """The cell's ``#|`` options. A value Quarto's schema rejects is an error; an option
    deckbuild does not implement is a warning (Quarto passes unknown ones on as attributes
    of the cell's div, src/core/jupyter/jupyter.ts) and is dropped."""
    text = "\n".join(OPTION_LINE_RE.match(l.text).group("text") for l in option_lines)
    first = option_lines[0].lineno if option_lines else fence_line + 1
    try:
        data = yaml.safe_load(text) if text.strip() else {}
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark
        line = option_lines[min(mark.line, len(option_lines) - 1)].lineno if mark else first
        raise DeckError(f"malformed cell option YAML: {exc.problem}", file, line) from None
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise DeckError("cell options must be 'name: value' lines", file, first)
    for key, value in data.items():
        line = next((l.lineno for l in option_lines
                     if re.match(rf"^#\|\s*{re.escape(str(key))}\s*:", l.text)), first)
        if key in FIGURE_OPTIONS:
            warnings.append(DeckWarning(
                f"cell option '{key}' has no effect on a Jupyter cell in Quarto (knitr only) "
                "and is ignored; set it for the whole document", file, line))
            continue
        if key not in CELL_OPTIONS:
            warnings.append(DeckWarning(
                f"cell option '{key}' is not implemented by deckbuild and is ignored "
                f"(implemented: {', '.join(sorted(CELL_OPTIONS))})", file, line))
            continue
        if not CELL_OPTIONS[key].check(value):
            raise DeckError(f"cell option '{key}' must be {CELL_OPTIONS[key].expected}, "
                            f"got {value!r}", file, line)
    return {key: value for key, value in data.items() if key in CELL_OPTIONS}


def _closing_fence(lines: list[Line], i: int, marker: str, info: str) -> int:
    """Index of the fence that closes the one opened at ``lines[i]`` (same file)."""
    j = i + 1
    while j < len(lines) and not closes_cell_fence(lines[j].text, marker):
        j += 1
    if j >= len(lines) or lines[j].file != lines[i].file:
        kind = f"cell fence '{marker}{info}'" if info.startswith("{") else f"code fence '{marker}'"
        raise DeckError(f"unclosed {kind}: no closing '{marker}' before the end of the file",
                        lines[i].file, lines[i].lineno)
    return j


def _cell(lines: list[Line], i: int, j: int, index: int, title: str, marker: str,
          warnings: list[DeckWarning]) -> Cell:
    """The executable cell between the fences at ``lines[i]`` and ``lines[j]``."""
    inner = lines[i + 1:j]
    opt_lines = []
    for line in inner:
        if not OPTION_LINE_RE.match(line.text):
            break
        opt_lines.append(line)
    code_lines = inner[len(opt_lines):]
    opening = lines[i]
    return Cell(index=index, code="\n".join(l.text for l in code_lines).strip("\n"),
                options=parse_cell_options(opt_lines, opening.file, opening.lineno, warnings),
                option_lines=[l.text for l in opt_lines], file=opening.file,
                line=opening.lineno, slide_title=title, fence=marker, chapter=opening.chapter)


# a whole shortcode on one line: its name, then arguments (quoted ones may hold '>')
FULL_SHORTCODE_RE = re.compile(
    r"\{\{<\s*(?P<name>\w[\w-]*)(?P<args>(?:\"(?:[^\"\\]|\\.)*\"|'(?:[^'\\]|\\.)*'|[^\"'>]|>(?!\}\}))*?)\s*>\}\}")
SHORTCODE_ARG_RE = re.compile(r"""\s*(?:(?P<key>[\w-]+)=)?(?P<value>"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'|[^\s"']+)""")
INLINE_CODE_SPAN_RE = re.compile(r"(`+)(?:.+?)\1")
# the raw inline format of a shortcode marker, resolved by resources/filters/extensions.lua
SHORTCODE_FORMAT = "deckbuild-shortcode"


def shortcode_args(text: str) -> list[dict]:
    """A shortcode's arguments as Quarto parses them: ``key=value`` pairs and plain values,
    either quoted (quotes dropped) or a run of non-space characters."""
    out = []
    for m in SHORTCODE_ARG_RE.finditer(text):
        value = m.group("value")
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
            value = re.sub(r"\\(.)", r"\1", value[1:-1])
        out.append({"name": m.group("key"), "value": value} if m.group("key") else {"value": value})
    return out


def shortcode_marker(m: re.Match, line: Line) -> str:
    """The raw inline that stands for one shortcode until the extensions filter calls its
    handler: the name, arguments, text as written and its place, as JSON."""
    data = {"name": m.group("name"), "args": shortcode_args(m.group("args")), "raw": m.group(0),
            "file": str(line.file), "line": line.lineno}
    text = json.dumps(data, ensure_ascii=False)
    ticks = "`" * (max([len(t) for t in re.findall(r"`+", text)] + [0]) + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{ticks}{pad}{text}{pad}{ticks}{{={SHORTCODE_FORMAT}}}"


def _mark_shortcodes(line: Line, names: set[str]) -> str:
    """The line with each shortcode called ``names`` (outside inline code) as a marker."""
    out, last = [], 0
    text = line.text
    spans = [(m.start(), m.end()) for m in INLINE_CODE_SPAN_RE.finditer(text)]
    for m in FULL_SHORTCODE_RE.finditer(text):
        if m.group("name") not in names or any(a <= m.start() < b for a, b in spans):
            continue
        out += [text[last:m.start()], shortcode_marker(m, line)]
        last = m.end()
    return "".join(out) + text[last:]


def _markdown_line(line: Line, warnings: list[DeckWarning], visible: str) -> Line:
    """A line of markdown: shortcodes checked (in ``visible``, its text outside HTML
    comments, which pandoc drops), escaped shortcodes unescaped. A shortcode the
    extensions filter resolves (an extension's, or a built-in of SHORTCODES_IN_LUA) becomes
    a marker; Quarto's other built-ins are a warning and stay as written."""
    marked: set[str] = set()
    for m in SHORTCODE_RE.finditer(ESCAPED_SHORTCODE_RE.sub("", visible)):
        name = m.group(1)
        if name == "include":
            raise DeckError("an include shortcode must stand alone on its line",
                            line.file, line.lineno)
        if name in QUARTO_SHORTCODES and name not in SHORTCODES_IN_LUA:
            warnings.append(DeckWarning(f"shortcode '{name}' is one of Quarto's shortcodes, not "
                                        "implemented by deckbuild; the text is left as written",
                                        line.file, line.lineno))
        else:
            marked.add(name)
    escaped: list[str] = []

    def keep(m: re.Match) -> str:
        escaped.append("{{<" + m.group(1) + ">}}")
        return f"\x00{len(escaped) - 1}\x00"

    text = ESCAPED_SHORTCODE_RE.sub(keep, line.text)
    if marked:
        text = _mark_shortcodes(Line(text, line.file, line.lineno), marked)
    text = re.sub("\x00(\\d+)\x00", lambda m: escaped[int(m.group(1))], text)
    return Line(text, line.file, line.lineno, line.chapter)


def parse(path: Path, root: Path, slide_level: int = 2) -> Document:
    """Read ``path`` (a .qmd) into a Document; ``root`` is the project root for /includes."""
    path = Path(path)
    if not path.is_file():
        raise DeckError("document not found", path)
    front, body, body_first = split_front_matter(read_source(path), path)
    lines = expand_includes(body, path, body_first, root)
    first_include = next((k for k, line in enumerate(lines) if line.chapter), len(lines))
    doc = Document(path, front, root=Path(root))
    chunk: list[Line] = []
    title = str(front.data.get("title") or "")
    comments = Scanner(code=False)
    i = 0
    while i < len(lines):
        fm = cell_fence(lines[i].text)
        if not fm:
            visible = comments.visible(lines[i].text)
            title = _title_of(visible, slide_level) or title
            chunk.append(_markdown_line(lines[i], doc.warnings, visible))
            i += 1
            continue
        marker, info = fm
        j = _closing_fence(lines, i, marker, info)
        em = EXEC_INFO_RE.match(info)
        if em and not info.startswith("{="):
            engine = em.group("engine")
            if engine in diagrams.ENGINES:
                chunk.extend(Line(text, lines[i].file, lines[i].lineno, lines[i].chapter)
                             for text in diagrams.cell_markdown(engine, lines[i + 1:j],
                                                                lines[i].file, lines[i].lineno,
                                                                doc.warnings))
                i = j + 1
                continue
            if engine in ("r", "R"):
                raise DeckError("an {r} cell runs R through knitr: Quarto needs R and the "
                                "knitr package for it, and deckbuild runs {python} cells only "
                                "(and {mermaid} and {dot} diagrams)",
                                lines[i].file, lines[i].lineno)
            if engine != "python":
                raise DeckError(f"unsupported cell engine '{{{engine}}}' (deckbuild runs "
                                "{python} cells, and draws {mermaid} and {dot} diagrams)",
                                lines[i].file, lines[i].lineno)
            if chunk:
                doc.blocks.append(Markdown(chunk))
                chunk = []
            cell = _cell(lines, i, j, len(doc.cells), title, marker, doc.warnings)
            cell.setup = i < first_include
            doc.blocks.append(cell)
        else:
            chunk.extend(lines[i:j + 1])
        i = j + 1
    if chunk:
        doc.blocks.append(Markdown(chunk))
    check_divs(lines)
    return doc


def resource_path(src: str, doc: Document) -> Path:
    """Where a local image or background named in ``doc`` is: relative to the document's
    folder, or to the project root when it starts with ``/`` (as Quarto reads it)."""
    base = (doc.root or doc.path.parent) if src.startswith("/") else doc.path.parent
    path = (base / src.lstrip("/")).resolve()
    if not path.exists() and "%" in src:       # percent-encoded, as a browser reads it
        decoded = (base / urllib.parse.unquote(src).lstrip("/")).resolve()
        path = decoded if decoded.exists() else path
    return path


def is_remote(src: str) -> bool:
    return src.startswith(("http:", "https:", "//"))


def option_resources(text: str, doc: Document) -> list[Path]:
    """The local files an option's markdown or raw HTML names (the footer: ``<img src=...>``
    in it), relative to the document's folder as in the body; missing or remote ones are
    left to the browser, as Quarto leaves them."""
    found = []
    for m in [*IMAGE_RE.finditer(text or ""), *HTML_SRC_RE.finditer(text or "")]:
        src = m.group("src")
        if is_remote(src) or re.match(r"^[a-z][a-z0-9+.-]*:", src) or src.startswith("#"):
            continue
        path = resource_path(src, doc)
        if path.exists():
            found.append(path)
    return found


def check_resources(doc: Document) -> list[Path]:
    """The local images, slide backgrounds and raw-HTML ``src`` files the markdown names,
    which must exist: a missing one is a warning naming the file and line (pandoc leaves
    its link, as under Quarto). Remote ones go to ``doc.remote`` (url, file, line) for the
    build to judge. Code blocks and HTML comments are skipped."""
    found: list[Path] = []
    doc.remote = []
    for block in doc.blocks:
        if not isinstance(block, Markdown):
            continue
        scanner = Scanner()
        for line in block.lines:
            text = scanner.visible(line.text)
            for m in [*IMAGE_RE.finditer(text), *BACKGROUND_RE.finditer(text),
                      *HTML_SRC_RE.finditer(text)]:
                src = m.group("src")
                if is_remote(src):
                    doc.remote.append((src, line.file, line.lineno))
                    continue
                if re.match(r"^[a-z][a-z0-9+.-]*:", src) or src.startswith("#"):
                    continue
                path = resource_path(src, doc)
                if not path.exists():
                    doc.warnings.append(DeckWarning(
                        f"image not found: {src} (looked for {path}); the deck is built "
                        "without it", line.file, line.lineno))
                    continue
                found.append(path)
    return found
