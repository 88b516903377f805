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


TELAMALLOC_UNIVERSE = Universe(
    all_dialects={"scratchpad": _scratchpad},
    all_passes={
        "test-print-liveness": _test_print_liveness,
    },
)
