"""Compiler passes: liveness analysis, planning and lowering of scratchpad allocations.

Passes (flags of `tela-opt` / `xdsl-opt`):
- `test-print-liveness`: prints program points and lifetimes (`passes/test_print_liveness.py`);
- `test-print-dependences`: prints what each op of a block must follow (`passes/test_print_dependences.py`);
- `tela-schedule`: reorders each block's ops to lower LOAD (`passes/tela_schedule.py`);
- `tela-plan`: gives each buffer an offset with TelaMalloc (`passes/tela_plan.py`);
- `tela-lower`: rewrites planned buffers into views of one arena (`passes/tela_lower.py`);
- `tela-pipeline`: `tela-plan` then `tela-lower` (`passes/tela_pipeline.py`).

For xDSL compilers, the same as plain functions::

    from telamalloc.passes import plan_module, lower_module
    plans = plan_module(module, capacity=1 << 20, mode="fit")  # raises PassFailedAtOp
    lower_module(module)
    write_plan_viewer("plan.html", plans)  # the plan viewer page (passes/planning/outputs.py)
"""

from telamalloc.passes.analysis.liveness import FunctionLiveness, Lifetime, analyze_function
from telamalloc.passes.planning.outputs import write_plan_viewer
from telamalloc.passes.planning.plans import FunctionPlan
from telamalloc.passes.tela_lower import TelaLowerPass, lower_module
from telamalloc.passes.tela_pipeline import TelaPipelinePass
from telamalloc.passes.tela_plan import TelaPlanPass, plan_module
from telamalloc.passes.test_print_liveness import TestPrintLivenessPass

__all__ = [
    "FunctionLiveness",
    "FunctionPlan",
    "Lifetime",
    "TelaLowerPass",
    "TelaPipelinePass",
    "TelaPlanPass",
    "TestPrintLivenessPass",
    "analyze_function",
    "lower_module",
    "plan_module",
    "write_plan_viewer",
]
