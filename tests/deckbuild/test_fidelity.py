"""The fidelity harness (benchmarks/fidelity.py), which measures our renderer against the
HTML real Quarto rendered: its matcher on elements written here (plain dicts, and two tiny
pages in Chromium), and one run over a few decks of the Quarto corpus (skipped where the
corpus is not on this machine)."""

from __future__ import annotations

import base64
import hashlib
import json
import subprocess
import sys

import pytest

from deck_helpers import REPO

sys.path.insert(0, str(REPO / "benchmarks"))

import fidelity  # noqa: E402
import fidelity_browser as fb  # noqa: E402
import fidelity_corpus as fc  # noqa: E402
import fidelity_corpus_extra as fce  # noqa: E402
import fidelity_match as fm  # noqa: E402
import fidelity_report as fr  # noqa: E402

# Small corpus decks for the corpus test: 40 slides with maths, code, footer, logo, TOC and
# footnotes (Quarto 1.5.57), and two small ones (1.7.31: columns, incremental lists, code
# highlights; 1.5.57: nested lists, a relative size).
CORPUS_DECKS = ["alexsp32-nqcdynamics-julia", "fabridamicelli-cronex",
                "nabobalis-sunpy-pyhc-fall-2024"]
# The share of elements that must match Quarto (issue 19's target: 95%); each of these
# decks matched 100% when this was set (benchmarks/fidelity.py, 2026-11-24), so a
# renderer change that moves any painted element of them by more than 2 px fails here.
MIN_MATCHING_PCT: float | None = 95.0


def element(kind, text, box, size=40.0, painted="DejaVu Sans", has_math=False):
    return {"kind": kind, "tag": kind, "text": text, "box": list(box), "font_size": size,
            "font_family": painted, "painted": painted, "has_math": has_math}


def quarto_slide():
    return [element("heading", "Title", (96, 54, 1824, 123)),
            element("p", "moved three pixels", (96, 140, 1824, 187)),
            element("li", "font size changed", (132, 200, 900, 247)),
            element("p", "missing in ours", (96, 260, 1824, 307)),
            element("code", "x = 1", (96, 320, 400, 347), size=24, painted="DejaVu Sans Mono"),
            element("image", "plot.png", (500, 400, 900, 700), size=None, painted=None)]


def problems(row):
    return sorted((d["text"], tuple(x["property"] for x in d["diffs"])) for d in row["differences"])


def test_exactly_the_moved_resized_and_missing_elements_are_reported():
    q = quarto_slide()
    ours = [dict(e, box=list(e["box"])) for e in q if e["text"] != "missing in ours"]
    ours[1]["box"] = [96, 143, 1824, 190]            # 3 px down: a difference
    ours[2]["font_size"] = 44.0                      # font size: a difference
    ours[3]["box"] = [97, 321, 401, 348]             # code line 1 px off: still matches
    ours[4]["box"] = [502, 398, 902, 698]            # image 2 px off: still matches
    row = fm.compare_slide(q, ours)
    assert problems(row) == [("font size changed", ("font_size",)),
                             ("missing in ours", ("presence",)),
                             ("moved three pixels", ("box",))]
    assert (row["elements"], row["matching"], row["text_matched"]) == (6, 3, 5)
    assert (row["only_quarto"], row["only_ours"]) == (1, 0)
    moved = next(d for d in row["differences"] if d["text"] == "moved three pixels")["diffs"][0]
    assert (moved["quarto"], moved["ours"], moved["severity"]) == ([96, 140, 1824, 187],
                                                                   [96, 143, 1824, 190], 3)


def test_painted_family_and_an_element_only_in_ours_are_differences():
    q = quarto_slide()[:2]
    ours = [dict(q[0], painted="Liberation Serif"), q[1], element("p", "extra", (96, 400, 800, 440))]
    row = fm.compare_slide(q, ours)
    assert problems(row) == [("Title", ("painted_family",)), ("extra", ("presence",))]
    assert (row["elements"], row["matching"], row["only_ours"]) == (3, 1, 1)


