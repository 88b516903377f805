"""`tela-schedule` on an `mlir.ir.Module` (`plan_mlir_ops(schedule=...)`): the same order,
the same LOAD before and after and the same remarks as `tela-pipeline{schedule=...}` on
xDSL, on the examples, the `tela-schedule.mlir` lit cases and the scheduling campaign's
random programs (globals, arguments that alias them, adjacent calls); a failure leaves
the module as it was."""

import importlib.util
import os
import re
import sys
from pathlib import Path

import pytest

from telamalloc.interop import parse_mlir, print_generic
from telamalloc.interop.generic import xdsl_context
from telamalloc.ir_text import parse_program
from telamalloc.passes import TelaPipelinePass
from telamalloc.passes.analysis.collect import SCHEDULE_ATTR
from telamalloc.passes.diagnostics import diagnostic_handler

from .conftest import require_mlir_bindings, without_ids

require_mlir_bindings()

from telamalloc.interop.mlir_plan import MlirPlanError, plan_mlir_ops  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = [path for path in sorted((REPO / "examples").glob("*.mlir")) if path.name != "upstream_loops.mlir"]
# (upstream_loops.mlir names no capacity: test_a_failure_leaves_the_module_unchanged takes it)
LIT = REPO / "test" / "passes" / "tela-schedule.mlir"
LIT_CASES = LIT.read_text().split("// -----")
FORK = LIT_CASES[0]
RECORD = re.compile(r"scratchpad\.schedule = \{load_after = (\d+) : i64, load_before = (\d+) : i64\}")


def _campaign_generator():
    """`test/hardening/schedule_programs.py` by path (the tests run with `--import-mode=importlib`)."""
    name = "telamalloc_schedule_programs"
    if name not in sys.modules:
        path = REPO / "test" / "hardening" / "schedule_programs.py"
        spec = importlib.util.spec_from_file_location(name, path)
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name].generate


def _both(text: str, name: str, **options):
    """`tela-pipeline` on xDSL and `plan_mlir_ops` (lowered) on the same program, with
    `options`: (xDSL's module as MLIR prints it, its remarks, the MLIR module's text, its
    remarks); a failure is ('error', message) in place of the module's text."""
    xdsl_module = parse_program(xdsl_context(allow_unregistered=True), text, name)
    mlir_module = parse_mlir(print_generic(xdsl_module))
    xdsl_remarks: list[str] = []
    try:
        with diagnostic_handler(lambda kind, op, message: xdsl_remarks.append(f"{kind}: {message}")):
            TelaPipelinePass(**options).run(xdsl_module)
        xdsl_text = without_ids(str(parse_mlir(print_generic(xdsl_module))))
    except Exception as error:  # the failure itself is compared (without its location)
        xdsl_text = ("error", str(error))
    try:
        result = plan_mlir_ops(mlir_module, **options)
        mlir_remarks = [remark.split(": ", 1)[1] for remark in result.remarks]
        assert mlir_module.operation.verify()
        mlir_text = without_ids(str(mlir_module))
    except MlirPlanError as error:
        mlir_remarks = None
        mlir_text = ("error", error.message)
    return xdsl_text, xdsl_remarks, mlir_text, mlir_remarks


def _loads(text: str) -> list[tuple[int, int]]:
    """(LOAD before, LOAD after) of each scheduled function, from its `scratchpad.schedule`."""
    return [(int(before), int(after)) for after, before in RECORD.findall(text)]


@pytest.mark.parametrize("options", [{"mode": "minimize"}, {"lifetimes": "alloc"}], ids=["minimize", "alloc"])
@pytest.mark.parametrize("path", EXAMPLES, ids=lambda path: path.name)
def test_examples_schedule_alike(path, options):
    if path.name == "spill.mlir" and options.get("mode") == "minimize":
        options = {}  # spilling is fit mode's: the example plans with its own policy
    xdsl_text, xdsl_remarks, mlir_text, mlir_remarks = _both(path.read_text(), path.name, schedule="auto", **options)
    assert mlir_text == xdsl_text
    assert mlir_remarks == xdsl_remarks
    assert _loads(mlir_text), "every example has a function with buffers to schedule"


