"""Results that are expensive to compute (trained models, timings), kept on disk.

A deck that trains models and measures speed while it builds should not retrain after an
edit to an unrelated slide. :func:`cached` keys a result by a name, the inputs that
determine it, the source of this package and the kernels that compute it (PyTorch's
version and CPU capability, :func:`kernels`), so any change to the package's code, to the
inputs or to the kernels computes it again, and nothing else does:

    result = cached("pronoun-model", lambda: train(config), inputs={"config": config})

Files live in :func:`cache_directory` (``TL_CACHE_DIR``, else ``.cache/transformer_lab``
under the working directory). They are written atomically; a file that cannot be read is
a miss (computed again, with a warning), never an error.

A cache folder may travel with the project (zipped, shared), so a file in it is data,
never code: results are stored as plain data (tensors, dicts, lists, tuples, strings,
numbers, booleans, ``None``) and read back with ``torch.load(..., weights_only=True)``,
which refuses any other Python object without running it. The few other types the deck
caches have an explicit encoding (:func:`encode`, :func:`decode`): a trained
:class:`~transformer_lab.run.RunResult` (its model as config and state dict, its
vocabularies as token lists, its data splits), a ``Vocabulary``, a ``TaskData``, a
``TransformerConfig`` and a ``Path``. A value of any other type is refused when it is
stored (a ``TypeError`` naming the type and the cache name); a file that does not load
as plain data or does not decode (a pickle with code in it, a truncated file, weights of
the wrong shape) is a miss, with a one-line warning naming the file.

Processes that build chapters side by side may ask for the same result at once: a miss
computes under a lock on ``<key>.lock`` beside the result (``fcntl.flock``, which the
kernel releases when the process ends, however it ends), so a second process waits for
the first and then loads its file instead of computing it again. A process that dies
while computing leaves no result, and the next one in line computes it.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import io
import json
import os
import pickle
import warnings
from pathlib import Path, PurePath
from typing import Any, Callable, Iterator, TypeVar

import torch

from ..atomic_files import create_beside
from ..checkpoint import describe_error, rng_kept
try:
    import fcntl
except ImportError:  # Windows: no flock, so no waiting (each process computes its own)
    fcntl = None

T = TypeVar("T")
PACKAGE_ROOT = Path(__file__).resolve().parents[1]
FORMAT = "transformer_lab.cache/1"
TYPE_KEY = "__transformer_lab_type__"  # marks an encoded object inside the plain data
_SCALARS = (type(None), bool, int, float, str)
_directory: Path | None = None


def set_cache_directory(path: str | os.PathLike | None) -> None:
    """Keep cached results in ``path`` (``None``: back to the default)."""
    global _directory
    _directory = None if path is None else Path(path)


def cache_directory() -> Path:
    """Where :func:`cached` keeps its files."""
    if _directory is not None:
        return _directory
    return Path(os.environ.get("TL_CACHE_DIR", Path.cwd() / ".cache" / "transformer_lab"))


def package_digest() -> str:
    """sha256 of every ``.py`` file of ``transformer_lab`` (paths and contents)."""
    h = hashlib.sha256()
    for path in sorted(PACKAGE_ROOT.rglob("*.py")):
        h.update(path.relative_to(PACKAGE_ROOT).as_posix().encode())
        h.update(path.read_bytes())
    return h.hexdigest()


def kernels() -> dict:
    """What else decides a result besides its inputs and the package: PyTorch's version and
    the CPU kernels it runs (``ATEN_CPU_CAPABILITY``: AVX-512, AVX2 or the default ones
    train a model to other last bits, and so to another model). A build under other
    kernels computes its results again instead of loading another build's."""
    return {"torch": torch.__version__, "cpu_capability": torch.backends.cpu.get_cpu_capability()}


def _plain(value: Any) -> Any:
    """A JSON-able stand-in for ``value`` that changes whenever ``value`` does."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {type(value).__name__: _plain(dataclasses.asdict(value))}
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, torch.Tensor):
        return {"tensor": hashlib.sha256(value.detach().cpu().contiguous().numpy().tobytes()).hexdigest(),
                "shape": list(value.shape), "dtype": str(value.dtype)}
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    raise TypeError(f"inputs must hold numbers, strings, lists, dicts, dataclasses or tensors, "
                    f"got {type(value).__name__}")


def cache_key(name: str, inputs: dict) -> str:
    """The file stem for ``name`` computed from ``inputs`` by this package's source."""
    if not isinstance(name, str) or not name or not name.replace("-", "").replace("_", "").isalnum():
        raise ValueError(f"name must be a non-empty string of letters, digits, '-' and '_', got {name!r}")
    payload = json.dumps({"inputs": _plain(inputs), "package": package_digest(), "kernels": kernels()},
                         sort_keys=True)
    return f"{name}-{hashlib.sha256(payload.encode()).hexdigest()[:20]}"


