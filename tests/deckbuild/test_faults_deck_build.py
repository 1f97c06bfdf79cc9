"""Fault cases (issue 11): two builds at once, a damaged build stamp, read-only folders.
Nothing is lost (the last good deck stays) and nothing fails with a traceback."""

import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from deck_helpers import REPO, run_cli

TRACEBACK = "Traceback (most recent call last)"


def _spawn_render(root: Path, *args: str) -> subprocess.Popen:
    env = dict(os.environ, PYTHONPATH=str(REPO / "code"))
    return subprocess.Popen([sys.executable, "-m", "deckbuild", "render", str(root), *args],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)


def test_two_renders_of_one_project_at_once(deck):
    """Before: both wrote `_output/.deck.partial.pdf`; one crashed with FileNotFoundError."""
    root = deck("features")
    procs = [_spawn_render(root, "--no-cache") for _ in range(2)]
    results = [(p.wait(timeout=240), p.communicate()[1]) for p in procs]
    for rc, err in results:
        assert TRACEBACK not in err, err
        assert rc == 0 or (rc == 1 and "another build of deck.qmd is running (process " in err), err
    assert any(rc == 0 for rc, _ in results)
    assert sorted(p.name for p in (root / "_output").iterdir()) == ["deck.html", "deck.pdf"]


def test_a_build_while_another_holds_the_document_is_refused(deck):
    from deckbuild.files import build_lock

    root = deck("errors")
    with build_lock(root / ".cache" / "deckbuild" / "locks" / "good.qmd.lock", "good.qmd"):
        proc = run_cli("render", str(root / "good.qmd"), "--html-only")
    assert proc.returncode == 1 and TRACEBACK not in proc.stderr
    assert (f"another build of good.qmd is running (process {os.getpid()}); wait for it to "
            "finish, then run this one again") in proc.stderr
    assert "kernel ready" not in proc.stderr and not (root / "_output" / "good.html").exists()
    assert run_cli("render", str(root / "good.qmd"), "--html-only").returncode == 0


def test_temporaries_a_killed_build_left_are_removed(deck):
    root = deck("errors")
    out = root / "_output"
    out.mkdir()
    (out / ".good.k1ll3d.partial.html").write_text("half a deck")
    (out / ".other.k1ll3d.partial.html").write_text("another document's")
    assert run_cli("render", str(root / "good.qmd"), "--html-only").returncode == 0
    assert sorted(p.name for p in out.iterdir()) == [".other.k1ll3d.partial.html", "good.html"]


@pytest.mark.parametrize("content", ["", '{"fingerp', "[1, 2]", '{"other": 1}', "\xff\xfe"])
def test_an_unreadable_build_stamp_is_a_cache_miss(deck, content):
    """Before: every later cached render failed with JSONDecodeError until --no-cache."""
    root = deck("errors")
    assert run_cli("render", str(root / "good.qmd"), "--html-only").returncode == 0
    stamp = root / ".cache" / "deckbuild" / "builds" / "good.qmd.json"
    good = json.loads(stamp.read_text())
    stamp.write_bytes(content.encode("latin-1"))
    proc = run_cli("render", str(root / "good.qmd"), "--html-only")
    assert proc.returncode == 0 and TRACEBACK not in proc.stderr, proc.stderr
    assert "build stamp .cache/deckbuild/builds/good.qmd.json is unreadable" in proc.stderr
    assert "wrote _output/good.html" in proc.stderr
    assert json.loads(stamp.read_text()) == good
    assert "up to date" in run_cli("render", str(root / "good.qmd"), "--html-only").stderr


def test_a_write_that_fails_part_way_leaves_the_previous_stamp_whole(tmp_path):
    """Stamps are written through a temporary renamed over the old file: a failure while
    writing (a full disk, a crash) leaves the previous stamp, never an empty one."""
    from deckbuild.files import write_atomic

    stamp = tmp_path / "builds" / "deck.qmd.json"
    write_atomic(stamp, '{"fingerprint": "abc"}')
    with pytest.raises(UnicodeEncodeError):
        write_atomic(stamp, '{"fingerprint": "' + "x" * 100_000 + '\udc80"}')
    assert stamp.read_text() == '{"fingerprint": "abc"}'
    assert [p.name for p in stamp.parent.iterdir()] == ["deck.qmd.json"]


class _KilledAfter:
    """Stands for the ``os`` module inside deckbuild.build: its ``replace`` is killed (a
    KeyboardInterrupt, as Ctrl-C or a signal turned exception) once ``renames`` have
    completed; everything else is the real ``os``."""

    def __init__(self, renames: int):
        self.left = renames

    def __getattr__(self, name):
        return getattr(os, name)

    def replace(self, src, dst):
        if self.left == 0:
            raise KeyboardInterrupt(f"killed before renaming {Path(src).name}")
        self.left -= 1
        os.replace(src, dst)


def _fake_pdf(html: Path, pdf: Path, ctx=None) -> None:
    """A stand-in for Chromium's printing: the 'PDF' names the HTML it was printed from."""
    pdf.write_bytes(b"PDF of " + hashlib.sha256(html.read_bytes()).hexdigest().encode())


@pytest.mark.parametrize("renames_done", [0, 1, 2],
                         ids=["before-the-pdf", "between-pdf-and-html", "before-the-stamp"])
