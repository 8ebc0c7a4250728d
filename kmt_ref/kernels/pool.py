"""Threads over a batch's tasks: how a batch is split, as a value.

The lowest tier of the speed wing. A :class:`TaskPool` splits the leading
(task) axis of a batch into contiguous slices and runs a function on each,
on worker threads (NumPy releases the GIL in its kernels). Every task's
numbers are computed by the same calls whatever the split, so results do not
depend on the thread count. :class:`kmt_ref.engine.Engine` owns one.
"""

import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

import numpy as np

from .._validation import check_int

__all__ = ["TaskPool", "even_slices", "CACHE_ELEMENTS", "TASK_CHUNK_ELEMENTS"]

#: Scores held at once by the plain-array paths (fits a core's cache); below this much work
#: per batch, handing tasks to a thread costs more than it saves.
CACHE_ELEMENTS = 2**15

#: Attention weights a chunk of tasks holds at once in :meth:`TaskPool.over_tasks` (1 MB, a core's L2 cache here).
TASK_CHUNK_ELEMENTS = 2**17


def even_slices(n, parts):
    """``parts`` contiguous slices of ``range(n)`` whose lengths differ by at most one."""
    bounds = [n * i // parts for i in range(parts + 1)]
    return [slice(a, b) for a, b in zip(bounds[:-1], bounds[1:], strict=True)]


@dataclass(frozen=True)
class TaskPool:
    """``threads`` workers over a batch's tasks (1: everything on the calling thread).

    The worker threads are started on first use and belong to this value.
    """

    threads: int = 1
    _executor: list = field(default_factory=list, init=False, repr=False, compare=False)

    def __post_init__(self):
        object.__setattr__(self, "threads", check_int(self.threads, "threads", low=1))

    def _map(self, fn, items):
        if self.threads == 1 or len(items) < 2:
            return [fn(item) for item in items]
        if not self._executor:
            self._executor.append(ThreadPoolExecutor(self.threads))
        return list(self._executor[0].map(fn, items))

    def map_slices(self, fn, n_tasks):
        """``[fn(s) for s in slices]``: contiguous slices of ``range(n_tasks)``, one per thread.

        With one thread it is ``[fn(slice(0, n_tasks))]``.
        """
        if self.threads == 1 or n_tasks < 2:
            return [fn(slice(0, n_tasks))]
        return self._map(fn, even_slices(n_tasks, min(self.threads, n_tasks)))

    def over_tasks(self, fn, per_task, *arrays):
        """``fn(*arrays)`` over the leading (task) axis, a chunk of tasks at a time, spread over the threads.

        A chunk holds about :data:`TASK_CHUNK_ELEMENTS` attention weights
        (``per_task`` per task), so the passes over them stay in a core's
        cache instead of memory: at the authors' 512 points the
        self-attention's backward pass runs about twice as fast a task at a
        time as on the whole batch, with the same numbers (every operation is
        per task, so neither the chunks nor the threads change a bit).
        ``fn`` returns an array or a tuple of arrays with the task axis first.
        """
        if arrays[0].ndim < 3:
            return fn(*arrays)
        B = arrays[0].shape[0]
        threads = 1 if B * per_task <= CACHE_ELEMENTS else self.threads
        # Chunks of at most TASK_CHUNK_ELEMENTS, as many as a multiple of the threads, of nearly equal sizes.
        n_chunks = -(-B // max(1, TASK_CHUNK_ELEMENTS // max(1, per_task)))
        n_chunks = min(B, -(-n_chunks // threads) * threads)
        if n_chunks <= 1:
            return fn(*arrays)
        # Each chunk's results go straight into the outputs, from the thread that made them while
        # they are still in its cache (a concatenation afterwards was one serial copy of every output).
        outputs, lock = [], threading.Lock()

        def part(chunk):
            results = fn(*(a[chunk] for a in arrays))
            many = isinstance(results, tuple)
            results = results if many else (results,)
            with lock:
                if not outputs:
                    outputs.extend(np.empty((B,) + r.shape[1:], r.dtype) for r in results)
            for out, r in zip(outputs, results, strict=True):
                out[chunk] = r
            return many

        chunks = even_slices(B, n_chunks)
        many = (self._map(part, chunks) if threads > 1 else [part(c) for c in chunks])[0]
        return tuple(outputs) if many else outputs[0]
