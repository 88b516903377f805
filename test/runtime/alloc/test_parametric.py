"""Parametric plans (`runtime/alloc/parametric.py`): valid at every size, good at the hint."""

import random

import pytest

from telamalloc import Buffer, Params, Problem, ProblemError, solve, validate
from telamalloc.runtime.alloc.parametric import (
    SymbolicBuffer,
    SymbolRange,
    largest_fitting,
    parse_range,
    parse_ranges,
    plan_in_order,
    plan_parametric,
    sample_sizes,
)
from telamalloc.runtime.alloc.size_expressions import add, ceildiv, const, evaluate, mul, sym

seq, batch = sym("seq"), sym("batch")
RANGES = {"seq": SymbolRange(1, 2048, 512), "batch": SymbolRange(1, 8, 4)}


def random_buffers(seed: int, count: int = 30) -> list[SymbolicBuffer]:
    rng = random.Random(seed)
    shapes = [
        mul(4, seq, 64),
        mul(2, batch, seq, 16),
        mul(2, ceildiv(mul(seq, seq), 16)),
        add(mul(64, batch), 128),
        const(rng.randrange(1, 4096)),
    ]
    buffers = []
    for index in range(count):
        start = rng.randrange(0, 3 * count // 2)
        buffers.append(
            SymbolicBuffer(f"b{index}", start, start + rng.randrange(1, 8), rng.choice(shapes), rng.choice([1, 4, 64]))
        )
    return buffers


@pytest.mark.parametrize("seed", range(6))
def test_the_plan_is_valid_at_every_sampled_size(seed):
    plan = plan_parametric(random_buffers(seed), RANGES)
    rng = random.Random(seed)
    envs = sample_sizes(RANGES) + [
        {"seq": rng.randint(1, 2048), "batch": rng.randint(1, 8)} for _ in range(25)
    ]
    for env in envs:
        problem = plan.problem_at(env)
        offsets = plan.offsets_at(env)
        assert validate(problem, offsets) == [], env
        assert plan.peak_at(env) == max(o + b.size for o, b in zip(offsets, problem.buffers))


@pytest.mark.parametrize("seed", range(3))
def test_outside_the_range_the_layout_stays_free_of_overlaps(seed):
    # The argument (docs/design/dynamic-shapes.md) holds at any sizes, not only in range.
    plan = plan_parametric(random_buffers(seed), RANGES)
    for env in ({"seq": 0, "batch": 0}, {"seq": 5000, "batch": 40}):
        assert validate(plan.problem_at(env), plan.offsets_at(env)) == []


@pytest.mark.parametrize("seed", range(4))
def test_pruned_predecessors_give_the_offsets_of_all_predecessors(seed):
    buffers = random_buffers(seed)
    plan = plan_parametric(buffers, RANGES)
    env = {"seq": 300, "batch": 3}
    sizes = plan.sizes_at(env)
    full = [0] * len(buffers)
    placed: list[int] = []
    for index in plan.order:
        b = buffers[index]
        tops = [full[j] + sizes[j] for j in placed if buffers[j].start < b.end and b.start < buffers[j].end]
        top = max(tops, default=0)
        full[index] = -(-top // b.alignment) * b.alignment
        placed.append(index)
    assert plan.placements[0].offsets(buffers, sizes) == full
    assert sum(len(a) for a in plan.above) <= sum(1 for _ in plan.above) * 8  # short lists


def test_the_order_of_the_static_plan_at_the_hint_is_no_worse_there():
    # Placed in the static plan's offset order, each buffer lands at or below its static
    # offset (docs/design/dynamic-shapes.md), so the peak at the hint is at most the static one.
    buffers = random_buffers(7, 24)
    hint = {"seq": 512, "batch": 4}
    static_problem = Problem([Buffer(b.id, b.start, b.end, evaluate(b.size, hint), b.alignment) for b in buffers])
    static = solve(static_problem, mode="minimize", params=Params(node_limit=20000, cpsat=False))
    order = sorted(range(len(buffers)), key=lambda i: (static.offsets[i], buffers[i].start, i))
    plan = plan_in_order(buffers, RANGES, order)
    assert plan.peak_at(hint) <= static.peak
    assert all(o <= s for o, s in zip(plan.offsets_at(hint), static.offsets))
    chosen = plan_parametric(buffers, RANGES)
    assert chosen.scores["static@hint"] >= 1.0


def test_the_peak_expression_and_the_offset_expressions_agree_with_the_numbers():
    plan = plan_parametric(random_buffers(3, 20), RANGES)
    peak = plan.peak_expr()
    for env in sample_sizes(RANGES):
        used, offsets, smallest = plan.layout_at(env)
        assert [evaluate(expr, env) for expr in plan.offset_exprs(used)] == offsets == plan.offsets_at(env)
        assert evaluate(peak, env) == smallest == plan.peak_at(env)
        sizes = plan.sizes_at(env)
        assert smallest == min(p.peak(p.offsets(plan.buffers, sizes), sizes) for p in plan.placements)


def test_several_placements_take_the_smallest_peak_and_stay_within_the_upper_bound_plan():
    buffers = random_buffers(1, 40)
    plan = plan_parametric(buffers, RANGES)
    single = plan_parametric(buffers, RANGES, placements=1)
    assert 1 <= len(plan.placements) <= 3 and len(single.placements) == 1
    params = Params(node_limit=20000, cpsat=False)
    static = [solve(plan.problem_at(env), mode="minimize", params=params).peak for env in sample_sizes(RANGES)]
    upper = sample_sizes(RANGES).index({"seq": 2048, "batch": 8})
    assert plan.peak_at({"seq": 2048, "batch": 8}) <= static[upper]
    assert single.peak_at({"seq": 2048, "batch": 8}) <= static[upper]
    # the set is scored as the single order is, and can only do better: its worst ratio to
    # the static plans at the samples is at most the single order's
    def worst(candidate):
        return max(candidate.peak_at(env) / best for env, best in zip(sample_sizes(RANGES), static))

    assert worst(plan) <= worst(single)


def test_the_same_input_gives_the_same_plan():
    first = plan_parametric(random_buffers(11), RANGES)
    second = plan_parametric(random_buffers(11), RANGES)
    assert first.placements == second.placements


def test_largest_fitting_is_the_boundary():
    plan = plan_parametric(random_buffers(2), RANGES)
    capacity = plan.peak_at({"seq": 700, "batch": 8})
    largest = largest_fitting(plan, capacity, "seq", {"batch": 8})
    assert largest is not None and largest >= 700
    assert plan.peak_at({"seq": largest, "batch": 8}) <= capacity
    if largest < 2048:
        assert plan.peak_at({"seq": largest + 1, "batch": 8}) > capacity
    assert largest_fitting(plan, 0, "seq", {"batch": 8}) is None


def test_a_symbol_without_a_range_is_named():
    buffers = [SymbolicBuffer("a", 0, 2, mul(4, seq)), SymbolicBuffer("b", 1, 3, mul(sym("heads"), batch))]
    with pytest.raises(ProblemError, match="no range for the symbols 'batch', 'heads'"):
        plan_parametric(buffers, {"seq": SymbolRange(1, 8)})


def test_constant_sizes_alone_plan_like_a_static_problem():
    buffers = [SymbolicBuffer("a", 0, 2, const(16)), SymbolicBuffer("b", 1, 3, const(16)), SymbolicBuffer("c", 2, 4, const(16))]
    plan = plan_parametric(buffers, {})
    static = Problem([Buffer(b.id, b.start, b.end, 16) for b in buffers])
    assert plan.peak_at({}) == 32 and validate(static, plan.offsets_at({})) == []


def test_ranges_parse_with_a_hint_and_fixed_values():
    assert parse_range("seq=1..2048@512") == ("seq", SymbolRange(1, 2048, 512))
    assert parse_range("batch=8") == ("batch", SymbolRange(8, 8))
    assert parse_ranges("seq=1..16, batch=2..4@2") == {"seq": SymbolRange(1, 16), "batch": SymbolRange(2, 4, 2)}
    assert SymbolRange(1, 16).target == 16 and str(SymbolRange(1, 16, 4)) == "1..16@4"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("seq", "invalid dimension 'seq'; expected 'NAME=LO..HI"),
        ("seq=16..1", "the range '16..1' is empty"),
        ("seq=1..16@32", "the hint '32' is outside the range '1..16'"),
        ("seq=-1..4", "invalid dimension 'seq=-1..4'"),
    ],
)
def test_bad_ranges_say_what_is_wrong(text, message):
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(".", r"\.")):
        parse_range(text)


def test_a_repeated_name_is_refused():
    with pytest.raises(ValueError, match="'seq' is given twice"):
        parse_ranges("seq=1..2 seq=3..4")
