"""The explorer slide in headless Chromium, from file:// with every request that is not
file:, data: or blob: blocked: the page's logits equal PyTorch's to 1e-4 and it decodes
the same tokens; bad input gets a message; keys typed in the box stay there; no console
error. A deck with only the explorer (tests/explorer/explorer_deck.py) is built once; its
models are the real deck's (the chapter's own cell, from the project's cache)."""

from __future__ import annotations

import importlib.util
import os
import re
import sys
from pathlib import Path

import pytest
import torch

import transformer_lab as tl

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests" / "explorer"))
from explorer_deck import write_deck  # noqa: E402

pytestmark = pytest.mark.deck
TOLERANCE = 1e-4
INPUTS = {
    "pronoun": ["the cat did not cross the road because it was too tired",
                "the cat did not cross the road because it was too wide",
                "the river was not crossed by the goat because it was too scared", "cat"],
    "dates": ["the twenty-second of november two thousand twenty-six", "march third , nineteen ninety-nine",
              "the first of january two thousand", "friday"],
}


def missing() -> list[str]:
    out = [name for name in ("playwright", "nbclient", "pypandoc", "onnxruntime") if importlib.util.find_spec(name) is None]
    if not (REPO / "node_modules" / "onnxruntime-web").is_dir():
        out.append("npm package onnxruntime-web (npm ci)")
    if not Path(os.environ.get("DECKBUILD_CHROMIUM", "/usr/bin/chromium")).exists():
        out.append("Chromium")
    return out


if missing():
    reason = f"deck toolchain missing: {', '.join(missing())}; run `make test`"
    if os.environ.get("DECK_TOOLCHAIN") == "required":
        pytest.fail(reason, pytrace=False)
    pytest.skip(reason, allow_module_level=True)

from deckbuild import browser  # noqa: E402
from deckbuild.build import BuildSettings, build_document  # noqa: E402


def chapter_models() -> dict:
    """The models the chapter embeds (tt.deck_models, which its hidden cell calls and
    tests/teaching/test_deck_models.py pins), from the deck's cache."""
    from transformer_lab import teaching as tt

    tt.set_cache_directory(REPO / ".cache" / "transformer_lab")
    try:
        return {"pronoun": tt.pronoun_model(), "dates": tt.dates_model()}
    finally:
        tt.set_cache_directory(None)


@pytest.fixture(scope="module")
def page(tmp_path_factory):
    """The explorer deck open in Chromium on its explorer slide, ready; .log has the
    console errors and blocked requests, .models the PyTorch runs, .html the file."""
    os.environ.setdefault("DECKBUILD_NODE_MODULES", str(REPO / "node_modules"))
    deck = write_deck(tmp_path_factory.mktemp("explorer"))
    result = build_document(deck, BuildSettings(html_only=True), lambda *a, **k: None)
    with browser.browser() as ctx:
        log = browser.Report()
        browser._block_network(ctx, log)
        tab = browser._open(ctx, result.html.resolve().as_uri(), log)
        tab.log, tab.models, tab.html = log, chapter_models(), result.html
        tab.before = tab.evaluate("() => [typeof window.ort, tlExplorer.state.started]")
        tab.evaluate("() => Reveal.slide(1)")
        tab.wait_for_function("() => ['ready', 'failed'].includes(document.querySelector('.tl-explorer').dataset.state)",
                              timeout=30000)
        yield tab
        tab.close()


def pytorch_decode(run, text: str):
    """Greedy tokens (L,) and the logits of every step (L - 1, V), from PyTorch."""
    model = run.model.eval()
    src = torch.tensor([run.src_vocab.encode(text)])
    with torch.no_grad():
        tokens = tl.greedy_decode(model, src, min(src.size(1) + 50, model.config.max_len), tl.data.BOS_ID,
                                  tl.data.EOS_ID)[0]
        memory = model.encode(src)
        logits = model.decode(tokens[:-1][None], memory, model.src_mask(src))[0]  # row t: step t's scores
    return tokens.tolist(), logits


def test_runtime_starts_on_the_slide_not_at_page_load(page):
    assert page.before == ["undefined", False]
    assert page.evaluate("() => document.querySelector('.tl-explorer').dataset.state") == "ready"
    assert page.evaluate("() => typeof window.ort") == "object"


