"""The whole-problem search, what effort above 1 buys after the orderings: the window
search (``windows.py``) with windows allowed to grow to the whole problem, so the exact
kernel re-places every buffer at capacities below the best layout's peak, with budgets
scaled by the effort (``WholeSearchConfig``).

Why: where long-lived buffers that grow over time (the growing family) cross every window
the default search may take, they stay pinned where the orderings put them, and they are
what has to move; over the whole trace the kernel has the capacity to prune by and moves
them. Its limit: a search of n buffers costs n work per node, so without a time limit it
is only bought with effort (work units, deterministic), never by default. Under a time
limit the second lane runs it once its schedule is done (``WholeSearchConfig.idle_effort``),
on a core that would otherwise be idle.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from telamalloc.runtime.alloc.instance import Budget, Instance
from telamalloc.runtime.alloc.large.windows import WindowStats, window_search


def whole_search(instance: Instance, budget: Budget, offsets: np.ndarray, fixed: np.ndarray, goal: int,
                 stop: float | None, stats: WindowStats, extra: int | None = None) -> np.ndarray:
    """The layout ``offsets`` (live offsets, changed in place; ``fixed``: its pins) lowered
    by the whole-problem search when ``LargeConfig.effort`` is above 1; returns it. Its
    work budget is ``(effort - 1) * work_per_buffer`` per buffer, its searches start at
    ``nodes`` nodes (doubled as a window grows, up to the whole problem), and it stops at
    ``goal``, at ``stop`` and on the cancel flag like the window search. It runs only
    where the layout is more than ``gap`` above ``goal`` (the lower bound). Every layout it
    takes is valid and lower, so the result is never higher than ``offsets``. ``extra``:
    the units of effort above 1 to spend instead of ``effort - 1``."""
    large = instance.params.large
    config = large.whole
    extra = large.effort - 1 if extra is None else extra
    count = instance.count
    peak = int((offsets + instance.sizes).max()) if count else 0
    if extra < 1 or config.work_per_buffer <= 0 or count < 2 or peak <= max(goal, 0) * (1 + config.gap):
        return offsets
    work = extra * config.work_per_buffer
    windows = dataclasses.replace(
        large.windows, free_buffers=count, buffers=count, share=1, nodes=config.nodes,
        growths=config.growths, rounds=extra * config.rounds, work_per_buffer=work,
        patience_nodes=work * count, patience_nodes_per_buffer=float(work), capped=True)  # (the work budget bounds it)
    wide = dataclasses.replace(instance, params=dataclasses.replace(
        instance.params, large=dataclasses.replace(large, windows=windows)))
    return window_search(wide, budget, offsets, fixed, max(goal, 0), stop, stats)
