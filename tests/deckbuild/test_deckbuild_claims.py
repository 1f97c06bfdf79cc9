"""A claim in a deck (transformer_lab.teaching.claims): printed by its cell when it holds,
on the slide and in the notes; a false one stops the build as a failing cell does, with the
slide, the sentence and the measured value in the error."""

from deckbuild.build import BuildSettings, build_document
from deckbuild.errors import DeckError

import pytest


def test_a_claim_that_holds_is_printed_on_the_slide_and_in_its_notes(deck, lines):
    root = deck("claims")
    html = build_document(root / "deck.qmd", BuildSettings(html_only=True), lines).html.read_text()
    assert html.count("The answer is 42.") == 2
    notes = html[html.index('<aside class="notes">'):]
    assert "Checked in the notes too: The answer is 42." in notes[:notes.index("</aside>")]


def test_a_false_claim_stops_the_build_naming_the_slide_the_sentence_and_the_value(deck, lines):
    root = deck("claims")
    qmd = root / "deck.qmd"
    qmd.write_text(qmd.read_text().replace("ANSWER = 42", "ANSWER = 41"))
    with pytest.raises(DeckError) as raised:
        build_document(qmd, BuildSettings(html_only=True), lines)
    text = str(raised.value) + "\n" + (raised.value.detail or "")
    assert "raised ClaimError" in text and "slide: The answer" in text
    assert "sentence: The answer is 41." in text and "measured: answer = 41" in text and "rule: the answer is 42" in text
    assert not (root / "_output" / "deck.html").exists() and not (root / "deck.html").exists()
