"""The intermediate markdown, from cells and synthetic outputs (no kernel needed)."""

import base64
from pathlib import Path

from deckbuild.markdown import cell_markdown, write_markdown
from deckbuild.options import REVEALJS_DEFAULTS
from deckbuild.source import parse

PNG = base64.b64encode(bytes.fromhex(
    "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
    "1f15c4890000000d49444154789c6300010000050001"
    "0d0a2db40000000049454e44ae426082")).decode()
STDOUT = {"output_type": "stream", "name": "stdout", "text": "hello\n"}
RESULT = {"output_type": "execute_result", "data": {"text/plain": "42"}, "metadata": {}}
FIGURE = {"output_type": "display_data", "data": {"image/png": PNG, "text/plain": "<Figure>"},
          "metadata": {"image/png": {"width": 480, "height": 240}}}


def one_cell(tmp_path: Path, options: str, code: str = "x = 1"):
    path = tmp_path / "d.qmd"
    path.write_text(f"## Slide\n\n```{{python}}\n{options}{code}\n```\n")
    return parse(path, tmp_path).cells[0]


def md(tmp_path, options, outputs, code="x = 1"):
    cell = one_cell(tmp_path, options, code)
    return cell_markdown(cell, outputs, dict(REVEALJS_DEFAULTS), tmp_path / "f", "d_files/figure-revealjs")


def test_default_revealjs_hides_code_and_wraps_outputs_like_quarto(tmp_path):
    out = md(tmp_path, "", [STDOUT, RESULT])
    assert out.startswith(":::: {.cell}")
    assert "```python" not in out and ".cell-code" not in out
    assert "::: {.cell-output .cell-output-stdout}\n```\nhello\n```\n:::" in out
    assert "::: {.cell-output .cell-output-display}\n```\n42\n```\n:::" in out


def test_echo_true_writes_a_cell_code_block_with_line_numbers(tmp_path):
    out = md(tmp_path, '#| echo: true\n#| code-line-numbers: "1|2"\n', [], "a = 1\nb = 2")
    assert '```{.python .cell-code code-line-numbers="1|2"}\na = 1\nb = 2\n```' in out


def test_echo_fenced_shows_the_cell_with_its_fence(tmp_path):
    out = md(tmp_path, "#| echo: fenced\n#| label: demo\n", [])
    assert "````{.markdown .cell-code" in out
    assert "```{python}\n#| label: demo\nx = 1\n```" in out and "echo: fenced" not in out


def test_output_asis_is_raw_markdown(tmp_path):
    stream = {"output_type": "stream", "name": "stdout", "text": "**bold**\n"}
    assert md(tmp_path, "#| output: asis\n", [stream]) == "**bold**"


def test_include_false_and_output_false(tmp_path):
    assert md(tmp_path, "#| include: false\n", [STDOUT]) == ""
    (tmp_path / "b").mkdir()
    out = md(tmp_path / "b", "#| output: false\n#| echo: true\n", [STDOUT])
    assert "hello" not in out and ".cell-code" in out


def test_figure_written_with_caption_alt_label_and_size(tmp_path):
    out = md(tmp_path, '#| label: fig-a\n#| fig-cap: "Cap"\n#| fig-alt: "Alt text"\n', [FIGURE])
    assert "![Cap](d_files/figure-revealjs/fig-a-output-1.png)" in out
    assert 'width="480"' in out and 'fig-alt="Alt text"' in out
    assert (tmp_path / "f" / "fig-a-output-1.png").read_bytes().startswith(b"\x89PNG")


def test_classes_label_and_output_location_become_cell_attributes(tmp_path):
    out = md(tmp_path, "#| label: demo\n#| classes: wide tall\n#| output-location: fragment\n", [STDOUT])
    assert out.startswith(':::: {#demo .cell .wide .tall output-location="fragment"}')


def test_warnings_dropped_unless_warning_true(tmp_path):
    warn = {"output_type": "stream", "name": "stderr", "text": "UserWarning: careful\n"}
    assert "careful" not in md(tmp_path, "", [warn])
    (tmp_path / "w").mkdir()
    assert ".cell-output-stderr" in md(tmp_path / "w", "#| warning: true\n", [warn])


def test_write_markdown_keeps_front_matter_and_text(tmp_path):
    path = tmp_path / "d.qmd"
    path.write_text('---\ntitle: "T"\nfooter: "F"\n---\n\n## A\n\nText $x$.\n\n```{python}\nprint(1)\n```\n')
    doc = parse(path, tmp_path)
    opts = dict(REVEALJS_DEFAULTS, title="T", footer="F")
    out = write_markdown(doc, [[STDOUT]], opts, tmp_path / "work").read_text()
    assert out.startswith("---\ntitle: T\nfooter: F\n---")
    assert "## A\n\nText $x$." in out and "cell-output-stdout" in out


def test_split_stdout_chunks_of_an_asis_table_are_merged_into_one_table(tmp_path):
    chunks = [{"output_type": "stream", "name": "stdout", "text": t}
              for t in ("| a | b |\n|---|---|\n| 1 | 2 |\n", "| 3 | 4 |\n")]
    assert md(tmp_path, "#| output: asis\n", chunks) == "| a | b |\n|---|---|\n| 1 | 2 |\n| 3 | 4 |"
