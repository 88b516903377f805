"""`tela-alloc --schedule GRAPH.json`: an op order with a lower LOAD, for a graph on file.

Reads the graph (`telamalloc.runtime.alloc.graph_io`, documented in
docs/schedule-format.md), schedules it (`telamalloc.runtime.alloc.op_order`), prints one
line per method and the answer, and writes `--output`: the order as JSON (`.json`), or the
buffers' lifetimes in the chosen order as a problem CSV (`.csv`) that `tela-alloc --input`
plans.
"""

from __future__ import annotations

import time

from telamalloc.runtime.alloc.csv_io import write_problem
from telamalloc.runtime.alloc.graph_io import read_graph, write_schedule
from telamalloc.runtime.alloc.op_order import METHODS, ScheduleConfig, build_model, lifetimes, schedule
from telamalloc.runtime.alloc.problem import Buffer, Problem

SCHEDULE_METHODS = ("auto",) + METHODS


def run_schedule(path: str, method: str, output: str | None, timeout: float | None) -> list[str]:
    """Schedules the graph in `path`; returns the lines to print. Raises `GraphError` for a
    bad graph and `OSError` when `output` cannot be written."""
    if output is not None and not output.lower().endswith((".json", ".csv")):
        raise ValueError(f"--output '{output}' must end in '.json' (the order) or '.csv' (the lifetimes)")
    graph = read_graph(path)
    methods = METHODS if method == "auto" else ("given", method)
    started = time.perf_counter()
    result = schedule(graph, ScheduleConfig(methods=methods), time_limit=timeout)
    seconds = time.perf_counter() - started
    lines = [f"ops: {len(graph.ops)}, buffers: {len(graph.buffers)}"]
    for trial in result.trials:
        proof = ", proved minimum" if trial.proved else ""
        lines.append(f"  {trial.method:<10} LOAD {trial.load} B ({trial.seconds:.3f} s{proof})")
    saved = 0.0 if result.given_load == 0 else 1 - result.load / result.given_load
    proof = "proved minimum" if result.proved else "not proved minimal"
    lines.append(f"schedule: LOAD {result.given_load} -> {result.load} B ({saved:.1%} less), "
                 f"method {result.method}, {proof}, {seconds:.3f} s")
    if output is not None:
        if output.lower().endswith(".json"):
            write_schedule(output, graph, result)
        else:
            model = build_model(graph)
            problem = lifetimes(model, result.order)
            write_problem(output, Problem([Buffer(graph.buffers[b.id].id, b.start, b.end, b.size)
                                           for b in problem.buffers]))
        lines.append(f"written: {output}")
    return lines
