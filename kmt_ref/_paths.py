"""Checks of the paths a command reads or writes, before any work: the committed results are read-only,
a folder or file must take what will be written there, a figure's format must be one matplotlib writes,
and a JSON file must read as JSON. The checks of values and arrays are in ``kmt_ref._validation``.
"""

import json
import os
import tempfile

__all__ = ["COMMITTED_RESULTS", "check_not_committed", "check_writable", "check_image_path", "read_json"]


#: The results committed with the package: read-only inputs, never written.
COMMITTED_RESULTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "results")


def check_not_committed(path, name="path"):
    """``path`` as an absolute path, refused if it is, or its real location (symbolic links followed,
    for the file and every folder above it) lies, inside the committed results."""
    path = os.path.abspath(os.fspath(path))
    committed = os.path.realpath(COMMITTED_RESULTS)
    real = os.path.realpath(path)
    if real == committed or real.startswith(committed + os.sep):
        raise ValueError(
            f"{name} must not be inside the committed results ({committed}): they are read-only inputs; "
            f"got {name}={path!r}" + ("" if real == path else f" (which is {real!r})")
            + ". Write to another directory (default ./kmt_ref_results) and copy finished results in "
            "deliberately."
        )
    return path


def check_writable(path, name="path", folder=True):
    """``path`` as an absolute path, once it is known to take what a command will write there, before any work.

    ``folder=True``: a folder (made, with its parents, if missing) in which a
    file can be created (a probe file is made and removed); ``False``: a file
    path whose folder is such a folder and which is not itself a folder. A
    dangling symbolic link, a file where a folder is needed, a read-only or
    special file system (``/proc``, ``/dev/null``) all give a ``ValueError``
    naming the argument, the path and the system's reason.
    """
    path = check_not_committed(path, name)
    folder_path = path if folder else os.path.dirname(path)
    for p in (path, folder_path):
        if os.path.islink(p) and not os.path.exists(p):
            raise ValueError(f"{name} is a symbolic link to nothing: {name}={path!r} "
                             f"({os.readlink(p)!r} does not exist)")
    if not folder and os.path.isdir(path):
        raise ValueError(f"{name} must be a file path, not a folder; got {name}={path!r}")
    if not folder and os.path.exists(path) and not os.path.isfile(path):
        raise ValueError(f"{name} must be a regular file's path, not a device or other special file; got "
                         f"{name}={path!r}")
    try:
        os.makedirs(folder_path, exist_ok=True)
        with tempfile.TemporaryFile(dir=folder_path):
            pass
    except OSError as err:
        raise ValueError(f"{name} cannot be written to: {name}={path!r} ({err.strerror or err}); choose another "
                         "place") from None
    return path


def check_image_path(path, name="path"):
    """``path`` as :func:`check_writable` gives it, once its extension is a format matplotlib writes (checked
    before the work whose figure it is)."""
    from matplotlib.figure import Figure

    formats = Figure().canvas.get_supported_filetypes()
    extension = os.path.splitext(os.fspath(path))[1].lstrip(".").lower()
    if extension not in formats:
        raise ValueError(f"{name} must end in an image format matplotlib writes ({', '.join(sorted(formats))}); "
                         f"got {name}={os.fspath(path)!r}")
    return check_writable(path, name, folder=False)


def read_json(path, name="path"):
    """The JSON value of the file at ``path``; a ``ValueError`` naming ``name`` and the path when it cannot be
    read as JSON (missing, unreadable, not JSON, or nested deeper than Python's parser recurses)."""
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, UnicodeDecodeError, json.JSONDecodeError, RecursionError) as err:
        reason = "nested too deeply" if isinstance(err, RecursionError) else f"{type(err).__name__}: {err}"
        raise ValueError(f"{name}={os.fspath(path)!r} cannot be read as JSON ({reason})") from None
