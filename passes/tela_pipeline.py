"""`tela-pipeline`: `tela-plan` then `tela-lower`, with the options of `tela-plan`.

```
tela-opt prog.mlir -p 'tela-pipeline{capacity=1048576}'
```

Plain upstream memref IR needs nothing but a capacity: without a `#scratchpad.target`
in the IR, every `memref.alloc` / `memref.alloca` without a memory space is planned
(see `telamalloc.passes.collect`). When planning fails, nothing is lowered and the IR is
unchanged.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp

from telamalloc.passes.options import PlanningOptions
from telamalloc.passes.tela_lower import lower_module
from telamalloc.passes.tela_plan import FunctionPlan, TelaPlanPass


@dataclass(frozen=True)
class TelaPipelinePass(PlanningOptions):
    """Plans every function's scratchpad buffers, then lowers them to views of an arena."""

    name = "tela-pipeline"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        self.run(op)

    def run(self, module: ModuleOp) -> tuple[FunctionPlan, ...]:
        """Plans and lowers `module`; returns the plans (one per function with buffers)."""
        options = {field.name: getattr(self, field.name) for field in dataclasses.fields(PlanningOptions)}
        plan_pass = TelaPlanPass(**options)
        plans = plan_pass.plan(module)
        lower_module(module)
        return plans