def test_maths_is_measured_like_the_rest_and_counted():
    q = quarto_slide()[:2] + [element("p", "where ⟨math⟩ holds", (96, 300, 800, 340), has_math=True),
                              element("math", "x^2", (300, 300, 340, 340))]
    ours = q[:2] + [element("p", "where ⟨math⟩ holds", (96, 500, 800, 600), has_math=True),
                    element("math", "x^2", (300, 300, 340, 340))]
    row = fm.compare_slide(q, ours)
    assert (row["elements"], row["matching"], row["math_elements"]) == (4, 3, 2)
    assert problems(row) == [("where ⟨math⟩ holds", ("box",))]


def test_the_set_summary_counts_a_deck_that_did_not_build_as_zero():
    deck = lambda name, ok, pct, held: {"name": name, "build": {"ok": ok}, "pct_matching": pct,
                                        "held_out": held}
    rows = fr.set_summary([deck("a", True, 95.0, False), deck("b", False, None, True),
                           deck("c", True, 91.0, True), deck("d", True, 99.0, True)])
    assert [(r["set"], r["decks"], r["built"], r["median_match"], r["median_match_built"])
            for r in rows] == [("all", 4, 3, 93.0, 95.0), ("tuning", 1, 1, 95.0, 95.0),
                               ("held out", 3, 2, 91.0, 95.0)]


def test_a_changed_text_still_pairs_its_element_within_a_replaced_run():
    q = quarto_slide()[:3]
    ours = [q[0], dict(q[1], text="moved three pixel", box=[96, 150, 1824, 197]), q[2]]
    row = fm.compare_slide(q, ours)
    assert row["text_matched"] == 3 and row["only_quarto"] == row["only_ours"] == 0
    assert row["differences"][0]["ours_text"] == "moved three pixel"
    assert [x["property"] for x in row["differences"][0]["diffs"]] == ["box"]


def test_slides_align_by_heading_and_one_sided_slides_are_named():
    pairs = fm.align_slides(["Intro", "Table of contents", "Method", "Results"],
                            ["Intro", "Method", "Result", "Footnotes"])
    assert pairs == [(0, 0), (1, None), (2, 1), (3, 2), (None, 3)]


def test_a_deck_score_counts_one_sided_slides_as_unmatched():
    slide = lambda i, title, els: {"index": i, "title": title, "elements": els, "maths": 0,
                                   "text_chars": 10}
    q = {"slides": [slide(0, "A", quarto_slide()[:2]), slide(1, "TOC", quarto_slide()[2:3])]}
    ours = {"slides": [slide(0, "A", quarto_slide()[:2])]}
    deck = fr.score_deck(q, ours)
    assert (deck["elements"], deck["matching"], deck["pct_matching"]) == (3, 2, 66.7)
    assert deck["only_quarto_slides"] == [{"index": 2, "title": "TOC"}]
    assert [fr.describe(d) for d in deck["worst"]] == [
        'slide 2/- "TOC", li "font size changed": presence Quarto present vs ours missing']
    assert fr.score_deck(q, None)["pct_matching"] is None


def test_the_painted_family_is_the_one_with_the_most_glyphs():
    fonts = [{"familyName": "B", "glyphCount": 5, "isCustomFont": False},
             {"familyName": "A", "glyphCount": 2, "isCustomFont": False},
             {"familyName": "A", "glyphCount": 4, "isCustomFont": True}]
    assert fb.most_glyphs(fonts) == "A"
    assert fb.most_glyphs([]) is None


def test_embedded_images_are_named_after_the_source_file_with_their_bytes(tmp_path):
    (tmp_path / "img").mkdir()
    (tmp_path / "img" / "logo.svg").write_bytes(b"<svg>logo</svg>")
    names = fc.ImageNames(tmp_path)
    assert names.name("data:image/svg+xml;base64," + base64.b64encode(b"<svg>logo</svg>").decode()) \
        == "logo.svg"
    assert names.name("data:image/svg+xml,%3Csvg%3Elogo%3C/svg%3E") == "logo.svg"
    other = hashlib.sha1(b"<svg>other</svg>").hexdigest()[:12]
    assert names.name("data:image/svg+xml,%3Csvg%3Eother%3C/svg%3E") == f"data:{other}"
    assert names.name("plot.png") == "plot.png"


