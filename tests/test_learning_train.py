import os

import numpy as np
import pytest

from kmt_ref.learning.checkpoint import load_checkpoint
from kmt_ref.learning.config import TrainConfig
from kmt_ref.learning.optim import AdamState, PlateauState, adam_step, plateau_step
from kmt_ref.learning.train import train

CONFIG = TrainConfig(d=2, k=3, n=30, batch=4, n_steps=30, eval_every=10, val_tasks=8, seed=1)


def test_training_lowers_the_validation_ratio(tmp_path):
    r = train(CONFIG, progress=False)
    assert r.finished and r.step == 30
    assert r.history["val_ratio"][-1] < 0.5 * r.history["val_ratio"][0]


def test_stopped_and_resumed_run_equals_an_uninterrupted_run(tmp_path):
    full = train(CONFIG, str(tmp_path / "a.npz"), progress=False)
    path = str(tmp_path / "b.npz")
    part = train(CONFIG, path, stop_at=13, progress=False)
    assert part.step == 13 and not part.finished
    resumed = train(CONFIG, path, resume=True, progress=False)
    assert np.array_equal(full.theta, resumed.theta)
    for key in full.history:
        assert np.array_equal(full.history[key], resumed.history[key])


def test_a_float32_run_learns_resumes_exactly_and_keeps_float64_parameters(tmp_path):
    config = TrainConfig(**{**CONFIG.to_dict(), "precision": "float32"})
    full = train(config, str(tmp_path / "f.npz"), progress=False)
    assert full.theta.dtype == np.float64 and full.config.precision == "float32"
    assert full.history["val_ratio"][-1] < 0.5 * full.history["val_ratio"][0]
    assert not np.array_equal(full.theta, train(CONFIG, progress=False).theta)  # not the float64 run
    path = str(tmp_path / "g.npz")
    train(config, path, stop_at=13, progress=False)
    assert load_checkpoint(path)[1]["config"]["precision"] == "float32"
    with pytest.raises(ValueError, match="precision"):  # a float32 checkpoint is not a float64 run's
        train(CONFIG, path, resume=True, progress=False)
    assert np.array_equal(train(config, path, resume=True, progress=False).theta, full.theta)


def test_a_checkpoint_written_before_precision_existed_is_a_float64_run(tmp_path):
    from kmt_ref.learning.checkpoint import save_checkpoint

    path = str(tmp_path / "old.npz")
    train(CONFIG, path, stop_at=10, progress=False)
    arrays, meta = load_checkpoint(path)
    assert meta["config"].pop("precision") == "float64"
    os.remove(path)
    save_checkpoint(path, arrays, meta)
    assert "precision" not in load_checkpoint(path)[1]["config"]
    assert train(CONFIG, path, resume=True, progress=False).finished


def test_a_run_interrupted_by_ctrl_c_resumes_to_the_same_result(tmp_path):
    full = train(CONFIG, progress=False)
    path = str(tmp_path / "c.npz")

    def interrupt(step):
        if step == 17:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        train(CONFIG, path, on_step=interrupt, progress=False)
    _, meta = load_checkpoint(path)
    assert meta["step"] == 17
    resumed = train(CONFIG, path, resume=True, progress=False)
    assert np.array_equal(full.theta, resumed.theta)


@pytest.mark.parametrize("where", ["the gradient", "a validation"])
def test_ctrl_c_in_the_middle_of_a_step_saves_the_step_before(tmp_path, monkeypatch, where):
    # The state last completed is saved: no half-made step (moved parameters with an old step count, a
    # validation without its learning-rate decision) reaches the checkpoint.
    from kmt_ref.learning import train as module

    full = train(CONFIG, progress=False)
    path = str(tmp_path / "e.npz")
    name = "_value_and_grad" if where == "the gradient" else "_validate"
    real, calls = getattr(module, name), []

    def interrupted(*args):
        calls.append(1)
        if len(calls) == (11 if where == "the gradient" else 3):  # in step 11, or the validation of step 20
            raise KeyboardInterrupt
        return real(*args)

    monkeypatch.setattr(module, name, interrupted)
    with pytest.raises(KeyboardInterrupt):
        train(CONFIG, path, progress=False)
    monkeypatch.setattr(module, name, real)
    _, meta = load_checkpoint(path)
    assert meta["step"] == (10 if where == "the gradient" else 2 * CONFIG.eval_every - 1)
    resumed = train(CONFIG, path, resume=True, progress=False)
    assert np.array_equal(full.theta, resumed.theta)
    for key in full.history:
        assert np.array_equal(full.history[key], resumed.history[key]), key