@pytest.mark.parametrize("method", ["auto", "lpmf", "dfs", "exact"])
@pytest.mark.parametrize("case", range(len(LIT_CASES)), ids=lambda case: f"case{case}")
def test_lit_cases_schedule_alike(case, method):
    xdsl_text, xdsl_remarks, mlir_text, mlir_remarks = _both(LIT_CASES[case], f"case{case}.mlir",
                                                             schedule=method, mode="minimize")
    assert mlir_text == xdsl_text
    assert mlir_remarks == xdsl_remarks
    assert _loads(mlir_text)


def test_the_fork_is_lowered_on_mlir():
    # the lit case's figures: LOAD 1024 -> 576 B, and the plan's peak follows
    _, _, mlir_text, mlir_remarks = _both(FORK, "fork.mlir", schedule="auto", mode="minimize")
    assert _loads(mlir_text) == [(1024, 576)]
    assert "scratchpad.peak = 576 : i64" in mlir_text
    assert mlir_remarks[0] == "remark: scheduling lowered LOAD of '@fork' from '1024' to '576' bytes (43.8% less)"


@pytest.mark.parametrize(
    "sync, load_after",
    [
        ('"acme.sync"() : () -> ()', 1024),  # an op neither front end knows: unknown effects
        ('"test.op_with_memwrite"() : () -> ()', 1024),  # a write of no value in particular
        ('"test.op_with_memread"() : () -> ()', 1024),  # a read of no value in particular
        ('"test.pureop"() : () -> ()', 576),  # no effect: not a barrier
        # arith and math ops xDSL leaves without an effect trait: pure, as upstream defines them
        ("%k = arith.constant 7 : i32\n    %q = arith.remui %k, %k : i32", 576),
        ("%k = arith.constant 7 : i32\n    %q = arith.extsi %k : i32 to i64", 576),
        # upstream's index dialect, which xDSL does not define: pure too
        ('%k = "index.constant"() {value = 7 : index} : () -> index', 576),
    ],
    ids=["unknown", "write", "read", "pure", "arith.remui", "arith.extsi", "index.constant"],
)
def test_ops_that_touch_unnamed_memory_are_barriers_alike(sync, load_after):
    # after the fork's third map: a barrier keeps the three maps (and %in) before it, so
    # LOAD stays 4 * 256 = 1024 B; an op without effects lets the branches run one by one
    text = FORK.replace('    %ra = scratchpad.alloc()', f"    {sync}\n    %ra = scratchpad.alloc()", 1)
    assert sync in text
    xdsl_text, _, mlir_text, _ = _both(text.replace("expected-remark", "remark"), "sync.mlir", schedule="auto",
                                       mode="minimize")
    assert mlir_text == xdsl_text
    assert _loads(mlir_text) == [(1024, load_after)]


CONSTANT_GLOBAL = """
builtin.module attributes {scratchpad.target = #scratchpad.target<"l1", capacity = 65536, alignment = 32>} {
  "memref.global"() <{sym_name = "C", sym_visibility = "private", type = memref<64xf32>, initial_value = dense<1.0> : tensor<64xf32>KIND}> : () -> ()
  func.func @main(%x: memref<64xf32>, %out: memref<64xf32>, %sum: memref<64xf32>) {
    %c = memref.get_global @C : memref<64xf32>
    %a = scratchpad.alloc() : memref<64xf32, #scratchpad.space>
    scratchpad.dma %c -> %a : memref<64xf32> -> memref<64xf32, #scratchpad.space>
    %b = scratchpad.alloc() : memref<64xf32, #scratchpad.space>
    scratchpad.dma %x -> %b : memref<64xf32> -> memref<64xf32, #scratchpad.space>
    scratchpad.dma %b -> %out : memref<64xf32, #scratchpad.space> -> memref<64xf32>
    scratchpad.dealloc %b : memref<64xf32, #scratchpad.space>
    scratchpad.dma %a -> %sum : memref<64xf32, #scratchpad.space> -> memref<64xf32>
    scratchpad.dealloc %a : memref<64xf32, #scratchpad.space>
    func.return
  }
}
"""


