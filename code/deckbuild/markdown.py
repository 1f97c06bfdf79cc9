"""Stage 3: write the intermediate markdown, in the shape Quarto writes it.

Each cell becomes a ``::: {.cell}`` div holding a ``.python .cell-code`` block (when
echoed) and its outputs (``.cell-output-stdout``, ``.cell-output-stderr``,
``.cell-output-display``, ``.cell-output-error``). Figures are written to
``<stem>_files/figure-revealjs/``. Layout (output-location, line-number steps) is left
as attributes for the Lua filters, as Quarto does.
"""

from __future__ import annotations

import base64
import re
from pathlib import Path

import yaml

from . import partials, schema, titleblock
from .cells import coalesce_streams, effective_cell_options, output_text, strip_ansi
from .errors import DeckWarning
from .source import Cell, Document, Markdown


# options that are not the document's metadata for pandoc (the pipeline reads them)
PASSED_OTHERWISE = frozenset({"format", "execute", "jupyter", "engine", "knitr", "project",
                              schema.DECKBUILD_NAMESPACE})


def _fence_for(text: str, minimum: int = 3) -> str:
    longest = max([len(m) for m in re.findall(r"`{3,}", text)] + [minimum - 1])
    return "`" * (longest + 1)


def _attr(classes: list[str], ident: str = "", **kv) -> str:
    parts = [f"#{ident}"] if ident else []
    parts += [f".{c}" for c in classes]
    for key, value in kv.items():
        if value is None:
            continue
        text = str(value).replace("\\", "\\\\").replace('"', '\\"')
        parts.append(f'{key.replace("_", "-")}="{text}"')
    return "{" + " ".join(parts) + "}"


def _code_block(cell: Cell, eff: dict) -> str:
    cln = eff["code-line-numbers"]
    cln_attr = str(cln).lower() if isinstance(cln, bool) else str(cln)
    if eff.get("echo") == "fenced":
        opts = [l for l in cell.option_lines if not re.match(r"^#\|\s*echo\s*:", l)]
        body = "\n".join(["```{python}", *opts, cell.code, "```"])
        fence = _fence_for(body, 4)
        return f"{fence}{_attr(['markdown', 'cell-code'], code_line_numbers=cln_attr)}\n{body}\n{fence}"
    fence = _fence_for(cell.code)
    return f"{fence}{_attr(['python', 'cell-code'], code_line_numbers=cln_attr)}\n{cell.code}\n{fence}"


IMAGE_MIMES = (("image/svg+xml", "svg"), ("image/png", "png"), ("image/jpeg", "jpg"))


def _image_mime(out: dict) -> tuple[str, str] | None:
    data = out.get("data", {})
    return next(((mime, ext) for mime, ext in IMAGE_MIMES if mime in data), None)


def _image_md(out: dict, image: tuple[str, str], cell: Cell, eff: dict, k: int,
              files_dir: Path, rel_dir: str, ident: str) -> str:
    """A figure written beside the markdown and its image link, as Quarto writes it:
    ``![fig-cap](file){#fig-label width height fig-alt}`` (src/core/jupyter/jupyter.ts,
    mdImageOutput); the label goes on the image, which makes it a cross-referenced figure."""
    mime, ext = image
    stem = eff.get("label") or f"cell-{cell.index + 1}"
    name = f"{stem}-output-{k}.{ext}"
    files_dir.mkdir(parents=True, exist_ok=True)
    raw = output_text(out["data"][mime])
    (files_dir / name).write_bytes(raw.encode() if ext == "svg" else base64.b64decode(raw))
    meta = out.get("metadata", {}).get(mime)
    size = meta if isinstance(meta, dict) else {}
    attrs = _attr([], ident, width=size.get("width"), height=size.get("height"),
                  fig_alt=eff.get("fig-alt"))
    return f"::: {{.cell-output-display}}\n![{eff.get('fig-cap', '')}]({rel_dir}/{name}){attrs}\n:::"


def _output_md(out: dict, cell: Cell, eff: dict, k: int, files_dir: Path, rel_dir: str,
               ident: str = "") -> str:
    kind = out.get("output_type")
    asis = eff.get("output") == "asis"
    if kind == "stream":
        text = strip_ansi(output_text(out.get("text", ""))).rstrip("\n")
        if asis and out.get("name") == "stdout":
            return text
        cls = "cell-output-stdout" if out.get("name") == "stdout" else "cell-output-stderr"
        fence = _fence_for(text)
        return f"::: {{.cell-output .{cls}}}\n{fence}\n{text}\n{fence}\n:::"
    if kind == "error":
        tb = strip_ansi("\n".join(out.get("traceback", [])))
        fence = _fence_for(tb)
        return f"::: {{.cell-output .cell-output-error}}\n{fence}\n{tb}\n{fence}\n:::"
    data = out.get("data", {})
    if asis:
        for mime in ("text/markdown", "text/plain"):
            if mime in data:
                return output_text(data[mime])
    image = _image_mime(out)
    if image:
        return _image_md(out, image, cell, eff, k, files_dir, rel_dir, ident)
    if "text/html" in data:
        html = output_text(data["text/html"])
        return f"::: {{.cell-output-display}}\n```{{=html}}\n{html}\n```\n:::"
    if "text/markdown" in data:
        return f"::: {{.cell-output-display}}\n{output_text(data['text/markdown'])}\n:::"
    if "text/latex" in data:
        return f"::: {{.cell-output-display}}\n{output_text(data['text/latex'])}\n:::"
    if "text/plain" in data:
        text = output_text(data["text/plain"])
        fence = _fence_for(text)
        return f"::: {{.cell-output .cell-output-display}}\n{fence}\n{text}\n{fence}\n:::"
    return ""


