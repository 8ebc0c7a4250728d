"""Training checkpoints: one ``.npz`` file, written atomically.

A checkpoint holds everything a run needs to continue bit for bit: the
parameters, Adam's moments and step count, the plateau schedule, the
learning rate, the step, the training generator's state, the history so far
and the configuration (as JSON). It is first written to a temporary file and
then renamed, so a run killed while saving leaves the previous checkpoint
intact. A SHA-256 checksum of the metadata and the arrays is stored with them:
a truncated, corrupted or hand-edited file is refused with a ``ValueError``
that names it (checkpoints written before the checksum existed load without
one).
"""

import hashlib
import json
import os
import zipfile

import numpy as np

__all__ = ["save_checkpoint", "load_checkpoint", "check_checkpoint_dir", "stale_partial_save"]

ARRAYS = ("theta", "adam_m", "adam_v", "train_loss", "val_step", "val_ratio", "val_objective", "val_lr")


def save_checkpoint(path, arrays, meta):
    """Write ``arrays`` (names in :data:`ARRAYS`) and the JSON-able ``meta`` dict to ``path``."""
    missing = [a for a in ARRAYS if a not in arrays]
    if missing:
        raise ValueError(f"checkpoint arrays missing {missing}")
    tmp = f"{path}.tmp.npz"
    meta_text = json.dumps(meta)
    data = {a: np.asarray(arrays[a]) for a in ARRAYS}
    np.savez(tmp, meta=np.array(meta_text), checksum=np.array(_checksum(meta_text, data)), **data)
    os.replace(tmp, path)


def _checksum(meta_text, arrays):
    digest = hashlib.sha256(meta_text.encode())
    for name in ARRAYS:
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
    """The leftover of a save that was interrupted (``path.tmp.npz``), or ``None``."""
    tmp = f"{path}.tmp.npz"
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
    try:
        with np.load(path, allow_pickle=False) as f:
            missing = [a for a in ARRAYS + ("meta",) if a not in f.files]
            if missing:
                raise ValueError(f"path={path!r} is not a training checkpoint (missing {missing}); {advice}")
            arrays = {a: f[a] for a in ARRAYS}
            meta_text = str(f["meta"])
            stored = str(f["checksum"]) if "checksum" in f.files else None
        meta = json.loads(meta_text)
    except (OSError, EOFError, zipfile.BadZipFile, json.JSONDecodeError, ValueError) as err:
        if isinstance(err, ValueError) and str(err).startswith(f"path={path!r}"):
            raise
        raise ValueError(f"path={path!r} is not a readable training checkpoint (truncated, empty or another "
                         f"kind of file: {type(err).__name__}: {err}); {advice}") from None
    if stored is not None and stored != _checksum(meta_text, arrays):
        raise ValueError(f"path={path!r} fails its checksum: the file was changed after it was written; {advice}")
    return arrays, meta