def test_a_build_killed_while_replacing_outputs_is_not_up_to_date_after_a_revert(
        deck, monkeypatch, renames_done):
    """Issue 23. Before: the stamp of the last whole build stayed while its outputs were
    replaced, so a build of version 2 killed between the PDF's and the HTML's renames, then
    the source reverted to version 1, gave 'up to date' with a version-1 HTML beside a
    version-2 PDF (killed after both renames: version-2 outputs for a version-1 source)."""
    from deckbuild import build
    from deckbuild.build import BuildSettings, build_document

    monkeypatch.setattr(build.browser, "print_pdf", _fake_pdf)
    monkeypatch.setattr(build.browser, "pdf_pages", lambda pdf: 1)
    root = deck("errors")
    doc, out = root / "good.qmd", root / "_output"
    version_1 = doc.read_text()
    settings = BuildSettings()
    assert not build_document(doc, settings, lambda line: None).up_to_date

    doc.write_text(version_1.replace("## One slide", "## Changed slide"))
    if renames_done < 2:
        monkeypatch.setattr(build, "os", _KilledAfter(renames_done))
    else:
        real_write_atomic = build.files.write_atomic

        def killed_write_atomic(path, text):
            if path.parent.name == "builds":
                raise KeyboardInterrupt("killed before writing the build stamp")
            real_write_atomic(path, text)
        monkeypatch.setattr(build.files, "write_atomic", killed_write_atomic)
    with pytest.raises(KeyboardInterrupt):
        build_document(doc, settings, lambda line: None)
    monkeypatch.undo()
    monkeypatch.setattr(build.browser, "print_pdf", _fake_pdf)
    monkeypatch.setattr(build.browser, "pdf_pages", lambda pdf: 1)

    doc.write_text(version_1)
    emitted = []
    result = build_document(doc, settings, emitted.append)
    html = (out / "good.html").read_text(encoding="utf-8")
    assert "One slide" in html and "Changed slide" not in html, emitted
    assert (out / "good.pdf").read_bytes() == (
        b"PDF of " + hashlib.sha256((out / "good.html").read_bytes()).hexdigest().encode()), (
        f"the PDF is not the HTML's (up to date: {result.up_to_date})")
    assert build_document(doc, settings, lambda line: None).up_to_date   # the stamp is back


# Root ignores file permissions, so a read-only folder is tested by running the render
# without the capabilities that let root write anywhere (CAP_DAC_OVERRIDE and
# CAP_DAC_READ_SEARCH dropped from the bounding set with util-linux's setpriv): the
# permission bits then apply to it as to any user. Not as root, chmod alone does it.
SETPRIV = shutil.which("setpriv")


def _render_without_write_override(doc: Path) -> subprocess.CompletedProcess:
    if os.geteuid() != 0:
        return run_cli("render", str(doc), "--html-only")
    if SETPRIV is None:
        pytest.skip("running as root without setpriv (util-linux): cannot drop CAP_DAC_OVERRIDE")
    env = dict(os.environ, PYTHONPATH=str(REPO / "code"))
    return subprocess.run([SETPRIV, "--bounding-set=-dac_override,-dac_read_search", "--",
                           sys.executable, "-m", "deckbuild", "render", str(doc), "--html-only"],
                          capture_output=True, text=True, env=env, timeout=120)


@pytest.mark.parametrize("read_only, folder, purpose", [
    (".cache", ".cache/deckbuild", "the cell cache"),
    (".", "_output", "the output folder"),
])
def test_a_read_only_folder_is_found_before_any_cell_runs(deck, read_only, folder, purpose):
    """Before: every cell ran, then the cache write failed with a PermissionError traceback."""
    root = deck("errors")
    (root / ".cache").mkdir()
    (root / read_only).chmod(0o555)
    try:
        proc = _render_without_write_override(root / "good.qmd")
    finally:
        (root / read_only).chmod(0o755)
    assert proc.returncode == 1 and TRACEBACK not in proc.stderr, proc.stderr
    assert f"cannot write to {root / folder} ({purpose}): Permission denied" in proc.stderr
    assert "kernel ready" not in proc.stderr


@pytest.mark.parametrize("damage", ["emptied", "truncated"])
def test_a_damaged_cached_theme_is_reported_and_compiled_again(deck, damage):
    """Issue 23. Before: an emptied cached theme CSS was used as it was, and the deck
    was built without its theme (no warning)."""
    from deckbuild.build import BuildSettings, build_document

    root = deck("errors")
    (root / "marker.scss").write_text(
        "/*-- scss:rules --*/\n.reveal .theme-only-marker { color: #D55E00; }\n")
    quarto = root / "_quarto.yml"
    quarto.write_text(quarto.read_text().replace("theme: default", "theme: [default, marker.scss]"))
    doc, html = root / "good.qmd", root / "_output" / "good.html"
    settings = BuildSettings(html_only=True)
    build_document(doc, settings, lambda line: None)
    rule = ".theme-only-marker{color:#d55e00}"
    assert rule in html.read_text(encoding="utf-8")
    [css] = (root / ".cache" / "deckbuild" / "theme").glob("*.css")
    whole = css.read_bytes()
    css.write_bytes(b"" if damage == "emptied" else whole[: len(whole) // 2])

    emitted = []
    build_document(doc, settings, emitted.append)
    shown = css.relative_to(root)
    assert [line for line in emitted if "damaged" in line] == [
        f"  compiled theme {shown} is damaged (its content does not match the checksum in "
        "its name); compiling the theme again"]
    assert rule in html.read_text(encoding="utf-8")
    assert css.read_bytes() == whole
    emitted.clear()
    assert build_document(doc, settings, emitted.append).up_to_date
    assert not [line for line in emitted if "damaged" in line]
