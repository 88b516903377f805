"""`tela-lower`: rewrites planned buffers into views of one arena per function.

Input: IR planned by `tela-plan` (offsets on the allocs, `scratchpad.peak` on the
function). Output, in upstream memref ops so that MLIR itself can consume it:

```mlir
%arena = memref.alloc() {alignment = 64 : i64, scratchpad.arena} : memref<PEAKxi8, SPACE>
...
%c1024 = arith.constant 1024 : index
%a = memref.view %arena[%c1024][] {scratchpad.buffer = "a"}
    : memref<PEAKxi8, SPACE> to memref<16x16xf32, SPACE>
...
memref.dealloc %arena : memref<PEAKxi8, SPACE>
func.return
```

- the arena is allocated at the top of the function's entry block, with the function's
  `scratchpad.alignment`, and freed before each `func.return` of the function body,
  unless that return hands out a memref in the arena's memory space (an escaping buffer:
  the arena then stays allocated);
- each planned `scratchpad.alloc` / `memref.alloc` / `memref.alloca` becomes a
  `memref.view` at its byte offset (dynamic sizes are passed on), marked with
  `scratchpad.buffer = "<id>"` so that tools can attribute bytes to buffers;
- the deallocs of planned buffers (also through aliases) are removed: the arena owns
  the memory;
- locations: each view and its offset constant take the location of the allocation they
  replace; the arena and its deallocs take the allocations' locations fused
  (`loc(fused[...])`, or the one location when all are alike), so that a fault at run
  time, or a diagnostic on lowered IR, names the source lines (`tela-opt
  --print-debuginfo` prints them).

A function planned parametrically (symbolic sizes, `scratchpad.order`) computes its offsets
and its arena's size at run time instead (`passes/rewrite/parametric_lower.py`).

An allocation in the planned memory without an offset, or a function with offsets but no
`scratchpad.peak`, fails the pass ("run tela-plan first"); nothing is changed unless every
function with a fixed plan can be lowered. The lowering itself is written once for every
IR front end (`passes/rewrite/lowering.py`, through xDSL's view and `XdslBuilder` here);
`plan_mlir_ops(lower=True)` runs the same code on an `mlir.ir.Module`.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass

from telamalloc.passes.irview import XDSL
from telamalloc.passes.rewrite import lowering


def lower_module(module: ModuleOp) -> None:
    """Lowers every planned function of the xDSL `module` (see the module doc); every
    fixed plan is checked before anything is written."""
    lowering.lower_module(XDSL, module)


@dataclass(frozen=True)
class TelaLowerPass(ModulePass):
    """Rewrites planned buffers into `memref.view`s of one arena per function."""

    name = "tela-lower"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        lower_module(op)
