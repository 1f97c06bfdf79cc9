"""How the renderer touches the file system, so that nothing is lost and nothing is silent:
sources read as UTF-8 with an error naming the file and line of the first bad byte,
writes that land whole or not at all, unique temporary names, folders checked to be
writable before any cell runs, and one build of a document at a time.

Every file written through a temporary (the HTML, the PDF, the build stamp) gets the mode
a plain ``open`` gives under the umask (:func:`create_beside`): 0o644 under umask 022, so
a web server running as another user can read the deck. ``tempfile.mkstemp`` would make
it 0o600, and ``os.replace`` keeps the temporary's mode.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import secrets
import tempfile
from pathlib import Path
from typing import Iterator

from .errors import DeckError


def read_source(path: Path) -> str:
    """The text of a source file (.qmd, .yml, .scss), which Quarto reads as UTF-8."""
    path = Path(path)
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise DeckError(f"cannot read the file: {exc.strerror}", path) from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        column = exc.start - data.rfind(b"\n", 0, exc.start)
        raise DeckError(f"not UTF-8 text: byte 0x{data[exc.start]:02x} at column {column} "
                        "cannot be decoded; Quarto reads sources as UTF-8, so save the file "
                        "as UTF-8", path, line) from None


def write_atomic(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` through a temporary file renamed over it: a reader (or
    the next build, after a crash or a full disk) sees the old file or the new one whole."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = create_beside(path.parent, f".{path.name}.", ".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def temporary_beside(path: Path, suffix: str) -> Path:
    """A new, uniquely named empty file in ``path``'s folder (``.<stem>.<random><suffix>``),
    so that two builds never share a temporary."""
    fd, tmp = create_beside(path.parent, f".{path.stem}.", suffix)
    os.close(fd)
    return Path(tmp)


def create_beside(folder: Path, prefix: str, suffix: str) -> tuple[int, str]:
    """A new empty file ``<prefix><random><suffix>`` in ``folder``, open for writing:
    ``(descriptor, its path)`` as ``tempfile.mkstemp`` returns them, but with the mode a
    plain ``open`` gives (0o666 less the umask), which the final file keeps. (The same as
    ``transformer_lab.atomic_files.create_beside``: the renderer does not import the
    library, which would load torch.)"""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL
    for _ in range(100):
        tmp = Path(folder) / f"{prefix}{secrets.token_hex(6)}{suffix}"
        try:
            return os.open(tmp, flags, 0o666), str(tmp)  # the kernel applies the umask, as for open()
        except FileExistsError:
            continue
    raise FileExistsError(f"no unused temporary name in {str(folder)!r} after 100 attempts")


def check_writable(folders: dict[Path, str]) -> None:
    """Every folder (created when missing) must accept a new file; ``folders`` maps each to
    what it is for. Checked before any cell runs, so a read-only folder costs nothing."""
    for folder, purpose in folders.items():
        try:
            folder.mkdir(parents=True, exist_ok=True)
            fd, probe = tempfile.mkstemp(dir=folder, prefix=".deckbuild-probe-")
            os.close(fd)
            os.unlink(probe)
        except OSError as exc:
            raise DeckError(f"cannot write to {exc.filename or folder} ({purpose}): "
                            f"{exc.strerror}; make it writable or build a copy of the "
                            "project elsewhere") from None


@contextlib.contextmanager
def build_lock(lock_file: Path, what: str) -> Iterator[None]:
    """Hold an exclusive lock on ``lock_file`` for one build of ``what``; a second build of
    the same document, from any process, is refused with the first one's process id. The
    operating system releases the lock when the holder exits, even when killed."""
    lock_file.parent.mkdir(parents=True, exist_ok=True)
    with open(lock_file, "a+", encoding="utf-8") as f:
        try:
            fcntl.flock(f.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            f.seek(0)
            holder = f.read().strip() or "unknown"
            raise DeckError(f"another build of {what} is running (process {holder}); wait "
                            "for it to finish, then run this one again") from None
        f.seek(0)
        f.truncate()
        f.write(str(os.getpid()))
        f.flush()
        try:
            yield
        finally:
            f.truncate(0)
