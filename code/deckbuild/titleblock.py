"""The title slide's metadata, normalised as Quarto normalises it for its templates.

Quarto (src/command/render/pandoc.ts and src/resources/filters/modules/authors.lua) turns
``author`` / ``authors`` (a string, a list, or objects with name, url, email, orcid and
affiliations) into ``by-author``: one entry per author with ``name.literal`` and the
author's affiliations written out; ``institute`` entries become affiliations of the
author at the same position (the last author when there are more institutes than
authors, none when there is no author). ``author`` itself becomes the list of the names,
as strings, for templates that print ``$author$``. The date is formatted (dates.py),
and ``toc-title`` defaults to the language's "Table of contents". The markup that prints
all this lives in resources/partials/ (see partials.py).
"""

from __future__ import annotations

from . import dates, schema
from .errors import DeckWarning

META_KEYS = schema.names_with_role("meta")
AFFILIATION_FIELDS = ("id", "name", "department", "group", "address", "city", "region",
                      "country", "postal-code", "url", "isni", "ringgold", "ror")
AFFILIATION_ALIASES = {"state": "region", "affiliation-url": "url"}
AUTHOR_FIELDS = ("id", "url", "email", "fax", "phone", "orcid", "acknowledgements")
NAME_PARTS = ("given", "family", "dropping-particle", "non-dropping-particle")
TOC_TITLE = "Table of contents"     # Quarto's toc-title-document in English


def _as_list(value) -> list:
    if value is None:
        return []
    return list(value) if isinstance(value, list) else [value]


def _text(value) -> str:
    return "" if value is None else str(value)


def _literal(name) -> str:
    """The name as printed: a string as written; a mapping's literal, else given family."""
    if isinstance(name, dict):
        if name.get("literal"):
            return _text(name["literal"])
        return " ".join(_text(name[k]) for k in ("given", "family") if name.get(k))
    return _text(name)


def _affiliation(value) -> dict:
    """An affiliation as a mapping (a string is its name)."""
    if not isinstance(value, dict):
        return {"name": _text(value)}
    out = {}
    for key, item in value.items():
        key = AFFILIATION_ALIASES.get(key, key)
        if key in AFFILIATION_FIELDS:
            out[key] = item
    return out


def _author(value, known: list[dict]) -> dict:
    """One author: name (a mapping with ``literal``), its simple fields and its
    affiliations (``ref:`` entries looked up in the document's ``affiliations``)."""
    if not isinstance(value, dict):
        return {"name": {"literal": _text(value)}, "affiliations": []}
    author: dict = {"affiliations": []}
    parts = {k: value[k] for k in NAME_PARTS if k in value}
    name = value.get("name", parts or None)
    if name is not None:
        author["name"] = {**(name if isinstance(name, dict) else {}), "literal": _literal(name)}
    for key in AUTHOR_FIELDS:
        if key in value:
            author[key] = value[key]
    for key in ("affiliation", "affiliations"):
        for item in _as_list(value.get(key)):
            if isinstance(item, dict) and set(item) == {"ref"}:
                found = next((a for a in known if str(a.get("id")) == str(item["ref"])), None)
                if found:
                    author["affiliations"].append(found)
            else:
                author["affiliations"].append(_affiliation(item))
    if value.get("affiliation-url") and author["affiliations"]:
        author["affiliations"][0] = {**author["affiliations"][0], "url": value["affiliation-url"]}
    return author


def by_author(opts: dict) -> list[dict]:
    """Quarto's ``by-author`` list (see the module docstring)."""
    raw = opts.get("authors") or opts.get("author")
    known = [_affiliation(a) for a in _as_list(opts.get("affiliations"))]
    authors = [_author(a, known) for a in _as_list(raw)]
    for i, institute in enumerate(_as_list(opts.get("institute"))):
        if authors:
            authors[min(i, len(authors) - 1)]["affiliations"].append(_affiliation(institute))
    for author in authors:
        if not author["affiliations"]:
            del author["affiliations"]
    return authors


def _origin(opts: dict, key: str) -> tuple:
    origin = getattr(opts, "origin", None)
    return origin(key) if origin else (None, None)


def pandoc_meta(opts: dict, source, warnings: list[DeckWarning] | None = None,
                extra_keys: tuple[str, ...] = ()) -> dict:
    """The metadata pandoc's template gets: the ``meta`` options, ``by-author``, the
    names as ``author``, the formatted date, ``toc-title``, and ``extra_keys`` (the
    variables a deck's own template partial prints) as the options hold them."""
    meta = {k: opts[k] for k in META_KEYS if opts.get(k) is not None}
    authors = by_author(opts)
    if authors:
        meta["by-author"] = authors
        meta["author"] = [a["name"]["literal"] for a in authors if a.get("name")]
    if meta.get("institute") is not None:
        meta["institute"] = _as_list(meta["institute"])
    if opts.get("date") is not None:
        text, found = dates.format_date(opts["date"], opts.get("date-format"), opts.get("lang"),
                                        source, _origin(opts, "date"))
        if warnings is not None:
            warnings.extend(found)
        if text is None:
            meta.pop("date", None)
        else:
            meta["date"] = text
    if opts.get("toc"):
        meta["toc-title"] = opts.get("toc-title") or TOC_TITLE
    for key in extra_keys:
        if key not in meta and opts.get(key) is not None:
            meta[key] = opts[key]
    return meta
