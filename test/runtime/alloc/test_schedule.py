"""The plain-data scheduling API: dependences kept, LOAD never above the given order's,
the exact search's minimum checked against every order of small graphs."""

from __future__ import annotations

import itertools
import random
import threading

import pytest

from telamalloc.runtime.alloc.op_order import (
    METHODS,
    Graph,
    GraphBuffer,
    GraphOp,
    ScheduleConfig,
    ScheduleError,
    build_model,
    forced_lower_bound,
    is_valid_order,
    lifetimes,
    lower_bound,
    order_load,
    schedule,
)
from telamalloc.runtime.alloc.op_order_exact import exact_order
from telamalloc.runtime.alloc.validate import compute_load


def random_graph(count: int, seed: int, branching: int = 2) -> Graph:
    """A dataflow graph: each op reads one or two earlier buffers and writes its own."""
    rng = random.Random(seed)
    buffers = [GraphBuffer("in", rng.randint(1, 9), input=True)]
    ops = []
    for index in range(count):
        reads = tuple(rng.sample([b.id for b in buffers], k=min(len(buffers), rng.randint(1, branching))))
        buffers.append(GraphBuffer(f"b{index}", rng.randint(1, 20), output=rng.random() < 0.1))
        ops.append(GraphOp(f"op{index}", reads=reads, writes=(f"b{index}",)))
    return Graph(tuple(ops), tuple(buffers))


def fork(width: int, big: int) -> Graph:
    """`width` branches, each a big producer then a small reducer, all joined at the end.

    Given order: every big producer first, so the `width` big buffers are live together
    (LOAD width*big + ...); branch by branch only one big buffer lives at a time."""
    buffers = [GraphBuffer("x", 1, input=True), GraphBuffer("y", 1, output=True)]
    ops = []
    for branch in range(width):
        buffers += [GraphBuffer(f"big{branch}", big), GraphBuffer(f"small{branch}", 1)]
        ops.append(GraphOp(f"produce{branch}", reads=("x",), writes=(f"big{branch}",)))
    for branch in range(width):
        ops.append(GraphOp(f"reduce{branch}", reads=(f"big{branch}",), writes=(f"small{branch}",)))
    ops.append(GraphOp("join", reads=tuple(f"small{b}" for b in range(width)), writes=("y",)))
    return Graph(tuple(ops), tuple(buffers))


def brute_force_minimum(graph: Graph) -> int:
    model = build_model(graph)
    return min(
        order_load(model, order)
        for order in itertools.permutations(range(model.count))
        if is_valid_order(model, order)
    )


def test_fork_runs_branch_by_branch() -> None:
    # 4 branches of 100 bytes: given LOAD 4*100 + 1 (x, then small0) = 401; the
    # best order keeps one big buffer at a time: 1 (x) + 100 + the 3 smalls done = 104 at produce3.
    graph = fork(4, 100)
    result = schedule(graph)
    assert result.given_load == 401
    assert result.load == 104
    assert result.proved
    ids = result.ids(graph)
    for branch in range(4):
        assert ids.index(f"produce{branch}") + 1 == ids.index(f"reduce{branch}")


@pytest.mark.parametrize("method", [m for m in METHODS if m != "given"])
def test_each_method_keeps_dependences_and_never_rises(method: str) -> None:
    for seed in range(30):
        graph = random_graph(12, seed)
        model = build_model(graph)
        result = schedule(graph, ScheduleConfig(methods=("given", method)))
        assert is_valid_order(model, result.order)
        assert result.load <= result.given_load
        assert result.load == order_load(model, result.order)


def test_exact_matches_every_order() -> None:
    for seed in range(40):
        graph = random_graph(7, seed)
        result = schedule(graph)
        assert result.proved
        assert result.load == brute_force_minimum(graph)


def test_the_forced_bound_lies_between_the_own_buffers_and_the_minimum() -> None:
    # what is live at an op in every order: never above the minimum over every order, never
    # below an op's own buffers; with inputs, outputs, several readers and a barrier
    for seed in range(60):
        graph = random_graph(7, seed, branching=3)
        if seed % 3 == 0:
            ops = list(graph.ops)
            ops[3] = GraphOp(ops[3].id, ops[3].reads, ops[3].writes, barrier=True)
            graph = Graph(tuple(ops), graph.buffers)
        model = build_model(graph)
        assert lower_bound(model) <= forced_lower_bound(model) <= brute_force_minimum(graph), seed
    # the fork: x (1 B) and y's (1 B) producers aside, a big buffer and its producer's input
    # are live at each produce op in every order
    assert forced_lower_bound(build_model(fork(4, 100))) == 101


