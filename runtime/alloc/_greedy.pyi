"""Best-fit and first-fit greedy placement (Cython): the production baselines."""

import numpy as np
from numpy.typing import ArrayLike

ALGORITHMS: tuple[str, ...]

def placement_order(starts: ArrayLike, ends: ArrayLike, sizes: ArrayLike, fixed: ArrayLike) -> np.ndarray: ...
def greedy(starts: ArrayLike, ends: ArrayLike, sizes: ArrayLike, aligns: ArrayLike, fixed: ArrayLike,
           algorithm: str = "best-fit") -> np.ndarray: ...
