"""A deck holding only the explorer slide (slides/chapters/08a-explorer.qmd), between a first
and a last slide, with the real deck's theme, size and set-up, written to a directory, so
that the explorer's browser tests and benchmark build in seconds instead of building the
whole deck."""

from __future__ import annotations

from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
CHAPTER = REPO / "slides" / "chapters" / "08a-explorer.qmd"

QUARTO = """project:
  output-dir: _output
  render:
    - deck.qmd
execute:
  echo: false
  warning: false
format:
  revealjs:
    theme: [default, {theme}]
    html-math-method: katex
    embed-resources: true
    self-contained-math: true
    slide-number: c/t
    width: 1050
    height: 700
    margin: 0.1
    center: false
    transition: none
    hash: true
deckbuild:
  python-path: [{code}]
"""

SETUP = """---
pagetitle: "Explorer test deck"
---

```{{python}}
#| include: false
import torch
import transformer_lab as tl
from transformer_lab import teaching as tt
torch.manual_seed(0)
torch.set_num_threads(1)
tt.set_cache_directory({cache!r})   # the real deck's cache: its trained models
```

## A first slide

The explorer is on the next slide.

"""

AFTER = """

## A last slide

The slide after the explorer: a clicker's PageDown lands here.
"""


def write_deck(directory: Path) -> Path:
    """Write the deck into ``directory``; returns the path of its ``deck.qmd``."""
    directory.mkdir(parents=True, exist_ok=True)
    theme = directory / "custom_lab.scss"
    theme.write_text((REPO / "custom_lab.scss").read_text())
    (directory / "_quarto.yml").write_text(QUARTO.format(theme=theme.name, code=REPO / "code"))
    cache = str(REPO / ".cache" / "transformer_lab")
    deck = directory / "deck.qmd"
    deck.write_text(SETUP.format(cache=cache) + CHAPTER.read_text() + AFTER)
    return deck