def test_a_killed_run_resumes_from_its_last_periodic_checkpoint(tmp_path):
    full = train(CONFIG, progress=False)
    path = str(tmp_path / "d.npz")
    saved = {}

    def kill_after_checkpoint(step):
        if step == 20:
            saved["bytes"] = open(path, "rb").read()  # what is on disk when the process dies
        if step == 24:
            raise SystemExit  # no handler saves on SystemExit: like a kill

    with pytest.raises(SystemExit):
        train(CONFIG, path, on_step=kill_after_checkpoint, progress=False)
    with open(path, "wb") as f:
        f.write(saved["bytes"])
    assert load_checkpoint(path)[1]["step"] == 20
    assert np.array_equal(full.theta, train(CONFIG, path, resume=True, progress=False).theta)


def test_resume_with_a_different_config_raises(tmp_path):
    path = str(tmp_path / "e.npz")
    train(CONFIG, path, stop_at=5, progress=False)
    other = TrainConfig(**{**CONFIG.to_dict(), "lr": 0.02})
    with pytest.raises(ValueError, match="lr"):
        train(other, path, resume=True, progress=False)


def test_resume_never_silently_restarts(tmp_path):
    path = str(tmp_path / "f.npz")
    with pytest.raises(FileNotFoundError):
        train(CONFIG, path, resume=True, progress=False)
    train(CONFIG, path, stop_at=5, progress=False)
    with pytest.raises(ValueError, match="exists"):
        train(CONFIG, path, progress=False)
    assert os.path.exists(path)


@pytest.mark.parametrize(
    "field, value", [("k", 40), ("family", "student"), ("tau", 0.0), ("tokens", "x"), ("lr_factor", 1.5),
                     ("precision", "float16")]
)
def test_impossible_configs_raise_naming_the_field(field, value):
    with pytest.raises(ValueError, match=field):
        TrainConfig(**{**CONFIG.to_dict(), field: value})


def test_first_adam_step_moves_every_coordinate_by_the_learning_rate():
    grad = np.array([3.0, -0.2, 1e-3])
    before = AdamState.zeros(3)
    new, state = adam_step(np.zeros(3), grad, before, lr=0.01)
    np.testing.assert_allclose(new, -0.01 * np.sign(grad), rtol=1e-4)
    assert state.t == 1 and before.t == 0 and not before.m.any()  # a new state; the old one as it was


def test_plateau_halves_the_rate_after_patience_plus_one_bad_evaluations():
    state, lr, lrs = PlateauState(), 1.0, []
    for m in [5, 4, 4, 4, 4, 3.9, 4]:
        lr, state = plateau_step(m, state, lr, patience=2, factor=0.5)
        lrs.append(lr)
    assert lrs == [1.0, 1.0, 1.0, 1.0, 0.5, 0.5, 0.5]


def _saved(tmp_path, steps=10):
    path = str(tmp_path / "run.npz")
    train(CONFIG, path, stop_at=steps, progress=False)
    return path