def test_a_build_error_keeps_the_renderers_message_with_paths_in_the_copy_shortened(tmp_path):
    src = tmp_path / "deck" / "source"
    stderr = (f"[deckbuild] talk.qmd\n  read 0.00s\n\nERROR {src}/talk.qmd:47: image "
              f"https://example.org/a.gif is remote; the deck must work offline\n")
    assert fc._error_message(stderr, 1, src) == \
        "ERROR source/talk.qmd:47: image https://example.org/a.gif is remote; the deck must work offline"
    assert fc._error_message("", 3, src) == "the renderer exited with status 3 and printed nothing"


def test_the_build_renders_as_the_decks_quarto_and_as_newest_without_the_variable(
        tmp_path, monkeypatch):
    """The renderer gets the reference's Quarto version as $DECKBUILD_QUARTO_VERSION (the
    deck's files untouched); as the newest, the variable is removed, even if set outside."""
    (tmp_path / "d" / "source").mkdir(parents=True)
    (tmp_path / "d" / "source" / "talk.qmd").write_text("---\ntitle: T\n---\n")
    deck = fc.Deck("d", tmp_path / "d", {"quarto_version": "1.5.57",
                                         "corpus_source_qmd": "source/talk.qmd"})
    seen = []

    def fake_run(cmd, **kwargs):
        seen.append(kwargs["env"].get(fc.VERSION_ENV))
        return subprocess.CompletedProcess(cmd, 1, "", "ERROR stop here")

    monkeypatch.setattr(fc.subprocess, "run", fake_run)
    monkeypatch.setenv(fc.VERSION_ENV, "1.9")
    for n, as_newest in enumerate((False, True)):
        fc.build(deck, tmp_path / f"w{n}", as_version=deck.rendered_as(as_newest))
    assert seen == ["1.5.57", None]
    assert (tmp_path / "w0" / "source" / "talk.qmd").read_text() == "---\ntitle: T\n---\n"
    assert fc.Deck("u", tmp_path, {}).rendered_as() is None   # version unknown: the newest
    assert "each rendered as Quarto <the version of its reference" in fr.markdown(
        {"decks": [], "rollup": []}, per_slide=False)
    assert "rendered with the newest Quarto's rules" in fr.markdown(
        {"decks": [], "rollup": [], "rendered_as": "newest"}, per_slide=False)


PAGE = """<!doctype html><meta charset="utf-8"><style>
body {{ margin: 0; font-family: 'DejaVu Sans'; }}
.a {{ position: absolute; margin: 0; width: 600px; line-height: 30px; font-size: 20px; }}
</style><section>
<h2 class="a" style="left: 20px; top: 10px">Heading</h2>
<p class="a" style="left: 20px; top: {moved}px">moved three pixels</p>
<p class="a" style="left: 20px; top: 100px; font-size: {size}px">font size changed</p>
{missing}
<p class="a" style="left: {shift}px; top: 200px; font-family: {family}">family</p>
<p class="a" style="left: 20px; top: 250px; font-family: NoSuchFont, 'DejaVu Sans'">fallback</p>
<p class="a" style="left: 20px; top: 300px; display: none">hidden</p>
<p class="a" style="left: 20px; top: 340px; visibility: hidden">invisible</p>
<p class="a" style="left: -900px; top: 380px">off the page</p>
</section>"""


