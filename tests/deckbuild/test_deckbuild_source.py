"""The .qmd reader: front matter, includes with their origins, cells and cell options."""

from pathlib import Path

import pytest

from deckbuild.errors import DeckError
from deckbuild.source import Cell, Markdown, check_resources, parse


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def test_includes_expand_recursively_and_keep_their_origin(tmp_path):
    # a nested include's path is relative to the document's folder, as in Quarto
    write(tmp_path / "parts" / "a.qmd", "## From A\n\n{{< include parts/b.qmd >}}\n")
    write(tmp_path / "parts" / "b.qmd", "line one of b\n\n```{python}\n#| echo: true\nx = 1\n```\n")
    doc = parse(write(tmp_path / "d.qmd", "---\ntitle: T\n---\n\n{{< include parts/a.qmd >}}\n"), tmp_path)
    assert doc.front.data == {"title": "T"}
    text_lines = [l for b in doc.blocks if isinstance(b, Markdown) for l in b.lines]
    b_line = next(l for l in text_lines if l.text == "line one of b")
    assert b_line.file.name == "b.qmd" and b_line.lineno == 1
    (cell,) = doc.cells
    assert cell.file.name == "b.qmd" and cell.line == 3
    assert cell.options == {"echo": True} and cell.code == "x = 1"
    assert cell.slide_title == "From A"


def test_escaped_shortcode_is_kept_literally(tmp_path):
    doc = parse(write(tmp_path / "d.qmd", "Write {{</* include x.qmd */>}} to include.\n"), tmp_path)
    assert "{{< include x.qmd >}}" in doc.blocks[0].lines[0].text


def test_missing_include_names_file_and_line(deck):
    root = deck("errors")
    with pytest.raises(DeckError) as info:
        parse(root / "missing-include.qmd", root)
    assert (Path(info.value.file).name, info.value.line) == ("missing-include.qmd", 7)
    assert "included file not found: parts/nowhere.qmd" in str(info.value)


def test_include_cycle_is_an_error(tmp_path):
    write(tmp_path / "a.qmd", "{{< include b.qmd >}}\n")
    write(tmp_path / "b.qmd", "{{< include a.qmd >}}\n")
    with pytest.raises(DeckError, match="include cycle"):
        parse(tmp_path / "a.qmd", tmp_path)


def test_unknown_cell_option_is_a_warning_naming_file_line_and_option(deck):
    """Quarto passes unknown cell options on (as attributes of the cell's div); deckbuild
    drops them, and says so."""
    root = deck("errors")
    doc = parse(root / "unknown-option.qmd", root)
    (warning,) = doc.warnings
    assert (Path(warning.file).name, warning.line) == ("unknown-option.qmd", 9)
    assert "cell option 'fig-colour' is not implemented by deckbuild" in warning.message
    assert "fig-colour" not in doc.cells[0].options


def test_bad_option_value(deck):
    root = deck("errors")
    with pytest.raises(DeckError) as info:
        parse(root / "bad-value.qmd", root)
    assert info.value.line == 8
    assert "'output-location' must be one of default, fragment, column, column-fragment, slide" in str(info.value)


def test_malformed_cell_option_yaml(deck):
    root = deck("errors")
    with pytest.raises(DeckError) as info:
        parse(root / "cell-yaml.qmd", root)
    assert Path(info.value.file).name == "cell-yaml.qmd" and info.value.line in (9, 10)
    assert "malformed cell option YAML" in str(info.value)


def test_unclosed_cell_fence(deck):
    root = deck("errors")
    with pytest.raises(DeckError) as info:
        parse(root / "unclosed-fence.qmd", root)
    assert (Path(info.value.file).name, info.value.line) == ("unclosed-fence.qmd", 7)
    assert "unclosed cell fence" in str(info.value)


def test_malformed_front_matter_names_line(deck):
    root = deck("errors")
    with pytest.raises(DeckError) as info:
        parse(root / "bad-yaml.qmd", root)
    assert Path(info.value.file).name == "bad-yaml.qmd" and info.value.line in (5, 6)
    assert "malformed YAML" in str(info.value)


def test_unclosed_front_matter(deck):
    root = deck("errors")
    with pytest.raises(DeckError, match="front matter opened with '---' is never closed") as info:
        parse(root / "unclosed-front.qmd", root)
    assert info.value.line == 1


def test_r_cells_are_an_error_that_says_quarto_needs_r_and_knitr(deck):
    root = deck("errors")
    with pytest.raises(DeckError, match=r"an \{r\} cell runs R through knitr: Quarto needs R "
                                        r"and the knitr package") as info:
        parse(root / "engine.qmd", root)
    assert (Path(info.value.file).name, info.value.line) == ("engine.qmd", 7)


def test_missing_image_names_file_and_line(deck):
    """A missing image is a warning (Quarto builds the deck and pandoc keeps the link),
    naming the file and line."""
    root = deck("errors")
    doc = parse(root / "missing-image.qmd", root)
    assert check_resources(doc) == []
    (warning,) = [w for w in doc.warnings if "image not found" in w.message]
    assert (Path(warning.file).name, warning.line) == ("missing-image.qmd", 9)
    assert "image not found: img/missing.png" in str(warning)


def test_all_listed_cell_options_are_accepted(tmp_path):
    opts = """#| echo: fenced
#| eval: true
#| output: asis
#| include: true
#| error: false
#| warning: true
#| fig-cap: "Cap"
#| fig-alt: "Alt"
#| label: fig-x
#| classes: a b
#| code-line-numbers: "1|2-3"
#| output-location: column-fragment
"""
    doc = parse(write(tmp_path / "d.qmd", f"## S\n\n```{{python}}\n{opts}x = 1\n```\n"), tmp_path)
    (cell,) = doc.cells
    assert isinstance(cell, Cell) and len(cell.options) == 12 and doc.warnings == []
    assert cell.options["code-line-numbers"] == "1|2-3"


def test_plain_code_blocks_are_not_cells(tmp_path):
    text = "````markdown\n```{python}\nx = 1\n```\n````\n\n```python\ny = 2\n```\n"
    doc = parse(write(tmp_path / "d.qmd", text), tmp_path)
    assert doc.cells == []