def test_a_search_that_cannot_gain_is_skipped() -> None:
    # a chain: w (8 B) lives from its load to the add, over the relu (a 4 B -> b 12 B), in
    # every order: 24 B there, above any op's own buffers (the add's: 21 B); the given order
    # reaches it, so the exact search does not run, and the answer is proved
    buffers = (GraphBuffer("x", 4, input=True), GraphBuffer("w", 8), GraphBuffer("a", 4),
               GraphBuffer("b", 12), GraphBuffer("y", 1, output=True))
    ops = (GraphOp("load", writes=("w",)), GraphOp("mul", reads=("x", "w"), writes=("a",)),
           GraphOp("relu", reads=("a",), writes=("b",)), GraphOp("add", reads=("b", "w"), writes=("y",)))
    model = build_model(Graph(ops, buffers))
    result = schedule(Graph(ops, buffers))
    assert lower_bound(model) == 21
    assert result.load == forced_lower_bound(model) == brute_force_minimum(Graph(ops, buffers)) == 24
    assert result.proved and "exact" not in [trial.method for trial in result.trials]


def test_memory_dependences_are_kept() -> None:
    # t is written, read, written again, read again: the second write waits for the first
    # read (WAR), the second read for the second write (RAW), writes stay in order (WAW).
    buffers = (GraphBuffer("t", 8), GraphBuffer("a", 1), GraphBuffer("b", 1, output=True), GraphBuffer("c", 1, output=True))
    ops = (
        GraphOp("w1", writes=("t",)),
        GraphOp("r1", reads=("t",), writes=("b",)),
        GraphOp("w2", reads=("a",), writes=("t",)),
        GraphOp("r2", reads=("t",), writes=("c",)),
        GraphOp("wa", writes=("a",)),
    )
    model = build_model(Graph(ops, buffers))
    assert model.preds[1] == (0,)  # RAW
    assert set(model.preds[2]) == {0, 1}  # WAW, WAR
    assert model.preds[3] == (2,)  # RAW on the second value
    assert model.preds[4] == (2,)  # WAR: w2 read a before wa writes it (given order)


def test_barrier_and_after_edges() -> None:
    buffers = tuple(GraphBuffer(name, 4) for name in "abc")
    ops = (
        GraphOp("p", writes=("a",)),
        GraphOp("q", writes=("b",)),
        GraphOp("fence", barrier=True),
        GraphOp("r", writes=("c",), after=("p",)),
    )
    model = build_model(Graph(ops, buffers))
    assert model.preds[2] == (0, 1)
    assert model.preds[3] == (0, 2)


def test_lifetimes_follow_the_liveness_rule() -> None:
    # inputs from the start, outputs to the end, others from the first to the last access
    graph = Graph(
        (GraphOp("o0", reads=("in",), writes=("t",)), GraphOp("o1", reads=("t",), writes=("out",)), GraphOp("o2")),
        (GraphBuffer("in", 2, input=True), GraphBuffer("t", 3), GraphBuffer("out", 5, output=True)),
    )
    model = build_model(graph)
    spans = {b.id: (b.start, b.end) for b in lifetimes(model, [0, 1, 2]).buffers}
    assert spans == {0: (0, 1), 1: (0, 2), 2: (1, 3)}
    assert order_load(model, [0, 1, 2]) == compute_load(lifetimes(model, [0, 1, 2]))[0] == 8


@pytest.mark.parametrize(
    ("graph", "message"),
    [
        (Graph((GraphOp("a", reads=("zz",)),), ()), "op 'a' reads unknown buffer 'zz'"),
        (Graph((GraphOp("a"), GraphOp("a")), ()), "op 'a' is listed twice"),
        (Graph((), (GraphBuffer("x", -1),)), "buffer 'x' has size '-1'"),
        (Graph((GraphOp("a", after=("b",)), GraphOp("b")), ()), "op 'a' runs after op 'b', which comes later"),
        (Graph((GraphOp("a", after=("q",)),), ()), "op 'a' runs after unknown op 'q'"),
    ],
)
def test_bad_graphs(graph: Graph, message: str) -> None:
    with pytest.raises(ScheduleError, match=message):
        schedule(graph)


def test_unknown_method() -> None:
    with pytest.raises(ScheduleError, match="unknown scheduling method 'best'"):
        schedule(fork(2, 4), ScheduleConfig(methods=("best",)))


def test_exact_stops_on_its_budget_and_cancel_flag() -> None:
    graph = random_graph(60, 3, branching=3)
    model = build_model(graph)
    bound = order_load(model, range(model.count))
    order, proved = exact_order(model, bound, None, max_states=10)
    assert not proved and order is None
    cancelled = threading.Event()
    cancelled.set()
    order, proved = exact_order(model, bound, None, max_states=10**9, cancel=cancelled.is_set)
    assert not proved
    result = schedule(graph, ScheduleConfig(exact_max_states=10))
    assert not result.proved and result.load <= result.given_load


def test_empty_graph_and_deterministic() -> None:
    assert schedule(Graph((), ())).order == ()
    graph = random_graph(80, 5)
    config = ScheduleConfig(exact_max_states=2000)  # a work budget, not a time limit
    first, second = schedule(graph, config, time_limit=None), schedule(graph, config, time_limit=None)
    assert (first.order, first.load, first.method) == (second.order, second.load, second.method)


