"""Diagram cells, as Quarto renders them without any engine
(https://quarto.org/docs/authoring/diagrams.html):

- ``{mermaid}``: the diagram's text in ``<pre class="mermaid mermaid-js">`` inside the cell's
  display output; the mermaid library (npm ``mermaid``, as Quarto ships it) draws it in the
  page. ``%%|`` lines are the cell's options.
- ``{dot}``: Graphviz's drawing as inline SVG, made at build time by Debian's ``dot``
  (Quarto runs Graphviz compiled to WebAssembly for the same). ``//|`` lines are its options.

Both sit in ``::: {.cell}`` / ``::: {.cell-output-display}`` as Quarto's intermediate markdown
writes them, with a figure and caption when ``fig-cap`` is given (and ``label: fig-...``).
"""

from __future__ import annotations

import html
import re
import shutil
import subprocess
from pathlib import Path

import yaml

from .errors import DeckError, DeckWarning

ENGINES = {"mermaid": "%%|", "dot": "//|"}
MERMAID_MARK = 'class="mermaid mermaid-js"'
DOT_TIMEOUT_S = 60


def _options(lines: list, prefix: str, file: Path, warnings: list) -> tuple[dict, int]:
    """The cell's option lines (``%%| key: value``) as a mapping, and how many there were."""
    opts_text, n = [], 0
    for line in lines:
        if not line.text.lstrip().startswith(prefix):
            break
        opts_text.append(line.text.lstrip()[len(prefix):])
        n += 1
    if not n:
        return {}, 0
    try:
        data = yaml.safe_load("\n".join(opts_text)) or {}
    except yaml.YAMLError as exc:
        raise DeckError(f"malformed cell option YAML: {exc}", file, lines[0].lineno) from None
    if not isinstance(data, dict):
        raise DeckError("cell options must be 'name: value' lines", file, lines[0].lineno)
    return data, n


def _dot_svg(code: str, file: Path, line: int) -> str:
    exe = shutil.which("dot")
    if exe is None:
        raise DeckError("a {dot} cell needs Graphviz's dot program (Debian package graphviz; "
                        "make deck-setup installs it)", file, line)
    proc = subprocess.run([exe, "-Tsvg"], input=code, capture_output=True, text=True,
                          timeout=DOT_TIMEOUT_S)
    if proc.returncode != 0:
        message = proc.stderr.strip().splitlines()[0] if proc.stderr.strip() else "no message"
        raise DeckError(f"Graphviz could not draw this {{dot}} cell: {message}", file, line)
    svg = proc.stdout
    svg = svg[svg.find("<svg"):]          # drop the XML declaration and doctype
    return svg.strip()


def cell_markdown(engine: str, lines: list, file: Path, line: int,
                  warnings: list[DeckWarning]) -> list[str]:
    """The markdown lines a ``{mermaid}`` or ``{dot}`` cell becomes (``lines``: the lines
    between its fences)."""
    opts, n = _options(lines, ENGINES[engine], file, warnings)
    code = "\n".join(l.text for l in lines[n:]).strip("\n")
    if engine == "mermaid":
        size = "".join(f' data-{k}="{html.escape(str(opts[k]))}"' for k in ("fig-width", "fig-height")
                       if opts.get(k) is not None)
        body = f'<pre {MERMAID_MARK}{size}>{html.escape(code, quote=False)}</pre>'
    else:
        body = _dot_svg(code, file, line)
    label = str(opts.get("label") or "")
    cap = opts.get("fig-cap")
    inner = ["```{=html}", f"<div>{body}</div>", "```"]
    if cap and label.startswith("fig-"):       # a numbered figure (figures.lua)
        inner = [f"::: {{#{label}}}", *inner, "", str(cap), ":::"]
    elif cap:                                   # a figure with its caption, unnumbered
        inner = ["```{=html}", f"<figure><div>{body}</div>",
                 f"<figcaption>{html.escape(str(cap))}</figcaption></figure>", "```"]
    return ["", "::: {.cell}", "::: {.cell-output-display}", *inner, ":::", ":::", ""]


# A drawn diagram's size, as Quarto's mermaid-init.js sets it in revealjs: fig-width and
# fig-height (inches, or px/pt at 96 dpi) both given fix the SVG's width and height; one of
# them caps it and the other follows the drawing's aspect ratio; the SVG is centred.
MERMAID_SIZE_JS = """function deckbuildMermaidSize(pre) {
  const svg = pre.querySelector('svg');
  if (!svg) return;
  const inches = v => /(px|pt)$/.test(v) ? parseFloat(v) / 96 : parseFloat(v);
  const fw = pre.dataset.figWidth, fh = pre.dataset.figHeight;
  const vb = svg.viewBox && svg.viewBox.baseVal;
  const ratio = vb && vb.height ? vb.width / vb.height : 1;
  if (fw !== undefined && fh !== undefined) {
    svg.setAttribute('width', Math.round(inches(fw) * 96));
    svg.setAttribute('height', Math.round(inches(fh) * 96));
    svg.style.maxWidth = '';
  } else if (fw !== undefined) {
    svg.style.maxWidth = Math.round(inches(fw) * 96) + 'px';
  } else if (fh !== undefined) {
    svg.style.maxHeight = Math.round(inches(fh) * 96) + 'px';
  }
  svg.style.display = 'block';
  svg.style.margin = 'auto';
}"""


def mermaid_script(node_modules: Path, opts: dict) -> str:
    """mermaid (npm) inline, and the script that draws every ``pre.mermaid-js`` once the page
    has loaded (each diagram drawn off-page with mermaid.render, so hidden slides get their
    real size); the theme from ``mermaid: theme:`` (Quarto's option), default ``default``."""
    lib = node_modules / "mermaid" / "dist" / "mermaid.min.js"
    if not lib.is_file():
        raise DeckError(f"the deck has {{mermaid}} cells, which need npm's mermaid ({lib} is "
                        "missing: run make deck-setup)")
    setting = opts.get("mermaid") if isinstance(opts.get("mermaid"), dict) else {}
    theme = str(setting.get("theme") or "default")
    js = lib.read_text(encoding="utf-8").replace("</script", "<\\/script")
    return (f"<script>\n{js}\n</script>\n<script>\n{MERMAID_SIZE_JS}\n"
            "(async () => {\n"
            f"  mermaid.initialize({{startOnLoad: false, theme: {theme!r}}});\n"
            "  const pres = Array.from(document.querySelectorAll('pre.mermaid-js'));\n"
            "  for (let i = 0; i < pres.length; i++) {\n"
            "    const pre = pres[i];\n"
            "    try {\n"
            "      const {svg} = await mermaid.render('deckbuild-mermaid-' + i, pre.textContent);\n"
            "      pre.innerHTML = svg;\n"
            "      deckbuildMermaidSize(pre);\n"
            "    } catch (e) { pre.textContent = 'mermaid: ' + e.message; }\n"
            "    pre.setAttribute('data-processed', 'true');\n"
            "  }\n"
            "  if (window.Reveal && Reveal.isReady && Reveal.isReady()) Reveal.layout();\n"
            "})();\n</script>\n")
