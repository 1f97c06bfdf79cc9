"""What real Quarto decks write and our renderer must read as Quarto does (issue 19):
``project: render:`` globs, nested include paths, code fences in list items and ``:::``
in HTML comments, Quarto's SCSS section markers, the built-in themes, the npm packages of
a deck that lives outside this repository. Each deck here is a few lines written for the
test."""

import os
import re
from pathlib import Path

import pytest

from deck_helpers import REPO, run_cli
from deckbuild import resources, theme
from deckbuild.errors import DeckError
from deckbuild.options import load_project
from deckbuild.source import check_divs, parse


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


# --- project: render: ---------------------------------------------------------------

def _project(root: Path, render: str) -> list[str]:
    write(root / "_quarto.yml", f"project:\n  render:\n{render}")
    return [p.relative_to(root).as_posix() for p in load_project(root).render]


def test_render_globs_match_at_any_depth_and_negations_remove(tmp_path):
    """``*.qmd`` matches in every folder (Quarto prefixes ``**/``), ``!x.qmd`` removes x
    wherever it is; names starting with ``_`` are partials, never rendered."""
    for name in ("a.qmd", "b.qmd", "skip.qmd", "talks/c.qmd", "talks/skip.qmd",
                 "_part.qmd", "talks/_inc.qmd", "notes.md"):
        write(tmp_path / name, "## S\n")
    assert _project(tmp_path, '    - "*.qmd"\n    - "!skip.qmd"\n') == \
        ["a.qmd", "b.qmd", "talks/c.qmd"]


def test_render_folder_rooted_glob_and_braces(tmp_path):
    for name in ("a.qmd", "talks/c.qmd", "talks/d.qmd", "other/e.qmd"):
        write(tmp_path / name, "## S\n")
    assert _project(tmp_path, "    - talks/\n    - /a.qmd\n") == ["a.qmd", "talks/c.qmd", "talks/d.qmd"]
    assert _project(tmp_path, '    - "{talks,other}/*.qmd"\n    - "!d.qmd"\n') == \
        ["other/e.qmd", "talks/c.qmd"]


def test_a_plain_render_entry_naming_no_file_is_an_error_with_its_line(tmp_path):
    """Rendering the project stops on it (the project's files are what it renders)."""
    write(tmp_path / "a.qmd", "## S\n")
    assert _project(tmp_path, '    - "*.qmd"\n    - gone.qmd\n') == ["a.qmd"]
    error = load_project(tmp_path).missing_render_error()
    assert "file listed under project: render not found: gone.qmd" in str(error)
    assert error.line == 4


# --- includes ------------------------------------------------------------------------

def test_a_nested_include_path_is_relative_to_the_document(tmp_path):
    """Quarto resolves every include against the folder of the document being rendered,
    also one written in an included file (src/core/handlers/base.ts, resolvePath)."""
    write(tmp_path / "parts" / "outer.qmd", "## Outer\n\n{{< include parts/inner.qmd >}}\n")
    write(tmp_path / "parts" / "inner.qmd", "inner text\n")
    doc = parse(write(tmp_path / "deck.qmd", "{{< include parts/outer.qmd >}}\n"), tmp_path)
    texts = [line.text for block in doc.blocks for line in block.lines]
    assert "inner text" in texts


def test_a_nested_include_relative_to_its_own_file_fails_with_a_hint(tmp_path):
    write(tmp_path / "parts" / "outer.qmd", "## Outer\n\n{{< include inner.qmd >}}\n")
    write(tmp_path / "parts" / "inner.qmd", "inner text\n")
    with pytest.raises(DeckError, match="included file not found: inner.qmd") as info:
        parse(write(tmp_path / "deck.qmd", "{{< include parts/outer.qmd >}}\n"), tmp_path)
    assert (Path(info.value.file).name, info.value.line) == ("outer.qmd", 3)
    assert "against the folder of the document being rendered" in info.value.message


def test_a_rooted_include_is_relative_to_the_project(tmp_path):
    write(tmp_path / "_quarto.yml", "project:\n  output-dir: _output\n")
    write(tmp_path / "shared" / "bit.qmd", "shared text\n")
    deck = write(tmp_path / "talks" / "deck.qmd", "## S\n\n{{< include /shared/bit.qmd >}}\n")
    doc = parse(deck, tmp_path)
    assert "shared text" in [line.text for block in doc.blocks for line in block.lines]


