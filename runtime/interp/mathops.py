"""The math dialect's ops on scalars, with the same bits on every CPU.

MLIR's linalg lowering emits `math.exp` (softmax), `math.tanh`, `math.erf` (GELU),
`math.log`, `math.sqrt`/`math.rsqrt` (normalization), `math.powf`, `math.absf` and the
rounding ops. Each float function comes from `detmath` (IEEE-exact steps only, never
numpy's CPU-dispatched transcendental ufuncs or libm; accuracy in its docstring), computed
on the operand rounded to the op's float type and rounded back to it. Exact ops (absf,
copysign, floor, ceil, trunc, round, roundeven, the integer bit counts, absi, ipowi) are
computed exactly. The trigonometric and hyperbolic functions other than tanh (sin, cos,
atan, ...), cbrt, fma and fpowi are not implemented: the interpreter reports them as
unsupported ops.

`scalar_function(op)` is the one definition of each op's semantics: the
`InterpreterFunctions` below and the compiled loop nests (`compiled.py`) both call it.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from xdsl.dialects import math
from xdsl.dialects.builtin import Float16Type, Float32Type, Float64Type, IndexType, IntegerType
from xdsl.interpreter import Interpreter, InterpreterFunctions, PythonValues, impl, register_impls
from xdsl.ir import Attribute, Operation

from telamalloc.runtime.interp import detmath
from telamalloc.runtime.interp.machine import InterpreterError, integer_width, to_signed

_FLOAT_DTYPES = {Float16Type: np.float16, Float32Type: np.float32, Float64Type: np.float64}

_UNARY_FLOAT: dict[type[Operation], Callable[[np.ndarray], np.ndarray]] = {
    math.ExpOp: detmath.exp,
    math.Exp2Op: detmath.exp2,
    math.ExpM1Op: detmath.expm1,
    math.LogOp: detmath.log,
    math.Log2Op: detmath.log2,
    math.Log10Op: detmath.log10,
    math.Log1pOp: detmath.log1p,
    math.TanhOp: detmath.tanh,
    math.ErfOp: detmath.erf,
    math.SqrtOp: detmath.sqrt,
    math.RsqrtOp: detmath.rsqrt,
    math.AbsFOp: np.abs,  # clears the sign bit: exact
    math.FloorOp: np.floor,  # exact
    math.CeilOp: np.ceil,  # exact
    math.TruncOp: np.trunc,  # exact
    math.RoundEvenOp: np.rint,  # exact, ties to even
}


def _round_half_away(values: np.ndarray) -> np.ndarray:
    """math.round: to the nearest integer, ties away from zero (exact steps only)."""
    truncated = np.trunc(values)
    fraction = np.abs(values - truncated)  # exact
    away = truncated + np.copysign(np.ones_like(values), values)
    return np.where(np.isfinite(values) & (fraction >= 0.5), away, truncated)  # keeps -0.0


_UNARY_FLOAT[math.RoundOp] = _round_half_away

_BINARY_FLOAT: dict[type[Operation], Callable[[np.ndarray, np.ndarray], np.ndarray]] = {
    math.PowFOp: detmath.powf,
    math.CopySignOp: np.copysign,  # exact
}


def float_dtype(op: Operation, type_: Attribute) -> type[np.floating]:
    dtype = _FLOAT_DTYPES.get(type(type_))
    if dtype is None:
        raise InterpreterError(
            f"'{op.name}' on type '{type_}' is not supported by the interpreter; use f16, f32 or f64", op
        )
    return dtype


def _unsigned(value: int, width: int) -> int:
    return int(value) % (1 << width)


def _integer_functions(op: Operation, width: int) -> Callable[..., int] | None:
    if isinstance(op, math.AbsIOp):
        return lambda a: to_signed(abs(to_signed(a, width)), width)
    if isinstance(op, math.CountLeadingZerosOp):
        return lambda a: width - _unsigned(a, width).bit_length()
    if isinstance(op, math.CountTrailingZerosOp):
        def cttz(a: int) -> int:
            bits = _unsigned(a, width)
            return width if bits == 0 else (bits & -bits).bit_length() - 1

        return cttz
    if isinstance(op, math.CtPopOp):
        return lambda a: bin(_unsigned(a, width)).count("1")
    if isinstance(op, math.IPowIOp):
        def ipowi(base: int, exponent: int) -> int:
            base, exponent = to_signed(base, width), to_signed(exponent, width)
            if exponent < 0:  # MLIR: 1 for base 1, +-1 for base -1, division by zero for 0, else 0
                if base == 0:
                    raise InterpreterError(f"'{op.name}' raises zero to the negative power '{exponent}'", op)
                if base == 1:
                    return 1
                if base == -1:
                    return -1 if exponent % 2 else 1
                return 0
            return to_signed(pow(base, exponent, 1 << width), width)

        return ipowi
    return None


def scalar_function(op: Operation) -> Callable[..., int | float] | None:
    """The op as a function of its scalar operands (Python float or int), or None if
    `op` is not a math op the interpreter runs. Raises `InterpreterError` for a math op on
    a type it does not support."""
    kind = type(op)
    if kind in _UNARY_FLOAT:
        dtype = float_dtype(op, op.results[0].type)
        function = _UNARY_FLOAT[kind]

        def unary(a: float) -> float:
            with np.errstate(all="ignore"):
                return float(function(np.array(a, dtype=dtype))[()])

        return unary
    if kind in _BINARY_FLOAT:
        dtype = float_dtype(op, op.results[0].type)
        binary_function = _BINARY_FLOAT[kind]

        def binary(a: float, b: float) -> float:
            with np.errstate(all="ignore"):
                return float(binary_function(np.array(a, dtype=dtype), np.array(b, dtype=dtype))[()])

        return binary
    if isinstance(op, math.AbsIOp | math.CountLeadingZerosOp | math.CountTrailingZerosOp | math.CtPopOp | math.IPowIOp):
        type_ = op.results[0].type
        if not isinstance(type_, IntegerType | IndexType):
            raise InterpreterError(f"'{op.name}' on type '{type_}' is not supported by the interpreter", op)
        return _integer_functions(op, integer_width(type_))
    return None


SUPPORTED = tuple(sorted(
    cls.name for cls in (*_UNARY_FLOAT, *_BINARY_FLOAT, math.AbsIOp, math.CountLeadingZerosOp,
                         math.CountTrailingZerosOp, math.CtPopOp, math.IPowIOp)
))


def _run(op: Operation, args: PythonValues) -> PythonValues:
    function = scalar_function(op)
    assert function is not None
    return (function(*args),)


class MathFunctions(InterpreterFunctions):
    """The math ops the interpreter runs (see the module docstring)."""


def _install() -> None:
    for kind in (*_UNARY_FLOAT, *_BINARY_FLOAT, math.AbsIOp, math.CountLeadingZerosOp,
                 math.CountTrailingZerosOp, math.CtPopOp, math.IPowIOp):
        def run(self: MathFunctions, interpreter: Interpreter, op: Operation, args: PythonValues) -> PythonValues:
            return _run(op, args)

        run.__name__ = f"run_{kind.name.split('.')[1]}"
        setattr(MathFunctions, run.__name__, impl(kind)(run))


_install()
MathFunctions = register_impls(MathFunctions)
