"""Every planning feature on every IR front end: one matrix of (feature x front end).

Each feature is a program and the options that exercise it; each is scheduled (when asked),
planned and lowered by
- xDSL: `plan_module` then `lower_module` (what `tela-opt -p tela-pipeline` runs);
- upstream MLIR's bindings (`mlir`): `plan_mlir_ops` on an `mlir.ir.Module`, in this process;
- IREE's bindings (`iree.compiler.ir`): `plan_mlir_ops` in a process that never imports
  upstream's `mlir` (two copies of MLIR's bindings cannot share one; `front_end_runner.py`).

All three must give the same plans (lifetimes, sizes, alignments, offsets, peaks), the same
report lines, the same output files (a layout) and the same lowered module (printed by upstream MLIR, buffer ids and
argument names aside: MLIR keeps no SSA names), or the same failure. Needs the `mlir` and
`iree` extras (CI installs both); a column skips without its extra.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from telamalloc.interop.generic import print_generic, xdsl_context
from telamalloc.ir_text import parse_program
from telamalloc.passes import plan_module
from telamalloc.passes.planning.plans import format_report_line
from telamalloc.passes.tela_lower import lower_module

from .conftest import require_mlir_bindings, without_ids

require_mlir_bindings()

from telamalloc.interop import parse_mlir  # noqa: E402
from telamalloc.interop.mlir_plan import MlirPlanError, plan_mlir_ops  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "examples"
PASSES = REPO / "test" / "passes"


def _chunk(path: Path, index: int) -> str:
    return path.read_text().split("// -----")[index]


FEATURES = {
    "fit": (EXAMPLES / "mlp.mlir", {}),
    "minimize": (EXAMPLES / "attention.mlir", {"mode": "minimize"}),
    "time-limit": (EXAMPLES / "attention.mlir", {"mode": "minimize", "time_limit": 60.0}),
    "effort": (EXAMPLES / "attention.mlir", {"mode": "minimize", "algorithm": "large", "effort": 2}),
    "best-fit": (EXAMPLES / "conv_relu_pool.mlir", {"mode": "minimize", "algorithm": "best-fit"}),
    "lifetimes=alloc": (EXAMPLES / "conv_relu_pool.mlir", {"mode": "minimize", "lifetimes": "alloc"}),
    "control flow": (EXAMPLES / "residual_loop.mlir", {"mode": "minimize"}),
    "last use, iter_args": (PASSES / "tela-plan-last-use.mlir", {"mode": "minimize"}),
    "in place": (PASSES / "tela-plan-inplace.mlir", {"mode": "minimize", "inplace": "elementwise"}),
    "inplace=declared": (PASSES / "tela-plan-inplace.mlir", {"mode": "minimize", "inplace": "declared"}),
    "inplace=elementwise": (EXAMPLES / "two_memories.mlir", {"inplace": "elementwise"}),
    "inplace=concat": (PASSES / "tela-plan-inplace-concat.mlir", {"mode": "minimize", "inplace": "concat"}),
    "inplace=concat, bufferized": (PASSES / "tela-plan-inplace-copies.mlir", {"mode": "minimize", "inplace": "concat"}),
    "upstream memrefs": (EXAMPLES / "upstream_loops.mlir", {"capacity": 65536}),
    "spill": (EXAMPLES / "spill.mlir", {}),
    "symbolic sizes": (EXAMPLES / "dynamic_attention.mlir", {"mode": "minimize"}),
    "dims": (EXAMPLES / "dynamic_attention.mlir", {"dims": "seq=1..64@16"}),
    "spilled copy": ((PASSES / "tela-plan-dims-spill.mlir", 0), {"capacity": 512, "on_overflow": "spill"}),
    "spill with calls": (PASSES / "tela-plan-spill-call.mlir", {"on_overflow": "spill"}),
    "spilled copy with calls": (PASSES / "tela-plan-dims-spill-call.mlir", {"capacity": 512, "on_overflow": "spill"}),
    "several memories": (EXAMPLES / "two_memories.mlir", {}),
    "assign-memory": (EXAMPLES / "two_memories.mlir", {"assign_memory": True}),
    "memory-space": (EXAMPLES / "two_memories.mlir", {"memory_space": "l2", "lower": False}),
    "schedule": ((PASSES / "tela-schedule.mlir", 0), {"schedule": "auto", "mode": "minimize"}),
    "layout file": (EXAMPLES / "attention.mlir", {"mode": "minimize", "layout": "{out}/layout.json"}),
    "does not fit": (EXAMPLES / "mlp.mlir", {"capacity": 1024}),
    "calls": (PASSES / "tela-plan-calls.mlir", {}),
    "persistent and aliases": (PASSES / "tela-plan-marks.mlir", {"mode": "minimize", "layout": "{out}/layout.json"}),
    "marks and spilling": ((PASSES / "tela-plan-marks-spill.mlir", 0), {"on_overflow": "spill"}),
    # planned apart, as its lit test is: in place, every arena halves and fits
    "calls past the capacity": ((PASSES / "tela-plan-calls-invalid.mlir", 1), {"inplace": "none"}),
}


def _source(where) -> str:
    return _chunk(*where) if isinstance(where, tuple) else where.read_text()


def _plain(buffers, capacity, offsets, peak, load) -> list:
    return [[list(buffer) for buffer in buffers], capacity, list(offsets), peak, load]


_UNTIMED = re.compile(r"solve [0-9.]+ s")


def _report(line: str) -> str:
    return _UNTIMED.sub("solve", line)


def _normalized(text: str) -> str:
    """A lowered module as upstream MLIR prints it, buffer ids and argument names aside, and
    a planned `scratchpad.alloc`'s offset as MLIR holds it: an attribute (the op is
    unregistered there; xDSL's is a property)."""
    printed = str(parse_mlir(text))
    printed = re.sub(r"<\{(offset = \d+ : i64)\}> \{", r"{\1, ", printed)
    return without_ids(printed)