def test_pages_in_chromium_report_exactly_what_was_changed(tmp_path):
    """Two pages without reveal.js: one paragraph 3 px lower, one font size changed, one
    missing, one 1 px to the right (matches), one painted with another family."""
    quarto = tmp_path / "quarto.html"
    ours = tmp_path / "ours.html"
    quarto.write_text(PAGE.format(moved=50, size=20, shift=20, family="'DejaVu Sans'",
                                  missing='<p class="a" style="left: 20px; top: 150px">missing</p>'))
    ours.write_text(PAGE.format(moved=53, size=24, shift=21, family="'DejaVu Serif'", missing=""))
    with fb.browser() as ctx:
        q = fb.capture_page(ctx, quarto.as_uri(), (800, 600))
        o = fb.capture_page(ctx, ours.as_uri(), (800, 600))
    assert [e["text"] for e in q["elements"]] == ["Heading", "moved three pixels",
                                                  "font size changed", "missing", "family",
                                                  "fallback"]
    fallback = next(e for e in q["elements"] if e["text"] == "fallback")
    assert fallback["painted"] == "DejaVu Sans" and "NoSuchFont" in fallback["font_family"]
    row = fm.compare_slide(q["elements"], o["elements"])
    assert problems(row) == [("family", ("painted_family",)),
                             ("font size changed", ("font_size",)),
                             ("missing", ("presence",)),
                             ("moved three pixels", ("box",))]
    assert row["matching"] == 2   # the heading, the fallback paragraph


def test_a_page_that_cannot_be_walked_is_reported_and_the_run_goes_on(tmp_path):
    page = tmp_path / "ours.html"
    page.write_text("<!doctype html><p>no reveal.js here</p>")
    errors = {}
    with fb.browser() as ctx:
        assert fidelity.capture(ctx, page, (800, 600), "ours", errors) is None
    assert errors == {"ours": f"RuntimeError: no reveal.js (window.Reveal) on {page.as_uri()} "
                              "once it loaded"}


@pytest.mark.slow
def test_corpus_decks_are_measured(tmp_path, capsys):
    corpus = fc.default_corpus()[0]
    if not (corpus / CORPUS_DECKS[0] / "meta.json").is_file():
        pytest.skip(f"Quarto corpus not found at {corpus} (looked for "
                    f"{corpus / CORPUS_DECKS[0] / 'meta.json'}; set {fc.CORPUS_ENV})")
    out = tmp_path / "fidelity.json"
    args = ["--corpus", str(corpus), "--json", str(out)]
    assert fidelity.main(args + [a for name in CORPUS_DECKS for a in ("--deck", name)]) == 0
    result = json.loads(out.read_text())
    markdown = capsys.readouterr().out
    assert [d["name"] for d in result["decks"]] == CORPUS_DECKS
    for deck in result["decks"]:
        meta = json.loads((corpus / deck["name"] / "meta.json").read_text())
        assert deck["quarto_version"] == meta["quarto_version"]
        assert deck["rendered_as"] == meta["quarto_version"]
        assert deck["page_errors"] == {}
        assert f"| {deck['name']} | tuning | {meta['quarto_version']} |" in markdown
        # the report has a row for every Quarto slide, in order
        assert [r["quarto"] for r in deck["slides"] if r["quarto"]] == \
            list(range(1, deck["slides_quarto"] + 1))
        # the Quarto side found painted elements on every slide that has text
        empty = [r["quarto"] for r in deck["slides"]
                 if r["quarto"] and r["quarto_text_chars"] and not r["quarto_elements"]]
        assert empty == [], f"{deck['name']}: no elements found on Quarto slides {empty}"
        assert deck["build"]["ok"], deck["build"]["error"]
        if deck["build"]["ok"]:
            assert deck["slides_ours"] > 0 and deck["slides_paired"] > 0
            assert deck["pct_matching"] is not None and deck["elements"] > 0
            if MIN_MATCHING_PCT is not None:
                assert deck["pct_matching"] >= MIN_MATCHING_PCT, deck["worst"]
        else:
            # the renderer's own message, with the paths of the copy written as source/...
            assert deck["build"]["error"].startswith("ERROR source/"), deck["build"]["error"]
            assert deck["pct_matching"] is None and deck["slides_ours"] == 0
    built = [d for d in result["decks"] if d["build"]["ok"]]
    assert all(f"#### {d['name']}: the {len(d['worst'])} worst differences (" in markdown
               for d in built)


