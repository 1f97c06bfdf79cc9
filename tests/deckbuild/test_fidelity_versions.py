"""benchmarks/fidelity_versions.py: which older Quarto rules a deck's version gets, and
that they reach the built page (the measurement itself runs over the corpus by hand)."""

import sys
from dataclasses import dataclass
from pathlib import Path

from deck_helpers import REPO

sys.path.insert(0, str(REPO / "benchmarks"))

import fidelity_versions as fv  # noqa: E402


def test_each_version_gets_the_rules_it_drew_differently():
    """Before 1.6: code line height, inline spans, em column margins, callout margins;
    before 1.6.27: inline code at 1em; from 1.6.27 on: nothing."""
    assert "line-height: 1.2em" in fv.older_rules("1.5.57") and "font-size: 1em" in fv.older_rules("1.4.549")
    assert "line-height: 1.2em" not in fv.older_rules("1.6.20") and "font-size: 1em" in fv.older_rules("1.6.20")
    assert fv.older_rules("1.6.39") == "" and fv.older_rules("1.9.38") == ""


def test_the_rules_are_added_to_the_built_page(tmp_path):
    @dataclass
    class Built:
        ok: bool
        html: Path

    page = tmp_path / "deck.html"
    page.write_text("<html><head><title>t</title></head><body></body></html>")
    build = fv.with_rules(lambda deck, workdir: Built(True, page), ".x { color: red; }")
    build(None, tmp_path)
    assert page.read_text().count("<style>.x { color: red; }</style>") == 1
    assert page.read_text().index("<style>") < page.read_text().index("</head>")