def _in(directory: Path, options: dict) -> dict:
    """`options` with the output paths (`{out}/...`) in `directory`."""
    return {key: value.replace("{out}", str(directory)) if isinstance(value, str) else value
            for key, value in options.items()}


def _layout(options: dict) -> dict:
    """The layout file the options asked for, without buffer ids and locations (MLIR keeps
    no SSA names; a location names the text each front end read)."""
    if "layout" not in options:
        return {}
    data = json.loads(Path(options["layout"]).read_text())
    for function in data["functions"]:
        for buffer in function["buffers"]:
            del buffer["id"], buffer["location"]
    return {"layout": data}


def _xdsl(text: str, options: dict) -> dict:
    """`options`: `plan_module`'s, and `lower` (default true) as `plan_mlir_ops` takes it."""
    options = dict(options)
    lower = options.pop("lower", True)
    module = parse_program(xdsl_context(), text, "feature.mlir")
    try:
        plans = plan_module(module, **options)
    except Exception as error:
        return {"error": str(error)}
    if lower:
        lower_module(module)
    return {
        "plans": [_plain([(b.start, b.end, b.size, b.alignment, b.offset) for b in plan.problem.problem().buffers],
                         plan.problem.capacity, plan.solution.offsets or (), plan.solution.peak, plan.solution.load)
                  for plan in plans],
        "reports": [_report(format_report_line(plan)) for plan in plans],
        "lowered": _normalized(print_generic(module)),
    } | _layout(options)


def _mlir(text: str, options: dict) -> dict:
    module = parse_mlir(text)
    try:
        result = plan_mlir_ops(module, **options)
    except MlirPlanError as error:
        return {"error": error.message}
    return {
        "plans": [_plain([(b.start, b.end, b.size, b.alignment, b.offset) for b in plan.problem.buffers],
                         plan.problem.capacity, plan.solution.offsets or (), plan.solution.peak, plan.solution.load)
                  for plan in result.plans],
        "reports": [_report(plan.report) for plan in result.plans],
        "lowered": _normalized(module.operation.get_asm(print_generic_op_form=True)),
    } | _layout(options)


def _generic(text: str) -> str:
    return print_generic(parse_program(xdsl_context(), text, "feature.mlir"))


