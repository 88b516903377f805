"""Which ops read and which write the memref they take as an operand: one table for every analysis.

The liveness analysis (where a lifetime starts: the first write), the use points of
spilling (which uses write) and the written-arguments analysis (which arguments are a
function's outputs) all ask the same question of an op and one of its operands:
`operand_access(op, index)` answers it as an `Access` (`READ`, `WRITE`, both, or none).

- `memref.load`: its memref is read; `memref.dim`, `memref.rank` and the other metadata
  ops read no byte;
- `memref.store`: its memref is written (the stored value, were it a memref, escapes:
  liveness handles that); `memref.copy`: its source is read, its target written;
  `memref.atomic_rmw`: read and written;
- ops that declare `read_operands()` / `written_operands()` (`scratchpad.dma`,
  `scratchpad.kernel`: the library's kernels write every element of their `outs` and
  never read them);
- linalg's structured ops (`ins` / `outs`): the `ins` are read, each of the `outs` is
  written, and read too when the payload uses its block argument (`linalg.matmul`
  accumulates into its output; `linalg.fill` and `linalg.copy` do not read it), as
  upstream's `payloadUsesValueFromOperand` decides;
- `func.call`: read, and written when the callee writes that argument (a `CallWrites`
  answer; without one, or for a callee without a body, written too);
- ops that only alias the memref or pass it on (views, casts, subviews, reshapes; the
  iteration arguments of `scf.for` / `scf.while`, yields, branches; deallocs): none; the
  analyses follow the aliases themselves;
- the ops of `arith`, `math` and `index` (`PURE_DIALECTS`): none, as upstream MLIR defines them;
- any other op by its declared memory effects (xDSL's `get_effects`): an effect on the
  operand, or on no value in particular, counts; an op with unknown effects reads and
  writes every memref it takes (the conservative answer).

Every function takes the op as its front end holds it and an optional `view`
(`passes/irview.py`: `XDSL` by default), so the one table serves xDSL and upstream MLIR's
bindings alike; a view supplies only what its front end knows (segment sizes, declared
reads and writes, memory effects).

`operands_access(op, indices)` is the union over several operands (one buffer passed
twice), `writes_whole(op, index)` whether a write covers every byte of the memref and
reads none of it (a kernel's `outs`, a DMA or copy destination: the liveness analysis lets
such a write renew a buffer in each iteration of a loop).
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Iterable
from typing import Any

from telamalloc.passes.irview import IRView


class Access(enum.Flag):
    """What an op does to the bytes of one memref operand."""

    NONE = 0
    READ = enum.auto()
    WRITE = enum.auto()


READ_WRITE = Access.READ | Access.WRITE

CallWrites = Callable[[Any, int], bool]
"""`(call, operand index) -> bool`: does the callee of this `func.call` write that argument?"""

_NO_ACCESS = frozenset({"memref.dealloc", "scratchpad.dealloc", "memref.dim", "memref.rank"})
"""Frequent ops that touch no byte of their memref operands (deallocs, metadata); views and
the other metadata ops say so by their declared effects."""

PURE_DIALECTS = ("arith.", "math.", "index.")
"""Dialects whose every op touches no memory: upstream MLIR gives each op of `arith`,
`math` and `index` no memory effect (`Arith_Op`, `Math_Op` and `IndexOp` carry
`NoMemoryEffect` / `Pure`), while xDSL's definitions leave some without an effect trait
(`arith.remui`, `arith.extsi` in 0.74) and xDSL has no `index` dialect, which reads as
unknown effects. Ops are read as upstream defines them."""


def is_pure(name: str) -> bool:
    """True when the op named `name` touches no memory, whatever its definition's traits say."""
    return name.startswith(PURE_DIALECTS)


_ALIAS_OPS = frozenset({"scf.for", "scf.while", "scf.if", "scf.execute_region", "scf.index_switch",
                        "scf.forall", "scf.parallel", "affine.for", "affine.if", "affine.parallel"})
"""Structured ops whose memref operands are loop bounds or values passed to their regions."""


WHOLE_WRITE_OPS = frozenset({"scratchpad.kernel", "scratchpad.dma", "memref.copy"})
"""Ops whose write covers every byte of the memref they write: the library's kernels write
every element of their `outs`, a DMA or copy every element of its destination."""


