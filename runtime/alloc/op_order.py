"""An op order that lowers LOAD: scheduling a graph of ops before allocation, on plain data.

A `Graph` lists ops in a given order, each with the buffers it reads and writes (and, for
dependences the buffers do not show, the ops it must follow); buffers have a size and may be
inputs (live from the start) or outputs (live to the end). `schedule(graph)` returns an
order of the ops that keeps every dependence and whose LOAD is never above the given
order's:

- dependences: on each buffer, the order of its accesses in the given order is kept where
  it matters (a read after the write before it, a write after the reads and the write
  before it: RAW, WAR, WAW), `after` edges are kept, and a `barrier` op stays after every
  op before it and before every op after it;
- lifetimes (the liveness core's rule, `passes/analysis/liveness.py`): a buffer lives from its first
  access (its first write, when nothing reads it before) to its last access, an input from
  the start, an output to the end; at an op's own point, what it reads and what it writes
  are both live. LOAD is `telamalloc.compute_load` of those lifetimes;
- methods, each a name (`METHODS`): `given` (the floor), the memory-aware topological
  orders PyTorch Inductor's `reorder_for_peak_memory` tries (`lpmf`: least peak memory
  first, `bfs`: by depth, `dfs`: depth first from the sinks, smaller predecessors first),
  `lookahead` (LPMF that scores each of its best candidates by the best next step after
  it); each heuristic's order is also tried with the ops that only start buffers moved to
  just before their first user (`sink_producers`: a weight loaded early only holds bytes);
  and `exact` (`op_order_exact.py`: a search over the sets of ops already run, which
  proves the minimum on small graphs; it runs only when the heuristics stay above
  `forced_lower_bound`, the bytes live at some op in every order). The lowest LOAD wins; ties go to the earlier method
  in `METHODS`, so the given order is kept when nothing is better.

Limits: the sizes are fixed, the objective is LOAD (not the planned peak), and an op's
accesses are whole buffers (a write to part of a buffer is a write).
"""

from __future__ import annotations

import heapq
import time
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass, field

from telamalloc.runtime.alloc.problem import Buffer, Problem, ProblemError
from telamalloc.runtime.alloc.validate import compute_load

METHODS = ("given", "lpmf", "bfs", "dfs", "lookahead", "exact")
"""Every method, in the order that breaks ties between equal LOADs."""


class ScheduleError(ProblemError):
    """A graph that cannot be scheduled as stated (an unknown buffer or op, a cycle...)."""


@dataclass(frozen=True)
class GraphBuffer:
    """One buffer of a graph."""

    id: Hashable
    size: int  # bytes, >= 0
    input: bool = False  # holds a value before the graph runs: live from the start
    output: bool = False  # read after the graph runs: live to the end


@dataclass(frozen=True)
class GraphOp:
    """One op: the buffers it reads and writes, and the ops it must follow besides."""

    id: Hashable
    reads: tuple[Hashable, ...] = ()  # buffer ids
    writes: tuple[Hashable, ...] = ()  # buffer ids (a read-modify-write lists the buffer in both)
    after: tuple[Hashable, ...] = ()  # op ids that must run before this one (e.g. SSA values)
    barrier: bool = False  # unknown effects: runs after every earlier op, before every later one


@dataclass(frozen=True)
class Graph:
    """Ops in their given order and the buffers they access."""

    ops: tuple[GraphOp, ...]
    buffers: tuple[GraphBuffer, ...]


@dataclass(frozen=True)
class ScheduleConfig:
    """How hard `schedule` tries: budgets and limits of each method."""

    methods: tuple[str, ...] = METHODS
    """The methods to run (the given order always runs: it is the floor)."""
    exact_max_ops: int = 400
    """Graphs with more ops skip the exact search."""
    exact_max_states: int = 100_000
    """Sets of ops the exact search may expand before it stops without a proof (a work
    budget: the same answer on every machine; about 10,000 sets a second)."""
    lookahead_candidates: int = 4
    """The look-ahead greedy scores this many of LPMF's best ready ops at each step."""
    lookahead_max_ops: int = 5_000
    """Graphs with more ops skip the look-ahead greedy (it costs about 5 times LPMF)."""


@dataclass(frozen=True)
class Trial:
    """What one method found."""

    method: str
    load: int  # LOAD of its order (bytes)
    seconds: float  # wall-clock time it took
    proved: bool = False  # exact: the search completed, so no order has a lower LOAD


