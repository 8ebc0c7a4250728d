"""Learning the k-means transformer with autograd.

Modules, in reading order (the tasks come from :mod:`kmt_ref.tasks`): ``model`` (the
learnable one-layer transformer, built on :func:`kmt_ref.layer.transformer_layer`), ``sharing`` (its tied form),
``loss`` (smoothed k-means objective), ``optim`` (Adam, plateau schedule),
``config`` (what defines a run), ``checkpoint``, ``progress`` and ``train`` (resumable training), ``evaluate``
(multi-step evaluation; Lloyd on batches is :func:`kmt_ref.lloyd` itself) and
``analysis`` (attention maps and weights of a trained layer), ``protocols`` (the
experiments' scales and runs, and a reader of the results committed with the
package). The experiments themselves are programs, above the library
(``python -m kmt_ref reproduce``, ``kmt_ref.programs``).
"""

from ..tasks import FAMILIES, sample_tasks
from .loss import smoothed_objective
from .model import ModelConfig, forward, init_params, params_from_transformer, run_steps, to_transformer

__all__ = [
    "FAMILIES",
    "ModelConfig",
    "forward",
    "init_params",
    "params_from_transformer",
    "run_steps",
    "sample_tasks",
    "smoothed_objective",
    "to_transformer",
]
