"""``deckbuild: quarto-version``: render as an older Quarto release, whose revealjs rules
differ from the newest (code blocks at line height 1.2em before 1.6, inline code at the
text's size before 1.6.27: theme/versions/). The option is checked, a document may set
it, and $DECKBUILD_QUARTO_VERSION is its default. One small deck is built twice (as
Quarto 1.5 and with the newest rules) and opened in Chromium."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from deck_helpers import open_deck
from deckbuild import browser, theme
from deckbuild.build import BuildSettings, build_document
from deckbuild.errors import DeckError
from deckbuild.options import Source, load_project, resolve_options

CONFIG = """project:
  output-dir: _output
format:
  revealjs:
    embed-resources: true
{extra}"""

DECK = """---
title: "Versions"
{front}---

## Code

Words with `inline code` in them.

```python
def area(r):
    return 3.14 * r ** 2
```
"""


def _build(root: Path, front: str = "") -> Path:
    root.mkdir(parents=True)
    (root / "_quarto.yml").write_text(CONFIG.format(extra=""))
    (root / "deck.qmd").write_text(DECK.format(front=front))
    return build_document(root / "deck.qmd", BuildSettings(html_only=True),
                          lambda *a, **k: None).html


MEASURE = """() => { const cs = e => getComputedStyle(e);
  const s = Reveal.getSlides().find(s => (s.querySelector('h2') || {}).textContent === 'Code');
  const pre = s.querySelector('pre'), code = s.querySelector('p code');
  const line = pre.querySelector('code.sourceCode > span');
  return {pre: [cs(pre).fontSize, cs(pre).lineHeight], p: cs(code.parentElement).fontSize,
          code: cs(code).fontSize, line: cs(line).display}; }"""


@pytest.fixture(scope="module")
def measured(tmp_path_factory, monkeypatch_module):
    monkeypatch_module.delenv("DECKBUILD_QUARTO_VERSION", raising=False)
    tmp = tmp_path_factory.mktemp("versions")
    decks = {"newest": _build(tmp / "newest"),
             "1.5": _build(tmp / "old", 'deckbuild:\n  quarto-version: "1.5"\n')}
    out = {}
    with browser.browser() as ctx:
        for name, html in decks.items():
            page = open_deck(ctx, html)
            out[name] = page.evaluate(MEASURE)
            page.close()
    return out


@pytest.fixture(scope="module")
def monkeypatch_module():
    with pytest.MonkeyPatch.context() as mp:
        yield mp


def test_code_is_drawn_with_that_releases_rules(measured):
    """Newest: code blocks 22px at line height 1.3, inline code at 0.875em of the 40px
    text, pandoc's line spans inline-block. As Quarto 1.5: line height 1.2em, inline code
    at the text's size, the line spans inline."""
    new, old = measured["newest"], measured["1.5"]
    assert new["pre"] == ["22px", "28.6px"] and old["pre"] == ["22px", "26.4px"]
    assert new["p"] == old["p"] == "40px"
    assert new["code"] == "35px" and old["code"] == "40px"
    assert new["line"] == "inline-block" and old["line"] == "inline"


def test_each_release_gets_the_layers_it_drew_differently():
    names = lambda v: [p.file.name for p in theme.version_layers(v)]  # noqa: E731
    assert names("1.4.549") == names("1.5") == ["_before-1.6.scss", "_before-1.6.27.scss"]
    assert names("1.6") == names("1.6.26") == ["_before-1.6.27.scss"]
    assert names("1.6.27") == names("1.9.38") == names("current") == []


def test_the_layers_follow_the_base_rules_and_precede_the_users(tmp_path):
    """A deck's own rules still win over its release's, as under that Quarto."""
    own = tmp_path / "own.scss"
    own.write_text("/*-- scss:rules --*/\n.reveal pre { line-height: 2em; }\n")
    order = [p.file.name for p in theme.assemble([str(own)], quarto_version="1.5.57")]
    assert order[-5:] == ["_layout.scss", "_notes.scss", "_before-1.6.scss",
                          "_before-1.6.27.scss", "own.scss"]
    assert "_before-1.6.scss" not in [p.file.name for p in theme.assemble([str(own)])]


def _options(tmp_path: Path, project: str = "", front: dict | None = None):
    (tmp_path / "_quarto.yml").write_text(project)
    doc = tmp_path / "deck.qmd"
    return resolve_options(load_project(tmp_path), doc, Source(front or {}, doc, 1, ""))


def test_the_environment_is_the_default_and_the_document_wins(tmp_path, monkeypatch):
    monkeypatch.delenv("DECKBUILD_QUARTO_VERSION", raising=False)
    assert _options(tmp_path).quarto_version == "current"
    monkeypatch.setenv("DECKBUILD_QUARTO_VERSION", "1.5.57")
    assert _options(tmp_path).quarto_version == "1.5.57"
    assert _options(tmp_path, 'deckbuild:\n  quarto-version: "1.7"\n').quarto_version == "1.7"
    front = {"deckbuild": {"quarto-version": "1.4.549"}, "title": "T"}
    opts = _options(tmp_path, 'deckbuild:\n  quarto-version: "1.7"\n', front)
    assert opts.quarto_version == "1.4.549" and "deckbuild" not in opts


@pytest.mark.parametrize("front, message", [
    ({"deckbuild": {"quarto-version": "1.x"}},
     "option 'deckbuild: quarto-version' must be current or a version such as \"1.4.557\", got '1.x'"),
    ({"deckbuild": {"quarto-version": 1.5}},
     "option 'deckbuild: quarto-version' must be current or a version such as \"1.4.557\", got 1.5"),
    ({"deckbuild": {"python-path": ["code"]}},
     "option 'deckbuild: python-path' in a document's front matter is a project option "
     "(set it in _quarto.yml); a document may set quarto-version"),
    ({"deckbuild": "1.5"}, "'deckbuild' must be a mapping of options"),
])
def test_a_bad_document_version_is_a_clear_error(tmp_path, monkeypatch, front, message):
    monkeypatch.delenv("DECKBUILD_QUARTO_VERSION", raising=False)
    with pytest.raises(DeckError, match=re.escape(message)):
        _options(tmp_path, front=front)


def test_a_bad_environment_version_is_a_clear_error(tmp_path, monkeypatch):
    monkeypatch.setenv("DECKBUILD_QUARTO_VERSION", "latest")
    with pytest.raises(DeckError, match=re.escape(
            "environment variable DECKBUILD_QUARTO_VERSION must be current or a version such "
            "as \"1.4.557\", got 'latest'")):
        _options(tmp_path)
