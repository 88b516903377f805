"""`test-print-dependences`: prints each block's scheduling graph, for FileCheck.

The test pass of `passes/analysis/dependences.py` (what `tela-schedule` may not reorder). It
leaves the IR unchanged. For each block that may be scheduled it prints, before the module:

```
// dependences of @f, block of func.func: 4 ops
//   #0 scratchpad.alloc
//   #1 scratchpad.dma reads <arguments> writes %in after #0
//   #2 func.call barrier after #0, #1
//   buffer %in 256 B
```

`after` lists every op the op must follow (SSA values, reads and writes on each buffer,
barriers); buffers are the roots the ops access, with their sizes, `input` / `output`
when they live across the whole block.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import TextIO

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass

from telamalloc.passes.analysis.collect import collect_function, module_has_scratchpad_memrefs, selection_for
from telamalloc.passes.analysis.dependences import BlockGraph, Roots, block_graph, schedulable_blocks
from telamalloc.passes.analysis.liveness import FIRST_WRITE
from telamalloc.passes.irview import XDSL, IRView
from telamalloc.passes.options import PlanOptions, check_options
from telamalloc.runtime.alloc.op_order import build_model


def format_block(view: IRView, graph: BlockGraph) -> str:
    """The text `test-print-dependences` prints for one block (its ops read through `view`)."""
    owner = view.block_owner(graph.block)
    func = owner
    while func is not None and view.name(func) != "func.func":
        func = view.parent_op(func)
    name = view.symbol_name(func) if func is not None else "?"
    lines = [f"// dependences of @{name}, block of {view.name(owner) if owner else '?'}: {len(graph.ops)} ops"]
    model = build_model(graph.graph)
    for index, (op, node) in enumerate(zip(graph.ops, graph.graph.ops)):
        text = f"//   #{index} {view.name(op)}"
        if node.reads:
            text += " reads " + ", ".join(str(r) for r in node.reads)
        if node.writes:
            text += " writes " + ", ".join(str(w) for w in node.writes)
        if node.barrier:
            text += " barrier"
        if model.preds[index]:
            text += " after " + ", ".join(f"#{p}" for p in model.preds[index])
        lines.append(text)
    for buffer in graph.graph.buffers:
        flags = "".join(f", {flag}" for flag, on in (("input", buffer.input), ("output", buffer.output)) if on)
        lines.append(f"//   buffer {buffer.id} {buffer.size} B{flags}")
    return "\n".join(lines) + "\n"


@dataclass(frozen=True)
class TestPrintDependencesPass(ModulePass):
    """Prints the scheduling graph of every block that `tela-schedule` may reorder."""

    name = "test-print-dependences"

    lifetimes: str = PlanOptions.lifetimes
    """Where lifetimes start: 'first-write' or 'alloc' (with 'alloc', an allocation counts as a write)."""

    def __post_init__(self) -> None:
        check_options({"lifetimes": self.lifetimes})  # the planning passes' check and message

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        print_dependences(op, sys.stdout, self.lifetimes)


def print_dependences(module: ModuleOp, stream: TextIO, rule: str = FIRST_WRITE) -> None:
    has_scratchpad = module_has_scratchpad_memrefs(module, XDSL)
    for func in XDSL.functions(module):
        problem = collect_function(func, selection_for(func, has_scratchpad, None, XDSL), None, None, rule)
        roots = Roots(XDSL, func)
        for block in schedulable_blocks(XDSL, func):
            stream.write(format_block(XDSL, block_graph(XDSL, block, problem.buffers, rule, roots)))
