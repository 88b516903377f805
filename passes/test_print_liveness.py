"""`test-print-liveness`: prints program points and buffer lifetimes, for FileCheck.

The analysis' test pass, in the spirit of MLIR's `test-print-liveness`. It covers the
same allocations as `tela-plan` (see `telamalloc.passes.analysis.collect`) and leaves the IR
unchanged. For each function with a body it prints, before the module:

```
// liveness of @f: 5 program points, 2 buffers, lifetimes=first-write
//   #0 scratchpad.alloc
//   #1 scratchpad.alloc
//   #2 scratchpad.dma
//   #3 scratchpad.kernel
//   #4 func.return
//   buffer 'a' [2, 4) at #0 scratchpad.alloc
//   buffer 'b' [3, 5) at #1 scratchpad.alloc, escapes
```

Nested ops are indented by two spaces per level. Lifetimes are half-open. The first line
says `, conservative` when some lifetime spans a whole branching region because the
analysis could not follow the buffer there (`FunctionLiveness.conservative`), and ends in
where lifetimes start (the `lifetimes` option: `first-write`, the default, or `alloc`).
With `first-write`, a buffer whose lifetime stays at its allocation says why: `read before
write` (a use that may read it comes at or before its first write), `never written`, or
`not followed` (it leaks through memory or an address, or is used across the blocks of a
region with unstructured control flow). Each lifetime ends with the rule that ended it:
`ends at last use #N`, `ends with loop #N`, `ends with control flow`, `unused`, `escapes`
(said before), or `persistent` (`scratchpad.persistent`: live over the whole function); a
buffer marked `scratchpad.alias_of` says `aliases '<id>'`.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import TextIO

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp, StringAttr
from xdsl.ir import Operation
from xdsl.passes import ModulePass

from telamalloc.dialects.scratchpad import ALIAS_OF_ATTR
from telamalloc.passes.analysis.collect import (
    buffer_ids,
    module_has_scratchpad_memrefs,
    selection_for,
)
from telamalloc.passes.analysis.liveness import (
    ENDED_CONTROL_FLOW,
    ENDED_LAST_USE,
    ENDED_LOOP,
    ENDED_PERSISTENT,
    ENDED_UNUSED,
    FIRST_WRITE,
    FunctionLiveness,
    Lifetime,
    analyze_function,
)
from telamalloc.passes.irview import XDSL
from telamalloc.passes.options import PlanOptions, check_options
from telamalloc.wording import counted


def format_liveness(liveness: FunctionLiveness) -> str:
    """The text `test-print-liveness` prints for one function."""
    func = liveness.func
    lines = [
        f"// liveness of @{func.sym_name.data}: {len(liveness.points)} program points, "
        f"{counted(len(liveness.lifetimes), 'buffer')}"
        + (", conservative" if liveness.conservative else "")
        + f", lifetimes={liveness.rule}"
    ]
    for point, op in enumerate(liveness.points):
        lines.append(f"//   {'  ' * _depth(op, func)}#{point} {op.name}")
    for lifetime, buffer_id in zip(liveness.lifetimes, buffer_ids(liveness)):
        notes = ""
        if lifetime.escapes:
            notes += ", escapes"
        if lifetime.deallocs:
            notes += f", {counted(len(lifetime.deallocs), 'dealloc')}"
        if lifetime.kept is not None:
            notes += f", {lifetime.kept}"
        notes += _ending(lifetime)
        alias = lifetime.op.attributes.get(ALIAS_OF_ATTR)
        if isinstance(alias, StringAttr):
            notes += f", aliases '{alias.data}'"
        lines.append(
            f"//   buffer '{buffer_id}' [{lifetime.start}, {lifetime.end}) at "
            f"#{lifetime.point} {lifetime.op.name}{notes}"
        )
    return "\n".join(lines) + "\n"


def _ending(lifetime: Lifetime) -> str:
    """The note that says which rule ended the lifetime (none for an escape: said above)."""
    if lifetime.ended == ENDED_LAST_USE:
        return f", ends at last use #{lifetime.ended_at}"
    if lifetime.ended == ENDED_LOOP:
        return f", ends with loop #{lifetime.ended_at}"
    if lifetime.ended == ENDED_CONTROL_FLOW:
        return ", ends with control flow"
    if lifetime.ended == ENDED_UNUSED:
        return ", unused"
    if lifetime.ended == ENDED_PERSISTENT:
        return ", persistent"
    return ""


def _depth(op: Operation, func: Operation) -> int:
    depth = 0
    parent = op.parent_op()
    while parent is not None and parent is not func:
        depth += 1
        parent = parent.parent_op()
    return depth


@dataclass(frozen=True)
class TestPrintLivenessPass(ModulePass):
    """Prints the program points and buffer lifetimes of every function."""

    name = "test-print-liveness"

    lifetimes: str = PlanOptions.lifetimes
    """Where a buffer's lifetime starts: 'first-write' (its first write) or 'alloc' (its allocation)."""

    def __post_init__(self) -> None:
        check_options({"lifetimes": self.lifetimes})  # the planning passes' check and message

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        print_liveness(op, sys.stdout, self.lifetimes)


def print_liveness(module: ModuleOp, stream: TextIO, rule: str = FIRST_WRITE) -> None:
    has_scratchpad = module_has_scratchpad_memrefs(module, XDSL)
    for func in XDSL.functions(module):
        selection = selection_for(func, has_scratchpad, None, XDSL)
        stream.write(format_liveness(analyze_function(func, selection.covers, rule=rule, view=XDSL)))
