"""How a model's work is executed, as a value: threads over tasks and the attention that computes a block.

The layer (:func:`kmt_ref.layer.transformer_layer`) says *what* is computed:
the paper's residual sums. An :class:`Engine` says *how*: which attention
implementation computes a block (the fast ``kmt_ref.kernels.attend``, or
the reference :func:`kmt_ref.attention.attend` that a reader checks against),
whether a block's output is added into the residual stream in place,
whether a hardmax construction's run carries labels instead of its
assignment block (``kmt_ref.kernels.labels``), and how many threads share
a batch's tasks. Results do not depend on the engine:
the two attentions compute the same numbers (tested for every construction,
variant and the learned model), and every task's numbers are those of
running it alone, whatever the thread count (one test, ``tests/test_engine.py``).

Models, the loss and training take ``engine=``; the command line builds one
from ``--threads``. An engine may also carry a Dask client
(``kmt_ref.programs.jobs.cluster``), on which the programs above the library
train the models an experiment lacks and evaluate its seeds, one job per
model; the library itself never uses it.
"""

from dataclasses import dataclass, field

from . import attention, kernels
from ._validation import check_bool, check_int
from .kernels.pool import TaskPool

__all__ = ["Engine", "REFERENCE"]


@dataclass(frozen=True)
class Engine:
    """Execution of a model: ``threads`` workers over a batch's tasks; ``reference=True`` runs the
    reference attention (slow, for reading and checking) instead of the fast kernels; ``client``: where
    the programs run their jobs (None: in this process).
    """

    threads: int = 1
    reference: bool = False
    #: A Dask ``distributed.Client`` for the programs' jobs, or None (in-process).
    client: object = field(default=None, compare=False, repr=False)

    def __post_init__(self):
        object.__setattr__(self, "threads", check_int(self.threads, "threads", low=1))
        object.__setattr__(self, "reference", check_bool(self.reference, "reference"))
        object.__setattr__(self, "_pool", TaskPool(self.threads))  # its worker threads belong to this value

    @property
    def pool(self):
        """The ``kmt_ref.kernels.pool.TaskPool`` that splits a batch's tasks over the threads."""
        return self._pool

    def attend(self, Zq, Zk, block, rng=None):
        """One attention block's output, shape ``(..., m, D)`` (see :func:`kmt_ref.attention.attend`)."""
        if self.reference:
            return attention.attend(Zq, Zk, block, rng)
        return kernels.attend(Zq, Zk, block, rng, self.pool)

    def residual(self, Z, Zq, Zk1, block1, Zk2, block2, rng=None, overwrite=False):
        """``Z + attend(Zq, Zk1, block1) + attend(Zq, Zk2, block2)``, in that order.

        With the fast kernels on plain arrays, each block's output is added
        on the coordinates it writes only, into one copy of ``Z``: the same
        sums (adding the zeros of the other coordinates changes nothing),
        without full-width temporaries. ``overwrite=True`` (the caller owns
        ``Z``, which is ``Zq``): into ``Z`` itself where no block reads what
        the sum has already written (``kmt_ref.kernels.adds_in_place``),
        the same numbers without the copy.
        """
        if self.reference or not kernels.is_plain(Z, Zq, Zk1, Zk2, block1, block2):
            return Z + self.attend(Zq, Zk1, block1, rng) + self.attend(Zq, Zk2, block2, rng)
        in_place = overwrite and Z is Zq and kernels.adds_in_place(block1, block2, Z.shape[-1], Zk1 is Z, Zk2 is Z)
        out = Z if in_place else Z.copy()
        for Zk, block in ((Zk1, block1), (Zk2, block2)):
            kernels.add_attention(out, Zq, Zk, block, rng)
        return out

    def map_tasks(self, fn, n_tasks):
        """``[fn(s) for s in slices]``: contiguous slices of ``range(n_tasks)``, one per thread."""
        return self.pool.map_slices(fn, n_tasks)


#: The reference attention of :mod:`kmt_ref.attention` on one thread.
REFERENCE = Engine(reference=True)