def test_the_extra_corpus_is_skipped_with_a_message_where_absent(tmp_path, monkeypatch):
    monkeypatch.delenv(fc.CORPUS_ENV, raising=False)
    said = []
    assert fc.default_corpus(tmp_path / "nowhere", notify=said.append) == [fc.SHARED_CORPUS]
    assert "extra corpus not found at" in said[0] and "fidelity_corpus_extra.py restore" in said[0]
    (tmp_path / "extra" / "deck").mkdir(parents=True)
    (tmp_path / "extra" / "deck" / "meta.json").write_text("{}")
    monkeypatch.setenv(fce.EXTRA_ENV, str(tmp_path / "extra"))
    assert fc.default_corpus() == [fc.SHARED_CORPUS, tmp_path / "extra"]


def _git(*args, cwd):
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", *args], cwd=cwd,
                   check=True, capture_output=True)


def test_the_extra_corpus_manifest_restores_the_same_files_from_a_snapshot(tmp_path):
    """record -> restore gives back the corpus folder byte for byte from a bare git
    snapshot laid out as fetch lays it out; check names a changed file; a file the snapshot
    lacks is kept as an empty stand-in only where the corpus kept it empty."""
    work = tmp_path / "origin"
    (work / "docs" / "talk_files").mkdir(parents=True)
    (work / "talk.qmd").write_text("---\ntitle: T\n---\n")
    (work / "docs" / "talk.html").write_text("<html>quarto</html>")
    (work / "docs" / "talk_files" / "a.css").write_text("p{}")
    _git("init", "-q", cwd=work)
    _git("add", ".", cwd=work)
    _git("commit", "-q", "-m", "c", cwd=work)
    commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=work, capture_output=True,
                            text=True).stdout.strip()
    mirrors = tmp_path / "mirror"
    subprocess.run(["git", "clone", "-q", "--bare", str(work), str(mirrors / "o+r" / "repo")],
                   check=True)
    corpus = tmp_path / "corpus"
    deck = corpus / "o-talk"
    (deck / "source" / "data").mkdir(parents=True)
    (deck / "quarto" / "talk_files").mkdir(parents=True)
    (deck / "source" / "talk.qmd").write_text("---\ntitle: T\n---\n")
    (deck / "source" / "data" / "big.parquet").write_bytes(b"")   # not in the snapshot
    (deck / "quarto" / "talk.html").write_text("<html>quarto</html>")
    (deck / "quarto" / "talk_files" / "a.css").write_text("p{}")
    meta = {"name": "o-talk", "repo": "o/r", "source_commit": commit, "html_commit": commit,
            "html_path": "docs/talk.html", "corpus_html": "quarto/talk.html", "held_out": True}
    (deck / "meta.json").write_text(json.dumps(meta, indent=2) + "\n")
    manifest = fce.record(corpus, mirrors)
    entry = manifest["decks"][0]
    assert entry["quarto_prefix"] == "docs/" and entry["held_out"] is True
    assert {f["path"]: f["origin"] for f in entry["files"]} == {
        "quarto/talk.html": "docs/talk.html", "quarto/talk_files/a.css": "docs/talk_files/a.css",
        "source/data/big.parquet": "data/big.parquet", "source/talk.qmd": "talk.qmd"}
    assert fce.restore(manifest, tmp_path / "again", mirrors) == []
    for p in deck.rglob("*"):
        if p.is_file():
            assert (tmp_path / "again" / "o-talk" / p.relative_to(deck)).read_bytes() == p.read_bytes()
    assert fce.check(manifest, corpus) == []
    (deck / "quarto" / "talk.html").write_text("<html>edited</html>")
    assert fce.check(manifest, corpus) == ["o-talk: quarto/talk.html changed"]
    with pytest.raises(ValueError, match="quarto/talk.html differs from o/r docs/talk.html"):
        fce.record(corpus, mirrors)


def test_the_committed_extra_corpus_manifest_names_every_deck_with_its_origin():
    manifest = fce.load_manifest()
    assert len(manifest["decks"]) >= 16
    for deck in manifest["decks"]:
        assert deck["repo"] and len(deck["source_commit"]) == 40 and deck["license"]
        assert deck["quarto_version"] and isinstance(deck["held_out"], bool)
        assert any(f["path"] == deck["corpus_source_qmd"] for f in deck["files"])
        assert any(f["path"] == deck["corpus_html"] for f in deck["files"])
    assert sum(d["held_out"] for d in manifest["decks"]) >= 8
