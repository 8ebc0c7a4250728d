"""One-off: the authors' exact Figure 3 draw, saved as ``figure3.npy``.

Not part of the package's code (nothing imports it) and the only place
PyTorch appears: the draw is defined by PyTorch's generator, so reproducing it
needs PyTorch once. Run from this folder with ``torch==2.13.0`` installed:

    python make_figure3.py

The recipe (from the authors' ``numerical_validation.ipynb``): seed 5487;
five true centers ``torch.rand(5, 2)``; for each center in order, 2,000 points,
one call of a 2-D normal sampler (covariance ``0.01 I``) per point; every
dimension min-max scaled to [0, 1]; rows permuted by ``torch.randperm``. The
initial centers are the first five rows. Stored in float32, as drawn.
"""

import random

import numpy as np
import torch

SEED, K, N = 5487, 5, 10_000

random.seed(SEED)
np.random.seed(SEED)
torch.manual_seed(SEED)
means = torch.rand([K, 2])
points = []
for mean in means:
    normal = torch.distributions.MultivariateNormal(loc=mean, covariance_matrix=0.01 * torch.eye(2))
    points += [normal.sample() for _ in range(N // K)]
X = torch.stack(points)
X = X - X.min(dim=0).values
X = X / X.max(dim=0).values
X = X[torch.randperm(N)]
np.save("figure3.npy", X.numpy())
