"""The rows of a CSV layout, formatted by a small C loop (Cython)."""

from collections.abc import Sequence

import numpy as np

def format_rows(cells: Sequence[np.ndarray | tuple[bytes, np.ndarray]], count: int) -> bytes: ...
