"""Compiles one `.mlir` file through `compile_with_telamalloc` in a fresh process (IREE's
bindings and upstream MLIR's cannot share the test process), in the ways the tests compare.

    python runner.py SOURCE FOLDER FLAG...

writes into FOLDER: `ours.vmfb` (telamalloc's step), `iree.vmfb` (the step disabled),
`overlap.vmfb` (a deliberately wrong layout: every slice of every pack at offset 0; for a pack
with dynamic slices, through the run-time choice of the parametric step, which must pick it),
`recomputed.vmfb` (when a pack has dynamic slices: IREE's layout as telamalloc writes it,
chosen at run time), `*.stream.mlir` (the module after the stream phase) and `report.json` (the step's report).
"""

from __future__ import annotations

import dataclasses
import json
import sys
from pathlib import Path

from iree.compiler import ir
from iree.compiler.dialects import arith

from telamalloc.interop.iree_compile import compile_with_telamalloc
from telamalloc.interop.iree_dynamic import plan_dynamic, write_dynamic
from telamalloc.interop.iree_packs import (
    IreePlanReport,
    PackLayout,
    find_packs,
    iree_greedy_layout,
    pack_slices,
    write_pack_layout,
)
from telamalloc.runtime.alloc.problem import round_up
from telamalloc.runtime.alloc.size_expressions import add, const, maximum


def dynamic_plan(pack, slices):
    static = [index for index, item in enumerate(slices) if item.size is not None]
    iree = iree_greedy_layout([slices[index] for index in static], 64, 64)
    return plan_dynamic(ir, [(item.start, item.end) for item in slices], list(pack.operands)[-len(slices):],
                        [item.size for item in slices], dict(zip(static, iree.offsets)), iree.total if static else 0,
                        64, 64)


def irees_recomputed(module) -> IreePlanReport:
    """Packs with dynamic slices: the run-time choice made to take IREE's layout as telamalloc
    writes it (our total raised above IREE's), which must then give IREE's outputs."""
    for pack in find_packs(module):
        slices = pack_slices(pack)
        if any(item.size is None for item in slices):
            plan = dynamic_plan(pack, slices)
            write_dynamic(ir, arith, pack, dataclasses.replace(plan, ours_total=add(plan.iree_total, 64)), None)
    return IreePlanReport(())


def overlapping(module) -> IreePlanReport:
    for pack in find_packs(module):
        slices = pack_slices(pack)
        if slices and all(item.size is not None for item in slices):
            top = max(round_up(item.size, 64) for item in slices)
            write_pack_layout(pack, PackLayout(tuple(0 for _ in slices), top))
        elif slices:  # IREE's layout against "ours" all at 0, in the largest slice's bytes: the run-time
            # choice (the smaller total; IREE's is at least the largest slice) takes ours
            plan = dynamic_plan(pack, slices)
            largest = maximum(*plan.sizes)
            wrong = dataclasses.replace(plan, ours_offsets=tuple(const(0) for _ in slices), ours_total=largest)
            write_dynamic(ir, arith, pack, wrong, None)
    return IreePlanReport(())


def main() -> None:
    source, folder, flags = sys.argv[1], Path(sys.argv[2]), sys.argv[3:]
    ours = compile_with_telamalloc(source, flags, keep_stream=True)
    iree = compile_with_telamalloc(source, flags, enabled=False, keep_stream=True)
    wrong = compile_with_telamalloc(source, flags, step=overlapping)
    builds = [("ours", ours), ("iree", iree), ("overlap", wrong)]
    if any(pack.dynamic for pack in ours.report.packs):
        builds.append(("recomputed", compile_with_telamalloc(source, flags, step=irees_recomputed)))
    for name, result in builds:
        (folder / f"{name}.vmfb").write_bytes(result.vmfb)
        if result.stream is not None:
            (folder / f"{name}.stream.mlir").write_text(result.stream)
    report = ours.report
    (folder / "report.json").write_text(json.dumps({
        "iree": report.iree_bytes, "output": report.output_bytes, "load": report.load,
        "disabled_output": iree.report.output_bytes, "lines": report.lines(),
        "packs": [{"iree": p.iree_bytes, "ours": p.our_bytes, "load": p.load, "proved": p.proved, "kept": p.kept}
                  for p in report.packs],
    }))


if __name__ == "__main__":
    main()
