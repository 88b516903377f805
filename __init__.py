"""telamalloc: a static scratchpad allocator for machine-learning accelerators.

The public API is plain data in, plain data out::

    import telamalloc
    problem = telamalloc.read_problem("examples/input.12.csv", capacity=12)
    solution = telamalloc.solve(problem)
    assert solution.ok and telamalloc.validate(problem, solution.offsets) == []
    telamalloc.write_html(problem, solution, "plan.html")  # an interactive viewer page
"""

from telamalloc.runtime.alloc.api import solve
from telamalloc.runtime.alloc.csv_io import CsvError, read_problem, write_solution
from telamalloc.runtime.alloc.problem import (
    Buffer,
    Mode,
    Overload,
    Params,
    Problem,
    ProblemError,
    Solution,
    Stats,
    Status,
)
from telamalloc.runtime.alloc.validate import compute_load, validate


def __getattr__(name: str):
    # write_html is imported on first use: the viewer's module is not needed by every tool
    # start-up (tela-alloc's --timeout counts start-up)
    if name == "write_html":
        from telamalloc.runtime.show.html import write_html

        return write_html
    raise AttributeError(f"module 'telamalloc' has no attribute '{name}'")

__all__ = [
    "Buffer",
    "CsvError",
    "Mode",
    "Overload",
    "Params",
    "Problem",
    "ProblemError",
    "Solution",
    "Stats",
    "Status",
    "compute_load",
    "read_problem",
    "solve",
    "validate",
    "write_html",
    "write_solution",
]
