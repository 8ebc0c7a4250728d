"""The workbook checks can pass, and they can fail with a useful message."""

import inspect
import textwrap
from pathlib import Path

import pytest

from kmt_ref.exercises import EXERCISES, find_workbook, run_check, run_checks, select
from kmt_ref.exercises.__main__ import main
from kmt_ref.exercises.runner import load_function

WORKBOOK = Path(__file__).resolve().parents[1] / "exercises"
SOLUTIONS = WORKBOOK / "solutions"
IDS = [ex.stem for ex in EXERCISES]


def _write(tmp_path, stem, source):
    (tmp_path / f"{stem}.py").write_text(textwrap.dedent(source))
    return tmp_path


#: The same messages whether the reader's function runs in the checker's process or in its own.
ISOLATED = pytest.mark.parametrize("isolated", [False, True], ids=["in-process", "isolated"])


def _check_one(directory, number, isolated=False):
    (result,) = run_checks(directory, [number], isolated=isolated, timeout=120)
    return result


def test_the_workbook_has_at_least_12_exercises_covering_every_chapter():
    from kmt_ref.exercises import CHAPTERS

    assert len(EXERCISES) >= 12
    assert {ex.chapter for ex in EXERCISES} == set(CHAPTERS)
    assert [ex.number for ex in EXERCISES] == [f"{i:02d}" for i in range(1, len(EXERCISES) + 1)]


@pytest.mark.parametrize("exercise", EXERCISES, ids=IDS)
def test_starter_and_solution_define_the_same_function(exercise):
    starter = load_function(WORKBOOK / f"{exercise.stem}.py", exercise.function)
    solution = load_function(SOLUTIONS / f"{exercise.stem}.py", exercise.function)
    required = [
        [p.name for p in inspect.signature(f).parameters.values() if p.default is inspect.Parameter.empty]
        for f in (starter, solution)
    ]
    assert required[0] == required[1]
    assert "Hint" in starter.__doc__ and "Returns" in starter.__doc__


@pytest.mark.parametrize("exercise", EXERCISES, ids=IDS)
def test_reference_solution_passes(exercise):
    result = run_check(exercise, SOLUTIONS)
    assert result.passed, result.message


@pytest.mark.parametrize("exercise", EXERCISES, ids=IDS)
def test_untouched_starter_fails_as_not_implemented(exercise):
    result = run_check(exercise, WORKBOOK)
    assert not result.passed
    assert result.message.startswith("not implemented yet"), result.message


