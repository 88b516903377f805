"""The validator's sweep over lifetime events (Cython)."""

import numpy as np

def disjoint_by_rank(ranks: np.ndarray, ranked_lows: np.ndarray, highs: np.ndarray, starting: np.ndarray) -> bool: ...
