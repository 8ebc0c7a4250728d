"""Jobs: the units of the paper's protocol, run in-process or on a Dask cluster.

A job is a pure function of its inputs: one cell of the parameter sweep,
one model trained (its setting and seed), one model evaluated (run with no
result file: an evaluation is recomputed, never read back). :func:`run_job` writes the result
to one JSON file named by the inputs, ``DIR/jobs/<kind>/<name>.json``, and
skips a job whose file exists and holds the same inputs. The file is written
whole or not at all (a temporary file renamed into place), so a job stopped
at any moment leaves its result or nothing; a training job also checkpoints
as it goes and, run again, resumes.

:func:`run_jobs` runs a list of jobs in this process (the default) or on a
Dask ``distributed`` cluster -- a scheduler's address, or a local cluster of
``workers`` processes -- and returns the results in the list's order: the
same files and the same numbers either way (``tests/test_jobs.py``). A
worker that dies mid-job loses that job's work since its last checkpoint
only: Dask hands the job to another worker, which finds the files. The
workers must see ``DIR`` (a shared file system on a real cluster). Dask is
an optional extra (``pip install "kmt-ref[dask]"``); only this module
imports it, and only when asked to.
"""

import importlib
import json
import os
import sys
import time
from contextlib import contextmanager
from dataclasses import dataclass

from .._validation import check_int
from ._results import check_output_dir

__all__ = ["Job", "JOB_KINDS", "run_job", "run_jobs", "keep_result", "finished", "job_seconds", "check_cluster",
           "cluster"]

#: The kinds of job: ``{kind: ("module:function", "module:check" or None)}``. The function is called as
#: ``function(directory, **inputs)`` on whichever process runs the job (a name, not the function, so a job
#: pickles small); ``check(directory, result)`` says whether a stored result still holds (e.g. its
#: checkpoint is there).
JOB_KINDS = {
    "paper-sweep-cell": ("kmt_ref.programs.paper_sweep:cell_job", None),
    "train": ("kmt_ref.programs.runs:train_job", "kmt_ref.programs.runs:train_job_holds"),
    "evaluate": ("kmt_ref.programs.runs:evaluate_job", None),
}


@dataclass(frozen=True)
class Job:
    """One unit of work: its ``kind`` (a key of :data:`JOB_KINDS`), a file ``name`` made of its inputs, and
    ``inputs`` (JSON values: the function's keyword arguments)."""

    kind: str
    name: str
    inputs: dict

    def path(self, directory):
        """The job's result file under ``directory``."""
        return os.path.join(directory, "jobs", self.kind, f"{self.name}.json")

    def record(self):
        """What the result file says about the job, beside its result."""
        return {"kind": self.kind, "inputs": self.inputs}


def _function(kind, which=0):
    name = JOB_KINDS[kind][which]
    if name is None:
        return None
    module, name = name.split(":")
    return getattr(importlib.import_module(module), name)


def finished(job, directory):
    """The result stored for ``job`` under ``directory`` if it is this job's (same kind and inputs) and
    still holds, else None."""
    try:
        with open(job.path(directory)) as f:
            stored = json.load(f)
    except (OSError, ValueError, RecursionError):  # a file not this job's: the job runs again
        return None
    if not isinstance(stored, dict) or stored.get("job") != json.loads(json.dumps(job.record())) \
            or "result" not in stored:
        return None
    check = _function(job.kind, 1)
    return stored["result"] if check is None or check(directory, stored["result"]) else None


def run_job(job, directory=None, options=None):
    """The result of ``job`` (a JSON value): read from its file under ``directory`` if that holds it, else
    computed and written there. ``directory=None``: computed, nothing read or written. ``options``: keyword
    arguments that change how, not what, the job computes (e.g. ``threads``); not part of its identity."""
    if job.kind not in JOB_KINDS:
        raise ValueError(f"job kind must be one of {sorted(JOB_KINDS)}; got {job.kind!r}")
    if directory is None:
        return _function(job.kind)(None, **job.inputs, **(options or {}))
    check_output_dir(job.path(directory), "directory")  # never into the committed results, checked before any work
    stored = finished(job, directory)
    if stored is not None:
        return stored
    start = time.perf_counter()
    result = _function(job.kind)(directory, **job.inputs, **(options or {}))
    # of this run only (a resumed training: since it resumed)
    return keep_result(job, directory, result, time.perf_counter() - start)