WRONG = {
    "01_lloyd_step": (
        """
        import numpy as np

        def lloyd_step(X, centers):  # forgets the empty-cluster policy: keeps the old center
            labels = np.argmin(((X[:, None] - centers[None]) ** 2).sum(-1), axis=1)
            return np.array([X[labels == j].mean(0) if (labels == j).any() else centers[j]
                             for j in range(len(centers))])
        """,
        ["empty cluster", "expected", "got", "mean of ALL points"],
    ),
    "03_averaging_hardmax": (
        """
        import numpy as np

        def averaging_hardmax(scores):  # one-hot arg-max: not the limit at ties
            return np.eye(scores.shape[-1])[np.argmax(scores, axis=-1)]
        """,
        ["two tied maxima share", "expected 0.5, got 1"],
    ),
    "04_cax_weights": (
        """
        import numpy as np
        from kmt_ref import TokenLayout

        def cax_weights(d, k):  # compares whole tokens: the old y leaks into the score
            layout = TokenLayout(d, k)
            return np.eye(d + k), np.eye(d + k), layout.projector("y")
        """,
        ["a later layer", "CAX output", "so y must not enter it"],
    ),
    "07_smallest_gamma": (
        """
        import numpy as np

        def smallest_gamma(X, centers, eps):  # a sufficient gamma, not the smallest one
            D2 = ((X[:, None] - centers[None]) ** 2).sum(-1)
            gap = np.sort(D2, axis=1)[:, 1] - D2.min(axis=1)
            return float(np.log((centers.shape[0] - 1) * (1 - eps) / eps) / gap.min())
        """,
        ["is not the smallest", "eps ="],
    ),
    "08_dot_cax_weights": (
        """
        from kmt_ref import TokenLayout

        def dot_cax_weights(d, k):  # plain x . c: forgets the -||c||^2 term
            layout = TokenLayout(d, k, ("x", "y", "sqnorm", "one"))
            return layout.projector("x"), layout.projector("x"), layout.projector("y")
        """,
        ["dot-product CAX output at gamma=1", "2 x_i.c_j - ||c_j||^2"],
    ),
    "05_sax_reset": (
        """
        import numpy as np

        def sax_reset(X, Y):  # zeroes y directly instead of using attention
            return np.hstack([X, np.zeros_like(Y)])
        """,
        ["DIFFERENT y", "y block after the reset", "AVERAGE y"],
    ),
    "14_sparsemax": (
        """
        import numpy as np

        def sparsemax(scores):  # softmax: never exactly zero
            e = np.exp(scores - scores.max(-1, keepdims=True))
            return e / e.sum(-1, keepdims=True)
        """,
        ["sparsemax: first difference", "expected", "scores ="],
    ),
    "16_smoothed_loss": (
        """
        import autograd.numpy as np

        def smoothed_loss(X, centers, tau):  # no max subtraction: 0 / 0 at tiny tau
            r = np.sum((X[..., :, None, :] - centers[..., None, :, :]) ** 2, axis=-1)
            e = np.exp(-r / tau)
            return np.mean(np.sum(np.sum(e * r, -1) / np.sum(e, -1), -1))
        """,
        ["tiny tau", "finite", "nan"],
    ),
    "17_train_tiny_model": (
        """
        import numpy as np
        from kmt_ref import lloyd_transformer

        def train_tiny_model(rng):  # no training: the exact construction only ties with Lloyd
            return lloyd_transformer(2, 3)
        """,
        ["not better than one Lloyd step", "ratio 1.000"],
    ),
    "18_name_block": (
        """
        def name_block(Wq, Wk, Wv, d, k):  # looks at the sign of one entry only
            return "CAX" if Wv[-1, -1] > 0 else "SAX"
        """,
        ["weight triple #", "expected '", "hint: which coordinates"],
    ),
    "10_softmax_gap_bound": (
        """
        import numpy as np

        def softmax_gap_bound(scores, gamma):  # forgets the factor 2 (r - |M|)
            s = np.sort(scores, axis=1)
            return np.exp(-gamma * (s[:, -1] - s[:, -2]))
        """,
        ["bound", "2 (r - |M|)"],
    ),
    "13_normmax_inf": (
        """
        import numpy as np

        def normmax_inf(scores, threshold):  # always keeps the top two
            keep = scores >= np.sort(scores, axis=1)[:, -2:-1]
            return keep / keep.sum(axis=1, keepdims=True)
        """,
        ["objective", "mean(top s) - t / s"],
    ),
    "15_medoid_law": (
        """
        import numpy as np

        def medoid_law(X, centers, temperature):  # softmax over ALL points, not the candidates
            D = ((X[None] - centers[:, None]) ** 2).sum(-1)
            w = np.exp(-(D - D.min(axis=1, keepdims=True)) / temperature)
            return w / w.sum(axis=1, keepdims=True)
        """,
        ["law", "candidates of center j"],
    ),
    "20_assignment_basis": (
        """
        import numpy as np

        def assignment_basis(model):  # the construction's basis, not the model's
            return np.eye(model.k)
        """,
        ["R", "first difference"],
    ),
    "21_untie": (
        """
        import numpy as np

        def untie(A, u, v, lam, nu, k):  # u and v swapped
            ones = np.ones(k)
            return np.block([[A, np.outer(u, ones)], [np.outer(ones, v), lam * np.eye(k) + nu]])
        """,
        ["W", "every column v"],
    ),
    "22_adjusted_rand_index": (
        """
        import numpy as np

        def adjusted_rand_index(labels_true, labels_pred):  # the plain Rand index: no chance correction
            a, b = np.asarray(labels_true), np.asarray(labels_pred)
            same_a, same_b = a[:, None] == a[None], b[:, None] == b[None]
            n = len(a)
            return float((np.sum(same_a == same_b) - n) / (n * (n - 1)))
        """,
        ["index", "labels_true"],
    ),
    "23_leaky_step": (
        """
        import numpy as np

        def leaky_step(X, C, beta, sharpness):  # soft k-means: divides by the responsibilities' sum
            D = ((X[:, None] - C[None]) ** 2).sum(-1)
            R = np.exp(-beta * (D - D.min(axis=1, keepdims=True)))
            R /= R.sum(axis=1, keepdims=True)
            return (R.T @ X) / R.sum(axis=0)[:, None]
        """,
        ["centers", "softmax over the points"],
    ),
}


