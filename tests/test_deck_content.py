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


def main_and_appendix():
    """(main track, appendix): the (title, body) of every slide, split at the appendix's
    divider `# Appendix`, the title slide of index.qmd included in the main track."""
    slides = [slide for p in chapter_files() for slide in slides_of(p)]
    at = [i for i, (title, _) in enumerate(slides) if title.startswith("# Appendix")]
    assert len(at) == 1, "the deck must have exactly one `# Appendix` divider"
    return slides[:at[0]], slides[at[0]:]


def test_the_lecture_is_at_most_64_slides_and_the_appendix_holds_the_rest():
    # Issue 20: one 90-minute lecture, part dividers included; deep dives after the summary.
    main, appendix = main_and_appendix()
    assert 45 <= len(main) <= 64, len(main)   # its notes fit 85 minutes (tests/deckbuild/test_lecture_structure.py)
    assert len(appendix) >= 10, len(appendix)
    assert main[-1][0].startswith("## Summary"), main[-1][0]


def slide_ids(slides):
    return {m for title, _ in slides for m in re.findall(r"\{#([\w-]+)", title)}


def test_every_appendix_slide_is_listed_on_its_divider_and_linked_from_the_lecture():
    main, appendix = main_and_appendix()
    divider, rest = appendix[0][1], appendix[1:]
    listed = set(re.findall(r"\]\(#([\w-]+)\)", divider))
    ids = [re.search(r"\{#([\w-]+)", title) for title, _ in rest]
    assert all(ids), [title for (title, _), m in zip(rest, ids) if not m]  # every one has an id
    ids = [m.group(1) for m in ids]
    assert listed == set(ids), sorted(listed ^ set(ids))
    # every appendix chapter is reached from the lecture: a link from a main slide to one of its slides
    linked = {m for _, body in main for m in re.findall(r"\]\(#([\w-]+)\)\{\.appendix-link\}", body)}
    assert linked <= set(ids) | {"appendix"}, sorted(linked - set(ids))
    chapters = [p for p in chapter_files() if p.name.startswith("a") and p.name != "a0-appendix.qmd"]
    for path in chapters:
        own = slide_ids(slides_of(path))
        assert own & linked or path.name == "a11-references.qmd", f"no main slide links to {path.name}"


def parts_of_the_lecture():
    """The main track's parts: [(divider title, [(title, body), ...])], in slide order."""
    main, _ = main_and_appendix()
    parts = []
    for title, body in main:
        if title.startswith("# "):
            parts.append((title[2:].strip(), []))
        elif parts:
            parts[-1][1].append((title, body))
    return parts


def test_every_part_asks_the_class_before_it_reveals_the_answer():
    """Predict, then reveal: a [Predict]{.predict} question, then a fragment with the answer."""
    for name, slides in parts_of_the_lecture():
        asked = [t for t, body in slides
                 if re.search(r"\[Predict\]\{\.predict\}.*?::: \{\.fragment\}", body, flags=re.S)]
        assert asked, f"part {name!r} asks the class nothing"


def test_every_part_ends_with_a_recap_naming_its_exercises_and_the_command():
    named = set()
    for name, slides in parts_of_the_lecture()[:-1]:  # the last part ends with the summary
        title, body = slides[-1]
        assert title.startswith("## Recap") and ".recap" in title, f"part {name!r} ends with {title!r}"
        box = re.search(r"^::: \{\.exercise\}\n(.*?)^:::$", body, flags=re.S | re.M)
        assert box, f"the recap of {name!r} has no exercise box"
        assert "make " in box.group(1), f"the recap of {name!r} names no command"
        files = re.findall(r"(ex\d\d_\w+\.py)", box.group(1))
        for f in files:
            assert (ROOT / "exercises" / f).is_file(), f
            number = int(f[2:4])
            assert f"N={number}" in box.group(1) or f"ex{number:02d}" in box.group(1)
        named |= set(files)
    shipped = {p.name for p in (ROOT / "exercises").glob("ex[0-9][0-9]_*.py")}
    assert named == shipped - set(BEYOND_THE_PAPER), sorted(named ^ (shipped - set(BEYOND_THE_PAPER)))
    main, appendix = main_and_appendix()
    for exercise, slide_id in BEYOND_THE_PAPER.items():
        bodies = [body for title, body in main + appendix if "{#" + slide_id in title]
        assert len(bodies) == 1, f"no slide {{#{slide_id}}} for {exercise}"
        box = re.search(r"^::: \{\.exercise\}\n(.*?)^:::$", bodies[0], flags=re.S | re.M)
        number = int(exercise[2:4])
        assert box and re.search(rf"\b{number}\b", box.group(1)), f"{{#{slide_id}}} has no exercise box for {exercise}"
        assert "make exercises N=" in box.group(1) and re.search(rf"N={number}\b|`{number}`", box.group(1))
        assert "TESTS=" in box.group(1) and re.search(rf"TESTS={number}\b|`{number}`", box.group(1))
        assert (ROOT / "exercises" / exercise).is_file() and (ROOT / "exercises" / f"tests{exercise[2:]}").is_file()


# Exercises 15 and 16 (issue 32) go past the paper, so no part's recap names them: the
# "Since 2017" slide, first of its appendix deep dives, does, in an exercise box with both commands.
BEYOND_THE_PAPER = {"ex15_rotary.py": "since-2017", "ex16_grouped_query_attention.py": "since-2017"}


# In lecture order: attention on the sentence (part 1), its heads (2), decoding (6), the
# explorer (7). Its tokens, vectors and cross-attention are deep dives (appendix), within the
# 90 minutes of issue 30.
RUNNING_EXAMPLE = ["it-reads-its-noun", "heads-on-our-sentence", "our-sentence-decoded", "explorer-slide"]


def test_the_running_example_is_traced_through_the_lecture_in_order():
    """One sentence from its tokens to the beam: each of these slides computes on
    tt.RUNNING_SENTENCE, and all but the first and the explorer show the model map."""
    main, _ = main_and_appendix()
    order = [m.group(1) for title, _ in main for m in [re.search(r"\{#([\w-]+)", title)] if m]
    assert [i for i in order if i in RUNNING_EXAMPLE] == RUNNING_EXAMPLE
    text = {p.name: p.read_text() for p in chapter_files()}
    for slide_id in RUNNING_EXAMPLE:
        path = next(name for name, t in text.items() if "{#" + slide_id in t)
        body = text[path].split("{#" + slide_id, 1)[1].split("\n## ", 1)[0]
        assert "tt.RUNNING_SENTENCE" in body, slide_id
        if slide_id not in ("it-reads-its-noun", "explorer-slide"):
            assert "tt.plot_model_map(" in body, slide_id


VAGUE_TITLES = {"equation", "the code", "code", "example", "results", "more", "summary"}


def test_every_slide_title_says_what_the_slide_shows():
    for path in chapter_files():
        for title, _ in [(t, b) for t, b in slides_of(path) if t.startswith("## ")]:  # not dividers
            words = re.sub(r"\{.*?\}\s*$", "", title.lstrip("# ")).strip().lower()
            assert words not in VAGUE_TITLES, f"{path.name}: {title!r}"
            assert not re.fullmatch(r"equation \(\d\)", words), f"{path.name}: {title!r}"


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
    """(title, body) of every level-1 slide of the lecture: its part dividers, in slide order
    (the appendix's divider lists its slides instead of the parts)."""
    return [(title[2:].strip(), body) for p in chapter_files() for title, body in slides_of(p)
            if title.startswith("# ") and not title.startswith("# Appendix")]


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