@dataclass(frozen=True)
class Schedule:
    """The chosen order and what each method found."""

    order: tuple[int, ...]  # positions into graph.ops, in the order they run
    method: str  # the method whose order was chosen
    load: int  # LOAD of the chosen order (bytes)
    given_load: int  # LOAD of the given order (bytes)
    proved: bool  # no order of the graph has a lower LOAD (the exact search completed)
    trials: tuple[Trial, ...] = field(default=())

    def ids(self, graph: Graph) -> tuple[Hashable, ...]:
        """The op ids in the chosen order."""
        return tuple(graph.ops[position].id for position in self.order)


@dataclass(frozen=True)
class Model:
    """A graph as index arrays: what every method works on."""

    count: int  # ops
    sizes: tuple[int, ...]  # per buffer
    inputs: tuple[bool, ...]
    outputs: tuple[bool, ...]
    accesses: tuple[tuple[int, ...], ...]  # per op: the buffers it reads or writes, once each
    accessors: tuple[tuple[int, ...], ...]  # per buffer: the ops that access it, once each
    preds: tuple[tuple[int, ...], ...]  # per op: the ops it must follow (direct dependences)
    succs: tuple[tuple[int, ...], ...]


def build_model(graph: Graph) -> Model:
    """Checks `graph` and derives its dependences; a `ScheduleError` names what is wrong."""
    buffer_index: dict[Hashable, int] = {}
    for index, buffer in enumerate(graph.buffers):
        if buffer.id in buffer_index:
            raise ScheduleError(f"buffer '{buffer.id}' is listed twice: give each buffer one entry")
        if not isinstance(buffer.size, int) or isinstance(buffer.size, bool) or buffer.size < 0:
            raise ScheduleError(f"buffer '{buffer.id}' has size '{buffer.size}': sizes are integers >= 0 (bytes)")
        buffer_index[buffer.id] = index
    op_index: dict[Hashable, int] = {}
    for index, op in enumerate(graph.ops):
        if op.id in op_index:
            raise ScheduleError(f"op '{op.id}' is listed twice: give each op one entry")
        op_index[op.id] = index
    count = len(graph.ops)
    preds: list[set[int]] = [set() for _ in range(count)]
    accesses: list[tuple[int, ...]] = []
    last_write: dict[int, int] = {}
    reads_since: dict[int, list[int]] = {}
    last_barrier = -1
    for index, op in enumerate(graph.ops):
        reads = [_known(buffer_index, op, name, "reads") for name in op.reads]
        writes = [_known(buffer_index, op, name, "writes") for name in op.writes]
        for name in op.after:
            if name not in op_index:
                raise ScheduleError(f"op '{op.id}' runs after unknown op '{name}': list that op in the graph")
            before = op_index[name]
            if before >= index:
                raise ScheduleError(f"op '{op.id}' runs after op '{name}', which comes later in the given order: "
                                    "list the ops in an order that keeps their dependences")
            preds[index].add(before)
        for buffer in reads:  # RAW
            if buffer in last_write:
                preds[index].add(last_write[buffer])
        for buffer in writes:  # WAW, WAR
            if buffer in last_write:
                preds[index].add(last_write[buffer])
            preds[index].update(reads_since.get(buffer, ()))
        if op.barrier:  # after every op since the last barrier, and after that barrier itself
            preds[index].update(range(max(last_barrier, 0), index))
            last_barrier = index
        elif last_barrier >= 0:
            preds[index].add(last_barrier)
        for buffer in reads:
            reads_since.setdefault(buffer, []).append(index)
        for buffer in writes:
            last_write[buffer] = index
            reads_since[buffer] = []
        preds[index].discard(index)
        accesses.append(tuple(dict.fromkeys(reads + writes)))
    accessors: list[list[int]] = [[] for _ in graph.buffers]
    for index, touched in enumerate(accesses):
        for buffer in touched:
            accessors[buffer].append(index)
    succs: list[list[int]] = [[] for _ in range(count)]
    for index in range(count):
        for before in sorted(preds[index]):
            succs[before].append(index)
    return Model(
        count,
        tuple(b.size for b in graph.buffers),
        tuple(bool(b.input) for b in graph.buffers),
        tuple(bool(b.output) for b in graph.buffers),
        tuple(accesses),
        tuple(tuple(a) for a in accessors),
        tuple(tuple(sorted(p)) for p in preds),
        tuple(tuple(s) for s in succs),
    )


def _known(buffer_index: dict[Hashable, int], op: GraphOp, name: Hashable, verb: str) -> int:
    if name not in buffer_index:
        raise ScheduleError(f"op '{op.id}' {verb} unknown buffer '{name}': list it among the buffers")
    return buffer_index[name]


