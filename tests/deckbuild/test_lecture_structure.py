"""The lecture as a class gets it (issue 30), measured on the built page, generated
sentences included: the main track's notes fit a 90-minute class, every deep dive is
linked from the main slide it extends and links back, the appendix map lists exactly the
appendix, and no title gives away the answer to the question its slide asks."""

from __future__ import annotations

import re

import pytest

from deck_helpers import REPO, parse_html
from deckbuild.build import BuildSettings, build_document

#: What a teacher reads in 85 minutes at about 130 words a minute, leaving time for the
#: predictions, the code, the figures and the explorer (issue 30).
MAIN_NOTES_WORDS = 6000
SLIDE_NOTES_WORDS = 180
FIRST_SENTENCE_WORDS = 40


@pytest.fixture(scope="module")
def slides():
    """[(id, title, text without notes, notes, appendix links, back links)] of every slide,
    in order, from the project's deck built as the cache has it (HTML only)."""
    result = build_document(REPO / "slides" / "index.qmd", BuildSettings(html_only=True), lambda *a, **k: None)
    page = parse_html(result.html.read_text())
    out = []
    for section in page.find_all("section"):
        heading = next((c for c in section.elements() if c.tag in ("h1", "h2")), None)
        if heading is None:
            continue
        notes = "".join(n.text() for n in section.find_all("aside", cls="notes"))
        links = lambda cls: [a.attrs["href"].removeprefix("#/") for a in section.find_all("a", cls=cls)]
        body = "".join(c if isinstance(c, str) else ("" if c.tag == "aside" else c.text())
                       for c in section.children)
        out.append((section.attrs.get("id", ""), " ".join(heading.text().split()), body, notes,
                    links("appendix-link"), links("back-link")))
    return out


def split(slides):
    at = next(i for i, s in enumerate(slides) if s[0] == "appendix")
    return slides[:at], slides[at:]


def words(text: str) -> int:
    return len(re.findall(r"\S+", text))


def test_the_main_tracks_notes_fit_a_90_minute_class(slides):
    main, _ = split(slides)
    counts = {title: words(notes) for _, title, _, notes, _, _ in main}
    over = {t: n for t, n in counts.items() if n > SLIDE_NOTES_WORDS}
    assert not over, f"notes over {SLIDE_NOTES_WORDS} words: {over}"
    assert sum(counts.values()) <= MAIN_NOTES_WORDS, sum(counts.values())


def test_every_slides_notes_open_with_one_short_sentence_to_say_if_time_is_short(slides):
    main, _ = split(slides)
    for _, title, _, notes, _, _ in main:
        first = re.split(r"(?<=[.!?])\s", " ".join(notes.split()), maxsplit=1)[0]
        assert 3 <= words(first) <= FIRST_SENTENCE_WORDS, (title, first)


def test_every_deep_dive_is_linked_from_the_main_slide_it_extends_and_links_back(slides):
    main, appendix = split(slides)
    main_ids = {s[0] for s in main}
    linked_from = {}
    for sid, _, _, _, links, _ in slides:
        for target in links:
            linked_from.setdefault(target, set()).add(sid)
    appendix_ids = {s[0] for s in appendix}
    references = {s[0] for s in appendix if s[0].startswith("app-references")}
    for sid, title, _, _, _, back in appendix[1:]:
        if sid in references:
            continue
        assert linked_from.get(sid), f"no slide links to the appendix slide {title!r}"
        assert back, f"the appendix slide {title!r} has no link back"
        for target in back:
            assert target in main_ids | appendix_ids, (title, target)
            # back to a slide that links here (a main slide, or the deep dive it extends)
            assert target in linked_from.get(sid, set()), (title, target, linked_from.get(sid))
        chain, seen = sid, set()
        while chain not in main_ids:   # follow the first link back until the main track
            assert chain not in seen, f"a loop of back links from {title!r}"
            seen.add(chain)
            chain = next(s for s in slides if s[0] == chain)[5][0]
    for sid, title, _, _, links, _ in main:
        for target in links:
            assert target in appendix_ids, f"{title!r} links to {target!r}, not an appendix slide"


def test_the_appendix_map_lists_exactly_the_appendix(slides):
    _, appendix = split(slides)
    divider = next(s for s in appendix if s[0] == "appendix")
    text_links = re.findall(r"#/([\w-]+)", (REPO / "slides" / "chapters" / "a0-appendix.qmd").read_text()
                            .replace("](#", "](#/"))
    assert set(text_links) == {s[0] for s in appendix[1:]}, sorted(set(text_links) ^ {s[0] for s in appendix[1:]})
    assert divider[1] == "Appendix"


#: Each question the deck asks, by its slide's id, and the words of its answer: a title
#: must not say them before the fragment does. A new [Predict] slide adds its entry here.
ANSWERS = {
    "it-reads-its-noun": ["cat", "road"],
    "equation-1": ["(t, s)", "t, s", "(5, 7)", "t by s"],
    "heads-cost": ["same", "equal", "none", "no more", "cost no"],
    "heads-on-our-sentence": ["differ", "different", "same word", "all read"],
    "shuffle": ["equivariant", "same", "order", "does not see", "shuffled"],
    "table1": ["smaller", "larger", "attention is", "recurrence is", "cheaper"],
    "causality": ["0 to 4", "untouched", "unchanged", "later", "only"],
    "label-smoothing": ["0.91", "0.01", "0.9"],
    "our-sentence-decoded": ["0.9", "not 1", "0.92"],
    "table3": ["dropout"],
    "app-gru": ["slower", "faster", "gru is", "attention is"],
    "app-empty-row": ["nan", "0/0", "zero", "-inf", "−∞"],
}


def test_no_title_gives_away_the_answer_to_its_slides_question(slides):
    asked = {sid: title for sid, title, body, _, _, _ in slides if "Predict" in body}
    assert len(asked) >= 8
    undeclared = set(asked) - set(ANSWERS)
    assert not undeclared, f"questions without their answers declared in ANSWERS: {sorted(undeclared)}"
    for sid, title in asked.items():
        told = [a for a in ANSWERS[sid] if a in title.lower()]
        assert not told, f"{title!r} tells the answer to its question: {told}"
