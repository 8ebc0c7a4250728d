"""Training checkpoints: one ``.npz`` file, written atomically.

A checkpoint holds everything a run needs to continue bit for bit: the
parameters, Adam's moments and step count, the plateau schedule, the
learning rate, the step, the training generator's state, the history so far
and the configuration (as JSON). A finished run continues nowhere, so its
checkpoint leaves out Adam's moments (``OPTIMIZER_ARRAYS``, two thirds of the
parameter-sized arrays): the committed models and the wheel stay small.

A checkpoint is first written to a temporary file and then renamed, so a run
killed while saving leaves the previous checkpoint intact. A SHA-256 checksum
of the metadata and the arrays is stored with them: a truncated, corrupted or
hand-edited file is refused with a ``ValueError`` that names it, and so is a
file without a checksum (deleting the checksum of an edited file does not
make it load). Headers are read before any array is, so a file that claims a
huge array is refused unread.
"""

import contextlib
import hashlib
import json
import os
import zipfile

import numpy as np

from .._paths import check_not_committed

__all__ = ["save_checkpoint", "load_checkpoint", "check_checkpoint_dir", "checkpoint_lock",
           "stale_partial_save"]

ARRAYS = ("theta", "adam_m", "adam_v", "train_loss", "val_step", "val_ratio", "val_objective", "val_lr")
#: The arrays only an unfinished run needs: both or neither are in a checkpoint.
OPTIMIZER_ARRAYS = ("adam_m", "adam_v")


def save_checkpoint(path, arrays, meta):
    """Write ``arrays`` (names in ``ARRAYS``; ``OPTIMIZER_ARRAYS`` both or neither) and the JSON-able
    ``meta`` dict to ``path``.

    The temporary file beside ``path`` is created exclusively and never
    through a symbolic link; a failed write (a full disk) removes it, so the
    previous checkpoint stays the one a run resumes. Nothing is written inside
    the committed results, links followed.
    """
    missing = _missing(arrays)
    if missing:
        raise ValueError(f"checkpoint arrays missing {missing}")
    path = check_not_committed(path, "checkpoint")
    tmp = f"{path}.tmp.npz"
    meta_text = json.dumps(meta)
    data = {a: np.asarray(arrays[a]) for a in ARRAYS if a in arrays}
    handle = _create_exclusively(tmp)
    try:
        with os.fdopen(handle, "wb") as f:
            np.savez(f, meta=np.array(meta_text), checksum=np.array(_checksum(meta_text, data)), **data)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


def _create_exclusively(tmp):
    """A new file at ``tmp``, opened for writing; a stale regular file there is replaced, a link refused."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
    try:
        return os.open(tmp, flags, 0o644)
    except FileExistsError:
        if os.path.islink(tmp) or not os.path.isfile(tmp):
            raise ValueError(f"{tmp!r} exists and is not a regular file (a link?); a checkpoint is never written "
                             "through it: remove it") from None
        os.unlink(tmp)  # the leftover of an interrupted save (see stale_partial_save)
        return os.open(tmp, flags, 0o644)


@contextlib.contextmanager
def checkpoint_lock(path):
    """Hold ``path.lock`` while a run writes ``path``: a second run on the same path is refused.

    The lock is an ``flock`` on that file, released when the run ends, however
    it ends (a killed process holds no lock). Where ``fcntl`` does not exist
    (Windows) nothing is locked.
    """
    try:
        import fcntl
    except ImportError:  # pragma: no cover - not on POSIX
        yield
        return
    lock = f"{path}.lock"
    with open(lock, "a") as f:
        try:
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise ValueError(f"checkpoint={path!r} is in use by another run (it holds {lock!r}); wait for it, "
                             "or choose another --results-dir") from None
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def _missing(names):
    """The arrays a checkpoint lacks: any of ``ARRAYS``, except the optimizer's when both are absent."""
    missing = [a for a in ARRAYS if a not in names]
    return [] if sorted(missing) == sorted(OPTIMIZER_ARRAYS) else missing


def _checksum(meta_text, arrays):
    digest = hashlib.sha256(meta_text.encode())
    for name in (a for a in ARRAYS if a in arrays):
        a = np.ascontiguousarray(arrays[name])
        digest.update(f"{name}:{a.dtype.str}:{a.shape}".encode())
        digest.update(a.tobytes())
    return digest.hexdigest()


def check_checkpoint_dir(path):
    """Refuse a checkpoint path whose directory does not exist (before any training)."""
    folder = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(folder):
        raise ValueError(f"checkpoint={path!r}: its directory {folder!r} does not exist; create it first")


def stale_partial_save(path):
    """The leftover of a save that was interrupted (``path.tmp.npz``), or ``None``; a link there is refused."""
    tmp = f"{path}.tmp.npz"
    if os.path.islink(tmp) or (os.path.lexists(tmp) and not os.path.isfile(tmp)):
        raise ValueError(f"{tmp!r} exists and is not a regular file (a link?); a checkpoint is never written "
                         "through it: remove it")
    return tmp if os.path.exists(tmp) else None