def initial_live(model: Model) -> int:
    """Bytes live before the first op: the inputs that something accesses or that are outputs."""
    return sum(
        size
        for size, is_input, is_output, users in zip(model.sizes, model.inputs, model.outputs, model.accessors)
        if is_input and (users or is_output)
    )


def lifetimes(model: Model, order: Sequence[int]) -> Problem:
    """The buffers' lifetimes when the ops run in `order`, as an allocation problem."""
    position = [0] * model.count
    for point, op in enumerate(order):
        position[op] = point
    end_of_graph = max(model.count, 1)
    buffers = []
    for buffer, users in enumerate(model.accessors):
        if not users and not (model.inputs[buffer] and model.outputs[buffer]):
            continue  # never accessed: lives nowhere (or everywhere: an input that is an output)
        points = [position[op] for op in users]
        start = 0 if model.inputs[buffer] else min(points)
        end = end_of_graph if model.outputs[buffer] else (max(points) + 1 if points else 1)
        buffers.append(Buffer(buffer, start, end, model.sizes[buffer]))
    return Problem(buffers)


def order_load(model: Model, order: Sequence[int]) -> int:
    """LOAD of the lifetimes of `order` (`telamalloc.compute_load`)."""
    return compute_load(lifetimes(model, order))[0]


def lower_bound(model: Model) -> int:
    """A LOAD no order can beat: at each op, its own buffers and the inputs that are
    outputs (live everywhere) are live together."""
    always = sum(size for size, i, o in zip(model.sizes, model.inputs, model.outputs) if i and o)
    own = (sum(model.sizes[b] for b in touched if not (model.inputs[b] and model.outputs[b]))
           for touched in model.accesses)
    return always + max(own, default=0)


def forced_lower_bound(model: Model) -> int:
    """A LOAD no order can beat, at least `lower_bound`: at each op, every buffer that is
    live there in every order: it starts at or before the op (an input, or an accessor the
    op must follow, or the op itself) and ends at or after it (an output, or an accessor
    that must follow the op, or the op itself). Costs the ops times the buffers (bit sets
    of each op's ancestors and descendants): for graphs the exact search takes."""
    count = model.count
    ancestors = [0] * count
    for op in range(count):  # predecessors come earlier in the given order
        mask = 0
        for pred in model.preds[op]:
            mask |= ancestors[pred] | 1 << pred
        ancestors[op] = mask
    descendants = [0] * count
    for op in reversed(range(count)):
        mask = 0
        for succ in model.succs[op]:
            mask |= descendants[succ] | 1 << succ
        descendants[op] = mask
    everywhere = (1 << count) - 1
    live = [0] * count
    always = 0
    for buffer, users in enumerate(model.accessors):
        size = model.sizes[buffer]
        is_input, is_output = model.inputs[buffer], model.outputs[buffer]
        if size == 0 or not (users or (is_input and is_output)):
            continue
        started = everywhere if is_input else 0  # ops at which it has started in every order
        unfinished = everywhere if is_output else 0  # ... and has not ended
        for user in users:
            started |= descendants[user] | 1 << user
            unfinished |= ancestors[user] | 1 << user
        forced = started & unfinished
        if forced == everywhere:
            always += size
            continue
        while forced:
            low = forced & -forced
            live[low.bit_length() - 1] += size
            forced ^= low
    return always + max(live, default=0)


def is_valid_order(model: Model, order: Sequence[int]) -> bool:
    """True when `order` runs every op once and each after the ops it must follow."""
    if sorted(order) != list(range(model.count)):
        return False
    position = {op: point for point, op in enumerate(order)}
    return all(position[p] < position[op] for op in range(model.count) for p in model.preds[op])


