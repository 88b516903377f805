"""The exact scheduling search: the order with the lowest LOAD, proved, on small graphs.

Dynamic programming over ready sets, as a bottleneck shortest path: a state is the set of
ops already run (a down-closed set of the dependence graph, a bit mask), and the bytes live
after it depend on that set alone, not on the order inside it. The cost of a state is the
lowest peak of live bytes over any order that reaches it; Dijkstra's order (lowest cost
first, then the largest set) pops the full set with the minimum LOAD, and each set is
expanded once. Two reductions keep the states few:
- the bound: states whose cost reaches the best heuristic's LOAD are dropped, so the search
  only looks for a strictly better order, and its exhaustion proves the bound optimal;
- the free moves: a ready op that adds no net bytes and whose own point stays within the
  state's cost is run at once (any order that runs it later is no better: moving it forward
  lowers or keeps the live bytes at every point in between).

Why not CP-SAT: LOAD over an order needs an order variable per pair of ops and a live-bytes
sum per point (quadratic in the ops before any search), while the set of ops run is
exactly what determines the memory state, so the search over sets has no slack; its limit
is the number of down-closed sets, which grows with the graph's width (`docs/decisions.md`).
"""

from __future__ import annotations

import heapq
import time
from collections.abc import Callable

from telamalloc.runtime.alloc.op_order import Model, initial_live

CHECK_EVERY = 256
"""States expanded between two looks at the deadline and the cancel flag."""


def exact_order(
    model: Model,
    bound: int,
    deadline: float | None,
    max_states: int,
    cancel: Callable[[], bool] | None = None,
) -> tuple[list[int] | None, bool]:
    """An order with a LOAD below `bound` and the lowest of all, or None when none exists.

    Returns (order or None, proved): `proved` is True when the search completed (the order
    is optimal, or None proves that `bound` is the minimum), False when it stopped at the
    deadline, the state budget or the cancel flag.
    """
    count = model.count
    if count == 0:
        return None, True
    pred_mask = [sum(1 << p for p in preds) for preds in model.preds]
    users_mask = [sum(1 << op for op in users) for users in model.accessors]
    sizes, inputs, outputs, accesses = model.sizes, model.inputs, model.outputs, model.accesses

    def step(mask: int, op: int) -> tuple[int, int]:
        """(bytes that start living at `op`, bytes freed after it) once `mask` has run."""
        bit = 1 << op
        new = freed = 0
        for buffer in accesses[op]:
            users = users_mask[buffer]
            if not inputs[buffer] and not users & mask:
                new += sizes[buffer]
            if not outputs[buffer] and users & ~mask == bit:
                freed += sizes[buffer]
        return new, freed

    full = (1 << count) - 1
    start_live = initial_live(model)
    parent: dict[int, tuple[int, int] | None] = {0: None}
    best_cost: dict[int, int] = {0: 0}
    heap: list[tuple[int, int, int]] = [(0, 0, 0)]  # (cost, -ops run, mask)
    live_of: dict[int, int] = {0: start_live}
    expanded = 0
    while heap:
        cost, _, mask = heapq.heappop(heap)
        if best_cost.get(mask, cost) < cost:
            continue
        if mask == full:
            return _order(parent, mask), True
        expanded += 1
        if expanded > max_states:
            return None, False
        if expanded % CHECK_EVERY == 0 and _stopped(deadline, cancel):
            return None, False
        mask, live = _free_moves(mask, live_of[mask], cost, count, pred_mask, step, parent, best_cost)
        if mask == full:
            return _order(parent, mask), True
        for op in range(count):
            if mask >> op & 1 or pred_mask[op] & ~mask:
                continue
            new, freed = step(mask, op)
            next_cost = max(cost, live + new)
            if next_cost >= bound:
                continue
            following = mask | 1 << op
            if best_cost.get(following, bound) <= next_cost:
                continue
            best_cost[following] = next_cost
            parent[following] = (mask, op)
            live_of[following] = live + new - freed
            heapq.heappush(heap, (next_cost, -following.bit_count(), following))
    return None, True


def _free_moves(mask, live, cost, count, pred_mask, step, parent, best_cost) -> tuple[int, int]:
    """Runs every ready op that adds no net bytes and peaks within `cost`, until none is left."""
    moved = True
    while moved:
        moved = False
        for op in range(count):
            if mask >> op & 1 or pred_mask[op] & ~mask:
                continue
            new, freed = step(mask, op)
            if new <= freed and live + new <= cost:
                following = mask | 1 << op
                if best_cost.get(following, cost + 1) > cost:  # reached no cheaper before
                    parent[following] = (mask, op)
                    best_cost[following] = cost
                mask, live = following, live + new - freed
                moved = True
    return mask, live


def _order(parent: dict[int, tuple[int, int] | None], mask: int) -> list[int]:
    order: list[int] = []
    link = parent[mask]
    while link is not None:
        mask, op = link
        order.append(op)
        link = parent[mask]
    order.reverse()
    return order


def _stopped(deadline: float | None, cancel: Callable[[], bool] | None) -> bool:
    if cancel is not None and cancel():
        return True
    return deadline is not None and time.monotonic() > deadline