@pytest.fixture(scope="module")
def iree_results(tmp_path_factory) -> dict:
    """Every feature planned through IREE's bindings, in one process of their own."""
    if importlib.util.find_spec("iree.compiler") is None:
        pytest.skip("IREE's compiler is not installed; install the 'iree' extra: pip install '.[iree]'")
    root = tmp_path_factory.mktemp("iree")
    folders = {name: root / f"feature-{index}" for index, name in enumerate(FEATURES)}  # each its own outputs
    for folder in folders.values():
        folder.mkdir()
    cases = [{"name": name, "text": _generic(_source(where)), "options": _in(folders[name], options)}
             for name, (where, options) in FEATURES.items()]
    completed = subprocess.run(
        [sys.executable, str(Path(__file__).with_name("front_end_runner.py")), "iree.compiler"],
        input=json.dumps(cases), capture_output=True, text=True, timeout=600, cwd=REPO,
    )
    assert completed.returncode == 0, completed.stderr
    output = json.loads(completed.stdout)
    assert not output["imported_upstream_mlir"], "planning an IREE module imported upstream's mlir package"
    return {name: _from_runner(result, _in(folders[name], FEATURES[name][1])) for name, result in output["results"].items()}


def _from_runner(result: dict, options: dict) -> dict:
    if "error" in result:
        return result
    return {
        "plans": [_plain(plan["buffers"], plan["capacity"], plan["offsets"], plan["peak"], plan["load"])
                  for plan in result["plans"]],
        "reports": [_report(line) for line in result["reports"]],
        "lowered": _normalized(result["lowered"]),
    } | _layout(options)


@pytest.mark.parametrize("feature", FEATURES)
def test_upstream_mlir_plans_as_xdsl(feature: str, tmp_path: Path) -> None:
    where, options = FEATURES[feature]
    text = _source(where)
    (tmp_path / "xdsl").mkdir()
    expected = _xdsl(text, _in(tmp_path / "xdsl", options))
    assert _mlir(_generic(text), _in(tmp_path, options)) == expected


@pytest.mark.slow
@pytest.mark.parametrize("feature", FEATURES)
def test_iree_bindings_plan_as_xdsl(feature: str, iree_results: dict, tmp_path: Path) -> None:
    where, options = FEATURES[feature]
    assert iree_results[feature] == _xdsl(_source(where), _in(tmp_path, options))


def test_every_feature_plans_something_or_fails_as_stated(tmp_path: Path) -> None:
    # the matrix compares real plans: every feature but the failure plans at least one function
    for feature, (where, options) in FEATURES.items():
        result = _xdsl(_source(where), _in(tmp_path, options))
        assert ("error" in result) == (feature in ("does not fit", "calls past the capacity")), feature
        if "plans" in result:
            assert result["plans"], feature


def test_effort_reaches_the_large_planner_on_both_front_ends(monkeypatch) -> None:
    """`effort` is passed by the one planning driver to the large planner
    (`LargeConfig.effort`) from `plan_module` and `plan_mlir_ops` alike, every other
    default kept; without it the defaults are untouched; with a time limit both refuse it."""
    from telamalloc.passes.planning import plans
    from telamalloc.runtime.alloc.config import LargeConfig

    seen: list[object] = []
    real_solve = plans.solve

    def recorded(problem, **arguments):
        seen.append(arguments.get("params"))
        return real_solve(problem, **arguments)

    monkeypatch.setattr(plans, "solve", recorded)
    text = (EXAMPLES / "attention.mlir").read_text()
    options = {"mode": "minimize", "algorithm": "large"}
    for effort in (None, 3):
        given = options | ({} if effort is None else {"effort": effort})
        seen.clear()
        xdsl = _xdsl(text, given)
        from_xdsl = list(seen)
        seen.clear()
        assert _mlir(_generic(text), given) == xdsl and seen == from_xdsl and seen
        if effort is None:
            assert seen == [None] * len(seen)
        else:
            assert all(params.large == dataclasses.replace(LargeConfig(), effort=effort) for params in seen)
    for plan in (lambda: plan_module(parse_program(xdsl_context(), text, "feature.mlir"), effort=2, time_limit=1.0),
                 lambda: plan_mlir_ops(parse_mlir(_generic(text)), effort=2, time_limit=1.0)):
        with pytest.raises(ValueError, match="invalid effort '2' with time-limit '1': effort is a work budget"):
            plan()
