"""The symbolic size expressions (`runtime/alloc/size_expressions.py`): folding, evaluation, monotonicity."""

import random

import pytest

from telamalloc.runtime.alloc.size_expressions import (
    AlignUp,
    Const,
    Max,
    Product,
    Sum,
    add,
    align_up,
    ceildiv,
    const,
    evaluate,
    floordiv,
    maximum,
    mul,
    sym,
    symbols,
)

seq, batch = sym("seq"), sym("batch")


def test_constants_fold_and_nested_forms_flatten():
    assert add(2, 3) == Const(5)
    assert mul(2, seq, 3) == Product((Const(6), seq))
    assert mul(seq, 0) == Const(0)
    assert add(seq, add(batch, 1), 2) == Sum((seq, batch, Const(3)))
    assert maximum(seq, maximum(seq, 4), 2) == Max((seq, Const(4)))
    assert floordiv(7, 2) == Const(3) and ceildiv(7, 2) == Const(4)
    assert align_up(5, 4) == Const(8) and align_up(seq, 1) is seq
    assert align_up(align_up(seq, 64), 4) == AlignUp(seq, 64)  # 64-aligned is 4-aligned


def test_printing_reads_like_the_arithmetic():
    assert str(mul(4, batch, seq, 64)) == "256*batch*seq"
    assert str(mul(add(seq, 1), 4)) == "4*(seq + 1)"
    assert str(align_up(maximum(seq, batch), 64)) == "align(max(seq, batch), 64)"
    assert str(ceildiv(seq, 16)) == "ceildiv(seq, 16)"


def test_evaluate_each_form():
    env = {"seq": 10, "batch": 3}
    assert evaluate(mul(4, seq, batch), env) == 120
    assert evaluate(floordiv(seq, 4), env) == 2
    assert evaluate(ceildiv(seq, 4), env) == 3
    assert evaluate(maximum(seq, mul(batch, 4)), env) == 12
    assert evaluate(align_up(add(seq, batch), 8), env) == 16
    assert symbols([mul(seq, 2), batch]) == ("batch", "seq")


def test_a_missing_symbol_is_named():
    with pytest.raises(KeyError, match="'batch'"):
        evaluate(mul(seq, batch), {"seq": 1})


def test_invalid_constants_and_divisors_are_refused():
    with pytest.raises(ValueError, match="'-1'"):
        const(-1)
    with pytest.raises(ValueError, match="constant >= 1"):
        floordiv(seq, 0)
    with pytest.raises(ValueError, match="non-empty name"):
        sym("")


def test_a_deep_dag_evaluates_without_recursion_and_shares_nodes():
    # 5000 nested maxima (a long chain of offsets): no RecursionError, linear work.
    node = seq
    for index in range(5000):
        node = align_up(add(maximum(node, batch), index % 7), 4)
    assert evaluate(node, {"seq": 1, "batch": 2}) > 0


def _random_expr(rng: random.Random, depth: int):
    if depth == 0 or rng.random() < 0.3:
        return rng.choice([seq, batch, const(rng.randrange(0, 9))])
    kind = rng.randrange(6)
    left, right = _random_expr(rng, depth - 1), _random_expr(rng, depth - 1)
    if kind == 0:
        return add(left, right)
    if kind == 1:
        return mul(left, right)
    if kind == 2:
        return floordiv(left, rng.randrange(1, 9))
    if kind == 3:
        return ceildiv(left, rng.randrange(1, 9))
    if kind == 4:
        return maximum(left, right)
    return align_up(left, rng.choice([1, 2, 4, 64]))


def test_every_expression_is_monotone_in_each_symbol():
    # The planner's capacity search relies on it (`largest_fitting`).
    rng = random.Random(40)
    for _ in range(300):
        expr = _random_expr(rng, 4)
        s, b = rng.randrange(0, 50), rng.randrange(0, 50)
        value = evaluate(expr, {"seq": s, "batch": b})
        assert evaluate(expr, {"seq": s + rng.randrange(1, 9), "batch": b}) >= value
        assert evaluate(expr, {"seq": s, "batch": b + rng.randrange(1, 9)}) >= value
