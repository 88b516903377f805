"""arith ops xDSL's interpreter lacks or rounds wrongly: float arithmetic rounded to the
result type, the float/int casts (integers rounded to the float type once, exactly), trunci,
extsi, extui, the unsigned integer ops (divui, remui, ceildivui, shrui, maxui, minui,
uitofp, fptoui), ceildivsi, maxnumf/minnumf, bitcast, the extended ops (addui_extended,
mulsi_extended, mului_extended), and integer division by zero as a one-line error.

Values are xDSL's: Python floats (rounded to their type) and Python ints holding the
signed reading of an integer's bits (unsigned ops reinterpret them modulo 2**width); `i1`
results are bools.
"""

from __future__ import annotations

import math

import numpy as np
from xdsl.dialects import arith
from xdsl.dialects.builtin import (
    Float16Type,
    Float32Type,
    Float64Type,
    IndexType,
    IntegerType,
)
from xdsl.interpreter import (
    Interpreter,
    InterpreterFunctions,
    PythonValues,
    impl,
    register_impls,
)
from xdsl.ir import Attribute, Operation

from telamalloc.runtime.interp.machine import (
    InterpreterError,
    integer_width,
    to_signed,
)


def _round_to(type_: Attribute, value: float) -> float:
    if isinstance(type_, Float32Type):
        return float(np.float32(value))
    if isinstance(type_, Float16Type):
        return float(np.float16(value))
    return float(value)


def _float_result(op: Operation, value: float) -> PythonValues:
    return (_round_to(op.results[0].type, value),)


_SIGNIFICAND_BITS = {Float16Type: 11, Float32Type: 24, Float64Type: 53}


def int_to_float(type_: Attribute, value: int) -> float:
    """The integer `value` rounded once (to nearest, ties to even) to the float `type_`.

    `float(value)` would round to float64 first: a second rounding to float32 can then
    differ from the correctly rounded result for integers beyond 2**53.
    """
    bits = _SIGNIFICAND_BITS.get(type(type_), 53)
    magnitude = abs(value)
    excess = magnitude.bit_length() - bits
    if excess > 0:
        kept, rest = magnitude >> excess, magnitude & ((1 << excess) - 1)
        half = 1 << (excess - 1)
        if rest > half or (rest == half and kept & 1):
            kept += 1
        magnitude = kept << excess
    with np.errstate(over="ignore"):
        return _round_to(type_, float(magnitude) if value >= 0 else -float(magnitude))


def _width(op: Operation) -> int:
    return integer_width(op.results[0].type)


def _unsigned(value: int, width: int) -> int:
    return int(value) % (1 << width)


def _nonzero_divisor(op: Operation, divisor: int) -> None:
    if divisor == 0:
        raise InterpreterError(f"'{op.name}' divides by zero", op)


def _fp_to_int(op: Operation, value: float, low: int, high: int) -> int:
    if not math.isfinite(value):
        raise InterpreterError(f"'{op.name}' of '{value}' has no integer value", op)
    result = int(value)  # toward zero, as MLIR's fptosi/fptoui
    if not low <= result < high:
        raise InterpreterError(
            f"'{op.name}' of '{value}' is out of the range of '{op.results[0].type}'", op
        )
    return result


def _float_bits_dtype(type_: Attribute) -> tuple[np.dtype, np.dtype]:
    """(float dtype, same-width signed integer dtype) of a float type."""
    if isinstance(type_, Float16Type):
        return np.dtype(np.float16), np.dtype(np.int16)
    if isinstance(type_, Float32Type):
        return np.dtype(np.float32), np.dtype(np.int32)
    return np.dtype(np.float64), np.dtype(np.int64)


def _is_float_type(type_: Attribute) -> bool:
    return isinstance(type_, Float16Type | Float32Type | Float64Type)