class Frontier:
    """The memory state of a partial order: live bytes, and what each ready op would cost.

    `new(op)`: bytes that start living at `op` (buffers nothing has accessed yet, not
    inputs); `freed(op)`: bytes that stop living after `op` (`op` is their last accessor,
    not outputs).
    """

    def __init__(self, model: Model):
        self.model = model
        self.remaining = [len(users) for users in model.accessors]
        self.started = list(model.inputs)
        self.live = initial_live(model)
        self.missing = [len(p) for p in model.preds]

    def new(self, op: int) -> int:
        return sum(self.model.sizes[b] for b in self.model.accesses[op] if not self.started[b])

    def freed(self, op: int) -> int:
        model = self.model
        return sum(model.sizes[b] for b in model.accesses[op] if self.remaining[b] == 1 and not model.outputs[b])

    def run(self, op: int) -> tuple[list[int], list[int]]:
        """Runs `op`: returns the ops it makes ready and the buffers whose costs changed."""
        model = self.model
        self.live += self.new(op) - self.freed(op)
        changed = []
        for buffer in model.accesses[op]:
            if not self.started[buffer]:
                self.started[buffer] = True
                changed.append(buffer)
            self.remaining[buffer] -= 1
            if self.remaining[buffer] == 1:
                changed.append(buffer)
        ready = []
        for succ in model.succs[op]:
            self.missing[succ] -= 1
            if self.missing[succ] == 0:
                ready.append(succ)
        return ready, changed


def lpmf_order(model: Model, lookahead: int = 0, net_first: bool = False) -> list[int]:
    """Least peak memory first: the ready op that raises the live bytes least at its own
    point, then the one that frees most, then the given order (`net_first`: the one that
    adds the fewest net bytes, then the least at its point). With `lookahead` > 1, the best
    `lookahead` candidates are scored by the best op that can follow each."""
    state = Frontier(model)
    version = [0] * model.count
    heap: list[tuple[int, int, int, int]] = []
    is_ready = [False] * model.count

    def push(op: int) -> None:
        version[op] += 1
        new = state.new(op)
        net = new - state.freed(op)
        heapq.heappush(heap, (net, new, op, version[op]) if net_first else (new, net, op, version[op]))

    for op in range(model.count):
        if state.missing[op] == 0:
            is_ready[op] = True
            push(op)
    order: list[int] = []
    while heap:
        candidates = _pop_valid(heap, version, max(lookahead, 1))
        if not candidates:
            break  # only stale entries were left
        chosen = candidates[0] if len(candidates) == 1 else _look_ahead(state, candidates, is_ready)
        for op in candidates:
            if op != chosen:
                push(op)
        order.append(chosen)
        is_ready[chosen] = False
        ready, changed = state.run(chosen)
        version[chosen] += 1
        for op in ready:
            is_ready[op] = True
            push(op)
        for buffer in changed:
            for op in model.accessors[buffer]:
                if is_ready[op]:
                    push(op)
    return order


def _pop_valid(heap: list, version: list[int], count: int) -> list[int]:
    popped: list[int] = []
    while heap and len(popped) < count:
        _, _, op, seen = heapq.heappop(heap)
        if seen == version[op]:
            popped.append(op)
            version[op] += 1  # taken: stale until pushed again
    return popped


def _look_ahead(state: Frontier, candidates: list[int], is_ready: list[bool]) -> int:
    """The candidate whose best two-step continuation has the lowest peak, then live bytes."""
    model = state.model
    best_key, best_op = None, candidates[0]
    for op in candidates:
        peak = state.live + state.new(op)
        live = peak - state.freed(op)
        touched = set(model.accesses[op])
        following = [o for o in candidates if o != op] + [
            succ for succ in model.succs[op] if state.missing[succ] == 1
        ]
        options = []
        for other in following:
            new = sum(model.sizes[b] for b in model.accesses[other] if not state.started[b] and b not in touched)
            freed = sum(
                model.sizes[b]
                for b in model.accesses[other]
                if not model.outputs[b] and state.remaining[b] - (b in touched) == 1
            )
            options.append((max(peak, live + new), live + new - freed))
        step = min(options) if options else (peak, live)
        key = (step, candidates.index(op))
        if best_key is None or key < best_key:
            best_key, best_op = key, op
    return best_op


def sink_producers(model: Model, order: Sequence[int]) -> list[int]:
    """`order` with each op that starts buffers moved to just before its first successor,
    when every buffer it reads lives past that point anyway (a weight load run early only
    holds bytes). Moves are decided on `order`'s positions and applied by one stable sort;
    each op's predecessors stay before it."""
    position = [0] * model.count
    for point, op in enumerate(order):
        position[op] = point
    key = [float(point) for point in range(len(order))]
    first = [min((position[u] for u in users), default=-1) for users in model.accessors]
    latest = [max((position[u] for u in users), default=-1) for users in model.accessors]
    for op in order:
        if not model.succs[op]:
            continue
        target = min(position[succ] for succ in model.succs[op]) - 0.5
        if target <= position[op]:
            continue
        starts = any(not model.inputs[b] and first[b] == position[op] for b in model.accesses[op])
        reads_stay = all(  # what it did not start lives past the target anyway
            model.sizes[b] == 0 or model.outputs[b] or latest[b] > target
            for b in model.accesses[op]
            if first[b] != position[op] or model.inputs[b]
        )
        if starts and reads_stay:  # within (first successor - 1, first successor), earlier ops first
            key[position[op]] = target - 0.25 / (2 + position[op])
    return [order[point] for point in sorted(range(len(order)), key=lambda point: (key[point], point))]