# Each wrong solution in the checker's process; in a process of its own, one in the quick run and every one in
# the slow tier (the messages are the same; a process per check costs a second).
@pytest.mark.parametrize("isolated, stem", [
    pytest.param(isolated, stem, id=f"{'isolated' if isolated else 'in-process'}-{stem}",
                 marks=pytest.mark.slow if isolated and stem != min(WRONG) else ())
    for isolated in (False, True) for stem in sorted(WRONG)])
def test_a_wrong_solution_fails_with_a_useful_message(tmp_path, isolated, stem):
    source, phrases = WRONG[stem]
    result = _check_one(_write(tmp_path, stem, source), stem[:2], isolated)
    assert not result.passed
    for phrase in phrases:
        assert phrase.lower() in result.message.lower(), result.message


@ISOLATED
def test_a_crashing_solution_is_reported_with_its_input_not_raised(tmp_path, isolated):
    _write(tmp_path, "02_euclidean_scores", "def euclidean_scores(Zq, Zk, gamma):\n    return Zq @ Zk\n")
    result = _check_one(tmp_path, "02", isolated)
    assert not result.passed
    assert "your function raised ValueError" in result.message and "Zq =" in result.message
    assert "(at 02_euclidean_scores.py, line 2: return Zq @ Zk)" in result.message  # where, in the reader's file


def test_a_normalizer_that_depends_on_the_scale_of_the_scores_gets_a_hint(tmp_path):
    _write(tmp_path, "03_averaging_hardmax", textwrap.dedent("""
        import numpy as np

        def averaging_hardmax(scores):  # softmax: close to hardmax only for large scores
            e = np.exp(scores - scores.max(axis=-1, keepdims=True))
            return e / e.sum(axis=-1, keepdims=True)
        """))
    result = _check_one(tmp_path, "03")
    assert not result.passed and "3 * scores" in result.message and "size of the scores" in result.message


@ISOLATED
def test_code_that_autograd_cannot_trace_gets_a_hint(tmp_path, isolated):
    _write(tmp_path, "16_smoothed_loss", textwrap.dedent("""
        import numpy as np

        def smoothed_loss(X, C, tau):  # writes into a numpy array: autograd cannot trace that
            r = np.zeros(X.shape[:-1] + (C.shape[-2],))
            for j in range(C.shape[-2]):
                r[..., j] = ((X - C[..., j : j + 1, :]) ** 2).sum(-1)
            z = -r / tau
            p = np.exp(z - z.max(axis=-1, keepdims=True))
            p = p / p.sum(axis=-1, keepdims=True)
            return (p * r).sum(axis=(-1, -2)).mean()
        """))
    result = _check_one(tmp_path, "16", isolated)
    assert not result.passed and "ArrayBox" in result.message
    assert "import autograd.numpy as np" in result.message


def test_a_file_that_does_not_load_or_lacks_the_function_is_reported(tmp_path):
    _write(tmp_path, "02_euclidean_scores", "def euclidean_scores(:\n")
    _write(tmp_path, "03_averaging_hardmax", "def something_else():\n    pass\n")
    bad_syntax, no_function = run_checks(tmp_path, ["02", "03"])
    assert "could not load" in bad_syntax.message and "SyntaxError" in bad_syntax.message
    assert "must define a function averaging_hardmax" in no_function.message


def test_an_edited_file_is_reloaded_on_the_next_run(tmp_path):
    starter = "def averaging_hardmax(scores):\n    raise NotImplementedError\n"
    _write(tmp_path, "03_averaging_hardmax", starter)
    assert not _check_one(tmp_path, "03").passed
    (tmp_path / "03_averaging_hardmax.py").write_text((SOLUTIONS / "03_averaging_hardmax.py").read_text())
    assert _check_one(tmp_path, "03").passed


def test_select_accepts_numbers_and_stems_in_book_order():
    assert [ex.number for ex in select(["5", "01", "03_averaging_hardmax"])] == ["01", "03", "05"]
    with pytest.raises(ValueError, match="no exercise '99'"):
        select(["99"])


