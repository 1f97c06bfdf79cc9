"""How the deck's maths is typeset: Quarto's ``html-math-method`` (src/resources/schema/
document-options.yml: plain, webtex, gladtex, mathml, mathjax, katex, or
``{method: ..., url: ...}``).

- ``mathjax`` (Quarto's revealjs default, also when the option is unset): reveal.js's math
  plugin loads MathJax from Quarto's CDN address (or the ``url`` given) when the deck is
  shown, as under Quarto (src/format/reveal/format-reveal.ts, revealjsFormat; the
  template's ``math:`` block). It needs the network then, which a warning says once.
- ``katex``: deckbuild's own KaTeX from ``node_modules/``, embedded with
  ``embed-resources`` (Quarto embeds it only with ``self-contained-math: true`` and loads
  it from a CDN otherwise, which a warning says) or copied beside the HTML.
- ``mathml``, ``plain``, ``webtex``: pandoc's own (webtex fetches images of the formulas
  from a web service).
- ``gladtex``: refused (it needs the GladTeX program run on pandoc's output).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from .errors import DeckError, DeckWarning

# Quarto's MathJax for revealjs when html-math-method is unset (MathJax 2, loaded by
# reveal.js's math plugin): the newest, and the older releases' (quarto-cli's
# src/format/reveal/format-reveal.ts: 2.7.9 from 1.6.14, on jsDelivr from 1.8.18)
QUARTO_MATHJAX_URL = "https://cdn.jsdelivr.net/npm/mathjax@2.7.9/MathJax.js?config=TeX-AMS_HTML-full"
QUARTO_MATHJAX_URLS = (
    ((1, 6, 14), "https://cdnjs.cloudflare.com/ajax/libs/mathjax/2.7.0/MathJax.js?config=TeX-AMS_HTML-full"),
    ((1, 8, 18), "https://cdnjs.cloudflare.com/ajax/libs/mathjax/2.7.9/MathJax.js?config=TeX-AMS_HTML-full"),
)
# `html-math-method: mathjax` written out replaces Quarto's default (its method and url), so
# pandoc's own MathJax address is used: MathJax 3 (pandoc's --mathjax without a url)
PANDOC_MATHJAX_URL = "https://cdn.jsdelivr.net/npm/mathjax@3/es5/tex-chtml-full.js"
# what pandoc writes around the maths it leaves for a script (katex, mathjax) or renders
MATH_HTML_RE = re.compile(r'<span class="math (?:inline|display)"|<math[ >]|<img[^>]*class="math ')


@dataclass(frozen=True)
class MathMethod:
    method: str
    url: str | None = None      # the url given with it, if any
    explicit: bool = True       # False: unset in the sources, Quarto's default
    quarto_version: str = "current"

    @property
    def mathjax_url(self) -> str:
        if self.url:
            return self.url
        if self.explicit:
            return PANDOC_MATHJAX_URL
        return default_mathjax_url(self.quarto_version)


def default_mathjax_url(quarto_version: str) -> str:
    """Quarto's MathJax address for a deck that does not set html-math-method, as the
    release ``quarto_version`` ("current": the newest) wrote it."""
    if quarto_version != "current":
        version = tuple(int(x) for x in quarto_version.split("."))
        for first_newer, url in QUARTO_MATHJAX_URLS:
            if version < first_newer:
                return url
    return QUARTO_MATHJAX_URL


def _where(opts, key: str, doc_path) -> tuple:
    """The YAML file and line that set ``key`` (the document when none did)."""
    file, line = opts.origin(key) if hasattr(opts, "origin") else (None, None)
    return (file, line) if file else (doc_path, None)


def math_method(opts: dict) -> MathMethod:
    value = opts.get("html-math-method")
    version = str(getattr(opts, "quarto_version", "current"))
    if value is None:
        return MathMethod("mathjax", explicit=False, quarto_version=version)
    if isinstance(value, dict):
        return MathMethod(value["method"], value.get("url"), quarto_version=version)
    return MathMethod(value, quarto_version=version)


def check(opts, doc_path) -> list[DeckWarning]:
    """Refuse what cannot be built; warn about a url deckbuild does not use."""
    method = math_method(opts)
    if method.method == "gladtex":
        raise DeckError("html-math-method: gladtex is not supported by deckbuild (it needs the "
                        "GladTeX program run on pandoc's output); use mathjax, katex, mathml or "
                        "plain", *_where(opts, "html-math-method", doc_path))
    if method.url and method.method == "katex":
        return [DeckWarning(f"html-math-method's url {method.url} is not used: deckbuild uses "
                            "its own KaTeX from node_modules",
                            *_where(opts, "html-math-method", doc_path))]
    return []


def pandoc_args(method: MathMethod, katex_url: str) -> list[str]:
    if method.method == "katex":
        return [f"--katex={katex_url}"]
    if method.method == "mathjax":
        return [f"--mathjax={method.mathjax_url}"]
    if method.method in ("mathml", "webtex"):
        return [f"--{method.method}" + (f"={method.url}" if method.url else "")]
    return []                     # plain


def reveal_config(method: MathMethod) -> dict:
    """The ``math`` entry of Reveal.initialize for reveal.js's math plugin (MathJax 2), as
    Quarto's template writes it; empty for the other methods."""
    if method.method != "mathjax":
        return {}
    url, _, query = method.mathjax_url.partition("?")
    config = dict(p.split("=", 1) for p in query.split("&") if "=" in p).get("config")
    return {"math": {
        "mathjax": url, "config": config or "TeX-AMS_HTML-full",
        "tex2jax": {"inlineMath": [["\\(", "\\)"]], "displayMath": [["\\[", "\\]"]],
                    "balanceBraces": True, "processEscapes": False, "processRefs": True,
                    "processEnvironments": True, "preview": "TeX",
                    "skipTags": ["script", "noscript", "style", "textarea", "pre", "code"],
                    "ignoreClass": "tex2jax_ignore", "processClass": "tex2jax_process"}}}


def has_math(html: str) -> bool:
    return MATH_HTML_RE.search(html) is not None


def warnings(opts, html: str, doc_path) -> list[DeckWarning]:
    """What a deck with maths should know about where its maths comes from (nothing for a
    deck without maths)."""
    if not has_math(html):
        return []
    method = math_method(opts)
    where = _where(opts, "html-math-method", doc_path)
    embed = opts.get("embed-resources")
    if method.method == "mathjax":
        said = "" if method.explicit else "html-math-method is not set, so MathJax (Quarto's default) is used: "
        extra = (" (self-contained-math cannot embed it offline)"
                 if embed and opts.get("self-contained-math") else "")
        return [DeckWarning(f"{said}the maths is typeset by MathJax loaded from "
                            f"{method.mathjax_url} when the deck is shown, as under Quarto: "
                            f"it needs the network then{extra}; html-math-method: katex "
                            "works offline", *where)]
    if method.method == "katex" and embed and not opts.get("self-contained-math"):
        return [DeckWarning("embed-resources: true without self-contained-math: true: Quarto "
                            "leaves the maths library out of the file and loads KaTeX from a "
                            "CDN when the deck is viewed; deckbuild embeds its own KaTeX, so "
                            "the deck works offline (self-contained-math: true makes Quarto "
                            "embed it too)",
                            *_where(opts, "self-contained-math" if opts.origin(
                                "self-contained-math")[0] else "embed-resources", doc_path))]
    if method.method == "webtex":
        return [DeckWarning("html-math-method: webtex: the formulas are images from a web "
                            "service, so they need the network", *where)]
    return []