def keep_result(job, directory, result, seconds=None):
    """Write ``result`` (a JSON value) as ``job``'s result file under ``directory``, whole or not at all, with
    the ``seconds`` it took (None: not known); returns ``result``."""
    # never into the committed results (checked when written: a folder may have become a link meanwhile)
    path = check_output_dir(job.path(directory), "directory")
    os.makedirs(os.path.dirname(path), exist_ok=True)
    tmp = f"{path}.{os.getpid()}.tmp"
    with open(tmp, "w") as f:
        json.dump({"job": job.record(), "result": result, "seconds": None if seconds is None else round(seconds, 6)},
                  f)
    os.replace(tmp, path)  # atomic: a reader sees the whole file or none
    return result


def job_seconds(job, directory):
    """The wall-clock seconds the run that wrote ``job``'s result file took, or None (no such file, or one
    written without them)."""
    try:
        with open(job.path(directory)) as f:
            return json.load(f).get("seconds")
    except (OSError, ValueError, AttributeError, RecursionError):
        return None


def check_cluster(scheduler=None, workers=None):
    """``ValueError`` unless :func:`cluster` can start with these arguments (at most one, and Dask installed
    if one is given)."""
    if scheduler is not None and workers is not None:
        raise ValueError(f"give scheduler or workers, not both; got scheduler={scheduler!r}, workers={workers!r}")
    if scheduler is not None and (not isinstance(scheduler, str) or not scheduler.strip()):
        raise ValueError(f"scheduler must be a Dask scheduler's address, e.g. tcp://host:8786; got "
                         f"scheduler={scheduler!r}")
    if workers is not None:
        check_int(workers, "workers", low=1, high=MAX_WORKERS)
    if scheduler is not None or workers is not None:
        try:
            import distributed  # noqa: F401
        except ImportError:
            raise ValueError("running jobs on Dask needs the optional extra: pip install \"kmt-ref[dask]\"") from None


class ClusterError(ValueError):
    """A Dask scheduler that cannot be reached (the command lines print it as one line, exit status 2)."""


#: Most processes ``workers`` may start (a local cluster of more only waits on its cores).
MAX_WORKERS = 256
#: Seconds a connection to a scheduler may take before :func:`cluster` gives up.
CONNECT_TIMEOUT = 10


@contextmanager
def cluster(scheduler=None, workers=None):
    """A Dask ``distributed.Client``: of the scheduler at ``scheduler`` (``"tcp://host:port"``), or of a new
    local cluster of ``workers`` single-threaded processes; ``None`` when neither is given (run in-process)."""
    check_cluster(scheduler, workers)
    if scheduler is None and workers is None:
        yield None
        return
    from distributed import Client, LocalCluster

    if scheduler is not None:
        try:
            client = Client(scheduler, timeout=CONNECT_TIMEOUT)
        except (OSError, TimeoutError, ValueError, TypeError) as err:  # no scheduler there, or not an address
            raise ClusterError(f"scheduler={scheduler!r} cannot be reached ({type(err).__name__}: {err})") from None
        with client:
            yield client
        return
    with LocalCluster(n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=None) as local, \
            Client(local) as client:
        yield client


def run_jobs(jobs, directory=None, client=None, progress=False, options=None):
    """The results of ``jobs``, in their order: each by :func:`run_job` (with ``options``), in this process
    when ``client`` is None, else on the Dask cluster of ``client`` (see :func:`cluster`)."""
    jobs = list(jobs)
    for job in jobs:
        if not isinstance(job, Job):
            raise ValueError(f"jobs must be Job values; got {job!r}")
    start, done = time.perf_counter(), 0

    def report():
        if progress and (done == len(jobs) or done % max(1, len(jobs) // 20) == 0):
            print(f"  {done}/{len(jobs)} jobs, {time.perf_counter() - start:.0f} s", file=sys.stderr, flush=True)

    if client is None:
        results = []
        for job in jobs:
            results.append(run_job(job, directory, options))
            done += 1
            report()
        return results
    from distributed import as_completed

    keys = [f"kmt_ref-{job.kind}-{job.name}" for job in jobs]
    futures = client.map(run_job, jobs, directory=directory, options=options, key=keys)
    for _ in as_completed(futures):
        done += 1
        report()
    return client.gather(futures)