def test_an_include_in_an_html_comment_need_not_stand_alone(tmp_path):
    """``<!-- {{< include x.qmd >}} -->`` comments an include out: pandoc drops the comment,
    so deckbuild neither expands it nor calls it misplaced."""
    doc = parse(write(tmp_path / "deck.qmd",
                      "## S\n\n<!--\n{{< include gone.qmd >}} -->\n\ntext <!-- {{< fa x >}} -->\n"),
                tmp_path)
    assert not [w for w in doc.warnings if "shortcode" in w.message]


# --- fences and divs -----------------------------------------------------------------

def test_a_code_fence_opened_after_a_list_marker_closes_at_a_shallower_fence(tmp_path):
    """``  - ```shell`` opens a code block inside the list item (pandoc), closed by an
    indented bare fence; the closing fence is no unclosed block of its own."""
    text = ("## S\n\n- item\n  - ```shell\n  ls -l\n  ```\n\n- next\n\n"
            "::: {.callout-note}\nNote\n:::\n")
    doc = parse(write(tmp_path / "deck.qmd", text), tmp_path)
    assert [line.text for line in doc.blocks[0].lines][-1] == ":::"


def test_div_fences_in_an_html_comment_are_not_divs(tmp_path):
    """A commented-out column (``<!-- ::: {.column}`` ... ``::: -->``) leaves the columns
    around it balanced, as pandoc reads them."""
    text = (":::: {.columns}\n::: {.column}\nA\n:::\n\n<!-- ::: {.column}\nB\n\n::: -->\n\n"
            "::: {.column}\nC\n:::\n::::\n")
    parse(write(tmp_path / "deck.qmd", text), tmp_path)      # no error


def test_divs_in_code_inside_a_list_item_are_not_divs_and_an_unclosed_div_is_still_found(tmp_path):
    text = ("- step\n\n    ```markdown\n    ::: {.notes}\n    ```\n\n<!-- ::: -->\n\n"
            "::: {.callout-tip}\nTip\n")
    with pytest.raises(DeckError, match=re.escape("unclosed div '::: {.callout-tip}'")) as info:
        parse(write(tmp_path / "deck.qmd", text), tmp_path)
    assert info.value.line == 9


def test_check_divs_counts_a_closing_fence_after_a_comment_on_its_line(tmp_path):
    doc = parse(write(tmp_path / "deck.qmd", "::: {.notes}\nN <!-- ::: {.x} -->\n:::\n"), tmp_path)
    check_divs([line for block in doc.blocks for line in block.lines])   # no error


# --- SCSS section markers -------------------------------------------------------------

def _sections(tmp_path: Path, text: str, warnings=None) -> dict[str, str]:
    layers = theme.split_layers(write(tmp_path / "t.scss", text), warnings)
    return {name: "\n".join(p.text for p in pieces) for name, pieces in layers.items() if pieces}


def test_lines_before_the_first_marker_are_defaults(tmp_path):
    """Quarto starts a theme file in its defaults section (src/core/sass.ts, sassLayerStr)."""
    got = _sections(tmp_path, "// fonts\n$body-bg: #123;\n\n/*-- scss:rules --*/\n.x { color: red; }\n")
    assert got == {"defaults": "// fonts\n$body-bg: #123;\n", "rules": ".x { color: red; }"}


@pytest.mark.parametrize("marker", ["/*--scss:rules--*/", "/*--\tscss:rules  --*/",
                                    "/*-- scss:rules --*/"])
def test_marker_spacing_quarto_accepts(tmp_path, marker):
    got = _sections(tmp_path, f"/*-- scss:defaults --*/\n$a: 1;\n{marker}\n.x {{ b: 2; }}\n")
    assert got == {"defaults": "$a: 1;", "rules": ".x { b: 2; }"}


def test_a_marker_quarto_does_not_read_stays_in_its_section_with_a_warning(tmp_path):
    warnings = []
    got = _sections(tmp_path, "/*-- scss:defaults --*/\n$a: 1;\n  /*-- scss:rules --*/\n", warnings)
    assert got == {"defaults": "$a: 1;\n  /*-- scss:rules --*/"}
    (warning,) = warnings
    assert warning.line == 3 and "is not a section marker to Quarto" in warning.message


def test_a_theme_file_without_any_marker_is_an_error(tmp_path):
    with pytest.raises(DeckError, match="theme file has no section marker"):
        _sections(tmp_path, "$a: 1;\n.x { b: 2; }\n")


