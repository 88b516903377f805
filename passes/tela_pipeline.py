"""`tela-pipeline`: `tela-plan` then `tela-lower`, with the options of `tela-plan`
(and `schedule=<method>`: `tela-schedule` first).

```
tela-opt prog.mlir -p 'tela-pipeline{capacity=1048576}'
```

Plain upstream memref IR needs nothing but a capacity: without a `#scratchpad.target`
in the IR, every `memref.alloc` / `memref.alloca` without a memory space is planned
(see `telamalloc.passes.analysis.collect`). When planning fails, nothing is lowered and the IR is
unchanged.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp

from telamalloc.passes.driver import plan_functions
from telamalloc.passes.irview import XDSL
from telamalloc.passes.options import PlanningOptions
from telamalloc.passes.planning.plans import FunctionPlan
from telamalloc.passes.tela_lower import lower_module


@dataclass(frozen=True)
class TelaPipelinePass(PlanningOptions):
    """Plans every function's scratchpad buffers, then lowers them to views of an arena."""

    name = "tela-pipeline"

    schedule: str = "none"
    """Reorder the ops first to lower LOAD (`tela-schedule`): 'none' (keep the order),
    'auto' (every method), or one method: 'lpmf', 'bfs', 'dfs', 'lookahead', 'exact'."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        self.run(op)

    def run(self, module: ModuleOp) -> tuple[FunctionPlan, ...]:
        """Plans and lowers `module`; returns the plans (one per function with buffers).
        With `schedule`, the driver schedules first and puts the order back when planning
        fails (`passes/tela_schedule.py` `scheduled`)."""
        with self.report_stream() as report:
            plans = plan_functions(XDSL, module, self.plan_options(), report)
        lower_module(module)
        return plans
