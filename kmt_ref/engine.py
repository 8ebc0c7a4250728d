"""How a model's work is executed, as a value: threads over tasks and the attention that computes a block.

The layer (:func:`kmt_ref.layer.transformer_layer`) says *what* is computed:
the paper's residual sums. An :class:`Engine` says *how*, as nanoGPT sets its
plain attention beside the fast one, both short, chosen by name:

* ``Engine()`` (the default): the model's four blocks computed on tokens by the
  fast dense kernels (``kmt_ref.kernels.attend``), each block's output added
  into the residual stream, in place where nothing reads it;
* :data:`REFERENCE`, ``Engine(reference=True)``: the same blocks by the
  reference attention of :mod:`kmt_ref.attention`, the code a reader checks
  the proofs against;
* :data:`LABELS`, ``Engine(labels=True)``: the *labels run* of a hardmax
  construction at ``gamma = inf`` (``kmt_ref.kernels.labels``): each point's
  label instead of its assignment row, CAX as ``lloyd``'s nearest-center
  search and CAC as each cluster's member sums. It runs a specialization of
  the layer that the theorem justifies, so it is no evidence for the theorem:
  the experiments, sweeps and ``bench`` name it where speed matters, and
  ``verify`` checks it against the layer in rows of its own. Other models run
  their blocks under it.

Results do not depend on the engine: the attentions compute the same numbers
(tested for every construction, variant and the learned model), the labels
run the same assignments and centers to rounding (proved on every assignment
pattern, :func:`kmt_ref.symbolic_engines.engine_lemma`), and every task's numbers are
those of running it alone, whatever the thread count (``tests/test_engine.py``).

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

__all__ = ["Engine", "REFERENCE", "LABELS"]


@dataclass(frozen=True)
class Engine:
    """Execution of a model: ``threads`` workers over a batch's tasks; ``reference=True`` runs the
    reference attention (slow, for reading and checking) instead of the fast kernels; ``labels=True``
    runs a hardmax construction at ``gamma = inf`` on labels (fast, chosen by name: see the module
    docstring); ``client``: where the programs run their jobs (None: in this process).
    """

    threads: int = 1
    reference: bool = False
    labels: bool = False
    #: A Dask ``distributed.Client`` for the programs' jobs, or None (in-process).
    client: object = field(default=None, compare=False, repr=False)

    def __post_init__(self):
        object.__setattr__(self, "threads", check_int(self.threads, "threads", low=1))
        object.__setattr__(self, "reference", check_bool(self.reference, "reference"))
        object.__setattr__(self, "labels", check_bool(self.labels, "labels"))
        if self.reference and self.labels:
            raise ValueError("reference=True computes the blocks by the reference attention and labels=True "
                             "replaces them by the labels run: choose one")
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
#: The labels run of a hardmax construction (``kmt_ref.kernels.labels``) on one thread.
LABELS = Engine(labels=True)
