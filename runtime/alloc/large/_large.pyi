"""The large-problem planner's kernel (Cython): best-fit and first-fit placement over named
orderings without lists of overlapping pairs, gravity rounds, and the completion of an
ordering cut short."""

from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from telamalloc.runtime.alloc.config import PlacementConfig

FIXED_ORDERINGS: tuple[tuple[str, float, str, bool], ...]  # (name, base or divisor, tie key, first-fit)
CONTENTION_TIES: tuple[str, ...]
CLASSIC_KEYS: tuple[str, ...]
RANDOM_BASE: int

class _Planner:
    def run(self, *, orderings: int = 5, first: int = 0, orders: ArrayLike | None = None, first_fit: bool = False,
            time_limit: float = 0.0, target: int = -1, seed: int = 0, cancel: Any = None,
            progress: np.ndarray | None = None, swept: ArrayLike | None = None,
            slots: bool = True) -> tuple[np.ndarray | None, dict[str, Any]]: ...
    def gravity(self, offsets: ArrayLike, movable: ArrayLike, *, mirror: bool = False, deadline: float | None = None,
                cancel: Any = None) -> tuple[np.ndarray | None, bool]: ...
    def settle(self, offsets: ArrayLike, rounds: int, shares: tuple[float, ...], *, first: int = 0, target: int = -1,
               deadline: float | None = None, cancel: Any = None) -> tuple[np.ndarray, dict[str, int]]: ...

def planner(starts: ArrayLike, ends: ArrayLike, sizes: ArrayLike, aligns: ArrayLike, fixed: ArrayLike, *,
            config: PlacementConfig | None = None, flat_height: int = -1) -> _Planner: ...
def plan(starts: ArrayLike, ends: ArrayLike, sizes: ArrayLike, aligns: ArrayLike, fixed: ArrayLike, *,
         orderings: int = 5, first: int = 0, orders: ArrayLike | None = None, first_fit: bool = False,
         time_limit: float = 0.0, target: int = -1, seed: int = 0, cancel: Any = None,
         progress: np.ndarray | None = None, config: PlacementConfig | None = None,
         flat_height: int = -1) -> tuple[np.ndarray | None, dict[str, Any]]: ...
def ordering(index: int, starts: ArrayLike, ends: ArrayLike, sizes: ArrayLike, seed: int = 0,
             load: np.ndarray | None = None, load_point: int | None = None, swept: ArrayLike | None = None,
             config: PlacementConfig | None = None) -> tuple[np.ndarray, bool]: ...
def contention(starts: ArrayLike, ends: ArrayLike, sizes: ArrayLike) -> tuple[np.ndarray, int]: ...
def slot_rest(made: _Planner, offsets: ArrayLike, sequence: ArrayLike, placed_count: int) -> np.ndarray: ...
def scan_rest(made: _Planner, offsets: ArrayLike, sequence: ArrayLike, placed_count: int,
              budget: int = ...) -> tuple[np.ndarray, int]: ...
def _distinct(values: np.ndarray) -> np.ndarray: ...
