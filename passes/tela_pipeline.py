"""`tela-pipeline`: `tela-plan` then `tela-lower`, with the options of `tela-plan`
(and `schedule=<method>`: `tela-schedule` first).

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
from telamalloc.passes.plans import FunctionPlan
from telamalloc.passes.tela_lower import lower_module
from telamalloc.passes.tela_plan import TelaPlanPass
from telamalloc.passes.tela_schedule import SCHEDULE_METHODS, TelaSchedulePass, block_orders, restore_orders


@dataclass(frozen=True)
class TelaPipelinePass(PlanningOptions):
    """Plans every function's scratchpad buffers, then lowers them to views of an arena."""

    name = "tela-pipeline"

    schedule: str = "none"
    """Reorder the ops first to lower LOAD (`tela-schedule`): 'none' (keep the order),
    'auto' (every method), or one method: 'lpmf', 'bfs', 'dfs', 'lookahead', 'exact'."""

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.schedule not in ("none",) + SCHEDULE_METHODS:
            raise ValueError(f"unknown schedule '{self.schedule}'; expected 'none' or one of "
                             + ", ".join(f"'{name}'" for name in SCHEDULE_METHODS))

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        self.run(op)

    def run(self, module: ModuleOp) -> tuple[FunctionPlan, ...]:
        """Plans and lowers `module`; returns the plans (one per function with buffers)."""
        options = {field.name: getattr(self, field.name) for field in dataclasses.fields(PlanningOptions)}
        plan_pass = TelaPlanPass(**options)
        orders = block_orders(module) if self.schedule != "none" else []
        try:
            if self.schedule != "none":
                space = self.memory_space if isinstance(self.memory_space, int) else None
                TelaSchedulePass(method=self.schedule, lifetimes=self.lifetimes, memory_space=space).run(module)
            plans = plan_pass.plan(module)
        except Exception:
            restore_orders(orders)  # a failing pipeline leaves the IR as it was
            raise
        lower_module(module)
        return plans
