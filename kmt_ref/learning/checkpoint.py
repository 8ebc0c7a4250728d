"""Training checkpoints: one ``.npz`` file, written atomically.

A checkpoint holds everything a run needs to continue bit for bit: the
parameters, Adam's moments and step count, the plateau schedule, the
learning rate, the step, the training generator's state, the history so far
and the configuration (as JSON). It is first written to a temporary file and
then renamed, so a run killed while saving leaves the previous checkpoint
intact.
"""

import json
import os

import numpy as np

__all__ = ["save_checkpoint", "load_checkpoint"]

ARRAYS = ("theta", "adam_m", "adam_v", "train_loss", "val_step", "val_ratio", "val_objective", "val_lr")


def save_checkpoint(path, arrays, meta):
    """Write ``arrays`` (names in :data:`ARRAYS`) and the JSON-able ``meta`` dict to ``path``."""
    missing = [a for a in ARRAYS if a not in arrays]
    if missing:
        raise ValueError(f"checkpoint arrays missing {missing}")
    tmp = f"{path}.tmp.npz"
    np.savez(tmp, meta=np.array(json.dumps(meta)), **{a: np.asarray(arrays[a]) for a in ARRAYS})
    os.replace(tmp, path)


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
    with np.load(path, allow_pickle=False) as f:
        missing = [a for a in ARRAYS + ("meta",) if a not in f.files]
        if missing:
            raise ValueError(f"path={path!r} is not a training checkpoint (missing {missing})")
        arrays = {a: f[a] for a in ARRAYS}
        meta = json.loads(str(f["meta"]))
    return arrays, meta