@pytest.mark.parametrize("kind, load_after", [("constant", 256), ("", 512)], ids=["constant", "mutable"])
def test_a_constant_global_is_no_argument_alike(kind, load_after):
    # %out may be @C itself unless @C is constant (never written): only then may the copy
    # into %out move before the read of @C, so that %a and %b are never live together
    text = CONSTANT_GLOBAL.replace("KIND", kind and f", {kind}")
    xdsl_text, _, mlir_text, _ = _both(text, "global.mlir", schedule="auto", mode="minimize")
    assert mlir_text == xdsl_text
    assert _loads(mlir_text) == [(512, load_after)]


def test_the_report_names_load_before_scheduling():
    xdsl_module = parse_program(xdsl_context(), FORK, "fork.mlir")
    result = plan_mlir_ops(parse_mlir(print_generic(xdsl_module)), schedule="auto", lower=False)
    (plan,) = result.plans
    assert plan.report.endswith("scheduled from LOAD 1024 B") and plan.solution.load == 576


def test_without_schedule_the_order_stays():
    # the default is 'none': nothing moves and no function gets the schedule record
    xdsl_module = parse_program(xdsl_context(), FORK, "fork.mlir")
    mlir_module = parse_mlir(print_generic(xdsl_module))
    result = plan_mlir_ops(mlir_module, lower=False)
    assert SCHEDULE_ATTR not in str(mlir_module)
    # the given order's LOAD: 1024 B of the three maps and %in at the copy, less %in's bytes
    # that the copy writes %c over (in place, the default); then %a, %b, %c and %ra: 800 B
    assert result.plans[0].solution.load == 800


@pytest.mark.parametrize(
    "text, options, message",
    [
        (FORK, {"capacity": 575}, "'575'"),  # scheduled to LOAD 576 B, then planning fails
        ((REPO / "examples" / "upstream_loops.mlir").read_text(), {}, "no capacity"),
        ((REPO / "test" / "passes" / "tela-schedule-invalid.mlir").read_text(), {}, "has no range"),
    ],
    ids=["plan-fails", "no-capacity", "unmeasurable"],
)
def test_a_failure_leaves_the_module_unchanged(text, options, message):
    xdsl_module = parse_program(xdsl_context(), text, "failing.mlir")
    mlir_module = parse_mlir(print_generic(xdsl_module))
    before = str(mlir_module)
    with pytest.raises(MlirPlanError, match=message):
        plan_mlir_ops(mlir_module, schedule="auto", **options)
    assert str(mlir_module) == before
    # the mirror was put back too: planning the same module again gives the same failure
    with pytest.raises(MlirPlanError, match=message):
        plan_mlir_ops(mlir_module, schedule="auto", **options)


def test_an_unknown_schedule_is_refused_before_anything_moves():
    mlir_module = parse_mlir(print_generic(parse_program(xdsl_context(), FORK, "fork.mlir")))
    before = str(mlir_module)
    with pytest.raises(ValueError, match="unknown schedule 'fastest'; expected 'none' or one of 'auto'"):
        plan_mlir_ops(mlir_module, schedule="fastest")
    assert str(mlir_module) == before


CAMPAIGN = 1500 if os.environ.get("HYPOTHESIS_PROFILE") == "long" else 40
FIRST_SEED = int(os.environ.get("TELAMALLOC_FUZZ_SEED", "0")) * 100_000  # as test_schedule_campaign.py


def test_the_campaign_schedules_alike():
    """The scheduling campaign's random programs (`test/hardening/schedule_programs.py`,
    proved by execution on xDSL by `test_schedule_campaign.py`) give the same lowered
    module on MLIR; enough of them are reordered that the comparison is not of orders
    that never moved."""
    generate = _campaign_generator()
    reordered = 0
    for seed in range(FIRST_SEED, FIRST_SEED + CAMPAIGN):
        text = generate(seed)
        xdsl_text, xdsl_remarks, mlir_text, mlir_remarks = _both(text, f"schedule-{seed}.mlir", schedule="auto",
                                                                 mode="minimize")
        assert mlir_text == xdsl_text, f"seed {seed}:\n{text}"
        assert mlir_remarks == xdsl_remarks, seed
        reordered += any(after < before for before, after in _loads(mlir_text))
    assert reordered >= CAMPAIGN // 10, reordered