def writes_whole(op: Any, index: int, view: IRView) -> bool:
    """True when `op` writes every byte of its operand `index` and reads none of it
    (a write that leaves nothing of the memref's earlier value)."""
    if view.name(op) not in WHOLE_WRITE_OPS:
        return False
    if operand_access(op, index, view=view) is not Access.WRITE:
        return False
    operands = view.operands(op)
    value = operands[index]
    return all(
        operand != value or Access.READ not in operand_access(op, position, view=view)
        for position, operand in enumerate(operands)
    )


def operand_access(op: Any, index: int, call_writes: CallWrites | None = None, *, view: IRView) -> Access:
    """What `op` does to the bytes of its operand `index` (see the module doc)."""
    name = view.name(op)
    if name in _NO_ACCESS or is_pure(name):
        return Access.NONE
    if name == "memref.load":
        return Access.READ if index == 0 else Access.NONE
    if name == "memref.store":
        return Access.WRITE if index == 1 else Access.NONE
    if name == "memref.copy":
        return Access.READ if index == 0 else Access.WRITE
    if name == "memref.atomic_rmw":
        return READ_WRITE if index == 1 else Access.NONE
    if name == "func.call":
        writes = True if call_writes is None else call_writes(op, index)
        return READ_WRITE if writes else Access.READ
    if name in _ALIAS_OPS or view.successors(op) or view.is_terminator(op):
        return Access.NONE
    declared = _kernel_access(op, name, (index,), view)
    if declared is None:
        declared = _flags(view.declared_access(op, index))
    if declared is not None:
        return declared
    structured = _structured_access(op, name, index, view)
    if structured is not None:
        return structured
    effects = _flags(view.effects_access(op, index))
    return READ_WRITE if effects is None else effects  # unknown effects: the worst


def operands_access(
    op: Any, indices: Iterable[int], call_writes: CallWrites | None = None, *, view: IRView
) -> Access:
    """What `op` does to the bytes of the memref it takes as the operands `indices` (one
    buffer passed several times): the union of `operand_access`, read off each op once."""
    indices = tuple(indices)
    declared = _kernel_access(op, view.name(op), indices, view)
    if declared is not None:
        return declared
    access = Access.NONE
    for index in indices:
        access |= operand_access(op, index, call_writes, view=view)
    return access


def _kernel_access(op: Any, name: str, indices: tuple[int, ...], view: IRView) -> Access | None:
    """Our dialect's data movers: a DMA reads its source (0) and writes its destination
    (1); a kernel reads its `ins` and writes its `outs` (one look at the segment sizes)."""
    if name == "scratchpad.dma":
        return (Access.READ if 0 in indices else Access.NONE) | (Access.WRITE if 1 in indices else Access.NONE)
    if name == "scratchpad.kernel":
        sizes = view.segment_sizes(op)
        if sizes is None:
            return None
        ins = sizes[0]
        return (Access.READ if any(i < ins for i in indices) else Access.NONE) | (
            Access.WRITE if any(i >= ins for i in indices) else Access.NONE
        )
    return None


def _flags(found: tuple[bool, bool] | None) -> Access | None:
    if found is None:
        return None
    reads, writes = found
    return (Access.READ if reads else Access.NONE) | (Access.WRITE if writes else Access.NONE)


def _structured_access(op: Any, name: str, index: int, view: IRView) -> Access | None:
    """linalg's structured ops: `ins` read; `outs` written, read when the payload uses them."""
    if not name.startswith("linalg."):
        return None
    sizes = view.segment_sizes(op)
    if sizes is None or len(sizes) != 2:
        return None
    count, outputs = sizes
    if index < count:
        return Access.READ
    position = index - count
    if position >= outputs:
        return Access.NONE
    regions = view.regions(op)
    body = view.first_block(regions[0]) if regions else None
    arguments = view.block_args(body) if body is not None else ()
    if body is None or len(arguments) != count + outputs:
        return READ_WRITE  # a payload we cannot read: conservatively both
    uses_output = view.has_uses(arguments[count + position])
    return READ_WRITE if uses_output else Access.WRITE