def _figure_ident(cell: Cell, eff: dict, outputs: list, warnings: list[DeckWarning]) -> int | None:
    """Index of the output that carries the cell's ``fig-`` label, if any. Quarto puts the
    label on the figure when the cell has one display output (src/core/jupyter/labels.ts,
    shouldLabelCellContainer); several figures would be subfigures, which deckbuild lacks."""
    label = eff.get("label") or ""
    if not label.startswith("fig-"):
        return None
    images = [k for k, out in enumerate(outputs) if _image_mime(out)]
    if not images:
        warnings.append(DeckWarning(f"cell labelled {label} shows no figure, so there is "
                                    "nothing to cross-reference", cell.file, cell.line))
        return None
    if len(images) > 1:
        warnings.append(DeckWarning(
            f"cell labelled {label} shows {len(images)} figures; subfigures are not "
            "implemented by deckbuild, only the first one is the cross-referenced figure",
            cell.file, cell.line))
    return images[0]


def _shown_outputs(outputs: list, eff: dict) -> list:
    """The outputs that appear on the slide (warnings dropped unless `warning: true`)."""
    return [out for out in coalesce_streams(outputs)
            if not (out.get("output_type") == "stream" and out.get("name") == "stderr"
                    and not eff["warning"] and "Warning" in output_text(out.get("text", "")))]


def cell_markdown(cell: Cell, outputs: list, doc_opts: dict, files_dir: Path, rel_dir: str,
                  warnings: list[DeckWarning] | None = None) -> str:
    eff = effective_cell_options(cell, doc_opts)
    if eff["include"] is False:
        return ""
    parts = []
    if eff["echo"]:
        parts.append(_code_block(cell, eff))
    if eff["output"] is not False:
        shown = _shown_outputs(outputs, eff)
        figure = _figure_ident(cell, eff, shown, warnings if warnings is not None else [])
        for k, out in enumerate(shown, start=1):
            md = _output_md(out, cell, eff, k, files_dir, rel_dir,
                            eff["label"] if k - 1 == figure else "")
            if md:
                parts.append(md)
    if not parts:
        return ""
    if eff["output"] == "asis" and not eff["echo"]:
        return "\n\n".join(parts)
    classes = ["cell"]
    extra = eff.get("classes") or []
    classes += extra.split() if isinstance(extra, str) else list(extra)
    label = eff.get("label") or ""
    location = eff["output-location"]
    attrs = _attr(classes, label if not label.startswith("fig-") else "",
                  output_location=None if location == "default" else location)
    return f":::: {attrs}\n" + "\n\n".join(parts) + "\n::::"


def write_markdown(doc: Document, outputs: list[list], doc_opts: dict, work_dir: Path,
                   origins: list | None = None) -> Path:
    """Write ``<work_dir>/<stem>.md`` (+ figures) and return its path. ``origins``, when
    given, receives the (file, line) each line of the markdown came from (a cell's lines
    come from its opening fence), so pandoc's messages can name the .qmd line."""
    stem = doc.path.stem
    rel_dir = f"{stem}_files/figure-revealjs"
    files_dir = work_dir / rel_dir
    work_dir.mkdir(parents=True, exist_ok=True)
    if files_dir.exists():
        for old in files_dir.iterdir():
            old.unlink()
    # the title slide's metadata, as Quarto normalises it (authors, date, toc-title)
    meta = titleblock.pandoc_meta(doc_opts, doc.path, doc.warnings,
                                  tuple(sorted(partials.variables(doc_opts))))
    # the other metadata the document sets goes to pandoc too, as Quarto passes it: the
    # Lua filters and shortcodes of extensions read it (reveal-header's `header:`)
    meta.update({key: value for key, value in doc_opts.items()
                 if key not in meta and key not in schema.DOCUMENT_OPTIONS
                 and key not in PASSED_OTHERWISE})
    chunks = ["---\n" + yaml.safe_dump(meta, allow_unicode=True, sort_keys=False) + "---"]
    where: list[tuple[Path, int]] = [(doc.path, 1)] * (chunks[0].count("\n") + 1)
    cell_iter = iter(outputs)
    for block in doc.blocks:
        if isinstance(block, Markdown):
            chunks.append("\n".join(l.text for l in block.lines))
            where += [(l.file, l.lineno) for l in block.lines] or [(doc.path, 1)]
        else:
            md = cell_markdown(block, next(cell_iter), doc_opts, files_dir, rel_dir, doc.warnings)
            chunks.append(f"\n{md}\n" if md else "")
            where += [(block.file, block.line)] * (chunks[-1].count("\n") + 1)
    if origins is not None:
        origins[:] = where
    path = work_dir / f"{stem}.md"
    path.write_text("\n".join(chunks) + "\n", encoding="utf-8")
    return path