@pytest.mark.parametrize("damage", ["truncate", "empty", "text", "foreign npz"])
def test_a_damaged_checkpoint_is_a_value_error_naming_the_file(tmp_path, damage):
    path = _saved(tmp_path)
    if damage == "truncate":
        data = open(path, "rb").read()
        open(path, "wb").write(data[: len(data) // 2])
    elif damage == "empty":
        open(path, "wb").close()
    elif damage == "text":
        open(path, "w").write("not a checkpoint")
    else:
        np.savez(path, something=np.zeros(3))
    with pytest.raises(ValueError, match="run.npz.*(move it away|restore)"):
        load_checkpoint(path)
    with pytest.raises(ValueError, match="run.npz"):
        train(CONFIG, path, resume=True, progress=False)


def test_a_hand_edited_checkpoint_fails_its_checksum(tmp_path):
    path = _saved(tmp_path)
    with np.load(path) as f:
        contents = {name: f[name] for name in f.files}
    contents["theta"] = contents["theta"] + 1e-12
    np.savez(path, **contents)
    with pytest.raises(ValueError, match="checksum"):
        load_checkpoint(path)


def _forged(tmp_path, change, name="forged.npz"):
    """A checkpoint of ``CONFIG`` stopped at step 10, changed by ``change(arrays, meta)`` and saved again with
    its checksum recomputed (anyone can): its path."""
    from kmt_ref.learning.checkpoint import save_checkpoint

    path = str(tmp_path / name)
    train(CONFIG, path, stop_at=10, progress=False)
    arrays, meta = load_checkpoint(path)
    change(arrays, meta)
    os.remove(path)
    save_checkpoint(path, arrays, meta)
    return path


@pytest.mark.parametrize("change, said", [
    (lambda a, m: a["theta"].__setitem__(0, np.nan), "theta must be a finite float vector"),
    (lambda a, m: a.__setitem__("adam_m", a["adam_m"][:-1]), "adam_m must be finite and of theta's shape"),
    (lambda a, m: a["adam_v"].__setitem__(0, -1.0), "adam_v .* must be non-negative"),
    (lambda a, m: m.__setitem__("lr", -1.0), "'lr' must be a positive finite learning rate"),
    (lambda a, m: m.__setitem__("step", -3), "'step' must be >= 0"),
    (lambda a, m: m.__setitem__("wall_time", float("inf")), "'wall_time' must be finite"),
    (lambda a, m: m["rng_state"]["state"].__setitem__("state", "x"), "'rng_state' is not a PCG64 state"),
    (lambda a, m: m["rng_state"].__setitem__("bit_generator", "MT19937"), "'rng_state' is not a PCG64 state"),
])
def test_a_forged_checkpoint_with_a_valid_checksum_is_refused_by_its_values_naming_the_file(tmp_path, change, said):
    path = _forged(tmp_path, change)
    with pytest.raises(ValueError, match=f"path='{path}'.*{said}"):
        load_checkpoint(path)
    with pytest.raises(ValueError, match="forged.npz"):
        train(CONFIG, path, resume=True, progress=False)


def test_a_forged_config_or_step_names_the_file(tmp_path):
    from kmt_ref.learning.train import load_result

    path = _forged(tmp_path, lambda a, m: m["config"].__setitem__("n_steps", -5))
    with pytest.raises(ValueError, match="forged.npz.*config no run writes"):
        load_result(path)
    path = _forged(tmp_path, lambda a, m: m.__setitem__("step", 10**6), "beyond.npz")
    with pytest.raises(ValueError, match="beyond.npz.*beyond its config"):
        load_result(path)


def test_a_missing_checkpoint_directory_is_refused_before_training(tmp_path):
    steps = []
    with pytest.raises(ValueError, match="does not exist"):
        train(CONFIG, str(tmp_path / "nowhere" / "run.npz"), progress=False, on_step=steps.append)
    assert steps == []


def test_a_stale_partial_save_is_reported(tmp_path):
    path = _saved(tmp_path)
    open(f"{path}.tmp.npz", "wb").write(b"half a file")
    with pytest.warns(UserWarning, match="interrupted.*intact"):
        train(CONFIG, path, resume=True, stop_at=20, progress=False)


def test_a_link_at_the_temporary_file_is_never_written_through(tmp_path):
    target = tmp_path / "precious.txt"
    target.write_text("keep me")
    path = tmp_path / "run.npz"
    os.symlink(target, f"{path}.tmp.npz")
    with pytest.raises(ValueError, match="not a regular file"):
        train(CONFIG, checkpoint=str(path), progress=False)
    assert target.read_text() == "keep me"


def test_a_stale_partial_save_is_replaced_and_a_failed_save_leaves_no_partial_file(tmp_path, monkeypatch):
    from kmt_ref.learning import checkpoint as ckpt

    path = tmp_path / "run.npz"
    (tmp_path / "run.npz.tmp.npz").write_bytes(b"half a file")
    with pytest.warns(UserWarning, match="left over"):
        train(CONFIG, checkpoint=str(path), progress=False, stop_at=10)
    assert not os.path.exists(f"{path}.tmp.npz")

    def full_disk(*args, **kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(ckpt.np, "savez", full_disk)
    with pytest.raises(OSError, match="No space"):
        train(CONFIG, checkpoint=str(path), resume=True, progress=False)
    assert not os.path.exists(f"{path}.tmp.npz")  # nothing blocks resuming in place
    monkeypatch.undo()
    assert load_checkpoint(str(path))[1]["step"] == 10  # the last good checkpoint


def test_a_read_only_folder_is_found_before_step_one(tmp_path):
    folder = tmp_path / "ro"
    folder.mkdir()
    folder.chmod(0o555)
    steps = []
    try:
        if os.access(folder, os.W_OK):
            pytest.skip("running as a user who can write anywhere (root)")
        with pytest.raises(ValueError, match="cannot be written to"):
            train(CONFIG, checkpoint=str(folder / "run.npz"), progress=False, on_step=steps.append)
    finally:
        folder.chmod(0o755)
    assert steps == []


def test_the_probe_refuses_an_unwritable_folder_whoever_runs(tmp_path, monkeypatch):
    import kmt_ref._paths as paths

    def refused(*args, **kwargs):
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(paths.tempfile, "TemporaryFile", refused)
    steps = []
    with pytest.raises(ValueError, match="cannot be written to"):
        train(CONFIG, checkpoint=str(tmp_path / "run.npz"), progress=False, on_step=steps.append)
    assert steps == []


def test_two_runs_on_one_checkpoint_path_the_second_is_refused(tmp_path):
    from kmt_ref.learning.checkpoint import checkpoint_lock

    path = str(tmp_path / "run.npz")
    with checkpoint_lock(path), pytest.raises(ValueError, match="in use by another run"):
        train(CONFIG, checkpoint=path, progress=False)
    train(CONFIG, checkpoint=path, progress=False, stop_at=10)  # free again


def test_no_checkpoint_is_written_through_a_link_into_the_committed_results(tmp_path):
    from kmt_ref._paths import COMMITTED_RESULTS

    os.symlink(os.path.join(COMMITTED_RESULTS, "learning"), tmp_path / "learning")
    with pytest.raises(ValueError, match="committed results"):
        train(CONFIG, checkpoint=str(tmp_path / "learning" / "new-run.npz"), progress=False)
    assert not os.path.exists(os.path.join(COMMITTED_RESULTS, "learning", "new-run.npz"))


def _rewrite(path, out, change):
    """A copy of checkpoint ``path`` at ``out`` with its members changed by ``change(dict)``."""
    with np.load(path) as f:
        members = {name: f[name] for name in f.files}
    change(members)
    np.savez(out, **members)


def test_a_checkpoint_whose_checksum_was_deleted_does_not_load(tmp_path):
    path = str(tmp_path / "run.npz")
    train(CONFIG, checkpoint=path, progress=False, stop_at=10)

    def edit_and_drop_checksum(m):
        m["theta"] = m["theta"] + 1.0
        del m["checksum"]

    _rewrite(path, tmp_path / "edited.npz", edit_and_drop_checksum)
    with pytest.raises(ValueError, match="has no checksum"):
        load_checkpoint(str(tmp_path / "edited.npz"))


@pytest.mark.parametrize("meta, match", [
    ("[1, 2]", "not an object"),
    ('{"format": "kmt_ref.learning.checkpoint/1", "config": [1]}', "'config' must be a JSON dict"),
])
def test_checkpoint_metadata_that_is_not_the_expected_object_is_refused(tmp_path, meta, match):
    path = str(tmp_path / "run.npz")
    train(CONFIG, checkpoint=path, progress=False, stop_at=10)
    _rewrite(path, tmp_path / "bad.npz", lambda m: m.update(meta=np.array(meta)))
    with pytest.raises(ValueError, match=match):
        load_checkpoint(str(tmp_path / "bad.npz"))


def test_a_huge_array_header_is_refused_before_anything_is_allocated(tmp_path):
    import zipfile

    path = tmp_path / "bomb.npz"
    header = np.lib.format.header_data_from_array_1_0(np.zeros(1))
    header["shape"] = (10**12,)
    with zipfile.ZipFile(path, "w") as z, z.open("theta.npy", "w") as member:
        np.lib.format.write_array_header_1_0(member, header)
        member.write(b"\0" * 64)
    with pytest.raises(ValueError, match="claims an array .* cannot hold"):
        load_checkpoint(str(path))


def test_a_member_that_unpacks_to_more_than_a_checkpoint_holds_is_refused(tmp_path, monkeypatch):
    from kmt_ref.learning import checkpoint as ckpt

    path = str(tmp_path / "run.npz")
    train(CONFIG, checkpoint=path, progress=False, stop_at=10)
    monkeypatch.setattr(ckpt, "MAX_MEMBER_BYTES", 100)
    with pytest.raises(ValueError, match="unpacks to"):
        load_checkpoint(path)


def test_the_eta_follows_the_recent_steps(monkeypatch):
    import io

    from kmt_ref.learning import progress

    clock = iter([0.0, 100.0, 101.0, 102.0, 103.0])  # 100 s for the first 100 steps, then 1 s per 100
    monkeypatch.setattr(progress.time, "perf_counter", lambda: next(clock))
    bar = progress.Progress(1000, stream=io.StringIO(), window=200)
    for step in (100, 200, 300, 400):
        text = bar.line(step, 1.0, 1.0, 0.01)
    assert "0.010 s/step" in text and "ETA 0m06s" in text  # 600 steps left at the recent pace


def test_a_finished_checkpoint_keeps_no_optimizer_moments_and_still_loads(tmp_path):
    path = str(tmp_path / "run.npz")
    train(CONFIG, checkpoint=path, progress=False, stop_at=10)
    assert "adam_m" in load_checkpoint(path)[0]  # an unfinished run keeps them, to resume bit for bit
    done = train(CONFIG, checkpoint=path, resume=True, progress=False)
    arrays, meta = load_checkpoint(path)
    assert "adam_m" not in arrays and "adam_v" not in arrays and meta["step"] == CONFIG.n_steps
    again = train(CONFIG, checkpoint=path, resume=True, progress=False)  # finished: nothing to do
    assert again.finished and np.array_equal(again.theta, done.theta)


def test_an_unfinished_checkpoint_without_moments_is_refused(tmp_path):
    path = str(tmp_path / "run.npz")
    train(CONFIG, checkpoint=path, progress=False, stop_at=10)
    arrays, meta = load_checkpoint(path)
    from kmt_ref.learning.checkpoint import save_checkpoint

    stripped = str(tmp_path / "stripped.npz")
    save_checkpoint(stripped, {k: v for k, v in arrays.items() if not k.startswith("adam")}, meta)
    with pytest.raises(ValueError, match="no optimizer moments but is not finished"):
        train(CONFIG, checkpoint=stripped, resume=True, progress=False)
    with pytest.raises(ValueError, match="missing"):  # one moment without the other is no checkpoint
        save_checkpoint(str(tmp_path / "half.npz"), {k: v for k, v in arrays.items() if k != "adam_v"}, meta)


def test_a_perturbed_run_starts_a_few_roundings_away_and_is_another_run(tmp_path):
    from kmt_ref.learning.train import TrainState

    base = TrainState.fresh(CONFIG).theta
    for p in (1, 3):
        config = TrainConfig(**{**CONFIG.to_dict(), "perturb": p})
        theta = TrainState.fresh(config).theta
        assert not np.array_equal(theta, base)
        # each parameter within 2 p units in the last place of the unperturbed one (plus the rounding)
        assert np.all(np.abs(theta - base) <= (2 * p + 1) * np.spacing(np.abs(base)))
        assert np.all(np.sign(theta) == np.sign(base))
    assert np.array_equal(TrainState.fresh(TrainConfig(**{**CONFIG.to_dict(), "perturb": 0})).theta, base)
    path = str(tmp_path / "p.npz")
    train(TrainConfig(**{**CONFIG.to_dict(), "perturb": 1}), path, stop_at=10, progress=False)
    with pytest.raises(ValueError, match="perturb"):  # a perturbed checkpoint is not the unperturbed run's
        train(CONFIG, path, resume=True, progress=False)
    for bad in (-1, 2**20 + 1):  # a factor further from 1 would be another draw, not a rounding
        with pytest.raises(ValueError, match="perturb"):
            TrainConfig(perturb=bad)
