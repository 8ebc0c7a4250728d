"""Fast attention: the reference attention's numbers with less work.

:func:`kmt_ref.attention.attend` says what a block computes in a dozen lines.
:func:`attend` here computes the same thing, behind the same signature, and is
what a :class:`~kmt_ref.layer.KMeansTransformer` runs. Equality of the two, for
every construction, variant and the learned model, is a test
(``tests/test_kernels.py``). What the speed comes from:

* **Structure, found once.** The constructions' weights are block projectors:
  most rows of ``Wq, Wk, Wv`` are zero and the rest are often ``+-I``.
  :func:`structure` finds, once per (frozen) block, which coordinates a score
  reads and a value writes; a ``+-I`` projection is then a view of the tokens,
  not a product, and the output is computed on the written coordinates only
  (:func:`attend_parts`, which the layer adds into its residual stream in
  place instead of adding zero-padded full-width outputs).
* **Row chunks.** At most ``CHUNK_ELEMENTS`` scores exist at once, so the
  all-attention layer's point-to-point attention costs O(n x chunk) memory; plain
  arrays use small chunks that stay in the processor's cache.
* **Euclidean hardmax** ranks ``2 q.k - |k|^2``: ``-|q|^2`` is the same for
  every key of a query and cannot change its arg-max set. Where a query's two
  best scores are closer than their rounding
  (:func:`~kmt_ref.geometry.score_rounding_bound`), exact arithmetic decides
  its arg-max set (:func:`~kmt_ref.geometry.exact_nearest`), as it does for
  :func:`~kmt_ref.lloyd`: the one place where this path is *more* exact than
  the reference, which ranks the rounded scores. The mean of the arg-max rows
  is their sum divided by their count (see
  :func:`~kmt_ref.attention.hardmax_average`).
* **Euclidean softmax** is an ``autograd`` primitive with a hand-written
  vector-Jacobian product (:func:`euclidean_softmax_attention`): it keeps no
  (m, r) intermediates for the backward pass, and ``exp`` is not evaluated
  where it underflows to 0 anyway. The projections of traced tokens are a
  primitive too (:func:`project`), so that a training step runs almost all
  of its work per task, on the threads; both give the gradient autograd
  gives for the operations written out, bit for bit.
* **Linear** normalization divides by the row sums in one pass.
* **A task at a time.** A layer on plain arrays (:func:`add_attention`) runs a
  batch ``(B, ...)`` task by task, so chunk sizes, and with them BLAS's
  rounding, do not depend on the batch: a task's numbers are those of running
  it alone. The Euclidean softmax primitive works a cache-sized chunk of tasks
  at a time.
* **Threads over tasks.** Given a :class:`~kmt_ref.kernels.pool.TaskPool`, the
  primitives split a traced batch's tasks across its threads (a model's run
  splits plain batches itself, through its :class:`~kmt_ref.engine.Engine`);
  every task's numbers are computed by the same calls as without threads, so
  results are bit-identical.
"""

from .fast import add_attention, attend, attend_parts, is_plain, writes_unread
from .softmax import euclidean_softmax_attention, project
from .structure import structure

__all__ = ["add_attention", "attend", "attend_parts", "is_plain", "writes_unread", "structure",
           "euclidean_softmax_attention", "project"]