@register_impls
class ArithExtraFunctions(InterpreterFunctions):
    """Float arithmetic rounded to the result type, and the casts xDSL's arith lacks."""

    @impl(arith.AddfOp)
    def run_addf(self, interpreter: Interpreter, op: arith.AddfOp, args: PythonValues) -> PythonValues:
        return _float_result(op, args[0] + args[1])

    @impl(arith.SubfOp)
    def run_subf(self, interpreter: Interpreter, op: arith.SubfOp, args: PythonValues) -> PythonValues:
        return _float_result(op, args[0] - args[1])

    @impl(arith.MulfOp)
    def run_mulf(self, interpreter: Interpreter, op: arith.MulfOp, args: PythonValues) -> PythonValues:
        return _float_result(op, args[0] * args[1])

    @impl(arith.DivfOp)
    def run_divf(self, interpreter: Interpreter, op: arith.DivfOp, args: PythonValues) -> PythonValues:
        with np.errstate(all="ignore"):
            return _float_result(op, float(np.float64(args[0]) / np.float64(args[1])))

    @impl(arith.NegfOp)
    def run_negf(self, interpreter: Interpreter, op: arith.NegfOp, args: PythonValues) -> PythonValues:
        return _float_result(op, -args[0])

    @impl(arith.MaxSIOp)
    def run_maxsi(self, interpreter: Interpreter, op: arith.MaxSIOp, args: PythonValues) -> PythonValues:
        return (max(args[0], args[1]),)

    @impl(arith.MinSIOp)
    def run_minsi(self, interpreter: Interpreter, op: arith.MinSIOp, args: PythonValues) -> PythonValues:
        return (min(args[0], args[1]),)

    @impl(arith.SIToFPOp)
    def run_sitofp(self, interpreter: Interpreter, op: arith.SIToFPOp, args: PythonValues) -> PythonValues:
        width = integer_width(op.operands[0].type)
        return (int_to_float(op.results[0].type, to_signed(args[0], width)),)

    @impl(arith.UIToFPOp)
    def run_uitofp(self, interpreter: Interpreter, op: arith.UIToFPOp, args: PythonValues) -> PythonValues:
        width = integer_width(op.operands[0].type)
        return (int_to_float(op.results[0].type, _unsigned(args[0], width)),)

    @impl(arith.FPToSIOp)
    def run_fptosi(self, interpreter: Interpreter, op: arith.FPToSIOp, args: PythonValues) -> PythonValues:
        width = _width(op)
        return (_fp_to_int(op, args[0], -(1 << (width - 1)), 1 << (width - 1)),)

    @impl(arith.FPToUIOp)
    def run_fptoui(self, interpreter: Interpreter, op: arith.FPToUIOp, args: PythonValues) -> PythonValues:
        width = _width(op)
        return (to_signed(_fp_to_int(op, args[0], 0, 1 << width), width),)

    # --- integer division (xDSL's asserts on a zero divisor) ----------------------------

    @impl(arith.DivSIOp)
    def run_divsi(self, interpreter: Interpreter, op: arith.DivSIOp, args: PythonValues) -> PythonValues:
        width = _width(op)
        lhs, rhs = to_signed(args[0], width), to_signed(args[1], width)
        _nonzero_divisor(op, rhs)
        quotient = abs(lhs) // abs(rhs)
        return (to_signed(quotient if (lhs >= 0) == (rhs > 0) else -quotient, width),)

    @impl(arith.RemSIOp)
    def run_remsi(self, interpreter: Interpreter, op: arith.RemSIOp, args: PythonValues) -> PythonValues:
        width = _width(op)
        lhs, rhs = to_signed(args[0], width), to_signed(args[1], width)
        _nonzero_divisor(op, rhs)
        quotient = abs(lhs) // abs(rhs)
        quotient = quotient if (lhs >= 0) == (rhs > 0) else -quotient
        return (to_signed(lhs - quotient * rhs, width),)

    @impl(arith.FloorDivSIOp)
    def run_floordivsi(self, interpreter: Interpreter, op: arith.FloorDivSIOp, args: PythonValues) -> PythonValues:
        width = _width(op)
        lhs, rhs = to_signed(args[0], width), to_signed(args[1], width)
        _nonzero_divisor(op, rhs)
        return (to_signed(lhs // rhs, width),)

    @impl(arith.CeilDivSIOp)
    def run_ceildivsi(self, interpreter: Interpreter, op: arith.CeilDivSIOp, args: PythonValues) -> PythonValues:
        width = _width(op)
        lhs, rhs = to_signed(args[0], width), to_signed(args[1], width)
        _nonzero_divisor(op, rhs)
        return (to_signed(-(-lhs // rhs), width),)

    @impl(arith.DivUIOp)
    def run_divui(self, interpreter: Interpreter, op: arith.DivUIOp, args: PythonValues) -> PythonValues:
        width = _width(op)
        lhs, rhs = _unsigned(args[0], width), _unsigned(args[1], width)
        _nonzero_divisor(op, rhs)
        return (to_signed(lhs // rhs, width),)

    @impl(arith.RemUIOp)
    def run_remui(self, interpreter: Interpreter, op: arith.RemUIOp, args: PythonValues) -> PythonValues:
        width = _width(op)
        lhs, rhs = _unsigned(args[0], width), _unsigned(args[1], width)
        _nonzero_divisor(op, rhs)
        return (to_signed(lhs % rhs, width),)

    @impl(arith.CeilDivUIOp)
    def run_ceildivui(self, interpreter: Interpreter, op: arith.CeilDivUIOp, args: PythonValues) -> PythonValues:
        width = _width(op)
        lhs, rhs = _unsigned(args[0], width), _unsigned(args[1], width)
        _nonzero_divisor(op, rhs)
        return (to_signed(-(-lhs // rhs), width),)

    # --- unsigned comparisons and shifts -----------------------------------------------

    @impl(arith.ShRUIOp)
    def run_shrui(self, interpreter: Interpreter, op: arith.ShRUIOp, args: PythonValues) -> PythonValues:
        width = _width(op)
        shift = _unsigned(args[1], width)
        if shift >= width:
            raise InterpreterError(f"'{op.name}' shifts a {width}-bit value by '{shift}' bits", op)
        return (to_signed(_unsigned(args[0], width) >> shift, width),)

    @impl(arith.MaxUIOp)
    def run_maxui(self, interpreter: Interpreter, op: arith.MaxUIOp, args: PythonValues) -> PythonValues:
        width = _width(op)
        return (to_signed(max(_unsigned(args[0], width), _unsigned(args[1], width)), width),)

    @impl(arith.MinUIOp)
    def run_minui(self, interpreter: Interpreter, op: arith.MinUIOp, args: PythonValues) -> PythonValues:
        width = _width(op)
        return (to_signed(min(_unsigned(args[0], width), _unsigned(args[1], width)), width),)

    # --- extended arithmetic -----------------------------------------------------------

    @impl(arith.AddUIExtendedOp)
    def run_addui_extended(
        self, interpreter: Interpreter, op: arith.AddUIExtendedOp, args: PythonValues
    ) -> PythonValues:
        width = _width(op)
        total = _unsigned(args[0], width) + _unsigned(args[1], width)
        return (to_signed(total, width), total >= 1 << width)

    @impl(arith.MulSIExtendedOp)
    def run_mulsi_extended(
        self, interpreter: Interpreter, op: arith.MulSIExtendedOp, args: PythonValues
    ) -> PythonValues:
        width = _width(op)
        product = to_signed(args[0], width) * to_signed(args[1], width)
        return (to_signed(product, width), to_signed(product >> width, width))

    @impl(arith.MulUIExtendedOp)
    def run_mului_extended(
        self, interpreter: Interpreter, op: arith.MulUIExtendedOp, args: PythonValues
    ) -> PythonValues:
        width = _width(op)
        product = _unsigned(args[0], width) * _unsigned(args[1], width)
        return (to_signed(product, width), to_signed(product >> width, width))

    # --- floats --------------------------------------------------------------------------

    @impl(arith.MaxnumfOp)
    def run_maxnumf(self, interpreter: Interpreter, op: arith.MaxnumfOp, args: PythonValues) -> PythonValues:
        return (_number_extreme(args[0], args[1], larger=True),)

    @impl(arith.MinnumfOp)
    def run_minnumf(self, interpreter: Interpreter, op: arith.MinnumfOp, args: PythonValues) -> PythonValues:
        return (_number_extreme(args[0], args[1], larger=False),)

    @impl(arith.BitcastOp)
    def run_bitcast(self, interpreter: Interpreter, op: arith.BitcastOp, args: PythonValues) -> PythonValues:
        source, result = op.operands[0].type, op.results[0].type
        value = args[0]
        if _is_float_type(source) and _is_float_type(result):
            return (value,) if type(source) is type(result) else (_bitcast_unsupported(op),)
        if _is_float_type(source):
            float_dtype, int_dtype = _float_bits_dtype(source)
            bits = int(np.array(value, dtype=float_dtype).view(int_dtype)[()])
            return (to_signed(bits, integer_width(result)),)
        if _is_float_type(result):
            float_dtype, int_dtype = _float_bits_dtype(result)
            width = integer_width(source)
            return (float(np.array(to_signed(value, width), dtype=int_dtype).view(float_dtype)[()]),)
        if isinstance(source, IntegerType | IndexType):
            return (to_signed(value, integer_width(result)),)
        return (_bitcast_unsupported(op),)

    @impl(arith.TruncIOp)
    def run_trunci(self, interpreter: Interpreter, op: arith.TruncIOp, args: PythonValues) -> PythonValues:
        return (to_signed(args[0], integer_width(op.results[0].type)),)

    @impl(arith.ExtSIOp)
    def run_extsi(self, interpreter: Interpreter, op: arith.ExtSIOp, args: PythonValues) -> PythonValues:
        return (args[0],)

    @impl(arith.ExtUIOp)
    def run_extui(self, interpreter: Interpreter, op: arith.ExtUIOp, args: PythonValues) -> PythonValues:
        width = integer_width(op.operands[0].type)
        return (to_signed(int(args[0]) % (1 << width), integer_width(op.results[0].type)),)

    @impl(arith.ExtFOp)
    def run_extf(self, interpreter: Interpreter, op: arith.ExtFOp, args: PythonValues) -> PythonValues:
        return _float_result(op, args[0])

    @impl(arith.TruncFOp)
    def run_truncf(self, interpreter: Interpreter, op: arith.TruncFOp, args: PythonValues) -> PythonValues:
        return _float_result(op, args[0])


def _number_extreme(lhs: float, rhs: float, *, larger: bool) -> float:
    """IEEE maxNum/minNum: a NaN operand yields the other operand; of +0 and -0, max gives
    +0 and min -0 (as maximumf/minimumf), so the result never depends on operand order."""
    if math.isnan(lhs):
        return rhs
    if math.isnan(rhs):
        return lhs
    if lhs == rhs == 0.0:
        negative = math.copysign(1.0, lhs) < 0 and math.copysign(1.0, rhs) < 0
        positive = math.copysign(1.0, lhs) > 0 and math.copysign(1.0, rhs) > 0
        if larger:
            return -0.0 if negative else 0.0
        return 0.0 if positive else -0.0
    return max(lhs, rhs) if larger else min(lhs, rhs)


def _bitcast_unsupported(op: Operation) -> float:
    raise InterpreterError(
        f"'{op.name}' from '{op.operands[0].type}' to '{op.results[0].type}' is not supported "
        "by the interpreter",
        op,
    )
