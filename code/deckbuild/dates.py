"""A document's ``date`` as Quarto shows it: read, then formatted with ``date-format``.

Quarto formats every date (src/core/date.ts, resolveAndFormatDate): the keywords
``today``, ``now`` and ``last-modified`` (the source file's modification time) become
dates; any other text is read as a date (a few fixed forms such as ``MM/DD/YYYY`` and
``YYYY-MM-DD``, else the JavaScript engine's own date parser, which reads "October 2025"
as 1 October 2025 and "06.13.2024" as 13 June 2024) and written with the format, ``iso``
(YYYY-MM-DD) unless ``date-format`` says otherwise. A text no parser reads shows as
"Invalid Date", as under Quarto (with a warning here). ``date`` may also be a mapping
``{value: ..., format: ...}``. The reading and writing run in node (resources/dates.js),
whose V8 parser is the one Quarto's Deno uses.
"""

from __future__ import annotations

import datetime
import json
import subprocess
from pathlib import Path

from .errors import DeckError, DeckWarning
from .resources import resource

SPECIAL = ("today", "now", "last-modified")


def _as_text(value) -> str:
    """YAML's own dates (an unquoted 2024-06-20) as the text the author wrote."""
    if isinstance(value, datetime.datetime):
        return value.isoformat(sep=" ")
    if isinstance(value, datetime.date):
        return value.isoformat()
    return str(value)


def request(date, date_format, lang, source: Path) -> dict | None:
    """What dates.js is asked (None when there is no date)."""
    fmt = date_format
    if isinstance(date, dict):
        fmt = date.get("format") or date_format
        date = date.get("value")
    if date in (None, "", False):
        return None
    value = _as_text(date)
    if value == "last-modified":
        value = {"mtime": Path(source).stat().st_mtime * 1000}
    return {"value": value, "format": str(fmt or "iso"), "locale": str(lang or "en")}


def format_date(date, date_format, lang, source: Path,
                where: tuple = (None, None)) -> tuple[str | None, list[DeckWarning]]:
    """The date's text on the title slide, and a warning (at ``where``: file, line) when
    Quarto would show "Invalid Date"."""
    req = request(date, date_format, lang, source)
    if req is None:
        return None, []
    try:
        proc = subprocess.run(["node", str(resource("dates.js")), json.dumps(req)],
                              capture_output=True, text=True)
    except FileNotFoundError:
        raise DeckError("node not found on PATH: deckbuild needs it to format the date (as "
                        "to compile the theme); install Node.js", *where) from None
    if proc.returncode != 0:
        raise DeckError(f"formatting the date {req['value']!r} failed: "
                        f"{proc.stderr.strip() or 'node exited with ' + str(proc.returncode)}")
    answer = json.loads(proc.stdout)
    warnings = []
    if answer.get("invalid"):
        warnings.append(DeckWarning(
            f"date {req['value']!r} is not a date any of Quarto's parsers reads: the title "
            "slide shows \"Invalid Date\", as Quarto's would (write it as YYYY-MM-DD, or a "
            "month name and a year)", *(where if where[0] else (source, None))))
    return answer["text"], warnings
