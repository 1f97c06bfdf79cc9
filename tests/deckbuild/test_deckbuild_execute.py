"""The kernel set-up: what a cell's last expression turns into."""

from deckbuild.execute import execute
from deckbuild.options import REVEALJS_DEFAULTS
from deckbuild.source import parse


def test_a_figure_made_without_pyplot_displays_as_an_image_like_in_quarto(tmp_path, lines):
    path = tmp_path / "d.qmd"
    path.write_text("## Plot\n\n```{python}\nfrom matplotlib.figure import Figure\n"
                    "fig = Figure()\nfig.subplots().plot([1, 2, 3])\nfig\n```\n")
    outputs, stats = execute(parse(path, tmp_path), dict(REVEALJS_DEFAULTS), tmp_path / "cache",
                             use_cache=False, progress=lines)
    data = [o["data"] for o in outputs[0] if "data" in o]
    assert stats["cells"] == 1 and data, outputs
    assert any("image/png" in d for d in data), [sorted(d) for d in data]
