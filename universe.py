"""Registers telamalloc's dialects and passes with xDSL (the `xdsl.universe` entry point).

Plain `xdsl-opt` discovers this universe through the entry point declared in
pyproject.toml; `tela-opt` sees it the same way.
"""

from xdsl.universe import Universe


def _scratchpad():
    from telamalloc.dialects.scratchpad import Scratchpad

    return Scratchpad


def _test_print_liveness():
    from telamalloc.passes.test_print_liveness import TestPrintLivenessPass

    return TestPrintLivenessPass


def _test_print_dependences():
    from telamalloc.passes.test_print_dependences import TestPrintDependencesPass

    return TestPrintDependencesPass


def _tela_plan():
    from telamalloc.passes.tela_plan import TelaPlanPass

    return TelaPlanPass


def _tela_schedule():
    from telamalloc.passes.tela_schedule import TelaSchedulePass

    return TelaSchedulePass


def _tela_lower():
    from telamalloc.passes.tela_lower import TelaLowerPass

    return TelaLowerPass


def _tela_pipeline():
    from telamalloc.passes.tela_pipeline import TelaPipelinePass

    return TelaPipelinePass


TELAMALLOC_UNIVERSE = Universe(
    all_dialects={"scratchpad": _scratchpad},
    all_passes={
        "tela-lower": _tela_lower,
        "tela-pipeline": _tela_pipeline,
        "tela-plan": _tela_plan,
        "tela-schedule": _tela_schedule,
        "test-print-dependences": _test_print_dependences,
        "test-print-liveness": _test_print_liveness,
    },
)
