"""What defines a training run: :class:`TrainConfig`, validated before any work and stored in every
checkpoint (:mod:`kmt_ref.learning.train` runs it)."""

import dataclasses
from dataclasses import dataclass

from .._validation import check_bool, check_choice, check_fraction, check_int, check_k, check_positive
from ..tasks import check_family
from .model import ModelConfig

__all__ = ["TrainConfig", "LOSS_ON", "PRECISIONS", "MAX_STEP_BYTES", "MAX_PERTURB", "MAX_TRAIN_LAYERS"]

#: The largest ``perturb`` of :class:`TrainConfig`: its factor ``1 + p 2^-52`` stays within ``2^-32`` of 1.
MAX_PERTURB = 2**20
#: The most re-embedded applications a training step may run through (the experiments use up to 3).
MAX_TRAIN_LAYERS = 100

#: Which applications' centers the multi-step loss looks at.
LOSS_ON = ("last", "every")
#: Arithmetics of a training step (the field ``precision`` of :class:`TrainConfig`).
PRECISIONS = ("float64", "float32")

#: The most memory a training step may need (bytes); a config that needs more is refused before any work.
MAX_STEP_BYTES = 16 * 2**30


@dataclass(frozen=True)
class TrainConfig:
    """Everything that defines a training run (the authors' protocol's values by default).

    Attributes
    ----------
    d, k, n : int
        Dimension, centers, points per task.
    tokens : {"d+k", "d"}
        Token layout of the model.
    tied : bool
        Tie the id maps so the parameters do not depend on ``k``
        (:class:`~kmt_ref.learning.model.ModelConfig`).
    symmetric : bool
        Every symmetry of the task law by construction: ids, coordinate permutations, reflections
        ``x_l -> 1 - x_l`` (:class:`~kmt_ref.learning.model.ModelConfig`): 48 scalars at every ``d`` and ``k``.
    n_layers : int
        Layer applications (re-embedding between them) before the loss is
        taken; the paper trains through one. Validation compares with as many
        Lloyd steps.
    loss_on : {"last", "every"}
        With ``n_layers > 1``: the loss of the centers after the last
        application, or the mean of the losses after every application.
    family, scale, equal_weights, isotropic
        Task distribution (:func:`~kmt_ref.tasks.sample_tasks`).
    tau : float
        Temperature of the smoothed loss.
    lr : float
        Initial Adam learning rate.
    batch : int
        Tasks per step.
    n_steps : int
        Training steps.
    eval_every : int
        Steps between validations (and plateau checks).
    patience, lr_factor
        Plateau schedule: multiply the rate by ``lr_factor`` after more than
        ``patience`` validations without improvement.
    val_tasks : int
        Held-out validation tasks.
    seed : int
    precision : {"float64", "float32"}
        Arithmetic of a step's forward and backward pass. ``"float32"``
        runs them in float32, as the authors' PyTorch model does (faster:
        ``python -m kmt_ref bench`` measures by how much); the parameters, Adam's moments and the validation
        stay float64, and the gradient is taken back to float64 before the
        update.
    perturb : int
        The initial parameters are multiplied by ``1 + perturb * 2**-52`` (0: as drawn): a rerun whose
        initial parameters differ from those of the run at ``perturb = 0`` by at most ``2 * perturb`` units in
        their last place, to measure how far a result depends on rounding-level differences
        (``reproduce chaos``).
    """

    d: int = 32
    k: int = 10
    n: int = 512
    tokens: str = "d+k"
    tied: bool = False
    symmetric: bool = False
    n_layers: int = 1
    loss_on: str = "last"
    family: str = "normal"
    scale: float = 0.1
    equal_weights: bool = True
    isotropic: bool = True
    tau: float = 0.1
    lr: float = 0.01
    batch: int = 32
    n_steps: int = 10_000
    eval_every: int = 50
    patience: int = 5
    lr_factor: float = 0.5
    val_tasks: int = 320
    seed: int = 0
    precision: str = "float64"
    perturb: int = 0

    def __post_init__(self):
        # Validated and stored as plain Python values (NumPy integers, 0-d arrays accepted).
        def store(name, value):
            object.__setattr__(self, name, value)

        for name in ("d", "k", "n", "n_layers", "batch", "n_steps", "eval_every", "val_tasks"):
            store(name, check_int(getattr(self, name), name, low=1))
        # each re-embedded application costs a full step: more than MAX_TRAIN_LAYERS is a typo, not a run
        store("n_layers", check_int(self.n_layers, "n_layers", low=1, high=MAX_TRAIN_LAYERS))
        check_k(self.k, self.n)
        store("perturb", check_int(self.perturb, "perturb", low=0, high=MAX_PERTURB))
        for name in ("patience", "seed"):
            store(name, check_int(getattr(self, name), name, low=0))
        for name in ("tied", "symmetric", "equal_weights", "isotropic"):
            store(name, check_bool(getattr(self, name), name))
        for name in ("scale", "tau", "lr"):
            store(name, check_positive(getattr(self, name), name))
        if self.lr > 1.0:  # Adam moves every parameter by about lr per step: beyond 1 a run only diverges
            raise ValueError(f"lr must be in (0, 1]; got lr={self.lr:g}")
        store("lr_factor", check_fraction(self.lr_factor, "lr_factor"))
        if self.lr_factor == 0:
            raise ValueError(f"lr_factor must be in (0, 1); got lr_factor={self.lr_factor}")
        check_family(self.family)
        check_choice(self.loss_on, "loss_on", LOSS_ON)
        if self.loss_on == "every" and self.n_layers == 1:  # the same run as "last", under another name
            raise ValueError("loss_on='every' needs n_layers > 1 (with one application it is loss_on='last'); "
                             "got n_layers=1")
        check_choice(self.precision, "precision", PRECISIONS)
        model = ModelConfig(self.d, self.k, self.tokens, self.tied, self.symmetric)  # validates the model options
        # A training step holds a few copies of the parameters and batch x n x n attention weights.
        need = 8 * (6 * model.n_params + 4 * self.batch * self.n * (self.n + model.width))
        if need > MAX_STEP_BYTES:
            raise ValueError(f"a training step with d={self.d}, k={self.k}, n={self.n}, batch={self.batch} needs about "
                             f"{need / 2**30:.0f} GiB, more than {MAX_STEP_BYTES / 2**30:g} GiB: choose smaller sizes")

    @property
    def model(self):
        """The :class:`~kmt_ref.learning.model.ModelConfig` this run trains."""
        return ModelConfig(self.d, self.k, self.tokens, self.tied, self.symmetric)

    def task_kwargs(self):
        """The keyword arguments of :func:`~kmt_ref.tasks.sample_tasks` that draw this run's tasks."""
        return dict(
            n=self.n, d=self.d, k=self.k, family=self.family, scale=self.scale,
            equal_weights=self.equal_weights, isotropic=self.isotropic,
        )

    def to_dict(self):
        """The configuration as a JSON-able dict (stored in checkpoints; :meth:`from_dict` reads it)."""
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, values):
        """The configuration :meth:`to_dict` wrote; an unknown field is a ``ValueError``."""
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(values) - known)
        if unknown:
            raise ValueError(f"unknown TrainConfig fields {unknown}")
        return cls(**values)