def test_a_missing_workbook_directory_is_a_clear_error(tmp_path):
    with pytest.raises(ValueError, match="workbook directory not found.*--dir"):
        find_workbook(tmp_path / "nowhere")
    with pytest.raises(ValueError, match="no exercise files"):
        find_workbook(tmp_path)


def test_command_line_exit_codes(tmp_path, capsys, monkeypatch):
    assert main(["check", "03", "--dir", str(SOLUTIONS)]) == 0
    assert "[PASS] 03_averaging_hardmax" in capsys.readouterr().out
    assert main(["check", "03", "--dir", str(WORKBOOK)]) == 1
    assert "[FAIL] 03_averaging_hardmax" in capsys.readouterr().out
    monkeypatch.chdir(tmp_path)  # no ./exercises here
    assert main(["check"]) == 2
    assert "workbook directory not found" in capsys.readouterr().err
    monkeypatch.chdir(WORKBOOK.parent)  # the default --dir is ./exercises
    assert main(["check", "01"]) == 1
    assert main(["list"]) == 0
    assert "18_name_block" in capsys.readouterr().out


def test_the_workbook_readme_lists_every_exercise_with_its_chapter():
    import re

    text = (WORKBOOK / "README.md").read_text()
    rows = re.findall(r"^\| (\d\d) \| `(\w+)`.*\| (.*) \| (\S+) \|$", text, re.M)
    assert rows == [(ex.number, ex.function, ex.chapter, ex.level) for ex in EXERCISES]


@ISOLATED
def test_a_solution_that_modifies_its_input_in_place_fails(tmp_path, isolated):
    source = """
        import numpy as np

        def spherical_normalize(Q, d, k):  # right numbers, but written into the caller's array
            Q[:, :d] /= np.where(np.linalg.norm(Q[:, :d], axis=1, keepdims=True) > 0,
                                 np.linalg.norm(Q[:, :d], axis=1, keepdims=True), 1.0)
            return Q
        """
    result = _check_one(_write(tmp_path, "12_spherical_normalize", source), "12", isolated)
    assert not result.passed
    assert "modified its argument #1 in place" in result.message


def test_by_chapter_groups_every_exercise_once_in_book_order():
    from kmt_ref.exercises import by_chapter

    groups = by_chapter()
    assert [ex for exs in groups.values() for ex in exs] == list(EXERCISES)


def test_every_chapter_is_a_book_page_title_and_that_page_links_its_exercises():
    import re

    from kmt_ref.exercises import by_chapter

    book = WORKBOOK.parent / "book"
    pages = {}
    for page in book.glob("*.md"):
        heading = re.search(r"^# (.+)$", page.read_text(), re.M)
        if heading:
            pages[heading.group(1).replace("*", "")] = page.read_text()
    for chapter, exercises in by_chapter().items():
        assert chapter in pages, f"no book page is titled {chapter!r}"
        for ex in exercises:
            assert f"{ex.stem}.py" in pages[chapter], f"page {chapter!r} does not link {ex.stem}.py"


def test_init_copies_a_workbook_that_the_checker_accepts(tmp_path, capsys):
    from kmt_ref.exercises.__main__ import main

    target = tmp_path / "wb"
    assert main(["init", str(target)]) == 0
    starters = sorted(p.name for p in target.glob("[0-9][0-9]_*.py"))
    assert starters == sorted(f"{ex.stem}.py" for ex in EXERCISES)
    assert (target / "README.md").is_file()
    assert main(["check", "--dir", str(target / "solutions"), "01", "03"]) == 0
    assert main(["check", "--dir", str(target), "01"]) == 1  # an untouched starter fails
    assert main(["init", str(target)]) == 2  # never overwrites
    assert "not empty" in capsys.readouterr().err


#: Suffixes of the files the wheel ships (pyproject's package-data; data/real/ ships whole).
SHIPPED = {".py", ".json", ".npz", ".npy", ".csv", ".sh"}