@pytest.mark.parametrize("task", list(INPUTS))
def test_page_logits_and_tokens_equal_pytorch(page, task):
    run = page.models[task]
    for text in INPUTS[task]:
        got = page.evaluate("async ([task, text]) => { const r = await tlExplorer.decode(task, text);"
                            " return {tokens: r.tokens, logits: r.logits}; }", [task, text])
        tokens, logits = pytorch_decode(run, text)
        assert got["tokens"] == tokens, text
        torch.testing.assert_close(torch.tensor(got["logits"]), logits, atol=TOLERANCE, rtol=0)


def test_page_attention_equals_pytorch(page):
    from transformer_lab.teaching import explorer

    run = page.models["dates"]
    text = INPUTS["dates"][0]
    got = page.evaluate("""async (text) => { const r = await tlExplorer.decode('dates', text);
        return ['encoder_attention_1', 'decoder_self_attention_0', 'cross_attention_1'].map(
            (k) => Array.from((k.startsWith('encoder') ? r.encoded : r.decoded)[k].data)); }""", text)
    task = explorer.ExplorerTask("dates", run.model, run.src_vocab, run.tgt_vocab, example=text)
    want = explorer.decode(task, text).attention
    for values, (kind, layer) in zip(got, [("encoder", 1), ("decoder_self", 0), ("cross", 1)]):
        torch.testing.assert_close(torch.tensor(values), want[kind][layer].flatten(), atol=TOLERANCE, rtol=0)


def message_after_typing(page, task: str, text: str) -> str:
    page.click(f".tlx-task[data-task={task}]")
    page.fill(".tlx-input", text)
    page.wait_for_function("(t) => document.querySelector('.tlx-input').value === t && !tlExplorer.state.running",
                           arg=text)
    return page.evaluate("() => document.querySelector('.tlx-message').textContent")


def test_bad_input_gets_a_message_on_the_slide(page):
    message = message_after_typing(page, "pronoun", "the dragon did not cross the road")
    assert "Unknown word “dragon”" in message and "pronoun model knows only these 47 words" in message
    assert "donkey" in message
    # the last good answer stays on the slide, greyed, under the message (issue 22, item 4)
    assert page.is_visible(".tlx-map") and page.is_visible(".tlx-answer")
    assert float(page.eval_on_selector(".tlx-map", "e => getComputedStyle(e).opacity")) < 0.5
    message = message_after_typing(page, "dates", " ".join(["two"] * 21))
    assert message == "Too long: at most 20 words, this input has 21."
    text = "the first of may two thousand"
    assert message_after_typing(page, "dates", text) == ""
    run = page.models["dates"]                      # the answer is the model's, right or wrong
    want = run.tgt_vocab.decode(pytorch_decode(run, text)[0])
    assert page.is_visible(".tlx-map") and page.inner_text(".tlx-answer") == want


def test_typing_in_the_box_does_not_change_the_slide(page):
    before = page.evaluate("() => Reveal.getIndices()")
    page.fill(".tlx-input", "")
    page.focus(".tlx-input")
    for key in ["ArrowRight", "ArrowLeft", "Space", "n", "p", "f", "o", "s", "b"]:
        page.keyboard.press(key)
    assert page.evaluate("() => Reveal.getIndices()") == before
    assert page.input_value(".tlx-input") == " npfosb"  # the keys went to the box
    assert page.evaluate("() => Reveal.isOverview() || Reveal.isPaused()") is False


def test_no_console_error_and_no_request_outside_the_file(page):
    assert page.log.console == [] and page.log.requests == []


def test_print_shows_the_still_with_a_note_and_starts_nothing(page):
    with_print = page.context.new_page()
    try:
        with_print.goto(page.html.resolve().as_uri() + "?print-pdf", wait_until="load")
        with_print.wait_for_function("() => document.querySelector('.pdf-page') !== null", timeout=20000)
        with_print.wait_for_timeout(300)
        assert with_print.is_visible(".tlx-print-note") and with_print.is_visible(".tlx-svg")
        # neither the runtime nor the models were read (the explorer's script stops at print)
        assert with_print.evaluate("() => [typeof window.ort, typeof window.tlExplorer, "
                                   "document.querySelector('.tl-explorer').dataset.state]") == \
            ["undefined", "undefined", None]
    finally:
        with_print.close()


