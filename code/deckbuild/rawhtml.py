"""Large raw HTML blocks go around pandoc, not through it.

A cell may display a whole web page of its own (the explorer slide embeds a runtime and two
models: about 8 MB). pandoc copies a ```` ```{=html} ```` block to its output unchanged, but
parsing and embedding-resource passes over megabytes of it cost seconds on every build.
So, before pandoc runs, each large block that references nothing outside itself is swapped
for a placeholder comment (spanning as many lines, so pandoc's line numbers still point at
the right markdown line), and the block is put back into pandoc's output afterwards. The
page is the one pandoc would have written, as a browser reads it (pandoc's
--embed-resources pass re-spells the tags it reads: attributes on one line, ``<x/>`` as
``<x></x>``, CSS without its comments; the detour keeps the block as written). Blocks
that load files (``src=`` or ``href=`` to a path, CSS ``url()`` to a path) still go
through pandoc, which embeds them.
The text of an inline ``<script>`` is not markup: pandoc embeds nothing it names, so
``s.src = url`` in a script's code does not keep its block in pandoc.

A ``<script>`` marked ``data-deckbuild-after-body`` (inert data: the explorer's models and
runtime) is moved to the end of the body, after reveal.js's start-up script, so that the
browser parses it once the deck is ready (:func:`after_body`). Quarto leaves it where it
is; the page's own script must find it either way.
"""

from __future__ import annotations

import re

LARGE = 256 * 1024          # characters; smaller blocks are not worth the detour
_BLOCK = re.compile(r"^```\{=html\}\n(.*?)\n```$", re.M | re.S)
# a reference pandoc's --embed-resources would inline: an attribute or CSS url() naming a
# path or a URL (data:, blob:, fragments and javascript: are already self-contained)
_EXTERNAL = re.compile(
    r"""(?:\b(?:src|href|poster|data-src)\s*=\s*["']?|url\(\s*["']?)"""
    r"""(?!data:|blob:|#|javascript:|["')\s>])""", re.I)


# an inline script's text (a script with a src= attribute is a reference, kept)
_INLINE_SCRIPT = re.compile(r"(<script\b(?![^>]*\bsrc\s*=)[^>]*>).*?(</script\s*>)", re.I | re.S)
AFTER_BODY = "data-deckbuild-after-body"
_AFTER_BODY = re.compile(rf"<script\b[^>]*\b{AFTER_BODY}\b[^>]*>.*?</script\s*>\n?", re.I | re.S)


def _loads_files(body: str) -> bool:
    """Whether ``body`` names a file or URL that pandoc's --embed-resources would inline."""
    return bool(_EXTERNAL.search(_INLINE_SCRIPT.sub(r"\1\2", body)))


def after_body(html: str) -> str:
    """``html`` with every ``<script ... data-deckbuild-after-body>`` element moved, in
    order, to just before the last ``</body>``: after the page's start-up scripts."""
    moved = [m.group(0) for m in _AFTER_BODY.finditer(html)]
    if not moved:
        return html
    end = html.rfind("</body>")
    if end < 0:
        raise RuntimeError(f"{len(moved)} script(s) marked {AFTER_BODY}, but the page has no </body>")
    head, tail = _AFTER_BODY.sub("", html[:end]), html[end:]
    return head + "".join(m if m.endswith("\n") else m + "\n" for m in moved) + tail


def _placeholder(n: int, text: str) -> str:
    return f"<!--deckbuild-raw-{n}" + "\n" * text.count("\n") + "-->"


def stash(markdown: str) -> tuple[str, list[tuple[str, str]]]:
    """``markdown`` with each large self-contained raw HTML block replaced by a
    placeholder, and the (placeholder, original) pairs to put back."""
    pairs: list[tuple[str, str]] = []

    def swap(m: re.Match) -> str:
        body = m.group(1)
        if len(body) < LARGE or _loads_files(body):
            return m.group(0)
        holder = _placeholder(len(pairs), body)
        pairs.append((holder, body))
        return "```{=html}\n" + holder + "\n```"

    return _BLOCK.sub(swap, markdown), pairs


def restore(html: str, pairs: list[tuple[str, str]]) -> str:
    """Put the stashed blocks back into pandoc's output (each placeholder exactly once)."""
    for holder, body in pairs:
        if html.count(holder) != 1:
            raise RuntimeError(f"pandoc's output has {html.count(holder)} copies of the "
                               f"placeholder {holder.strip()!r}, expected 1")
        html = html.replace(holder, body, 1)
    return html
