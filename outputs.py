"""Which arguments of a function are its outputs: the memref arguments it writes.

A static analysis of the IR, so that `tela-run` can tell a function's inputs from its
outputs before running it (`--inputs` takes the inputs alone, the outputs are allocated
zero-filled) and `--verify` compares exactly what the function writes.

An argument is written when a view of it reaches a write: `memref.store` (its memref),
`memref.copy` (its target), `scratchpad.dma` (its destination), `scratchpad.kernel` (its
`outs`), a `func.call` whose callee writes that argument (a callee without a body is taken
to write every memref it gets), or any other op whose memory effects say it writes the
operand. Views are followed through every op that yields memrefs from it (`memref.subview`,
`cast`, `view`, `collapse_shape`, ...: conservatively, any op's memref results), through
region arguments (`scf.for` iteration arguments), branch successors' arguments, and yields
to their parent's results. An op with unknown memory effects is taken to write its memref
operands. The analysis may call an argument an output that a given run leaves alone (a
store in a branch not taken); it never misses a write the interpreter can execute.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from xdsl.dialects import cf, func, memref, scf
from xdsl.dialects.builtin import DYNAMIC_INDEX, MemRefType
from xdsl.ir import Operation, SSAValue
from xdsl.traits import IsTerminator, MemoryEffectKind, SymbolTable, get_effects

from telamalloc.dialects import scratchpad
from telamalloc.runtime.interp import InterpreterError, argument_name, numpy_dtype

_NO_WRITE = (
    memref.LoadOp,
    memref.DimOp,
    memref.RankOp,
    memref.DeallocOp,
    scratchpad.DeallocOp,
    func.ReturnOp,
    scf.YieldOp,
    cf.BranchOp,
    cf.ConditionalBranchOp,
)


@dataclass(frozen=True)
class Signature:
    """A function's arguments split into inputs and outputs (indices in argument order)."""

    inputs: tuple[int, ...]  # the arguments it does not write (scalars, read-only memrefs)
    outputs: tuple[int, ...]  # the memref arguments it writes


def signature(function: func.FuncOp) -> Signature:
    """The inputs and outputs of `function` (see the module docstring)."""
    written = written_arguments(function)
    count = len(function.function_type.inputs.data)
    return Signature(
        tuple(i for i in range(count) if i not in written), tuple(i for i in range(count) if i in written)
    )


def written_arguments(function: func.FuncOp) -> frozenset[int]:
    """Indices of the memref arguments `function` writes, through any view of them."""
    return _Analysis().written(function)


class _Analysis:
    def __init__(self) -> None:
        self._done: dict[func.FuncOp, frozenset[int]] = {}
        self._running: set[func.FuncOp] = set()

    def written(self, function: func.FuncOp) -> frozenset[int]:
        if function in self._done:
            return self._done[function]
        if function in self._running:  # recursion: its writes are found on the outer visit
            return frozenset()
        if not function.body.blocks:  # a declaration: it may write whatever it is given
            return frozenset(
                i for i, type_ in enumerate(function.function_type.inputs.data) if isinstance(type_, MemRefType)
            )
        self._running.add(function)
        try:
            arguments = function.body.blocks.first.args
            written = frozenset(
                index
                for index, argument in enumerate(arguments)
                if isinstance(argument.type, MemRefType) and self._reaches_write(argument)
            )
        finally:
            self._running.discard(function)
        self._done[function] = written
        return written

    def _reaches_write(self, root: SSAValue) -> bool:
        pending, seen = [root], {root}

        def follow(values) -> None:
            for value in values:
                if isinstance(value.type, MemRefType) and value not in seen:
                    seen.add(value)
                    pending.append(value)

        while pending:
            value = pending.pop()
            for use in value.uses:
                op = use.operation
                if self._writes(op, use.index, value):
                    return True
                follow(op.results)  # views, casts, loop results: the same memory
                if not isinstance(op, func.FuncOp):
                    for region in op.regions:
                        if region.blocks:
                            follow(region.blocks.first.args)  # scf.for iteration arguments
                for successor in op.successors:
                    follow(successor.args)
                if op.has_trait(IsTerminator) and not op.successors:
                    parent = op.parent_op()
                    if parent is not None and not isinstance(parent, func.FuncOp):
                        follow(parent.results)  # scf.yield: the parent's results
                        for region in parent.regions:
                            if region.blocks:
                                follow(region.blocks.first.args)  # the next iteration
        return False

    def _writes(self, op: Operation, index: int, value: SSAValue) -> bool:
        if isinstance(op, memref.StoreOp):
            return op.memref is value
        if isinstance(op, memref.CopyOp):
            return op.destination is value
        if isinstance(op, scratchpad.DmaOp | scratchpad.KernelOp):
            return value in op.written_operands()
        if isinstance(op, func.CallOp):
            callee = _callee(op)
            return callee is None or index in self.written(callee)
        if isinstance(op, _NO_WRITE) or op.regions or op.successors:
            return False  # region ops: the uses inside are visited on their own
        effects = get_effects(op)
        if effects is None:  # unknown effects: assume the worst
            return True
        return any(
            effect.kind is MemoryEffectKind.WRITE and (effect.value is None or effect.value is value)
            for effect in effects
        )


def _callee(call: func.CallOp) -> func.FuncOp | None:
    callee = SymbolTable.lookup_symbol(call, call.callee)
    return callee if isinstance(callee, func.FuncOp) else None

def _names(function: func.FuncOp, indices: Sequence[int]) -> str:
    return ", ".join(argument_name(function, index) for index in indices)


def _plural(count: int, word: str) -> str:
    return f"{count} {word}" if count == 1 else f"{count} {word}s"


def _given(count: int) -> str:
    return f"{count} {'is' if count == 1 else 'are'} given"


def complete_inputs(function: func.FuncOp, given: Sequence[np.ndarray]) -> list[np.ndarray]:
    """Every argument's value from `given`: the inputs alone, in argument order (each
    output then starts zero-filled), or every argument, outputs included.

    Raises `InterpreterError` (located at the function) for any other count, or for an
    output of dynamic shape when only the inputs are given (its size is not known).
    """
    split = signature(function)
    types = function.function_type.inputs.data
    if len(given) == len(types):
        return list(given)
    name = f"'@{function.sym_name.data}'"
    if len(given) != len(split.inputs) or not split.outputs:
        inputs = f"{_plural(len(split.inputs), 'input')} ({_names(function, split.inputs) or 'none'})"
        if not split.outputs:
            raise InterpreterError(
                f"{name} takes {inputs} but {_given(len(given))}; pass one .npy file per input, in argument order",
                function,
            )
        outputs = f"{_plural(len(split.outputs), 'output')} ({_names(function, split.outputs)})"
        raise InterpreterError(
            f"{name} takes {inputs} and writes {outputs}, but {_given(len(given))}; pass the "
            f"{_plural(len(split.inputs), 'input')} in argument order (the outputs start zero-filled), "
            f"or all {len(types)} arguments",
            function,
        )
    values: list[np.ndarray] = []
    pending = iter(given)
    for index, type_ in enumerate(types):
        if index not in split.outputs:
            values.append(next(pending))
            continue
        assert isinstance(type_, MemRefType)
        shape = tuple(type_.get_shape())
        if DYNAMIC_INDEX in shape:
            raise InterpreterError(
                f"output {argument_name(function, index)} '{type_}' of {name} has a dynamic shape, so it "
                f"cannot be zero-filled; pass all {len(types)} arguments, outputs included",
                function,
            )
        values.append(np.zeros(shape, dtype=numpy_dtype(type_.element_type)))
    return values
