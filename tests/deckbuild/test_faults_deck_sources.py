"""Fault cases (issue 11): bad sources get one line naming the file and line, never a
traceback, and nothing is built from them."""

from pathlib import Path

import pytest

from deck_helpers import run_cli

TRACEBACK = "Traceback (most recent call last)"


def _render(root: Path, name: str, text: str | bytes):
    doc = root / name
    doc.write_bytes(text if isinstance(text, bytes) else text.encode())
    return run_cli("render", str(doc), "--html-only")


def _fails_with(proc, location: str, message: str) -> None:
    assert proc.returncode == 1, proc.stderr
    assert f"{location}: {message}" in proc.stderr, proc.stderr
    assert TRACEBACK not in proc.stderr


def test_slide_level_that_is_not_a_number_is_an_option_error(deck):
    root = deck("errors")
    proc = _render(root, "level.qmd", '---\ntitle: "L"\nslide-level: abc\n---\n\n## One\n')
    _fails_with(proc, "level.qmd:3", "option 'slide-level' must be one of 1, 2, 3, 4, 5, 6, got 'abc'")


@pytest.mark.parametrize("where", ["document", "include", "project"])
def test_a_source_that_is_not_utf8_names_its_file_and_line(deck, where):
    root = deck("errors")
    latin1 = "café".encode("latin-1")
    body = b'---\ntitle: "T"\n---\n\n## One\n\n'
    if where == "document":
        proc = _render(root, "latin.qmd", body + b"A " + latin1 + b"\n")
        location = "latin.qmd:7"
    elif where == "include":
        (root / "part.qmd").write_bytes(b"## Two\n\n" + latin1 + b"\n")
        proc = _render(root, "main.qmd", body + b"{{< include part.qmd >}}\n")
        location = "part.qmd:3"
    else:
        config = root / "_quarto.yml"
        config.write_bytes(config.read_bytes() + b"footer: " + latin1 + b"\n")
        proc = _render(root, "plain.qmd", body)
        location = "_quarto.yml:9"
    _fails_with(proc, location, "not UTF-8 text: byte 0xe9 at column")
    assert "save the file as UTF-8" in proc.stderr


def test_an_unclosed_div_is_an_error_at_its_opening_line(deck):
    root = deck("errors")
    proc = _render(root, "div.qmd", '---\ntitle: "D"\n---\n\n## One\n\n::: {.callout-note}\n'
                                    "A note\n\n## Two\n\nThis slide would sit inside the callout\n")
    _fails_with(proc, "div.qmd:7", "unclosed div '::: {.callout-note}'")
    assert not (root / "_output" / "div.html").exists()


def test_an_unclosed_div_in_an_included_file_names_that_file(deck):
    root = deck("errors")
    (root / "part.qmd").write_text("## Two\n\n:::: {.columns}\n\n::: {.column}\nleft\n:::\n")
    proc = _render(root, "main.qmd", '---\ntitle: "D"\n---\n\n## One\n\n'
                                     "{{< include part.qmd >}}\n\n## Three\n")
    _fails_with(proc, "part.qmd:3", "unclosed div ':::: {.columns}'")


def test_closed_nested_divs_and_colons_in_code_are_not_errors(deck):
    root = deck("errors")
    proc = _render(root, "nested.qmd", '---\ntitle: "N"\n---\n\n## One\n\n'
                                       ":::: {.columns}\n::: {.column}\nleft\n:::\n"
                                       "::: column\n```\n::: {.not-a-div}\n```\n:::\n::::\n\n"
                                       "::: {.notes}\nnotes\n:::\n")
    assert proc.returncode == 0, proc.stderr
    assert (root / "_output" / "nested.html").exists()


def test_a_pandoc_error_points_at_the_qmd_line_not_the_intermediate_markdown(deck):
    """A YAML block in the body with bad YAML makes pandoc fail; its message names the
    intermediate markdown, which the author never wrote."""
    root = deck("errors")
    proc = _render(root, "meta.qmd", '---\ntitle: "M"\n---\n\n## One\n\n```{python}\n'
                                     'print("a cell shifts the markdown lines")\n```\n\n'
                                     "---\nfoo: [1, 2\nbar: x\n---\n\n## Two\n")
    assert proc.returncode == 1 and TRACEBACK not in proc.stderr
    error = proc.stderr.split("\nERROR ", 1)[1]
    assert "meta.qmd:13: pandoc: Error parsing YAML metadata" in error, proc.stderr
    assert "meta.md" not in error
