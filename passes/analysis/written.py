"""Which arguments of a function are its outputs: the memref arguments it writes.

A static analysis of the IR (no interpreter), so that `tela-run` can tell a function's
inputs from its outputs before running it (`--inputs` takes the inputs alone, the outputs
are allocated zero-filled: `verification.complete_inputs`) and `--verify` compares exactly
what the function writes.

An argument is written when a view of it reaches a write, as `passes/analysis/effects.py` (the one
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
from typing import Any

from xdsl.dialects import func

from telamalloc.passes.analysis.effects import Access, operand_access
from telamalloc.passes.irview import XDSL, IRView


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
    return WrittenArguments(XDSL).written(function)


class WrittenArguments:
    """The written-arguments analysis with its answers kept per function (a call graph's
    callees are analysed once); `call_writes` answers `passes/analysis/effects.py`'s question about
    a `func.call`. `view`: the front end (`passes/irview.py`; `callee` finds a call's
    function in it, `declared_memrefs` the memref arguments of a declaration)."""

    def __init__(self, view: IRView) -> None:
        self._view = view
        self._done: dict[Any, frozenset[int]] = {}
        self._running: set[Any] = set()

    def written(self, function: Any) -> frozenset[int]:
        if function in self._done:
            return self._done[function]
        if function in self._running:  # recursion: its writes are found on the outer visit
            return frozenset()
        view = self._view
        entry = view.first_block(view.regions(function)[0])
        if entry is None:  # a declaration: it may write whatever it is given
            return view.declared_memrefs(function)
        self._running.add(function)
        try:
            written = frozenset(
                index
                for index, argument in enumerate(view.block_args(entry))
                if view.is_ranked_memref(argument) and self._reaches_write(argument)
            )
        finally:
            self._running.discard(function)
        self._done[function] = written
        return written

    def _reaches_write(self, root: Any) -> bool:
        view = self._view
        pending, seen = [root], {root}

        def follow(values) -> None:
            for value in values:
                if view.is_ranked_memref(value) and value not in seen:
                    seen.add(value)
                    pending.append(value)

        while pending:
            value = pending.pop()
            for op, index in view.uses(value):
                name = view.name(op)
                if self._writes(op, name, index):
                    return True
                follow(view.results(op))  # views, casts, loop results: the same memory
                if name != "func.func":
                    for region in view.regions(op):
                        entry = view.first_block(region)
                        if entry is not None:
                            follow(view.block_args(entry))  # scf.for iteration arguments
                for successor in view.successors(op):
                    follow(view.block_args(successor))
                if view.is_terminator(op) and not view.successors(op):
                    parent = view.parent_op(op)
                    if parent is not None and view.name(parent) != "func.func":
                        follow(view.results(parent))  # scf.yield: the parent's results
                        for region in view.regions(parent):
                            entry = view.first_block(region)
                            if entry is not None:
                                follow(view.block_args(entry))  # the next iteration
        return False

    def _writes(self, op: Any, name: str, index: int) -> bool:
        if name == "func.func":
            return False
        return Access.WRITE in operand_access(op, index, self.call_writes, view=self._view)

    def call_writes(self, call: Any, index: int) -> bool:
        """Does the callee of `call` write its argument `index` (unknown callee: yes)?"""
        callee = self._view.callee(call)
        return callee is None or index in self.written(callee)
