"""Symbolic sizes: a small expression type over named non-negative integer symbols.

A buffer whose shape depends on the input (a sequence length, a batch size) has a byte size
that is an expression of a few symbols: `4*batch*seq*64`, `ceildiv(seq, 16)*512`. The
parametric planner (`parametric.py`) places such buffers once for every size in a range;
its offsets and its peak are expressions of the same kind, with two more forms: the
maximum of several expressions and the round-up to an alignment.

The forms (each a frozen dataclass, hashable, compared by value):

| form | value | printed |
|---|---|---|
| `Const(c)` | `c >= 0` | `c` |
| `Sym(name)` | the symbol's value, `>= 0` | `name` |
| `Sum(terms)` | the sum | `a + b` |
| `Product(factors)` | the product | `a*b` |
| `FloorDiv(e, d)` | `e // d`, `d >= 1` | `floordiv(e, d)` |
| `CeilDiv(e, d)` | `-(-e // d)`, `d >= 1` | `ceildiv(e, d)` |
| `Max(terms)` | the largest | `max(a, b)` |
| `Min(terms)` | the smallest | `min(a, b)` |
| `AlignUp(e, a)` | `e` rounded up to a multiple of `a` | `align(e, a)` |

There is no subtraction and every constant is non-negative, so every expression is
**monotone**: it never decreases when a symbol grows. The planner relies on it: the peak at
the upper ends of the ranges is the most the plan ever needs, and the largest sizes that
fit a capacity are found by bisection (`largest_fitting`).

Build expressions with `const`, `sym`, `add`, `mul`, `floordiv`, `ceildiv`, `maximum`, `minimum` and
`align_up` (or `+` and `*`): they fold constants and flatten nested sums, products and
maxima, so equal sizes usually print alike. `evaluate(expr, env)` takes a mapping from
symbol names to integers; it memoizes shared subexpressions, so the offsets of a plan (a
DAG: each offset refers to the tops of earlier buffers) evaluate in linear time.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from telamalloc.runtime.alloc.problem import round_up


class Expr:
    """A symbolic non-negative integer (see the module doc for the forms)."""

    __slots__ = ()

    def __add__(self, other: Expr | int) -> Expr:
        return add(self, other)

    def __radd__(self, other: int) -> Expr:
        return add(other, self)

    def __mul__(self, other: Expr | int) -> Expr:
        return mul(self, other)

    def __rmul__(self, other: int) -> Expr:
        return mul(other, self)

    def children(self) -> tuple[Expr, ...]:
        return ()


@dataclass(frozen=True, slots=True)
class Const(Expr):
    value: int

    def __str__(self) -> str:
        return str(self.value)


@dataclass(frozen=True, slots=True)
class Sym(Expr):
    name: str

    def __str__(self) -> str:
        return self.name


@dataclass(frozen=True, slots=True)
class Sum(Expr):
    terms: tuple[Expr, ...]

    def children(self) -> tuple[Expr, ...]:
        return self.terms

    def __str__(self) -> str:
        return " + ".join(str(term) for term in self.terms)


@dataclass(frozen=True, slots=True)
class Product(Expr):
    factors: tuple[Expr, ...]

    def children(self) -> tuple[Expr, ...]:
        return self.factors

    def __str__(self) -> str:
        return "*".join(f"({factor})" if isinstance(factor, Sum) else str(factor) for factor in self.factors)


@dataclass(frozen=True, slots=True)
class FloorDiv(Expr):
    expr: Expr
    divisor: int

    def children(self) -> tuple[Expr, ...]:
        return (self.expr,)

    def __str__(self) -> str:
        return f"floordiv({self.expr}, {self.divisor})"


@dataclass(frozen=True, slots=True)
class CeilDiv(Expr):
    expr: Expr
    divisor: int

    def children(self) -> tuple[Expr, ...]:
        return (self.expr,)

    def __str__(self) -> str:
        return f"ceildiv({self.expr}, {self.divisor})"


@dataclass(frozen=True, slots=True)
class Max(Expr):
    terms: tuple[Expr, ...]

    def children(self) -> tuple[Expr, ...]:
        return self.terms

    def __str__(self) -> str:
        return f"max({', '.join(str(term) for term in self.terms)})"


@dataclass(frozen=True, slots=True)
class Min(Expr):
    terms: tuple[Expr, ...]

    def children(self) -> tuple[Expr, ...]:
        return self.terms

    def __str__(self) -> str:
        return f"min({', '.join(str(term) for term in self.terms)})"


@dataclass(frozen=True, slots=True)
class AlignUp(Expr):
    expr: Expr
    alignment: int

    def children(self) -> tuple[Expr, ...]:
        return (self.expr,)

    def __str__(self) -> str:
        return f"align({self.expr}, {self.alignment})"


ZERO = Const(0)


def const(value: int) -> Const:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(f"a symbolic size's constant must be an integer >= 0, not '{value}'")
    return Const(value)


def sym(name: str) -> Sym:
    if not isinstance(name, str) or not name:
        raise ValueError(f"a symbol needs a non-empty name, not '{name}'")
    return Sym(name)


def _as_expr(value: Expr | int) -> Expr:
    return value if isinstance(value, Expr) else const(value)


def add(*operands: Expr | int) -> Expr:
    """The sum, with constants folded and nested sums flattened."""
    terms: list[Expr] = []
    constant = 0
    for operand in map(_as_expr, operands):
        for term in operand.terms if isinstance(operand, Sum) else (operand,):
            if isinstance(term, Const):
                constant += term.value
            else:
                terms.append(term)
    if constant or not terms:
        terms.append(Const(constant))
    return terms[0] if len(terms) == 1 else Sum(tuple(terms))


def mul(*operands: Expr | int) -> Expr:
    """The product, with constants folded (in front) and nested products flattened."""
    factors: list[Expr] = []
    constant = 1
    for operand in map(_as_expr, operands):
        for factor in operand.factors if isinstance(operand, Product) else (operand,):
            if isinstance(factor, Const):
                constant *= factor.value
            else:
                factors.append(factor)
    if constant == 0:
        return ZERO
    if constant != 1 or not factors:
        factors.insert(0, Const(constant))
    return factors[0] if len(factors) == 1 else Product(tuple(factors))


def _divisor(divisor: int) -> int:
    if isinstance(divisor, bool) or not isinstance(divisor, int) or divisor < 1:
        raise ValueError(f"a symbolic size divides by a constant >= 1 only, not '{divisor}'")
    return divisor


def floordiv(expr: Expr | int, divisor: int) -> Expr:
    expr, divisor = _as_expr(expr), _divisor(divisor)
    if divisor == 1:
        return expr
    if isinstance(expr, Const):
        return Const(expr.value // divisor)
    return FloorDiv(expr, divisor)


def ceildiv(expr: Expr | int, divisor: int) -> Expr:
    expr, divisor = _as_expr(expr), _divisor(divisor)
    if divisor == 1:
        return expr
    if isinstance(expr, Const):
        return Const(-(-expr.value // divisor))
    return CeilDiv(expr, divisor)


def maximum(*operands: Expr | int) -> Expr:
    """The largest operand, with constants folded, nested maxima flattened and repeats dropped."""
    terms: list[Expr] = []
    constant = 0
    for operand in map(_as_expr, operands):
        for term in operand.terms if isinstance(operand, Max) else (operand,):
            if isinstance(term, Const):
                constant = max(constant, term.value)
            elif term not in terms:
                terms.append(term)
    if constant or not terms:
        terms.append(Const(constant))
    return terms[0] if len(terms) == 1 else Max(tuple(terms))


def minimum(*operands: Expr | int) -> Expr:
    """The smallest operand (at least one), with nested minima flattened and repeats dropped."""
    terms: list[Expr] = []
    for operand in map(_as_expr, operands):
        for term in operand.terms if isinstance(operand, Min) else (operand,):
            if term not in terms:
                terms.append(term)
    if not terms:
        raise ValueError("minimum() needs at least one operand")
    return terms[0] if len(terms) == 1 else Min(tuple(terms))


def align_up(expr: Expr | int, alignment: int) -> Expr:
    """`expr` rounded up to a multiple of `alignment` (>= 1)."""
    expr, alignment = _as_expr(expr), _divisor(alignment)
    if alignment == 1:
        return expr
    if isinstance(expr, Const):
        return Const(round_up(expr.value, alignment))
    if isinstance(expr, AlignUp) and expr.alignment % alignment == 0:
        return expr
    return AlignUp(expr, alignment)


def evaluate(expr: Expr, env: Mapping[str, int], cache: dict[int, int] | None = None) -> int:
    """The value of `expr` with each symbol's value taken from `env`.

    `cache` (keyed by node identity) lets several calls share the values of common
    subexpressions. Raises KeyError naming a symbol `env` lacks."""
    memo: dict[int, int] = {} if cache is None else cache
    # An explicit stack: a plan's offsets nest as deep as the buffers are many.
    stack: list[tuple[Expr, bool]] = [(expr, False)]
    while stack:
        node, ready = stack.pop()
        key = id(node)
        if key in memo:
            continue
        if not ready:
            pending = [child for child in node.children() if id(child) not in memo]
            if pending:
                stack.append((node, True))
                stack.extend((child, False) for child in pending)
                continue
        memo[key] = _value(node, env, memo)
    return memo[id(expr)]


def _value(node: Expr, env: Mapping[str, int], memo: dict[int, int]) -> int:
    if isinstance(node, Const):
        return node.value
    if isinstance(node, Sym):
        if node.name not in env:
            raise KeyError(f"no value for the symbol '{node.name}'")
        return int(env[node.name])
    if isinstance(node, Sum):
        return sum(memo[id(term)] for term in node.terms)
    if isinstance(node, Product):
        result = 1
        for factor in node.factors:
            result *= memo[id(factor)]
        return result
    if isinstance(node, FloorDiv):
        return memo[id(node.expr)] // node.divisor
    if isinstance(node, CeilDiv):
        return -(-memo[id(node.expr)] // node.divisor)
    if isinstance(node, Max):
        return max(memo[id(term)] for term in node.terms)
    if isinstance(node, Min):
        return min(memo[id(term)] for term in node.terms)
    if isinstance(node, AlignUp):
        return round_up(memo[id(node.expr)], node.alignment)
    raise TypeError(f"not a symbolic expression: {node!r}")


def symbols(exprs: Expr | Iterable[Expr]) -> tuple[str, ...]:
    """The symbols the expressions use, sorted by name."""
    pending = [exprs] if isinstance(exprs, Expr) else list(exprs)
    seen: set[int] = set()
    names: set[str] = set()
    while pending:
        node = pending.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        if isinstance(node, Sym):
            names.add(node.name)
        pending.extend(node.children())
    return tuple(sorted(names))