# -- opening the deck waits for nothing of the explorer (issue 22) -------------------------
def test_the_payload_comes_after_reveal_js_s_start_up_script(page):
    """So the browser has started the deck before it parses the explorer's 8 MB."""
    text = page.html.read_text(encoding="utf-8")
    start = text.index("Reveal.initialize(")
    payload = [m.start() for m in re.finditer(r'<script type="[^"]+" class="tlx-[a-z]+" data-tlx-key', text)]
    assert len(payload) == 4 and min(payload) > start
    assert text.index('<div class="tl-explorer"') < start      # the explorer itself stays on its slide


def test_the_explorer_works_with_its_payload_left_in_the_slide(page, tmp_path):
    """As Quarto renders it (Quarto does not move the payload): the page decodes the same."""
    text = page.html.read_text(encoding="utf-8")
    payload = re.findall(r'<script type="[^"]+" class="tlx-[a-z]+" data-tlx-key.*?</script>\n?', text, re.S)
    rest = text
    for script in payload:
        rest = rest.replace(script, "", 1)
    marker = '<div class="tl-explorer"'
    at = rest.index(">", rest.index(marker)) + 1
    in_slide = tmp_path / "in-slide.html"
    in_slide.write_text(rest[:at] + "".join(payload) + rest[at:], encoding="utf-8")
    assert in_slide.read_text(encoding="utf-8").index("tlx-wasm") < in_slide.read_text(encoding="utf-8").index(
        "Reveal.initialize(")
    log = browser.Report()
    tab = browser._open(page.context, in_slide.resolve().as_uri(), log)
    try:
        tab.evaluate("() => Reveal.slide(1)")
        tab.wait_for_function("() => ['ready', 'failed'].includes(document.querySelector('.tl-explorer').dataset.state)",
                              timeout=30000)
        assert tab.evaluate("() => document.querySelector('.tl-explorer').dataset.state") == "ready"
        here = tab.evaluate("async (t) => (await tlExplorer.decode('pronoun', t)).tokens", INPUTS["pronoun"][0])
        there = page.evaluate("async (t) => (await tlExplorer.decode('pronoun', t)).tokens", INPUTS["pronoun"][0])
        assert here == there and len(here) > 1
        assert log.console == []
    finally:
        tab.close()


# -- a presenter with a clicker (issue 22, item 3) -----------------------------------------
def in_the_box(page, typed: str = " was") -> None:
    """Back on the explorer slide, the caret at the end of the box, ``typed`` typed there."""
    page.evaluate("() => Reveal.slide(1)")
    page.fill(".tlx-input", "the cat")
    page.focus(".tlx-input")
    page.keyboard.press("End")
    page.keyboard.type(typed)


def slide_index(page) -> int:
    return page.evaluate("() => Reveal.getIndices().h")


@pytest.mark.parametrize("key, slide", [("PageDown", 2), ("PageUp", 0)])
def test_a_clicker_s_page_keys_turn_the_slide_from_the_box(page, key, slide):
    in_the_box(page)
    page.keyboard.press(key)
    assert slide_index(page) == slide
    assert page.input_value(".tlx-input") == "the cat was"


def test_escape_leaves_the_box_and_the_arrows_move_the_deck_again(page):
    in_the_box(page)
    page.keyboard.press("Escape")
    assert page.evaluate("() => document.activeElement.matches('.tlx-input')") is False
    assert page.evaluate("() => Reveal.isOverview()") is False  # Esc left the box, nothing more
    page.keyboard.press("ArrowRight")
    assert slide_index(page) == 2
    assert page.input_value(".tlx-input") == "the cat was"


def test_arrows_in_the_box_move_the_caret_not_the_slide(page):
    in_the_box(page)
    page.keyboard.press("ArrowLeft")
    page.keyboard.press("ArrowLeft")
    assert slide_index(page) == 1
    assert page.evaluate("() => document.querySelector('.tlx-input').selectionStart") == len("the cat was") - 2
    page.keyboard.press("ArrowRight")
    assert slide_index(page) == 1


