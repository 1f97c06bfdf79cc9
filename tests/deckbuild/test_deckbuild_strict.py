"""Strictness where deckbuild imitates Quarto (issue 10): what it does not implement is a
warning naming file, line and option; what Quarto itself rejects is an error."""

import re
from pathlib import Path

import pytest

from deck_helpers import run_cli
from deckbuild.build import BuildSettings, build_document
from deckbuild.errors import DeckError

MATH = "html-math-method: katex\nembed-resources: true\nself-contained-math: true\n"


@pytest.fixture(scope="module")
def warnings(tmp_path_factory):
    from deck_helpers import copy_deck

    root = copy_deck("strict", tmp_path_factory.mktemp("strict"))
    result = build_document(root / "deck.qmd", BuildSettings(html_only=True), lambda *a, **k: None)
    return {(Path(w.file).name, w.line, w.message.split(" is ")[0].split(" has ")[0]): w
            for w in result.warnings}


@pytest.mark.parametrize("where", [
    ("_quarto.yml", 8, "option 'chalkboard'"),
    ("deck.qmd", 3, "option 'code-fold'"),
])
def test_an_unimplemented_document_option_is_a_warning_with_file_and_line(warnings, where):
    """Quarto accepts any metadata key (its front-matter schema is open); an option
    deckbuild does not act on must not pass in silence."""
    assert where in warnings, sorted(warnings)


@pytest.mark.parametrize("where", [
    ("deck.qmd", 10, "cell option 'code-fold'"),
    ("deck.qmd", 9, "cell option 'fig-width'"),
])
def test_an_unimplemented_cell_option_is_a_warning_with_file_and_line(warnings, where):
    """Quarto passes unknown cell options on as attributes of the cell's div
    (src/core/jupyter/jupyter.ts, "forward other attributes we don't know about"); on a
    Jupyter cell fig-width does nothing (src/resources/schema/cell-figure.yml tags it
    engine: knitr)."""
    assert where in warnings, sorted(warnings)
    if where[2].endswith("'fig-width'"):
        assert "knitr only" in warnings[where].message


@pytest.mark.parametrize("where", [
    ("deck.qmd", 16, "class '.not-a-class'"),
    ("deck.qmd", 18, "class '.column-margin'"),
    ("deck.qmd", 16, "shortcode 'lipsum'"),
])
def test_an_unimplemented_class_or_shortcode_is_a_warning_with_file_and_line(warnings, where):
    """Classes nothing styles or handles (Quarto's column-margin, an HTML-format layout
    class, https://quarto.org/docs/authoring/article-layout.html) and Quarto shortcodes other
    than include (https://quarto.org/docs/authoring/shortcodes.html) are reported."""
    assert where in warnings, sorted(warnings)


def test_reveal_classes_are_not_reported(warnings):
    """reveal.js's fragment classes are implemented by reveal.js itself."""
    assert not [w for w in warnings if "fragment" in w[2] or "fade-up" in w[2]]


@pytest.mark.parametrize("front, line, message", [
    ("slide-number: 3\n", 2, "option 'slide-number' must be true or false or one of h.v, h/v, c, c/t, got 3"),
    ("transition: spin\n", 2, "option 'transition' must be one of none, fade, slide, convex, concave, zoom"),
    ("format: revelajs\n", 2, "format 'revelajs' is not supported"),
    ("format:\n  revealjs: default\n  pdff: default\n", 4, "pdff is not a valid output format"),
])
def test_a_value_quarto_rejects_is_an_error_with_file_and_line(tmp_path, front, line, message):
    """Quarto validates option values against its schema (src/resources/schema/
    document-slides.yml, document-reveal-transitions.yml) and format names
    (src/core/lib/yaml-schema/front-matter.ts: "${value} is not a valid output format")."""
    doc = tmp_path / "d.qmd"
    doc.write_text(f"---\n{front}{MATH}---\n\n## S\n")
    with pytest.raises(DeckError, match=re.escape(message)) as info:
        build_document(doc, BuildSettings(html_only=True), lambda *a, **k: None)
    assert Path(info.value.file).name == "d.qmd" and info.value.line == line


def test_another_valid_format_is_a_warning(tmp_path):
    """A document may list several formats (https://quarto.org/docs/output-formats/all-formats.html);
    deckbuild renders revealjs only and says so for the others."""
    doc = tmp_path / "d.qmd"
    doc.write_text(f"---\nformat:\n  revealjs: default\n  html: default\n{MATH}---\n\n## S\n")
    result = build_document(doc, BuildSettings(html_only=True), lambda *a, **k: None)
    assert [(w.line, w.message) for w in result.warnings] == [
        (4, "format 'html' is not rendered by deckbuild (only revealjs)")]


def test_warnings_are_printed_by_the_command_line(tmp_path):
    """Warnings read like Quarto's validation messages: file:line first. `chalkboard` is a
    Quarto revealjs option (src/resources/schema/document-reveal-tools.yml) deckbuild does
    not implement."""
    doc = tmp_path / "d.qmd"
    doc.write_text(f"---\n{MATH}chalkboard: true\n---\n\n## S\n\n[x]{{.nowhere}}\n")
    proc = run_cli("render", str(doc), "--html-only")
    assert proc.returncode == 0, proc.stderr
    assert f"{doc}:5: warning: option 'chalkboard' is not implemented by deckbuild" in proc.stderr
    assert f"{doc}:10: warning: class '.nowhere' is not implemented" in proc.stderr


def test_classes_inside_code_are_skipped_with_the_fence_rules_of_commonmark(tmp_path):
    """A fence line with an info string (```` ```python ````) inside a code block does not
    close it (CommonMark): the class in the code is not reported, the one after the real
    closing fence is. The class check and the include reader share one fence tracker."""
    from deckbuild import source, strict

    doc = tmp_path / "d.qmd"
    doc.write_text("## S\n\n```\n```python\n[x]{.in-code}\n```\n\n[y]{.after-code}\n")
    warnings = strict.check_classes(source.parse(doc, tmp_path), css="")
    assert [(w.line, w.message.split(" is ")[0]) for w in warnings] == [(8, "class '.after-code'")]
