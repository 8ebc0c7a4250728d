"""Every bad command line ends in one line and exit status 2, before any work: no traceback."""

import fcntl
import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

import kmt_ref


def _cases(tmp):
    """(name, argv) of the hostile command lines; ``tmp`` a fresh folder of the test's."""
    read_only = tmp / "read-only"
    read_only.mkdir()
    os.chmod(read_only, 0o500)
    a_file = tmp / "a-file"
    a_file.write_text("x")
    dangling = tmp / "dangling"
    dangling.symlink_to(tmp / "nowhere")
    deep = tmp / "deep.json"
    deep.write_text("[" * 100_000 + "]" * 100_000)
    nested, shapeless, keyless = tmp / "nested", tmp / "shapeless", tmp / "keyless"
    for folder, scale, name, text in ((nested, "paper", "learning", deep.read_text()),
                                      (shapeless, "beyond", "chaos", "[1, 2]"),
                                      (keyless, "beyond", "chaos", '{"scale": "beyond"}')):
        (folder / scale).mkdir(parents=True)
        (folder / scale / f"{name}.json").write_text(text)
    linked = tmp / "linked"
    linked.symlink_to(Path(kmt_ref.__file__).parent / "results" / "learning")
    kmt = [sys.executable, "-m", "kmt_ref"]
    cases = []
    for name, path in (("a file", a_file), ("/dev/null", "/dev/null"), ("a dangling link", dangling),
                       ("/proc/self", "/proc/self")) + ((("a read-only folder", read_only),) if os.geteuid() else ()):
        cases.append((f"train --results-dir {name}", kmt + ["train", "--steps", "1", "--results-dir", str(path)]))
    cases += [
        ("train --scheduler ''", kmt + ["train", "--steps", "1", "--scheduler", "", "--results-dir", str(tmp / "r")]),
        ("train --scheduler with nothing there",
         kmt + ["train", "--steps", "1", "--scheduler", "tcp://127.0.0.1:1", "--results-dir", str(tmp / "r")]),
        ("paper-sweep --report of a deep JSON", kmt + ["reproduce", "paper-sweep", "--report", "--out", str(deep)]),
        ("paper-sweep --resume-from a deep JSON",
         kmt + ["reproduce", "paper-sweep", "--resume-from", str(deep), "--out", str(tmp / "s" / "p.json")]),
        ("paper-sweep --out unwritable", kmt + ["reproduce", "paper-sweep", "--out", "/proc/self/x/p.json"]),
        ("sweep --quick --out a folder", kmt + ["reproduce", "sweep", "--quick", "--out", str(tmp)]),
        ("exercises init into /proc", [sys.executable, "-m", "kmt_ref.exercises", "init", "/proc/x"]),
        ("exercises init into a dangling link", [sys.executable, "-m", "kmt_ref.exercises", "init", str(dangling)]),
        ("train --tau subnormal", kmt + ["train", "--tau", "1e-320", "--results-dir", str(tmp / "r")]),
        ("train --n-layers huge", kmt + ["train", "--n-layers", "1000000", "--results-dir", str(tmp / "r")]),
        ("train --workers huge", kmt + ["train", "--workers", "1000000", "--results-dir", str(tmp / "r")]),
        ("verify --jobs huge", kmt + ["verify", "--jobs", "1000000"]),
        ("an unknown option", kmt + ["reproduce", "learning", "--bogus"]),
        ("an unknown command", kmt + ["nope"]),
        ("learning --report of a nested JSON",
         kmt + ["reproduce", "learning", "--report", "--results-dir", str(nested)]),
        ("chaos --report of a list", kmt + ["reproduce", "chaos", "--report", "--results-dir", str(shapeless)]),
        ("chaos --report without its keys", kmt + ["reproduce", "chaos", "--report", "--results-dir", str(keyless)]),
        ("sweep --figure of no image format",
         kmt + ["reproduce", "sweep", "--quick", "--figure", str(tmp / "x.unknownext"), "--out", str(tmp / "s.json")]),
        ("paper-sweep --out /dev/full", kmt + ["reproduce", "paper-sweep", "--out", "/dev/full"]),
        ("learning --results-dir linked into the committed results",
         kmt + ["reproduce", "learning", "--results-dir", str(linked)]),
        ("exercises init on a too long path",
         [sys.executable, "-m", "kmt_ref.exercises", "init", str(tmp / ("a" * 300))]),
        ("exercises init into a file", [sys.executable, "-m", "kmt_ref.exercises", "init", str(a_file)]),
        ("exercises check of no exercise", [sys.executable, "-m", "kmt_ref.exercises", "check", "99"]),
    ]
    return cases


@pytest.mark.slow
def test_every_hostile_command_line_ends_in_one_line_and_exit_status_2(tmp_path):
    env = dict(os.environ, KMT_REF_RESULTS=str(tmp_path / "results"))
    failures = []
    drawing = importlib.util.find_spec("matplotlib") is not None
    for name, argv in _cases(tmp_path):
        if "--figure" in argv and not drawing:  # a figure needs matplotlib, of the plot extra
            continue
        run = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=120, cwd=tmp_path)
        lines = [line for line in run.stderr.splitlines() if line.strip()]  # one: no usage block above it
        if run.returncode != 2 or "Traceback" in run.stderr or len(lines) != 1:
            failures.append(f"{name}: exit {run.returncode}, stderr {run.stderr[-400:]!r}")
    assert not failures, "\n".join(failures)
    assert not (tmp_path / "s" / "p.json").exists()


def test_a_checkpoint_whose_metadata_nests_too_deep_is_refused_with_a_value_error(tmp_path):
    import numpy as np

    from kmt_ref.learning.checkpoint import load_checkpoint

    path = tmp_path / "c.npz"
    np.savez(path, meta=np.array("[" * 100_000 + "]" * 100_000), checksum=np.array("x"))
    with pytest.raises(ValueError, match="not a"):
        load_checkpoint(str(path))


def test_a_reader_that_stops_reading_gets_no_traceback(tmp_path):
    # `... | head -1`: the pipe closes after the first line; the report (50 kB) is longer than the pipe's buffer.
    proc = subprocess.Popen([sys.executable, "-m", "kmt_ref", "reproduce", "interpret", "--report", "--json"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=tmp_path)
    if hasattr(fcntl, "F_SETPIPE_SZ"):
        fcntl.fcntl(proc.stdout.fileno(), fcntl.F_SETPIPE_SZ, 4096)
    proc.stdout.readline()
    proc.stdout.close()
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=120) in (0, 1) and "Traceback" not in err and "BrokenPipe" not in err, err