# -- typing without flicker, punctuation (issue 22, item 4) ---------------------------------
WATCH_UNKNOWN = """() => {
    const root = document.querySelector('.tl-explorer');
    const replaced = () => root.querySelector('.tlx-message').textContent.startsWith('Unknown')
        || getComputedStyle(root.querySelector('.tlx-answer')).display === 'none';
    window.tlxReplaced = 0;
    let was = replaced();
    new MutationObserver(() => { const now = replaced(); if (now && !was) window.tlxReplaced += 1; was = now; })
        .observe(root, { subtree: true, childList: true, characterData: true, attributes: true });
}"""


def settled(page, text: str) -> None:
    page.wait_for_function("(t) => document.querySelector('.tlx-input').value === t && !tlExplorer.state.running"
                           " && tlExplorer.state.settled !== false", arg=text, timeout=10000)


def test_typing_a_sentence_keeps_the_answer_on_the_slide(page):
    page.evaluate("() => Reveal.slide(1)")
    page.click(".tlx-task[data-task=pronoun]")
    page.fill(".tlx-input", "")
    page.focus(".tlx-input")
    page.evaluate(WATCH_UNKNOWN)
    text = tl.teaching.CONTRAST_SENTENCE
    page.keyboard.type(text, delay=60)  # one key every 60 ms, as a person types
    settled(page, text)
    assert page.evaluate("() => window.tlxReplaced") == 0
    run = page.models["pronoun"]
    assert page.inner_text(".tlx-answer") == run.tgt_vocab.decode(pytorch_decode(run, text)[0])
    page.keyboard.type(" dragon", delay=60)  # a word the model does not know: said once it is typed
    settled(page, text + " dragon")
    assert page.evaluate("() => window.tlxReplaced") == 1
    assert "Unknown word “dragon”" in page.inner_text(".tlx-message") and page.is_visible(".tlx-answer")


def test_while_a_word_is_typed_the_last_answer_is_greyed_and_named(page):
    """The answer kept in place while "ti" of "tired" is typed belongs to the last complete
    input: it is shown greyed, with a note naming that input, until the word is complete."""
    page.evaluate("() => Reveal.slide(1)")
    page.click(".tlx-task[data-task=pronoun]")
    page.fill(".tlx-input", "the cat did not cross the road because it was too tired")
    settled(page, "the cat did not cross the road because it was too tired")
    page.focus(".tlx-input")
    page.keyboard.press("End")
    for _ in "tired":
        page.keyboard.press("Backspace")
    page.keyboard.type("ti", delay=30)
    page.wait_for_function("() => tlExplorer.state.typing === 'ti' && !tlExplorer.state.running", timeout=10000)
    look = page.evaluate("""() => ({typing: document.querySelector('.tl-explorer').classList.contains('tlx-typing'),
        opacity: getComputedStyle(document.querySelector('.tlx-output')).opacity,
        status: document.querySelector('.tlx-status').textContent})""")
    assert look["typing"] and float(look["opacity"]) < 1, look
    # the kept answer is that of the last complete input, "... because it was too"
    assert look["status"] == "typing “ti”…: shown, the answer for “… because it was too”", look
    page.keyboard.type("red", delay=30)
    settled(page, "the cat did not cross the road because it was too tired")
    assert page.evaluate("() => document.querySelector('.tl-explorer').classList.contains('tlx-typing')") is False
    assert float(page.evaluate("() => getComputedStyle(document.querySelector('.tlx-output')).opacity")) == 1
    # typing over "tired" (as the notes tell a presenter): the kept answer is still "tired"'s
    page.keyboard.press("Shift+Control+ArrowLeft")
    page.keyboard.type("wi", delay=30)
    page.wait_for_function("() => tlExplorer.state.typing === 'wi' && !tlExplorer.state.running", timeout=10000)
    assert page.inner_text(".tlx-status") == "typing “wi”…: shown, the answer for “… it was too tired”"
    assert page.inner_text(".tlx-answer") == "cat"


def shown(page, task: str, text: str) -> dict:
    page.click(f".tlx-task[data-task={task}]")
    page.fill(".tlx-input", text)
    settled(page, text)
    return page.evaluate("""() => ({message: document.querySelector('.tlx-message').textContent,
        answer: document.querySelector('.tlx-answer').textContent,
        labels: Array.from(document.querySelectorAll('.tlx-svg text')).map((t) => t.textContent)})""")


@pytest.mark.parametrize("task, plain, punctuated", [
    ("pronoun", "the cat did not cross the road because it was too wide",
     "The cat did not cross the road, because it was too wide."),
    ("dates", "march third , nineteen ninety-nine", "March third, nineteen ninety-nine!")])