def bfs_order(model: Model) -> list[int]:
    """By depth (the longest chain of dependences before the op), then the given order."""
    depth = [0] * model.count
    for op in range(model.count):  # preds come earlier in the given order
        for pred in model.preds[op]:
            depth[op] = max(depth[op], depth[pred] + 1)
    return sorted(range(model.count), key=lambda op: (depth[op], op))


def dfs_order(model: Model) -> list[int]:
    """Depth first from the sinks: before an op, its predecessors, those that bring fewer
    new bytes first (Inductor's `topological_sort_dfs` visits smaller nodes first)."""
    weight = [sum(model.sizes[b] for b in model.accesses[op]) for op in range(model.count)]
    done = [False] * model.count
    order: list[int] = []
    sinks = [op for op in range(model.count) if not model.succs[op]]
    for sink in sinks:
        stack: list[tuple[int, bool]] = [(sink, False)]
        while stack:
            op, expanded = stack.pop()
            if done[op]:
                continue
            if expanded:
                done[op] = True
                order.append(op)
                continue
            stack.append((op, True))
            todo = sorted((p for p in model.preds[op] if not done[p]), key=lambda p: (weight[p], p))
            stack.extend((p, False) for p in reversed(todo))
    return order


def _exact(model: Model, bound: int, deadline: float | None, config: ScheduleConfig,
           cancel: Callable[[], bool] | None) -> tuple[list[int] | None, bool]:
    from telamalloc.runtime.alloc.op_order_exact import exact_order

    return exact_order(model, bound, deadline, config.exact_max_states, cancel)


def schedule(
    graph: Graph,
    config: ScheduleConfig | None = None,
    time_limit: float | None = None,
    cancel: Callable[[], bool] | None = None,
) -> Schedule:
    """The order of `graph`'s ops with the lowest LOAD the configured methods find.

    `time_limit` (seconds, None: no limit) bounds the exact search only, besides its work
    budget (`ScheduleConfig.exact_max_states`); the heuristics run to the end. Without a
    time limit the answer is the same on every machine.
    """
    config = config or ScheduleConfig()
    unknown = [name for name in config.methods if name not in METHODS]
    if unknown:
        raise ScheduleError(f"unknown scheduling method '{unknown[0]}': use one of {', '.join(METHODS)}")
    model = build_model(graph)
    deadline = None if time_limit is None else time.monotonic() + time_limit
    given = list(range(model.count))
    given_load = order_load(model, given)
    best = (given_load, 0, given, "given")
    trials = [Trial("given", given_load, 0.0)]
    proved = False
    heuristics = {
        "lpmf": lambda: lpmf_order(model),
        "bfs": lambda: bfs_order(model),
        "dfs": lambda: dfs_order(model),
        "lookahead": lambda: lpmf_order(model, config.lookahead_candidates),
    }
    for name, run in heuristics.items():
        if name not in config.methods or (name == "lookahead" and model.count > config.lookahead_max_ops):
            continue
        started = time.perf_counter()
        order = run()
        load = order_load(model, order)
        sunk = sink_producers(model, order)
        sunk_load = order_load(model, sunk)
        if sunk_load < load:
            order, load = sunk, sunk_load
        trials.append(Trial(name, load, time.perf_counter() - started))
        best = min(best, (load, METHODS.index(name), order, name), key=lambda entry: entry[:2])
    if best[0] <= lower_bound(model):
        proved = True  # an op's own buffers need that much in every order: nothing to search
    elif "exact" not in config.methods or model.count > config.exact_max_ops:
        pass
    elif best[0] <= forced_lower_bound(model):
        proved = True  # what is live at some op in every order needs that much: the search cannot gain
    else:
        started = time.perf_counter()
        order, proved = _exact(model, best[0], deadline, config, cancel)
        load = best[0] if order is None else order_load(model, order)
        trials.append(Trial("exact", load, time.perf_counter() - started, proved))
        if order is not None and load < best[0]:
            best = (load, METHODS.index("exact"), order, "exact")
    load, _, order, method = best
    return Schedule(tuple(order), method, load, given_load, proved, tuple(trials))
