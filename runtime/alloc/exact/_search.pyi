"""The exact search kernel (Cython): TelaMalloc's search with canonical placements,
per-section inference, dominance, decomposition and restarts."""

import numpy as np
from numpy.typing import ArrayLike

from telamalloc.runtime.alloc.problem import Params

STATUS_OK: int
STATUS_INFEASIBLE: int
STATUS_TIMEOUT: int

class SearchResult:
    status: int  # STATUS_OK, STATUS_INFEASIBLE or STATUS_TIMEOUT
    offsets: np.ndarray | None  # int64 offsets when OK
    nodes: int
    backtracks: int
    restarts: int
    cancelled: bool
    unprepared: bool  # TIMEOUT: a group's preparation would have outlasted the time left
    def __init__(self, status: int, offsets: np.ndarray | None, nodes: int, backtracks: int, restarts: int,
                 cancelled: bool, unprepared: bool = False) -> None: ...

def static_groups(starts: ArrayLike, ends: ArrayLike) -> list[list[int]]: ...
def search(starts: ArrayLike, ends: ArrayLike, sizes: ArrayLike, aligns: ArrayLike, fixed: ArrayLike, capacity: int,
           params: Params, time_limit: float = 0.0, cancel: np.ndarray | None = None,
           progress: np.ndarray | None = None, stop: np.ndarray | None = None, node_limit: int = -1,
           gate: np.ndarray | None = None) -> SearchResult: ...