def test_punctuation_the_vocabulary_lacks_is_ignored(page, task, plain, punctuated):
    page.evaluate("() => Reveal.slide(1)")
    want, got = shown(page, task, plain), shown(page, task, punctuated)
    assert got["message"] == "" and got == want


NORMALISE = ["The road, then", "ROAD,", "road.", "“road”", "it's too wide!", "march third,nineteen ninety-nine",
             "twenty-two", "twenty—two", "(the) [first] {of} may?", "  spaced   out ", "¿qué?", "a-b, c; d: e…"]


@pytest.mark.parametrize("task", list(INPUTS))
def test_the_page_normalises_as_normalise_text(page, task):
    vocab = page.models[task].src_vocab
    got = page.evaluate("([task, texts]) => texts.map((x) => tlExplorer.normalise(tlExplorer.tasks[task], x))",
                        [task, NORMALISE])
    assert got == [tl.data.normalise_text(text, vocab) for text in NORMALISE]
    # a mark the vocabulary lacks is dropped; one it has (the dates' ",") is a word of its own
    assert tl.data.normalise_text("road,", vocab).split() == (["road", ","] if "," in vocab else ["road"])


def test_the_guide_says_what_to_type_and_fits_on_the_slide(page):
    page.evaluate("() => Reveal.slide(1)")
    page.click(".tlx-task[data-task=pronoun]")
    settled(page, tl.teaching.RUNNING_SENTENCE)
    guide = page.inner_text(".tlx-guide")
    assert "the noun “it” refers to" in guide and "count from 0" in guide and "label smoothing" in guide
    size = page.evaluate("""() => { const g = document.querySelector('.tlx-guide');
        return parseFloat(getComputedStyle(g).fontSize) * Reveal.getScale(); }""")
    assert size >= 20
    inside = page.evaluate("""() => { const s = document.querySelector('.reveal .slides').getBoundingClientRect();
        return Array.from(document.querySelectorAll('.tl-explorer *')).filter((e) => e.getClientRects().length)
            .every((e) => { const r = e.getBoundingClientRect(); return r.bottom <= s.bottom + 1 && r.right <= s.right + 1; }); }""")
    assert inside
    page.click(".tlx-task[data-task=dates]")
    assert "date in words" in page.inner_text(".tlx-guide")
    page.click(".tlx-task[data-task=pronoun]")


# -- a learner on a phone (issue 22, item 10) -----------------------------------------------
CONTROLS = """() => Array.from(document.querySelectorAll('.tl-explorer button, .tl-explorer select, .tl-explorer input'))
    .map((e) => { const r = e.getBoundingClientRect(); return [e.className, r.width, r.height]; })"""


def test_on_a_phone_every_control_is_a_44_px_tap_target(page):
    phone = page.context.new_page()
    try:  # a phone held upright: 390 x 844 CSS px, 3 device pixels each, touch
        cdp = page.context.new_cdp_session(phone)
        cdp.send("Emulation.setDeviceMetricsOverride", {"width": 390, "height": 844, "deviceScaleFactor": 3,
                                                        "mobile": True})
        cdp.send("Emulation.setTouchEmulationEnabled", {"enabled": True, "maxTouchPoints": 5})
        phone.goto(page.html.resolve().as_uri(), wait_until="load")
        phone.wait_for_function("() => window.Reveal && Reveal.isReady()", timeout=20000)
        assert phone.evaluate("() => [innerWidth, Reveal.isScrollView()]") == [390, True]  # reveal.js scrolls
        phone.evaluate("() => document.querySelector('.tl-explorer').closest('.scroll-page').scrollIntoView()")
        phone.wait_for_function("() => document.querySelector('.tl-explorer').dataset.state === 'ready'", timeout=30000)
        controls = phone.evaluate(CONTROLS)
        assert len(controls) == 6
        assert [c for c in controls if c[1] < 44 or c[2] < 44] == []
        bottom, page_bottom = phone.evaluate("""() => [document.querySelector('.tlx-svg').getBoundingClientRect().bottom,
            document.querySelector('.tl-explorer').closest('.scroll-page-content').getBoundingClientRect().bottom]""")
        assert bottom <= page_bottom  # the heatmap is not cut off by the scrolled page
    finally:
        phone.close()
