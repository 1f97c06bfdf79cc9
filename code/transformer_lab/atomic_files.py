"""The temporary file of every atomic write in the package (checkpoints, a run's metrics
and summary, ONNX exports, ``tt.cached``'s results).

Each is written under a unique hidden name beside its final path, then moved there with
``os.replace``, so a reader sees the old file or the new one whole. The temporary is
created as ``open(path, "w")`` creates a file (mode 0o666 less the umask, or the folder's
default ACL), not as ``tempfile.mkstemp`` does (0o600, which ``os.replace`` keeps): under
umask 022 the files are 0o644, readable by a web server running as another user, and
under umask 077 they stay private.
"""

from __future__ import annotations

import os
import secrets
from pathlib import Path

_ATTEMPTS = 100


def create_beside(path: str | os.PathLike, suffix: str = ".tmp") -> tuple[int, str]:
    """A new empty file ``.<name>.<random><suffix>`` in ``path``'s folder, open for
    writing: ``(descriptor, its path)``, as ``tempfile.mkstemp`` returns them, with the
    mode a plain ``open`` would give it. Raises ``OSError`` as ``open`` does (a missing or
    read-only folder)."""
    path = Path(path)
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0)
    for _ in range(_ATTEMPTS):
        tmp = path.parent / f".{path.name}.{secrets.token_hex(6)}{suffix}"
        try:
            return os.open(tmp, flags, 0o666), str(tmp)  # the kernel applies the umask, as for open()
        except FileExistsError:
            continue
    raise FileExistsError(f"no unused temporary name for {str(path)!r} after {_ATTEMPTS} attempts")
