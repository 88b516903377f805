"""scf ops xDSL's interpreter lacks: `scf.parallel` with its `scf.reduce` terminator.

`scf.parallel` runs its iterations one after another, the induction variables in
lexicographic order (the first dimension outermost), and combines the values each
iteration hands to `scf.reduce` with the initial values in that same order: MLIR leaves
the order of a parallel loop's iterations and reductions open, the reference interpreter
fixes one, so its results are the same on every run and machine. A non-positive step is
an error (MLIR requires positive steps).
"""

from __future__ import annotations

import itertools

from xdsl.dialects import scf
from xdsl.interpreter import (
    Interpreter,
    InterpreterFunctions,
    PythonValues,
    ReturnedValues,
    TerminatorValue,
    impl,
    impl_terminator,
    register_impls,
)

from telamalloc.runtime.interp.machine import InterpreterError


def parallel_ranges(op: scf.ParallelOp, args: PythonValues) -> tuple[list[range], list]:
    """The ranges of an `scf.parallel`'s induction variables and its initial values."""
    rank = len(op.lowerBound)
    lower, upper, steps = args[:rank], args[rank : 2 * rank], args[2 * rank : 3 * rank]
    for step in steps:
        if int(step) <= 0:
            raise InterpreterError(f"'scf.parallel' step is '{int(step)}'; every step must be positive", op)
    return [range(lb, ub, st) for lb, ub, st in zip(lower, upper, steps)], list(args[3 * rank :])


def run_parallel_op_by_op(interpreter: Interpreter, op: scf.ParallelOp, args: PythonValues) -> PythonValues:
    """`scf.parallel` through the interpreter: iterations and reductions in lexicographic order."""
    ranges, accumulated = parallel_ranges(op, args)
    reduce_op = op.body.block.last_op
    assert isinstance(reduce_op, scf.ReduceOp)
    for indices in itertools.product(*ranges):
        values = interpreter.run_ssacfg_region(op.body, indices, "parallel_loop")
        for index, region in enumerate(reduce_op.reductions):
            (accumulated[index],) = interpreter.run_ssacfg_region(
                region, (accumulated[index], values[index]), "reduce"
            )
    return tuple(accumulated)


@register_impls
class ScfExtraFunctions(InterpreterFunctions):
    """scf.parallel, scf.reduce and scf.reduce.return."""

    @impl(scf.ParallelOp)
    def run_parallel(self, interpreter: Interpreter, op: scf.ParallelOp, args: PythonValues) -> PythonValues:
        return run_parallel_op_by_op(interpreter, op, args)

    @impl_terminator(scf.ReduceOp)
    def run_reduce(
        self, interpreter: Interpreter, op: scf.ReduceOp, args: PythonValues
    ) -> tuple[TerminatorValue, PythonValues]:
        return ReturnedValues(args), ()

    @impl_terminator(scf.ReduceReturnOp)
    def run_reduce_return(
        self, interpreter: Interpreter, op: scf.ReduceReturnOp, args: PythonValues
    ) -> tuple[TerminatorValue, PythonValues]:
        return ReturnedValues(args), ()