def load_checkpoint(path):
    """Read a checkpoint: ``(arrays, meta)``.

    Raises
    ------
    FileNotFoundError
        If ``path`` does not exist.
    ValueError
        If the file is not a checkpoint of this format.
    """
    if not os.path.exists(path):
        raise FileNotFoundError(f"no checkpoint at path={path!r}")
    advice = "move it away to start over, or restore it from version control"
    _check_archive(path, advice)
    try:
        with np.load(path, allow_pickle=False) as f:
            missing = _missing(f.files) + ([] if "meta" in f.files else ["meta"])
            if missing:
                raise ValueError(f"path={path!r} is not a training checkpoint (missing {missing}); {advice}")
            arrays = {a: f[a] for a in ARRAYS if a in f.files}
            meta_text = str(f["meta"])
            stored = str(f["checksum"]) if "checksum" in f.files else None
        meta = json.loads(meta_text)
    except (OSError, EOFError, zipfile.BadZipFile, json.JSONDecodeError, RecursionError, ValueError) as err:
        if isinstance(err, ValueError) and str(err).startswith(f"path={path!r}"):
            raise
        raise ValueError(f"path={path!r} is not a readable training checkpoint (truncated, empty or another "
                         f"kind of file: {type(err).__name__}: {err}); {advice}") from None
    _check_meta(path, meta, advice)
    _check_values(path, arrays, meta, advice)
    digest = _checksum(meta_text, arrays)
    if stored is None:
        raise ValueError(f"path={path!r} has no checksum: every checkpoint is written with one; {advice}")
    if stored != digest:
        raise ValueError(f"path={path!r} fails its checksum: the file was changed after it was written; {advice}")
    return arrays, meta


#: Largest array a checkpoint member may hold (1 GiB): a header that claims more is refused unread.
MAX_MEMBER_BYTES = 2**30

#: Metadata every checkpoint has, with its JSON type.
META_TYPES = {"format": str, "config": dict, "step": int, "adam_t": int, "lr": float, "plateau_best": float,
              "plateau_bad": int, "rng_state": dict, "wall_time": float}


def _check_archive(path, advice):
    """Read each member's header, not its data: refuse object arrays and sizes no checkpoint has."""
    try:
        with zipfile.ZipFile(path) as archive:
            for info in archive.infolist():
                if info.file_size > MAX_MEMBER_BYTES:
                    raise ValueError(f"path={path!r}: member {info.filename!r} unpacks to {info.file_size} bytes, "
                                     f"more than a checkpoint holds ({MAX_MEMBER_BYTES}); {advice}")
                with archive.open(info) as member:
                    version = np.lib.format.read_magic(member)
                    read_header = (np.lib.format.read_array_header_1_0 if version == (1, 0)
                                   else np.lib.format.read_array_header_2_0)
                    shape, _, dtype = read_header(member)
                if dtype.hasobject or int(np.prod(shape, dtype=np.int64)) * dtype.itemsize > info.file_size:
                    raise ValueError(f"path={path!r}: member {info.filename!r} claims an array {shape} of {dtype} "
                                     f"that its {info.file_size} bytes cannot hold; {advice}")
    except (OSError, EOFError, zipfile.BadZipFile, ValueError) as err:
        if isinstance(err, ValueError) and str(err).startswith(f"path={path!r}"):
            raise
        raise ValueError(f"path={path!r} is not a readable training checkpoint (truncated, empty or another "
                         f"kind of file: {type(err).__name__}: {err}); {advice}") from None


def _check_meta(path, meta, advice):
    """The metadata is a JSON object with the fields of :data:`META_TYPES`, each of its type."""
    if not isinstance(meta, dict):
        raise ValueError(f"path={path!r}: its metadata is a JSON {type(meta).__name__}, not an object; {advice}")
    for key, kind in META_TYPES.items():
        value = meta.get(key)
        ok = isinstance(value, (int, float)) and not isinstance(value, bool) if kind is float else (
            isinstance(value, kind) and not (kind is int and isinstance(value, bool)))
        if not ok:
            raise ValueError(f"path={path!r}: metadata field {key!r} must be a JSON {kind.__name__}; "
                             f"got {value!r:.80}; {advice}")


def _check_values(path, arrays, meta, advice):
    """Values no run writes: a checksum can be recomputed by anyone, so a file that passes it is still read
    as input. Parameters and moments finite, of one length; counts non-negative; a positive finite learning
    rate; a random state this generator takes."""
    def refuse(what):
        raise ValueError(f"path={path!r}: {what}; {advice}")

    theta = arrays["theta"]
    if theta.ndim != 1 or theta.dtype.kind != "f" or not np.all(np.isfinite(theta)):
        refuse(f"theta must be a finite float vector; got shape {theta.shape}, dtype {theta.dtype}")
    for name in OPTIMIZER_ARRAYS:
        a = arrays.get(name)
        if a is not None and (a.shape != theta.shape or a.dtype.kind != "f" or not np.all(np.isfinite(a))):
            refuse(f"{name} must be finite and of theta's shape {theta.shape}; got shape {a.shape}")
    if "adam_v" in arrays and np.any(arrays["adam_v"] < 0):
        refuse("adam_v (second moments) must be non-negative")
    for name in ARRAYS[3:]:
        if arrays[name].ndim != 1 or arrays[name].dtype.kind not in "fiu":
            refuse(f"{name} must be a vector of numbers; got shape {arrays[name].shape}, dtype {arrays[name].dtype}")
    for key in ("step", "adam_t", "plateau_bad"):
        if meta[key] < 0:
            refuse(f"metadata field {key!r} must be >= 0; got {meta[key]}")
    if not (np.isfinite(meta["lr"]) and meta["lr"] > 0):
        refuse(f"metadata field 'lr' must be a positive finite learning rate; got {meta['lr']!r}")
    if not (np.isfinite(meta["wall_time"]) and meta["wall_time"] >= 0):
        refuse(f"metadata field 'wall_time' must be finite and >= 0; got {meta['wall_time']!r}")
    if np.isnan(meta["plateau_best"]):
        refuse("metadata field 'plateau_best' must not be NaN")
    try:
        np.random.PCG64().state = meta["rng_state"]
    except (TypeError, ValueError, KeyError, OverflowError) as err:
        refuse(f"metadata field 'rng_state' is not a PCG64 state ({type(err).__name__}: {err})")
