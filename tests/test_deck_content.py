"""The deck's sources: every slide has speaker notes, and every equation of the paper's
Section 3 and the learning-rate formula of Section 5.3 appear in the deck."""

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SLIDES = ROOT / "slides"

# The paper's equations in the LaTeX the deck uses, whitespace ignored.
EQUATIONS = {
    "(1) scaled dot-product attention": r"\operatorname{softmax}\!\left(\frac{QK^\top}{\sqrt{d_k}}\right) V \tag{1}",
    "multi-head attention": r"\operatorname{MultiHead}(Q, K, V) = \operatorname{Concat}(\text{head}_1, \dots, \text{head}_h)\, W^O",
    "one head": r"\text{head}_i = \operatorname{Attention}(Q W_i^Q,\; K W_i^K,\; V W_i^V)",
    "(2) feed-forward network": r"\operatorname{FFN}(x) = \max(0,\, x W_1 + b_1)\, W_2 + b_2 \tag{2}",
    "positional encoding, sine": r"PE_{(pos,\,2i)} = \sin\!\left(pos / 10000^{2i/d_\text{model}}\right)",
    "positional encoding, cosine": r"PE_{(pos,\,2i+1)} = \cos\!\left(pos / 10000^{2i/d_\text{model}}\right)",
    "residual and layer norm": r"\operatorname{LayerNorm}(x + \operatorname{Sublayer}(x))",
    "embedding scale": r"E[t_i] \cdot \sqrt{d_\text{model}}",
    "(3) learning rate": r"lrate = d_\text{model}^{-0.5} \cdot \min(step\_num^{-0.5},\; step\_num \cdot warmup\_steps^{-1.5}) \tag{3}",
}


def chapter_files():
    index = (SLIDES / "index.qmd").read_text()
    included = re.findall(r"\{\{<\s*include\s+(\S+)\s*>\}\}", index)
    return [SLIDES / "index.qmd"] + [SLIDES / name for name in included]


def squash(text: str) -> str:
    return re.sub(r"\s+", "", text)


def slides_of(path: Path):
    """(title, body) of every slide a file makes: a level-1 or level-2 heading starts one."""
    text = path.read_text()
    text = re.sub(r"^---\n.*?\n---\n", "", text, flags=re.S)  # front matter
    text = re.sub(r"^```.*?^```", "", text, flags=re.S | re.M)  # code cells
    parts = re.split(r"^(#{1,2} .*)$", text, flags=re.M)
    return [(parts[i].strip(), parts[i + 1]) for i in range(1, len(parts), 2)]


def test_every_included_chapter_exists():
    missing = [str(p.relative_to(ROOT)) for p in chapter_files() if not p.exists()]
    assert missing == []


@pytest.mark.parametrize("path", chapter_files(), ids=lambda p: p.name)
def test_every_slide_has_speaker_notes(path):
    without = [title for title, body in slides_of(path) if "::: {.notes}" not in body]
    assert without == [], f"slides without notes in {path.name}"


def test_the_deck_has_between_60_and_110_slides():
    # A 90-minute talk: the second edition adds trained models, definitions and results.
    count = sum(len(slides_of(p)) for p in chapter_files())
    assert 60 <= count <= 110, count


@pytest.mark.parametrize("name", EQUATIONS)
def test_every_equation_of_section_3_and_the_schedule_is_in_the_deck(name):
    deck = squash("".join(p.read_text() for p in chapter_files()))
    assert squash(EQUATIONS[name]) in deck, name


def test_every_test_the_slides_name_exists_in_the_suite():
    """The mistakes chapter names the tests that catch each mistake; a renamed test must
    not leave the slides pointing at nothing."""
    defined = set()
    for path in (ROOT / "tests").rglob("test_*.py"):
        defined |= set(re.findall(r"^\s*def (test_\w+)", path.read_text(), flags=re.M))
    named = set()
    for path in chapter_files():
        named |= set(re.findall(r"`(test_\w+)`", path.read_text()))
    assert named, "the slides name no tests"
    assert sorted(named - defined) == []


def test_every_image_the_slides_use_is_one_of_our_svgs():
    images = []
    for path in chapter_files():
        images += re.findall(r"!\[[^\]]*\]\(([^)\s]+)", path.read_text())
    assert images, "the slides show no diagrams"
    for image in images:
        assert image.startswith("../assets/") and image.endswith(".svg"), image
        assert (SLIDES / image).resolve().exists(), image


def part_dividers():
    """(title, body) of every level-1 slide: the deck's part dividers, in slide order."""
    return [(title[2:].strip(), body) for p in chapter_files() for title, body in slides_of(p)
            if title.startswith("# ")]


def map_entries(body: str) -> list[tuple[str, bool]]:
    """The running map of a divider: (part name, is it the current one) per list item."""
    block = re.search(r"^::: \{\.part-map\}\n(.*?)^:::$", body, flags=re.S | re.M)
    assert block, "no ::: {.part-map} block"
    entries = []
    for item in re.findall(r"^\d+\. (.*)$", block.group(1), flags=re.M):
        here = re.fullmatch(r"\[\*\*(.+?)\*\*: .+\]\{\.part-here\}", item)
        entries.append((here.group(1), True) if here else (item.strip(), False))
    return entries


def test_every_part_divider_asks_its_question_and_maps_the_parts():
    """Issue 13: no title-only dividers. Each one says what its part answers and shows the
    same map of all parts, in slide order, with only itself highlighted."""
    dividers = part_dividers()
    titles = [title for title, _ in dividers]
    assert 4 <= len(dividers) <= 12, titles
    for title, body in dividers:
        question = re.search(r"^\[(.+\?)\]\{\.part-question\}$", body, flags=re.M)
        assert question, f"divider {title!r} states no question"
        entries = map_entries(body)
        assert [name for name, _ in entries] == titles, f"divider {title!r}: map out of date"
        assert [name for name, here in entries if here] == [title], f"divider {title!r}"
