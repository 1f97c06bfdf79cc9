"""Large raw HTML blocks go around pandoc, not through it.

A cell may display a whole web page of its own (the explorer slide embeds a runtime and two
models: about 8 MB). pandoc copies a ```` ```{=html} ```` block to its output unchanged, but
parsing and embedding-resource passes over megabytes of it cost seconds on every build.
So, before pandoc runs, each large block that references nothing outside itself is swapped
for a placeholder comment (spanning as many lines, so pandoc's line numbers still point at
the right markdown line), and the block is put back into pandoc's output afterwards. The
HTML file is the same as pandoc would have written; blocks that load files (``src=`` or
``href=`` to a path, CSS ``url()`` to a path) still go through pandoc, which embeds them.
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


def _placeholder(n: int, text: str) -> str:
    return f"<!--deckbuild-raw-{n}" + "\n" * text.count("\n") + "-->"


def stash(markdown: str) -> tuple[str, list[tuple[str, str]]]:
    """``markdown`` with each large self-contained raw HTML block replaced by a
    placeholder, and the (placeholder, original) pairs to put back."""
    pairs: list[tuple[str, str]] = []

    def swap(m: re.Match) -> str:
        body = m.group(1)
        if len(body) < LARGE or _EXTERNAL.search(body):
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
