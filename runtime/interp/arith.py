"""arith ops xDSL's interpreter lacks or rounds wrongly: float arithmetic rounded to the
result type, the float/int casts, trunci, extsi, extui.
"""

from __future__ import annotations

import math

import numpy as np
from xdsl.dialects import arith
from xdsl.dialects.builtin import (
    Float16Type,
    Float32Type,
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
    _integer_width,
    _signed,
)


def _round_to(type_: Attribute, value: float) -> float:
    if isinstance(type_, Float32Type):
        return float(np.float32(value))
    if isinstance(type_, Float16Type):
        return float(np.float16(value))
    return float(value)


def _float_result(op: Operation, value: float) -> PythonValues:
    return (_round_to(op.results[0].type, value),)


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
        return _float_result(op, float(args[0]))

    @impl(arith.FPToSIOp)
    def run_fptosi(self, interpreter: Interpreter, op: arith.FPToSIOp, args: PythonValues) -> PythonValues:
        if not math.isfinite(args[0]):
            raise InterpreterError(f"'arith.fptosi' of '{args[0]}' has no integer value", op)
        return (int(args[0]),)

    @impl(arith.TruncIOp)
    def run_trunci(self, interpreter: Interpreter, op: arith.TruncIOp, args: PythonValues) -> PythonValues:
        return (_signed(args[0], _integer_width(op.results[0].type)),)

    @impl(arith.ExtSIOp)
    def run_extsi(self, interpreter: Interpreter, op: arith.ExtSIOp, args: PythonValues) -> PythonValues:
        return (args[0],)

    @impl(arith.ExtUIOp)
    def run_extui(self, interpreter: Interpreter, op: arith.ExtUIOp, args: PythonValues) -> PythonValues:
        width = _integer_width(op.operands[0].type)
        return (_signed(int(args[0]) % (1 << width), _integer_width(op.results[0].type)),)

    @impl(arith.ExtFOp)
    def run_extf(self, interpreter: Interpreter, op: arith.ExtFOp, args: PythonValues) -> PythonValues:
        return _float_result(op, args[0])

    @impl(arith.TruncFOp)
    def run_truncf(self, interpreter: Interpreter, op: arith.TruncFOp, args: PythonValues) -> PythonValues:
        return _float_result(op, args[0])
