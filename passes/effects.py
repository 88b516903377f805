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
- any other op by its declared memory effects (xDSL's `get_effects`): an effect on the
  operand, or on no value in particular, counts; an op with unknown effects reads and
  writes every memref it takes (the conservative answer).

`operands_access(op, indices)` is the union over several operands (one buffer passed
twice), `writes_whole(op, index)` whether a write covers every byte of the memref and
reads none of it (a kernel's `outs`, a DMA or copy destination: the liveness analysis lets
such a write renew a buffer in each iteration of a loop).
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Iterable

from xdsl.dialects.builtin import DenseArrayBase
from xdsl.ir import Operation
from xdsl.traits import IsTerminator, MemoryEffectKind, get_effects


class Access(enum.Flag):
    """What an op does to the bytes of one memref operand."""

    NONE = 0
    READ = enum.auto()
    WRITE = enum.auto()


READ_WRITE = Access.READ | Access.WRITE

CallWrites = Callable[[Operation, int], bool]
"""`(call, operand index) -> bool`: does the callee of this `func.call` write that argument?"""

_NO_ACCESS = frozenset({"memref.dealloc", "scratchpad.dealloc", "memref.dim", "memref.rank"})
"""Frequent ops that touch no byte of their memref operands (deallocs, metadata); views and
the other metadata ops say so by their declared effects."""

_ALIAS_OPS = frozenset({"scf.for", "scf.while", "scf.if", "scf.execute_region", "scf.index_switch",
                        "scf.forall", "scf.parallel", "affine.for", "affine.if", "affine.parallel"})
"""Structured ops whose memref operands are loop bounds or values passed to their regions."""


WHOLE_WRITE_OPS = frozenset({"scratchpad.kernel", "scratchpad.dma", "memref.copy"})
"""Ops whose write covers every byte of the memref they write: the library's kernels write
every element of their `outs`, a DMA or copy every element of its destination."""


def writes_whole(op: Operation, index: int) -> bool:
    """True when `op` writes every byte of its operand `index` and reads none of it
    (a write that leaves nothing of the memref's earlier value)."""
    if op.name not in WHOLE_WRITE_OPS:
        return False
    if operand_access(op, index) is not Access.WRITE:
        return False
    value = op.operands[index]
    return all(
        operand is not value or Access.READ not in operand_access(op, position)
        for position, operand in enumerate(op.operands)
    )


def operand_access(op: Operation, index: int, call_writes: CallWrites | None = None) -> Access:
    """What `op` does to the bytes of its operand `index` (see the module doc)."""
    name = op.name
    if name in _NO_ACCESS:
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
    if name in _ALIAS_OPS or op.successors or op.has_trait(IsTerminator):
        return Access.NONE
    declared = _declared_access(op, index)
    if declared is not None:
        return declared
    structured = _structured_access(op, index)
    if structured is not None:
        return structured
    return _effects_access(op, index)


def operands_access(op: Operation, indices: Iterable[int], call_writes: CallWrites | None = None) -> Access:
    """What `op` does to the bytes of the memref it takes as the operands `indices` (one
    buffer passed several times): the union of `operand_access`, read off each op once."""
    indices = tuple(indices)
    if op.name == "scratchpad.dma":
        return (Access.READ if 0 in indices else Access.NONE) | (Access.WRITE if 1 in indices else Access.NONE)
    if op.name == "scratchpad.kernel":  # ins, then outs: one look at the segment sizes
        sizes = op.properties.get("operandSegmentSizes")
        ins = sizes.get_values()[0] if isinstance(sizes, DenseArrayBase) else len(op.ins)  # type: ignore[attr-defined]
        return (Access.READ if any(i < ins for i in indices) else Access.NONE) | (
            Access.WRITE if any(i >= ins for i in indices) else Access.NONE
        )
    access = Access.NONE
    for index in indices:
        access |= operand_access(op, index, call_writes)
    return access


def _declared_access(op: Operation, index: int) -> Access | None:
    """Ops that list what they read and write (`read_operands()` / `written_operands()`)."""
    read_operands = getattr(op, "read_operands", None)
    written_operands = getattr(op, "written_operands", None)
    if not callable(read_operands) or not callable(written_operands):
        return None
    value = op.operands[index]
    access = Access.NONE
    if any(operand is value for operand in read_operands()):
        access |= Access.READ
    if any(operand is value for operand in written_operands()):
        access |= Access.WRITE
    return access


def _structured_access(op: Operation, index: int) -> Access | None:
    """linalg's structured ops: `ins` read; `outs` written, read when the payload uses them."""
    if not op.name.startswith("linalg."):
        return None
    inputs = getattr(op, "inputs", None)
    outputs = getattr(op, "outputs", None)
    if inputs is None or outputs is None:
        return None
    count = len(inputs)
    if index < count:
        return Access.READ
    position = index - count
    if position >= len(outputs):
        return Access.NONE
    body = op.regions[0].blocks.first if op.regions else None
    if body is None or len(body.args) != count + len(outputs):
        return READ_WRITE  # a payload we cannot read: conservatively both
    uses_output = bool(body.args[count + position].uses)
    return READ_WRITE if uses_output else Access.WRITE


def _effects_access(op: Operation, index: int) -> Access:
    effects = get_effects(op)
    if effects is None:
        return READ_WRITE  # unknown effects: the worst
    value = op.operands[index]
    access = Access.NONE
    for effect in effects:
        if effect.value is not None and effect.value is not value:
            continue
        if effect.kind is MemoryEffectKind.READ:
            access |= Access.READ
        elif effect.kind is MemoryEffectKind.WRITE:
            access |= Access.WRITE
    return access
