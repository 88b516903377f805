"""Compiles one `.mlir` file through `compile_with_telamalloc` in a fresh process (IREE's
bindings and upstream MLIR's cannot share the test process), in the ways the tests compare.

    python runner.py SOURCE FOLDER FLAG...

writes into FOLDER: `ours.vmfb` (telamalloc's step), `iree.vmfb` (the step disabled),
`overlap.vmfb` (a deliberately wrong layout: every static slice of every pack at offset 0),
`*.stream.mlir` (the module after the stream phase) and `report.json` (the step's report).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from telamalloc.interop.iree_compile import compile_with_telamalloc
from telamalloc.interop.iree_packs import (
    IreePlanReport,
    PackLayout,
    align_up,
    find_packs,
    pack_slices,
    write_pack_layout,
)


def overlapping(module) -> IreePlanReport:
    for pack in find_packs(module):
        slices = pack_slices(pack)
        if slices and all(item.size is not None for item in slices):
            top = max(align_up(item.size, 64) for item in slices)
            write_pack_layout(pack, PackLayout(tuple(0 for _ in slices), top))
    return IreePlanReport(())


def main() -> None:
    source, folder, flags = sys.argv[1], Path(sys.argv[2]), sys.argv[3:]
    ours = compile_with_telamalloc(source, flags, keep_stream=True)
    iree = compile_with_telamalloc(source, flags, enabled=False, keep_stream=True)
    wrong = compile_with_telamalloc(source, flags, step=overlapping)
    for name, result in (("ours", ours), ("iree", iree), ("overlap", wrong)):
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