def test_every_importable_folder_is_listed_for_the_wheel():
    """Code packages and the data folders Python could import: setuptools warns about any not listed.

    A folder counts when it holds a file the wheel ships (code or data, as
    ``package-data`` selects them): training logs stay out of the wheel.
    """
    tomllib = pytest.importorskip("tomllib")  # Python >= 3.11

    root = Path(__file__).resolve().parent.parent
    listed = set(tomllib.loads((root / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"])
    found = {".".join(p.relative_to(root).parts) for p in [root / "kmt_ref", *(root / "kmt_ref").rglob("*")]
             if p.is_dir() and all(part.isidentifier() for part in p.relative_to(root).parts)
             and p.name != "__pycache__" and any(f.suffix in SHIPPED or p.name == "real" for f in p.iterdir())}
    workbook = {"kmt_ref.exercises.workbook", "kmt_ref.exercises.workbook.solutions"}  # exercises/, mapped
    assert found | workbook == listed


HOSTILE = {
    "01_lloyd_step": ("def lloyd_step(X, C):\n    while True:\n        pass\n", "timed out"),
    "02_euclidean_scores": ("import sys\n\ndef euclidean_scores(Q, K, gamma):\n    sys.exit(0)\n",
                            "sys.exit(0)"),
    "03_averaging_hardmax": ("class Evil:\n    def __array__(self, *args, **kwargs):\n"
                             "        raise RuntimeError('boom')\n"
                             "\ndef averaging_hardmax(scores):\n    return Evil()\n",
                             "returned an object of type Evil, which the check cannot take"),
    "04_cax_weights": ("import os\n\ndef cax_weights(d, k):\n    os._exit(0)\n", "process ended"),
    # A solution that stops its own process: the time limit still ends it (a stopped process is killed).
    "06_cac_block": ("import os\nimport signal\n\ndef cac_block(d, k):\n    os.kill(os.getpid(), signal.SIGSTOP)\n",
                     "timed out"),
}


@pytest.mark.slow
def test_hostile_solutions_fail_their_own_exercise_and_the_others_are_still_checked(tmp_path, capsys):
    for stem, (code, _) in HOSTILE.items():
        (tmp_path / f"{stem}.py").write_text(code)
    solutions = find_workbook(Path(__file__).resolve().parents[1] / "exercises" / "solutions")
    (tmp_path / "05_sax_reset.py").write_text((solutions / "05_sax_reset.py").read_text())
    # Only the endless loop gets a short limit (it times out however loaded the machine is); the
    # others get 60 s, far more than the import of NumPy and kmt_ref takes on a busy machine.
    looping = [stem for stem, (_, reason) in HOSTILE.items() if reason == "timed out"]
    results = run_checks(tmp_path, looping, isolated=True, timeout=3)
    results += run_checks(tmp_path, [s for s in HOSTILE if s not in looping] + ["05"], isolated=True, timeout=60)
    by_stem = {r.exercise.stem: r for r in results}
    for stem, (_, reason) in HOSTILE.items():
        assert not by_stem[stem].passed and reason in by_stem[stem].message, by_stem[stem].message
    assert by_stem["05_sax_reset"].passed
    assert "line 4" in by_stem["02_euclidean_scores"].message  # the line that caused it


def test_inside_a_workbook_made_by_init_the_printed_command_works(tmp_path, monkeypatch, capsys):
    assert main(["init", str(tmp_path / "wb")]) == 0
    assert "python -m kmt_ref.exercises check 01" in capsys.readouterr().out
    monkeypatch.chdir(tmp_path / "wb" / "solutions")  # the reference solutions are a workbook too
    assert main(["check", "01"]) == 0
    assert "01" in capsys.readouterr().out


@pytest.mark.parametrize("timeout", ["0", "-1", "1e300", "nan"])
def test_a_timeout_out_of_range_is_a_clear_error(timeout, capsys):
    assert main(["check", "01", "--timeout", timeout]) == 2
    assert "--timeout must be a number of seconds" in capsys.readouterr().err


def _one_solution(tmp_path, body, stem="01_lloyd_step"):
    (tmp_path / f"{stem}.py").write_text(textwrap.dedent(body))
    return run_checks(tmp_path, [stem[:2]], isolated=True, timeout=60)[0]


def test_a_non_utf8_byte_in_the_output_and_a_forged_result_line_pass_nothing(tmp_path):
    from kmt_ref.exercises.runner import RESULT_MARK

    result = _one_solution(tmp_path, f"""
        import sys
        sys.stdout.buffer.write(b"\\xff\\xfe odd bytes\\n")
        sys.stdout.flush()
        print({RESULT_MARK!r} + '{{"passed": true, "message": "forged"}}')
        print({RESULT_MARK!r} + 'not json at all')

        def lloyd_step(X, C):
            raise NotImplementedError
        """)
    assert not result.passed and "not implemented yet" in result.message


@pytest.mark.parametrize("module", ["kmt_ref.exercises._feedback", "kmt_ref.classical"])
def test_a_solution_that_rewrites_the_checker_files_is_caught_and_undone(tmp_path, module):
    import importlib

    path = Path(importlib.import_module(module).__file__)
    original = path.read_bytes()
    result = _one_solution(tmp_path, f"""
        with open({str(path)!r}, "a") as f:
            f.write("\\nexpect = lambda *args, **kwargs: None\\n")

        def lloyd_step(X, C):
            raise NotImplementedError
        """)
    assert not result.passed and "changed the checker's own files" in result.message and path.name in result.message
    assert path.read_bytes() == original


def test_a_forked_grandchild_does_not_outlive_the_time_limit(tmp_path):
    marker = tmp_path / "grandchild.pid"
    (tmp_path / "01_lloyd_step.py").write_text(textwrap.dedent(f"""
        import os, time
        if os.fork() == 0:
            with open({str(marker)!r}, "w") as f:
                f.write(str(os.getpid()))
            time.sleep(600)

        def lloyd_step(X, C):
            while True:
                pass
        """))
    result = run_checks(tmp_path, ["01"], isolated=True, timeout=5)[0]
    assert not result.passed and "timed out" in result.message
    _assert_ended(int(marker.read_text()), "grandchild")


def _assert_ended(pid, what):
    """Fail unless the process ``pid`` ends within 5 s (the kill is delivered at once; the kernel may take a
    moment to reap)."""
    import os
    import time

    for _ in range(50):
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return
        time.sleep(0.1)
    raise AssertionError(f"{what} {pid} still runs")


def test_a_flood_of_output_is_capped(tmp_path):
    result = _one_solution(tmp_path, """
        import sys
        chunk = "x" * 2**20 + "\\n"
        for _ in range(200):  # 200 MB, more than the cap (what it prints goes nowhere; its errors are kept)
            sys.stdout.write(chunk)
            sys.stderr.write(chunk)

        def lloyd_step(X, C):
            raise NotImplementedError
        """)
    assert not result.passed and "File too large" in result.message


#: Solutions that return a wrong answer and make the check accept it from inside its own process: by
#: reading its expected value from its frame, by rebinding its comparison (and restoring it when the
#: check returns, so that nothing looks changed afterwards), by patching its helpers or NumPy.
ESCAPES = {
    "reads the expected value": """
        import sys

        def lloyd_step(X, C):
            frame = sys._getframe(1)
            while frame is not None:
                if "expected" in frame.f_locals:
                    return frame.f_locals["expected"]
                frame = frame.f_back
            return C
        """,
    "rebinds and restores numpy.isclose": """
        import sys
        import numpy as np

        original = np.isclose
        np.isclose = lambda a, b, **kwargs: np.ones(np.broadcast(a, b).shape, dtype=bool)

        def restore(frame, event, arg):
            global original
            if event == "return" and frame.f_code.co_name == "check_lloyd_step":
                np.isclose = original
                sys.setprofile(None)

        sys.setprofile(restore)

        def lloyd_step(X, C):
            return np.zeros_like(C)
        """,
    "patches the checker's helpers": """
        import numpy as np
        import kmt_ref.exercises._feedback as feedback

        feedback.expect_close = lambda *args, **kwargs: None
        feedback.expect = lambda *args, **kwargs: None

        def lloyd_step(X, C):
            return np.zeros_like(C)
        """,
    "patches numpy": """
        import numpy as np

        np.isclose = lambda *args, **kwargs: True
        np.allclose = lambda *args, **kwargs: True

        def lloyd_step(X, C):
            return np.zeros_like(C)
        """,
}


@pytest.mark.parametrize("escape", sorted(ESCAPES))
def test_a_solution_that_reads_or_rebinds_the_check_does_not_pass(tmp_path, escape):
    (exercise,) = select(["01"])
    _write(tmp_path, "01_lloyd_step", textwrap.dedent(ESCAPES[escape]))
    if escape in ("reads the expected value", "rebinds and restores numpy.isclose"):
        # These leave nothing changed behind them: run in this process, they pass (the escape is real).
        assert run_check(exercise, tmp_path).passed
    result = run_checks(tmp_path, ["01"], isolated=True, timeout=60)[0]
    assert not result.passed and "new centers: first difference" in result.message, result.message


@pytest.mark.skipif(not Path("/proc").is_dir(), reason="the guardian and the adoption use Linux's /proc and prctl")
def test_a_solution_that_stops_the_checker_does_not_hang_it(tmp_path):
    import time

    start = time.perf_counter()
    result = _one_solution(tmp_path, """
        import os, signal
        os.kill(os.getppid(), signal.SIGSTOP)

        def lloyd_step(X, C):
            raise NotImplementedError
        """)
    assert not result.passed and "not implemented yet" in result.message
    assert time.perf_counter() - start < 50  # resumed at once, not at the 60 s time limit


@pytest.mark.skipif(not Path("/proc").is_dir(), reason="the guardian and the adoption use Linux's /proc and prctl")
def test_a_double_forked_daemon_does_not_outlive_the_check(tmp_path):
    marker = tmp_path / "daemon.pid"
    result = _one_solution(tmp_path, f"""
        import os, time
        if os.fork() == 0:
            os.setsid()
            if os.fork() == 0:
                with open({str(marker)!r}, "w") as f:
                    f.write(str(os.getpid()))
                time.sleep(600)
            os._exit(0)
        for _ in range(100):
            if os.path.exists({str(marker)!r}):
                break
            time.sleep(0.05)

        def lloyd_step(X, C):
            raise NotImplementedError
        """)
    assert not result.passed
    _assert_ended(int(marker.read_text()), "daemon")


def test_wrong_cax_weights_are_told_what_is_wrong_and_proved_for_every_input(tmp_path):
    pytest.importorskip("sympy", reason="needs sympy, of the test extra: pip install -e '.[test]'")
    for stem, body, says in (("04_cax_weights", """
        from kmt_ref.tokens import TokenLayout

        def cax_weights(d, k):
            layout = TokenLayout(d, k)
            P_x, P_y = layout.projector("x"), layout.projector("y")
            return P_x, 2 * P_x, P_y  # the key doubled
        """, "W_K reads the positions 2 times as strongly as W_Q does"), ("04_cax_weights", """
        from kmt_ref.tokens import TokenLayout

        def cax_weights(d, k):
            layout = TokenLayout(d, k)
            P_x = layout.projector("x")
            return P_x, P_x, P_x  # the value copies the center, not its id
        """, "the value copies the center's position into the x block"), ("08_dot_cax_weights", """
        from kmt_ref.tokens import TokenLayout

        def dot_cax_weights(d, k):
            layout = TokenLayout(d, k, ("x", "y", "sqnorm", "one"))
            return 2.0 * layout.projector("x"), layout.projector("x"), layout.projector("y")  # no norm term
        """, "must be the same for every center")):
        (tmp_path / f"{stem}.py").write_text(textwrap.dedent(body))
        result = run_checks(tmp_path, [stem[:2]])[0]
        assert not result.passed and "proved for every input (SymPy)" in result.message, result.message
        assert says in result.message, result.message


def test_a_wrong_cac_block_and_a_wrong_ffn_get_their_errors_proved_for_every_input(tmp_path):
    pytest.importorskip("sympy", reason="needs sympy, of the test extra: pip install -e '.[test]'")
    (tmp_path / "06_cac_block.py").write_text(textwrap.dedent("""
        from kmt_ref.attention import Block
        from kmt_ref.tokens import TokenLayout

        def cac_block(d, k):
            layout = TokenLayout(d, k)
            P_x, P_y = layout.projector("x"), layout.projector("y")
            return Block(P_y, P_y, 2 * P_x, score="dot", normalizer="linear")  # the values doubled
        """))
    (tmp_path / "09_sqnorm_ffn.py").write_text(textwrap.dedent("""
        import numpy as np
        from kmt_ref.tokens import TokenLayout

        def sqnorm_ffn(d, k):
            layout = TokenLayout(d, k, ("x", "y", "sqnorm", "one"))
            return layout.reader("x"), np.outer(layout.reader("sqnorm")[0], np.ones(d))  # relu(c)^2 only
        """))
    cac, ffn = run_checks(tmp_path, ["06", "09"])
    assert not cac.passed and "proved for every input (SymPy)" in cac.message and "must write" in cac.message
    assert not ffn.passed and "proved for every input (SymPy)" in ffn.message and "Abs(c_1)" in ffn.message

