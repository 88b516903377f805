"""Plans programs through one copy of MLIR's Python bindings, in a process of its own: the
IREE column of `test_front_ends.py`.

    python front_end_runner.py PACKAGE < cases.json > results.json

PACKAGE is the bindings' Python package (`iree.compiler`, or `mlir`). Each case of the
input, `{"name", "text", "options"}` (the program in MLIR's generic form, the keywords of
`plan_mlir_ops`), is parsed in that package's own context, planned and lowered in place;
its result is the plans as plain data, the report lines, the lowered module in the generic
form, or the error. The output also says whether the process ever imported upstream's
`mlir` package: IREE's bindings cannot share a process with it, so planning must never
import it.
"""

from __future__ import annotations

import importlib
import json
import sys


def _plain(plan) -> dict:
    buffers = [[b.start, b.end, b.size, b.alignment, b.offset] for b in plan.problem.buffers]
    solution = plan.solution
    return {"name": plan.name, "buffers": buffers, "capacity": plan.problem.capacity,
            "offsets": list(solution.offsets or ()), "peak": solution.peak, "load": solution.load}


def run_case(ir, case: dict) -> dict:
    from telamalloc.interop.mlir_plan import MlirPlanError, plan_mlir_ops

    with ir.Context() as context:
        context.allow_unregistered_dialects = True
        module = ir.Module.parse(case["text"])
        try:
            result = plan_mlir_ops(module, **case["options"])
        except MlirPlanError as error:
            return {"error": error.message}
        return {
            "plans": [_plain(plan) for plan in result.plans],
            "reports": [plan.report for plan in result.plans],
            "lowered": module.operation.get_asm(print_generic_op_form=True),
        }


def main() -> None:
    package = sys.argv[1]
    ir = importlib.import_module(f"{package}.ir")
    cases = json.load(sys.stdin)
    results = {case["name"]: run_case(ir, case) for case in cases}
    upstream = any(name == "mlir" or name.startswith("mlir.") for name in sys.modules)
    json.dump({"results": results, "imported_upstream_mlir": upstream}, sys.stdout)


if __name__ == "__main__":
    main()