def test_the_uses_section_comes_first(tmp_path):
    write(tmp_path / "t.scss", "/*-- scss:rules --*/\n.x { width: math.div(10px, 4); }\n"
                               "/*-- scss:uses --*/\n@use 'sass:math';\n")
    pieces = theme.assemble([str(tmp_path / "t.scss")])
    assert pieces[0].text == "@use 'sass:math';"


# --- built-in themes -----------------------------------------------------------------

NODE_MODULES = REPO / "node_modules"


def _css(tmp_path: Path, themes: list[str]) -> str:
    css, _ = theme.compile_theme(themes, NODE_MODULES, tmp_path / "cache")
    return css.read_text(encoding="utf-8")


def _background(css: str) -> str:
    return re.search(r"\.reveal-viewport\{background:([^;}]+)", css).group(1)


@pytest.mark.parametrize("name, background", [
    ("default", "#fff"), ("white", "#fff"), ("dark", "#191919"), ("black", "#191919"),
    ("serif", "#f0f1eb"), ("simple", "#fff"), ("solarized", "#fdf6e3"), ("moon", "#002b36"),
    ("night", "#111"), ("blood", "#222"), ("dracula", "#282a36"),
])
def test_a_built_in_theme_compiles_and_sets_the_background(tmp_path, name, background):
    assert _background(_css(tmp_path, [name])) == background


@pytest.mark.parametrize("name", ["beige", "league", "sky"])
def test_the_gradient_themes_paint_a_gradient(tmp_path, name):
    css = _css(tmp_path, [name])
    assert re.search(r"\.reveal-viewport\{background:radial-gradient\(", css)


def test_a_custom_theme_after_a_built_in_one_wins(tmp_path):
    """``theme: [serif, custom.scss]``: the later file's defaults come first, as in Quarto."""
    custom = write(tmp_path / "custom.scss", "/*-- scss:defaults --*/\n$body-bg: #123456;\n")
    css = _css(tmp_path, ["serif", str(custom)])
    assert _background(css) == "#123456"
    assert "Palatino" in css     # the rest of serif stays


def test_a_theme_option_names_a_built_in_theme_or_a_file(tmp_path):
    write(tmp_path / "_quarto.yml", "format:\n  revealjs:\n    theme: [sky, serif]\n")
    write(tmp_path / "serif", "/*-- scss:defaults --*/\n$body-bg: #0a0b0c;\n")   # a file wins
    from deckbuild.options import resolve_options
    deck = write(tmp_path / "deck.qmd", "## S\n")
    opts = resolve_options(load_project(tmp_path), deck, parse(deck, tmp_path).front)
    assert opts["theme"] == ["sky", str((tmp_path / "serif").resolve())]


def test_an_unknown_theme_name_lists_the_built_in_ones(tmp_path):
    write(tmp_path / "_quarto.yml", "format:\n  revealjs:\n    theme: sepia\n")
    proc = run_cli("render", str(write(tmp_path / "deck.qmd", "## S\n")), "--html-only")
    assert proc.returncode == 1
    assert "_quarto.yml:3: theme file not found: sepia" in proc.stderr and "solarized" in proc.stderr


# --- a deck outside this repository ----------------------------------------------------

def test_node_modules_are_found_from_deckbuilds_own_folder(tmp_path, monkeypatch):
    monkeypatch.delenv(resources.NODE_MODULES_ENV, raising=False)
    monkeypatch.chdir(tmp_path)
    write(tmp_path / "node_modules" / "left-pad" / "index.js", "")   # a deck's own packages
    assert resources.find_node_modules(tmp_path).resolve() == NODE_MODULES.resolve()


def test_a_deck_outside_the_repository_builds_without_npm_ci_there(tmp_path):
    deck = write(tmp_path / "elsewhere" / "deck.qmd",
                 "---\ntitle: Away\nembed-resources: true\nhtml-math-method: katex\n---\n\n"
                 "## S\n\n$x$\n")
    env = {k: v for k, v in os.environ.items() if k != resources.NODE_MODULES_ENV}
    import subprocess
    import sys
    env["PYTHONPATH"] = str(REPO / "code")
    proc = subprocess.run([sys.executable, "-m", "deckbuild", "render", str(deck), "--html-only"],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    html = (tmp_path / "elsewhere" / "deck.html").read_text(encoding="utf-8")
    assert "Reveal.initialize" in html and "data:font/woff2;base64," in html
    assert not (tmp_path / "elsewhere" / "node_modules").exists()
