"""Options: Quarto's merge rules, revealjs defaults, format resolution, paths."""

import re
from pathlib import Path

import pytest

from deckbuild.errors import DeckError
from deckbuild.options import (REVEALJS_DEFAULTS, Source, load_project, merge, reveal_config,
                               resolve_options)
from deckbuild.source import parse


def test_merge_maps_recursively_and_scalars_replace():
    base = {"a": 1, "m": {"x": 1, "y": 2}}
    over = {"a": 2, "m": {"y": 3, "z": 4}}
    assert merge(base, over) == {"a": 2, "m": {"x": 1, "y": 3, "z": 4}}


def test_merge_concatenates_lists_dropping_duplicates_keeping_last():
    assert merge([1, 2, 3], [3, 4]) == [1, 2, 3, 4]
    assert merge(["a", "b"], ["a"]) == ["b", "a"]
    assert merge("a", ["b"]) == ["a", "b"]


def test_quarto_revealjs_defaults():
    d = REVEALJS_DEFAULTS
    assert (d["echo"], d["warning"], d["width"], d["height"], d["margin"]) == (False, False, 1050, 700, 0.1)
    assert (d["center"], d["transition"], d["hash"], d["navigation-mode"]) == (False, "none", True, "linear")
    assert d["pdf-separate-fragments"] is False and d["code-line-numbers"] is True
    assert (d["fig-width"], d["fig-height"], d["fig-dpi"]) == (10, 5, 96)


def _project(tmp_path: Path, config: str, front: str = "") -> tuple:
    (tmp_path / "_quarto.yml").write_text(config)
    (tmp_path / "sub").mkdir()
    doc = tmp_path / "sub" / "d.qmd"
    doc.write_text(f"---\n{front}---\n\n## S\n")
    project = load_project(tmp_path)
    return project, doc, parse(doc, tmp_path)


def test_document_overrides_project_and_format_section_overrides_top_level(tmp_path):
    project, doc, parsed = _project(
        tmp_path,
        "footer: top\nformat:\n  revealjs:\n    footer: project-format\n    slide-number: c/t\n"
        "execute:\n  echo: true\n",
        "width: 1200\nformat:\n  revealjs:\n    transition: fade\n")
    opts = resolve_options(project, doc, parsed.front)
    assert opts["footer"] == "project-format"
    assert opts["width"] == 1200 and opts["transition"] == "fade"
    assert opts["echo"] is True and opts["height"] == 700
    cfg = reveal_config(opts)
    assert cfg["slideNumber"] == "c/t" and cfg["navigationMode"] == "linear"
    assert cfg["pdfSeparateFragments"] is False and cfg["width"] == 1200


def test_directory_metadata_sits_between_project_and_document(tmp_path):
    project, doc, parsed = _project(tmp_path, "format:\n  revealjs:\n    footer: p\n")
    (tmp_path / "sub" / "_metadata.yml").write_text("footer: dir\nsmaller: true\n")
    opts = resolve_options(project, doc, parsed.front)
    assert opts["footer"] == "dir" and opts["smaller"] is True


def test_theme_paths_resolve_against_the_declaring_file(tmp_path):
    (tmp_path / "t.scss").write_text("/*-- scss:rules --*/\n")
    project, doc, parsed = _project(tmp_path, "format:\n  revealjs:\n    theme: [default, t.scss]\n")
    opts = resolve_options(project, doc, parsed.front)
    assert opts["theme"] == ["default", str((tmp_path / "t.scss").resolve())]


def test_missing_theme_names_config_file_and_line(deck):
    root = deck("bad-theme")
    project = load_project(root)
    doc = parse(root / "deck.qmd", root)
    with pytest.raises(DeckError) as info:
        resolve_options(project, root / "deck.qmd", doc.front)
    assert info.value.file.endswith("_quarto.yml") and info.value.line == 5
    assert "theme file not found: missing_theme.scss" in str(info.value)


def test_malformed_project_yaml_names_file_and_line(deck):
    root = deck("bad-config")
    with pytest.raises(DeckError) as info:
        load_project(root)
    assert info.value.file.endswith("_quarto.yml") and info.value.line == 6
    assert "malformed YAML" in str(info.value)


def test_unsupported_format_is_an_error(tmp_path):
    src = Source({"format": "pdf"}, tmp_path / "d.qmd", 2, "format: pdf")
    with pytest.raises(DeckError, match="format 'pdf' is not supported"):
        resolve_options(None, tmp_path / "d.qmd", src)


def test_deckbuild_namespace_gives_project_folders(tmp_path):
    (tmp_path / "code" / "pkg").mkdir(parents=True)
    (tmp_path / "_quarto.yml").write_text(
        "deckbuild:\n  python-path: [code]\n  cache-sources: code/pkg\n")
    project = load_project(tmp_path)
    assert project.python_path == [(tmp_path / "code").resolve()]
    assert project.cache_sources == [(tmp_path / "code" / "pkg").resolve()]


def test_deckbuild_namespace_defaults_to_nothing(tmp_path):
    (tmp_path / "_quarto.yml").write_text("project:\n  output-dir: out\n")
    project = load_project(tmp_path)
    assert project.python_path == [] and project.cache_sources == []


@pytest.mark.parametrize("config, line, message", [
    ("deckbuild:\n  python-path: [nowhere]\n", 2,
     "folder listed under 'deckbuild: python-path' not found: nowhere"),
    ("deckbuild:\n  cache-source: [code]\n", 2,
     "unknown option 'deckbuild: cache-source' (known: python-path, cache-sources, cache-env, quarto-version, run-alone, cell-timeout)"),
    ("deckbuild:\n  python-path: 3\n", 2,
     "option 'deckbuild: python-path' must be a string or a list of strings, got 3"),
    ("deckbuild: [code]\n", 1, "'deckbuild' must be a mapping of options"),
    ("deckbuild:\n  quarto-version: 1.4\n", 2,
     "option 'deckbuild: quarto-version' must be current or a version such as \"1.4.557\", got 1.4"),
])
def test_bad_deckbuild_options_name_file_and_line(tmp_path, config, line, message):
    (tmp_path / "_quarto.yml").write_text(config)
    with pytest.raises(DeckError, match=re.escape(message)) as info:
        load_project(tmp_path)
    assert info.value.file.endswith("_quarto.yml") and info.value.line == line