# ------------------------------------------------------------------ plain-data encoding
def _dataclass_types() -> dict[str, type]:
    """The dataclasses the deck caches, stored field by field (imported here: ``run``
    imports much of the package)."""
    from ..data.tasks import TaskData
    from ..model import TransformerConfig
    from ..run import RunResult

    return {t.__name__: t for t in (RunResult, TaskData, TransformerConfig)}


def encode(value: Any, name: str = "?") -> Any:
    """``value`` as plain data that ``torch.load(..., weights_only=True)`` reads back;
    :func:`decode` inverts it. Raises ``TypeError`` naming the type and the cache
    ``name`` for a value of a type with no encoding."""
    from ..data.vocabulary import Vocabulary
    from ..model import Transformer

    kind = type(value)
    if kind in _SCALARS or kind is torch.Tensor:
        return value
    if kind is list:
        return [encode(v, name) for v in value]
    if kind is tuple:
        return tuple(encode(v, name) for v in value)
    if kind is dict:
        for key in value:
            if type(key) not in _SCALARS or key == TYPE_KEY:
                raise TypeError(f"cached result {name!r} has a dict key {key!r} of type {type(key).__name__}: "
                                f"keys must be strings, numbers, booleans or None (and not {TYPE_KEY!r})")
        return {k: encode(v, name) for k, v in value.items()}
    if isinstance(value, PurePath):
        return {TYPE_KEY: "Path", "path": str(value)}
    if kind is Vocabulary:
        return {TYPE_KEY: "Vocabulary", **value.to_dict()}
    if kind is Transformer:
        rebuilt = Transformer(value.config)  # a model built with variant parts (code) cannot be rebuilt
        if [type(m) for m in rebuilt.modules()] != [type(m) for m in value.modules()]:
            raise TypeError(f"cached result {name!r} holds a Transformer built with variant parts, which "
                            f"are code and cannot be stored: only a model its config rebuilds can")
        first = next(value.parameters())
        return {TYPE_KEY: "Transformer", "config": encode(value.config, name), "training": value.training,
                "device": str(first.device), "dtype": str(first.dtype).removeprefix("torch."),
                "state": {k: t.detach() for k, t in value.state_dict().items()}}
    types = _dataclass_types()
    if types.get(kind.__name__) is kind:
        fields = {f.name: encode(getattr(value, f.name), name) for f in dataclasses.fields(value) if f.init}
        return {TYPE_KEY: kind.__name__, "fields": fields}
    raise TypeError(f"cached result {name!r} holds a {kind.__module__}.{kind.__qualname__}, which the cache "
                    f"cannot store: it keeps tensors, dicts, lists, tuples, strings, numbers, booleans, None, "
                    f"paths and {', '.join(['Transformer', 'Vocabulary', *types])}")


_DTYPES = ("float32", "float64", "float16", "bfloat16")


def decode(value: Any) -> Any:
    """The value :func:`encode` turned into ``value``. Raises ``ValueError`` (or the
    error of the type's own checks) for data it does not describe."""
    from ..data.vocabulary import Vocabulary
    from ..model import Transformer

    if isinstance(value, list):
        return [decode(v) for v in value]
    if isinstance(value, tuple):
        return tuple(decode(v) for v in value)
    if not isinstance(value, dict):
        return value
    if TYPE_KEY not in value:
        return {k: decode(v) for k, v in value.items()}
    kind = value[TYPE_KEY]
    if kind == "Path":
        return Path(value["path"])
    if kind == "Vocabulary":
        return Vocabulary.from_dict({k: v for k, v in value.items() if k != TYPE_KEY})
    if kind == "Transformer":
        if value["dtype"] not in _DTYPES:
            raise ValueError(f"a cached Transformer's dtype must be one of {_DTYPES}, got {value['dtype']!r}")
        model = Transformer(decode(value["config"])).to(device=torch.device(value["device"]),
                                                         dtype=getattr(torch, value["dtype"]))
        model.load_state_dict(value["state"])  # strict: missing, extra or misshapen weights raise
        return model.train(bool(value["training"]))
    types = _dataclass_types()
    if kind in types:
        return types[kind](**{k: decode(v) for k, v in value["fields"].items()})
    raise ValueError(f"unknown encoded type {kind!r}")


