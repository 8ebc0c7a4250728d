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
* **Euclidean hardmax** is each query's nearest keys: the arg-max set of
  ``-||q - k||^2`` is found by :func:`~kmt_ref.geometry.nearest_center`, the
  machinery of :func:`~kmt_ref.lloyd` (scores in cache-sized chunks; where a
  query's two best are closer than their rounding, exact arithmetic decides,
  :func:`~kmt_ref.geometry.exact_nearest`): the sets the reference finds a
  query at a time (:func:`~kmt_ref.normalizers.euclidean_hardmax_average`). A query
  with one nearest key copies its value row, and a tie averages the tied rows
  (:func:`~kmt_ref.normalizers.mean_over`: no product); a layer adds the ids of the
  nearest keys (CAX's one-hot rows) where they are 1, without making the
  (m, r) weights, and so it adds the dot-product hardmax of Theorem 2.2.
* **Euclidean softmax** is an ``autograd`` primitive with a hand-written
  vector-Jacobian product (:func:`euclidean_softmax_attention`): it keeps no
  (m, r) intermediates for the backward pass, and ``exp`` is not evaluated
  where it underflows to 0 anyway: where most weights do, only the live ones
  are computed, and a layer adds only those (CAX's assignments at a large
  ``gamma``). The projections of traced tokens are a
  primitive too (:func:`project`), so that a training step runs almost all
  of its work per task, on the threads; both give the gradient autograd
  gives for the operations written out, bit for bit.
* **Labels, not an assignment block.** A run of a construction at
  ``gamma = inf`` whose layer is the pattern of Theorems 2.1 and 2.2
  (:func:`~kmt_ref.kernels.labels.label_layer`) carries each point's label
  and the few rows a tie shares instead of the n x k block: CAX is the
  nearest-key search, CAC each cluster's member sums
  (:func:`~kmt_ref.geometry.cluster_sums`, as ``lloyd``'s), the block is
  built only for a caller that keeps it. Theorem 2.2's dot-product hardmax
  takes BLAS's product and leaves to the fixed-order scores only the
  queries whose best two are closer than both products' rounding
  (:func:`~kmt_ref.kernels.plain.dot_hardmax_members`): the same members.
* **Linear** normalization divides by the row sums in one pass; with the
  ids as queries (CAC) its scores are the keys themselves, read transposed
  where they lie.
* **Into the residual stream.** A block's output is added on the
  coordinates it writes, a chunk of queries at a time while in cache
  (:func:`add_attention`); a run that owns its tokens adds into them without
  a copy where no block reads what the residual has already written
  (:func:`adds_in_place`).
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

from .fast import add_attention, adds_in_place, attend, attend_parts, is_plain
from .softmax import euclidean_softmax_attention, project
from .structure import structure

__all__ = ["add_attention", "adds_in_place", "attend", "attend_parts", "is_plain", "structure",
           "euclidean_softmax_attention", "project"]