def test_sinking_producers_keeps_dependences_and_defers_loads() -> None:
    from telamalloc.runtime.alloc.op_order import lpmf_order, sink_producers

    for seed in range(30):
        model = build_model(random_graph(15, seed))
        order = lpmf_order(model)
        assert is_valid_order(model, sink_producers(model, order))
    # two loads of 9 B weights, each read by one of two convs: loaded together up front,
    # 1 (x) + 9 + 9 + 4 = 23 B at the first conv; each just before its conv, 1 + 9 + 4 + 4
    # = 18 B at the second conv (y0 is an output and stays)
    buffers = (GraphBuffer("x", 1, input=True), GraphBuffer("w0", 9), GraphBuffer("w1", 9),
               GraphBuffer("y0", 4, output=True), GraphBuffer("y1", 4, output=True))
    ops = (GraphOp("load0", writes=("w0",)), GraphOp("load1", writes=("w1",)),
           GraphOp("conv0", reads=("x", "w0"), writes=("y0",)), GraphOp("conv1", reads=("x", "w1"), writes=("y1",)))
    model = build_model(Graph(ops, buffers))
    assert order_load(model, [0, 1, 2, 3]) == 23
    sunk = sink_producers(model, [0, 1, 2, 3])
    assert sunk == [0, 2, 1, 3]
    assert order_load(model, sunk) == 18


def test_adjacent_barriers_keep_their_order() -> None:
    # fillt reads a global, setg writes it: both are barriers (calls), and the second must
    # stay after the first even with nothing between them
    buffers = (GraphBuffer("t", 64), GraphBuffer("w", 4, input=True), GraphBuffer("out", 64, output=True))
    ops = (
        GraphOp("o0", writes=("t",), barrier=True),
        GraphOp("o1", reads=("w",), barrier=True),
        GraphOp("o2", reads=("t",), writes=("out",)),
    )
    graph = Graph(ops, buffers)
    assert build_model(graph).preds[1] == (0,)
    for method in METHODS:
        result = schedule(graph, ScheduleConfig(methods=("given", method)))
        assert result.ids(graph) == ("o0", "o1", "o2"), method


def random_barrier_graph(count: int, seed: int) -> Graph:
    """Ops that read and write a few shared buffers, with barriers (often adjacent) and
    `after` edges: the shapes whose dependences are easy to get wrong."""
    rng = random.Random(seed)
    names = [f"b{index}" for index in range(rng.randint(2, 5))]
    buffers = tuple(GraphBuffer(name, rng.randint(1, 30), input=rng.random() < 0.3, output=rng.random() < 0.3)
                    for name in names)
    ops = []
    for index in range(count):
        barrier = rng.random() < 0.3
        reads = tuple(rng.sample(names, k=rng.randint(0, 2)))
        writes = tuple(rng.sample(names, k=rng.randint(0, 1 if barrier else 2)))
        after = tuple(f"o{before}" for before in range(index) if rng.random() < 0.1)
        ops.append(GraphOp(f"o{index}", reads=reads, writes=writes, after=after, barrier=barrier))
    return Graph(tuple(ops), buffers)


def must_stay_in_order(graph: Graph) -> set[tuple[int, int]]:
    """The oracle, written from the definition alone: ops i before j in the given order
    keep that order when either is a barrier, j names i in `after`, or both touch one
    buffer and at least one of them writes it."""
    pairs = set()
    for j, later in enumerate(graph.ops):
        for i, earlier in enumerate(graph.ops[:j]):
            touched_i = set(earlier.reads) | set(earlier.writes)
            touched_j = set(later.reads) | set(later.writes)
            conflict = (set(earlier.writes) & touched_j) or (set(later.writes) & touched_i)
            if earlier.barrier or later.barrier or earlier.id in later.after or conflict:
                pairs.add((i, j))
    return pairs


def keeps(pairs: set[tuple[int, int]], order: tuple[int, ...]) -> bool:
    position = {op: point for point, op in enumerate(order)}
    return all(position[i] < position[j] for i, j in pairs)


def test_dependences_equal_the_oracle_on_every_order() -> None:
    # small graphs: the orders the model allows are exactly those that keep every pair
    for seed in range(300):
        graph = random_barrier_graph(6, seed)
        model, pairs = build_model(graph), must_stay_in_order(graph)
        for order in itertools.permutations(range(model.count)):
            assert is_valid_order(model, order) == keeps(pairs, order), (seed, order)


@pytest.mark.parametrize("method", METHODS)
def test_every_method_keeps_the_oracle_pairs(method: str) -> None:
    for seed in range(60):
        graph = random_barrier_graph(14, seed)
        result = schedule(graph, ScheduleConfig(methods=("given", method), exact_max_states=5_000))
        assert keeps(must_stay_in_order(graph), result.order), (seed, method)
