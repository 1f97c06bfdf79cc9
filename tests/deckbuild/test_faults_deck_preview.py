"""Fault cases (issue 11) of the preview server: a port in use, build errors while it
runs, requests from other sites (DNS rebinding) and malformed paths."""

import os
import socket
import subprocess
import sys

from deck_helpers import REPO

TRACEBACK = "Traceback (most recent call last)"


def test_a_port_in_use_is_found_before_building(deck, tmp_path):
    """Before: the whole deck was built, then the bind failed with an OSError traceback."""
    root = deck("errors")
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        env = dict(os.environ, PYTHONPATH=str(REPO / "code"))
        proc = subprocess.run([sys.executable, "-m", "deckbuild", "preview", str(root / "good.qmd"),
                               "--no-browser", "--port", str(port)],
                              capture_output=True, text=True, env=env, timeout=60)
    assert proc.returncode == 1 and TRACEBACK not in proc.stderr, proc.stderr
    assert (f"cannot serve the preview on 127.0.0.1:{port}: Address already in use (another "
            "preview may be running; choose another port with --port)") in proc.stderr
    assert "[deckbuild] good.qmd" not in proc.stderr and not (root / "_output").exists()


def test_the_preview_survives_build_errors_shows_them_and_rebuilds(deck, preview):
    """Before: a non-UTF-8 save ended the preview with a UnicodeDecodeError traceback."""
    root = deck("errors")
    doc = root / "good.qmd"
    good = doc.read_bytes()
    doc.write_bytes(good.replace(b"## One slide", b"## Caf\xe9"))   # latin-1, not UTF-8
    p = preview(doc)
    first = p.wait(lambda: p.state()["error"], "the first build's error")
    assert "good.qmd:5: not UTF-8 text" in first
    status, body = p.get("/good.html")          # no deck yet: the error page
    assert status == 500 and b"good.qmd:5: not UTF-8 text" in body
    doc.write_bytes(good)
    # the deck is written a moment before the build's state is: wait for both (under load
    # the state's error was read between the two once)
    p.wait(lambda: p.get("/good.html")[0] == 200 and p.state()["error"] == "", "the deck after the fix")
    doc.write_bytes(good.replace(b'print("good output")', b"1 / 0"))
    error = p.wait(lambda: p.state()["error"], "the error of the broken cell")
    assert "cell 1 raised ZeroDivisionError" in error
    status, body = p.get("/good.html")          # the last good deck, which shows the error
    assert status == 200 and b"good output" in body and b"deckbuild-error" in body
    doc.write_bytes(good.replace(b"## One slide", b"## Caf\xe9"))
    p.wait(lambda: "not UTF-8" in p.state()["error"], "the second non-UTF-8 error")
    # the console shows each error (the cell's own traceback included), never deckbuild's
    assert p.proc.poll() is None
    assert "UnicodeDecodeError" not in p.console() and "code/deckbuild" not in p.console()


def test_requests_for_other_host_names_are_refused_and_nul_is_a_bad_request(deck, preview):
    """DNS rebinding: a page on evil.example whose name now resolves to 127.0.0.1 sends
    `Host: evil.example:port`; it must not read the deck or the error text. Before, it
    could; and `%00` in a path printed a ValueError traceback on the console."""
    root = deck("errors")
    p = preview(root / "good.qmd")
    p.wait(lambda: p.get("/good.html")[0] == 200, "the deck")
    for host in (f"evil.example:{p.port}", "evil.example", f"127.0.0.1.evil.example:{p.port}", ""):
        for path in ("/good.html", "/__deckbuild/version"):
            status, body = p.get(path, host=host)
            assert status == 403 and b"good output" not in body and b"version" not in body, host
    for host in (f"localhost:{p.port}", f"127.0.0.1:{p.port}", "localhost", f"LOCALHOST:{p.port}"):
        assert p.get("/good.html", host=host)[0] == 200, host
    for path in ("/good%00.html", "/%00", "/good.html%00"):
        assert p.get(path)[0] == 400, path
    assert p.get("/good.html")[0] == 200
    assert TRACEBACK not in p.console() and "ValueError" not in p.console()


def test_symlinks_out_of_the_output_folder_are_refused(deck, preview, tmp_path):
    """Issue 23. Before: a link in _output to any file (/etc/passwd) was served."""
    root = deck("errors")
    secret = tmp_path / "outside" / "secret.txt"
    secret.parent.mkdir()
    secret.write_text("not for the preview")
    (secret.parent / "page.html").write_text("<p>not for the preview</p>")
    p = preview(root / "good.qmd")
    p.wait(lambda: p.get("/good.html")[0] == 200, "the deck")
    out = root / "_output"
    (out / "secret.txt").symlink_to(secret)
    (out / "page.html").symlink_to(secret.parent / "page.html")
    (out / "folder").symlink_to(secret.parent, target_is_directory=True)
    (out / "same.html").symlink_to(out / "good.html")       # inside: still served
    for path in ("/secret.txt", "/page.html", "/folder/secret.txt", "/folder/", "/folder",
                 "/secret.txt?x=1", "/%73ecret.txt"):
        status, body = p.get(path)
        assert status == 404 and b"not for the preview" not in body, path
    status, body = p.get("/same.html")
    assert status == 200 and b"good output" in body
    assert p.get("/good.html")[0] == 200 and TRACEBACK not in p.console()


def test_an_idle_connection_is_closed_by_the_server(deck, preview, monkeypatch):
    """Issue 23. Before: a connection that sent nothing was kept open (a thread each) for ever."""
    import time

    monkeypatch.setenv("DECKBUILD_PREVIEW_IDLE_TIMEOUT", "2")
    root = deck("errors")
    p = preview(root / "good.qmd")
    p.wait(lambda: p.get("/good.html")[0] == 200, "the deck")
    with socket.create_connection(("127.0.0.1", p.port), timeout=15) as idle:
        start = time.monotonic()
        try:
            data = idle.recv(1024)
        except TimeoutError:
            data = None
        waited = time.monotonic() - start
    assert data == b"", f"the idle connection was still open after {waited:.1f}s"
    assert 1.5 <= waited < 10, waited
    assert p.get("/good.html")[0] == 200 and TRACEBACK not in p.console()
