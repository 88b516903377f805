"""Which arguments of a function are its outputs: the memref arguments it writes.

A static analysis of the IR (no interpreter), so that `tela-run` can tell a function's
inputs from its outputs before running it (`--inputs` takes the inputs alone, the outputs
are allocated zero-filled: `verification.complete_inputs`) and `--verify` compares exactly
what the function writes.

An argument is written when a view of it reaches a write, as `passes/effects.py` (the one
table of which ops read and write which operands) tells: `memref.store` (its memref),
`memref.copy` (its target), `scratchpad.dma` (its destination), `scratchpad.kernel` (its
`outs`), linalg's `outs`, a `func.call` whose callee writes that argument (a callee without
a body is taken to write every memref it gets), or any other op whose memory effects say
it writes the operand. Views are followed through every op that yields memrefs from it (`memref.subview`,
`cast`, `view`, `collapse_shape`, ...: conservatively, any op's memref results), through
region arguments (`scf.for` iteration arguments), branch successors' arguments, and yields
to their parent's results. An op with unknown memory effects is taken to write its memref
operands. The analysis may call an argument an output that a given run leaves alone (a
store in a branch not taken); it never misses a write the interpreter can execute.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.dialects import func
from xdsl.dialects.builtin import MemRefType
from xdsl.ir import Operation, SSAValue
from xdsl.traits import IsTerminator, SymbolTable

from telamalloc.passes.effects import Access, operand_access


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
    return WrittenArguments().written(function)


class WrittenArguments:
    """The written-arguments analysis with its answers kept per function (a call graph's
    callees are analysed once); `call_writes` answers `passes/effects.py`'s question about
    a `func.call`."""

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
        if isinstance(op, func.FuncOp):
            return False
        return Access.WRITE in operand_access(op, index, self.call_writes)

    def call_writes(self, call: Operation, index: int) -> bool:
        """Does the callee of `call` write its argument `index` (unknown callee: yes)?"""
        callee = _callee(call) if isinstance(call, func.CallOp) else None
        return callee is None or index in self.written(callee)


def _callee(call: func.CallOp) -> func.FuncOp | None:
    callee = SymbolTable.lookup_symbol(call, call.callee)
    return callee if isinstance(callee, func.FuncOp) else None
