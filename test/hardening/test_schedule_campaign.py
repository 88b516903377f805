"""The scheduling campaign: random programs whose memory dependences are easy to get
wrong (globals, arguments that alias each other and the globals, calls, adjacent
barriers; `schedule_programs.py`), scheduled, planned and run before and after on the
reference interpreter: no reordering may change an output. The count of programs the
scheduler did reorder is checked too, so the campaign cannot pass by never moving an op.

`HYPOTHESIS_PROFILE=long` runs 1,500 programs; `TELAMALLOC_FUZZ_SEED=<n>` explores others.
"""

from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path

from telamalloc.dialects import make_context
from telamalloc.ir_text import parse_program
from telamalloc.passes.tela_schedule import TelaSchedulePass
from telamalloc.verification import verify_program

LONG = os.environ.get("HYPOTHESIS_PROFILE") == "long"
PROGRAMS = 1500 if LONG else 80
FIRST_SEED = int(os.environ.get("TELAMALLOC_FUZZ_SEED", "0")) * 100_000


def _load_generator():
    """`schedule_programs.py` by path (the tests run with `--import-mode=importlib`)."""
    name = "telamalloc_schedule_programs"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, Path(__file__).with_name("schedule_programs.py"))
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]


generate = _load_generator().generate


def test_no_reordering_changes_an_output() -> None:
    reordered = 0
    for seed in range(FIRST_SEED, FIRST_SEED + PROGRAMS):
        text = generate(seed)
        module = parse_program(make_context(), text, f"schedule-{seed}.mlir")
        report = verify_program(module, schedule="auto")
        assert report.ok, f"seed {seed}:\n" + "\n".join(report.lines()) + "\n" + text
        probe = module.clone()
        reordered += any(result.load_after < result.load_before for result in TelaSchedulePass().run(probe))
    assert reordered >= PROGRAMS // 10, reordered  # the programs leave the scheduler room to move ops


def test_the_campaign_finds_the_global_argument_alias(monkeypatch) -> None:
    # the campaign is able to fail: with the arguments taken as apart from the globals (the
    # dependence bug it was written for), some of its programs change their outputs
    from telamalloc.passes.analysis import dependences

    original = dependences.Roots.__init__

    def forgetful(self, view, func):
        original(self, view, func)
        self._arguments = frozenset({dependences.ARGUMENTS})

    monkeypatch.setattr(dependences.Roots, "__init__", forgetful)
    failures = 0
    for seed in range(80):
        module = parse_program(make_context(), generate(seed), f"schedule-{seed}.mlir")
        failures += not verify_program(module, schedule="auto").ok
    assert failures > 0