def _write_atomically(path: Path, value: Any) -> None:
    buffer = io.BytesIO()
    torch.save({"format": FORMAT, "value": value}, buffer)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = create_beside(path)  # the mode open() gives under the umask, not mkstemp's 0o600
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(buffer.getvalue())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def cached(name: str, compute: Callable[[], T], *, inputs: dict) -> T:
    """``compute()``, or its result from an earlier call with the same name, inputs and
    package source. ``inputs`` must name everything ``compute`` depends on besides the
    package (seeds, sizes, budgets). The random-number generators are left as they were
    (:func:`random_state_kept`): a hit and a miss look the same to the code after it.
    While another process computes the same key, this call waits for it and loads its
    result (see the module docstring)."""
    if not isinstance(inputs, dict):
        raise TypeError(f"inputs must be a dict, got {type(inputs).__name__}")
    path = cache_directory() / f"{cache_key(name, inputs)}.pt"
    seen = _identity(path)
    found, value = _read(path)
    if found:
        return value
    with _computing(path):
        if _identity(path) != seen:  # written (or replaced) while we waited for the lock
            found, value = _read(path)
            if found:
                return value
        with random_state_kept():
            value = compute()
        _write_atomically(path, encode(value, name))  # a type with no encoding: TypeError, nothing written
    return value


def _identity(path: Path) -> tuple | None:
    """What tells one version of a file from another (None: no file)."""
    try:
        st = path.stat()
    except FileNotFoundError:
        return None
    return st.st_ino, st.st_mtime_ns, st.st_size


def _read(path: Path) -> tuple[bool, Any]:
    """(True, the cached value), or (False, None) when there is no file or it does not
    hold what :func:`cached` writes. Loading is ``weights_only``: a file holding other
    Python objects is refused without running any of its code."""
    if not path.exists():
        return False, None
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # torch's own warnings about the file, reported below in one line
            stored = torch.load(path, weights_only=True)
        if not isinstance(stored, dict) or stored.get("format") != FORMAT or "value" not in stored:
            raise ValueError(f"not a transformer_lab cache file (expected format {FORMAT!r})")
        return True, decode(stored["value"])
    except Exception as error:  # a foreign, truncated or damaged file: compute again, never execute it
        reason = describe_error(error)
        if isinstance(error, pickle.UnpicklingError) and "weights only" in str(error).lower():
            reason = "it holds Python objects other than plain data, refused without running any of its code"
        warnings.warn(f"cached result {path} is unreadable ({reason}); computing it again", stacklevel=3)
        return False, None


@contextlib.contextmanager
def _computing(path: Path) -> Iterator[None]:
    """Hold the exclusive lock on ``<key>.lock`` beside ``path`` for the block, waiting
    while another process holds it. The holder removes the lock file before releasing it;
    a waiter that then finds its open file unlinked (or replaced) locks the new one, so
    every process that computes holds the lock of the file at that name, and none is left
    behind."""
    path.parent.mkdir(parents=True, exist_ok=True)
    lock = path.with_suffix(".lock")
    if fcntl is None:
        yield
        return
    while True:
        fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)  # waits; the kernel releases it if its holder dies
            if _same_file(fd, lock):
                break
        except BaseException:
            os.close(fd)
            raise
        os.close(fd)  # its holder removed it after finishing: take the file now at that name
    try:
        yield
    finally:
        lock.unlink(missing_ok=True)  # while still held, so a waiter sees it is gone
        os.close(fd)


def _same_file(fd: int, path: Path) -> bool:
    try:
        st = path.stat()
    except FileNotFoundError:
        return False
    own = os.fstat(fd)
    return (own.st_dev, own.st_ino) == (st.st_dev, st.st_ino)


@contextlib.contextmanager
def random_state_kept():
    """Run a block and leave the random-number generators (Python's ``random``, NumPy's and
    PyTorch's) as the block found them. :func:`cached` computes inside it, so code after a
    cached call draws the same numbers whether the result was computed (which may draw
    many) or read from disk (which draws none). Training's :func:`~transformer_lab.checkpoint.rng_kept`
    and NumPy's generator, which the deck's cells also use."""
    import numpy as np

    numpy_state = np.random.get_state()
    with rng_kept():
        try:
            yield
        finally:
            np.random.set_state(numpy_state)
