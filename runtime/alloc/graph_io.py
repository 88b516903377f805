"""The scheduling graph's file format (JSON), read into a `schedule.Graph`, and the answer out.

```json
{
  "buffers": [
    {"id": "x", "size": 256, "input": true},
    {"id": "a", "size": 256},
    {"id": "y", "size": 32, "output": true}
  ],
  "ops": [
    {"id": "relu", "reads": ["x"], "writes": ["a"]},
    {"id": "sum", "reads": ["a"], "writes": ["y"], "after": ["relu"]},
    {"id": "sync", "barrier": true}
  ]
}
```

Ops are listed in their given order (the floor, and the order whose reads and writes the
dependences keep); `reads`, `writes`, `after` (op ids) and `barrier` are optional; buffers
have an `id` (a string or an integer), a `size` in bytes and optional `input` / `output`.
Every error names the file and the entry (`graph.json: ops[2] ('sum'): ...`), or the line
and column of a JSON syntax error. The full description is `docs/schedule-format.md`.
"""

from __future__ import annotations

import json
import os
from collections.abc import Hashable, Sequence

from telamalloc.files import write_atomically
from telamalloc.runtime.alloc.op_order import Graph, GraphBuffer, GraphOp, Schedule, ScheduleError, build_model

BUFFER_KEYS = ("id", "size", "input", "output")
OP_KEYS = ("id", "reads", "writes", "after", "barrier")


class GraphError(ScheduleError):
    """A graph file that cannot be read as stated."""


def read_graph(path: str | os.PathLike) -> Graph:
    """The graph in the JSON file `path`; a `GraphError` names the file and the entry."""
    name = os.fspath(path)
    try:
        with open(name, "rb") as stream:
            data = stream.read()
    except OSError as error:
        raise GraphError(f"{name}: cannot read: {error.strerror or error}") from None
    try:
        document = json.loads(data.decode("utf-8"))
    except UnicodeDecodeError:
        raise GraphError(f"{name}: not UTF-8 text: save the graph as UTF-8 JSON") from None
    except json.JSONDecodeError as error:
        raise GraphError(f"{name}:{error.lineno}:{error.colno}: invalid JSON: {error.msg.lower()}") from None
    return graph_from_json(document, name)


def graph_from_json(document: object, name: str = "<graph>") -> Graph:
    """The graph of a parsed JSON document (see the module doc)."""
    if not isinstance(document, dict):
        raise GraphError(f"{name}: the graph is a JSON object with 'buffers' and 'ops', not {_kind(document)}")
    unknown = [key for key in document if key not in ("buffers", "ops")]
    if unknown:
        raise GraphError(f"{name}: unknown key '{unknown[0]}'; the graph's keys are 'buffers' and 'ops'")
    buffers = tuple(_buffer(name, index, entry) for index, entry in enumerate(_list(name, document, "buffers")))
    ops = tuple(_op(name, index, entry) for index, entry in enumerate(_list(name, document, "ops")))
    graph = Graph(ops, buffers)
    try:
        build_model(graph)  # unknown buffers and ops, repeated ids, a bad size: name the file
    except ScheduleError as error:
        raise GraphError(f"{name}: {error}") from None
    return graph


def _list(name: str, document: dict, key: str) -> list:
    value = document.get(key, [])
    if not isinstance(value, list):
        raise GraphError(f"{name}: '{key}' is a list, not {_kind(value)}")
    return value


def _entry(name: str, where: str, entry: object, keys: Sequence[str]) -> dict:
    if not isinstance(entry, dict):
        raise GraphError(f"{name}: {where}: each entry is a JSON object, not {_kind(entry)}")
    for key in entry:
        if key not in keys:
            listed = ", ".join(f"'{k}'" for k in keys)
            raise GraphError(f"{name}: {where}: unknown key '{key}'; the keys are {listed}")
    if "id" not in entry:
        raise GraphError(f"{name}: {where}: no 'id': give each entry an id (a string or an integer)")
    if not _is_id(entry["id"]):
        raise GraphError(f"{name}: {where}: id '{entry['id']}' is {_kind(entry['id'])}; ids are strings or integers")
    return entry


def _buffer(name: str, index: int, entry: object) -> GraphBuffer:
    where = f"buffers[{index}]"
    entry = _entry(name, where, entry, BUFFER_KEYS)
    where = f"{where} ('{entry['id']}')"
    size = entry.get("size")
    if not isinstance(size, int) or isinstance(size, bool) or size < 0:
        raise GraphError(f"{name}: {where}: size '{size}' is not a number of bytes; give an integer >= 0")
    flags = [_flag(name, where, entry, key) for key in ("input", "output")]
    return GraphBuffer(entry["id"], size, *flags)


def _op(name: str, index: int, entry: object) -> GraphOp:
    where = f"ops[{index}]"
    entry = _entry(name, where, entry, OP_KEYS)
    where = f"{where} ('{entry['id']}')"
    lists = []
    for key in ("reads", "writes", "after"):
        value = entry.get(key, [])
        if not isinstance(value, list) or not all(_is_id(item) for item in value):
            raise GraphError(f"{name}: {where}: '{key}' is a list of ids (strings or integers)")
        lists.append(tuple(value))
    return GraphOp(entry["id"], *lists, barrier=_flag(name, where, entry, "barrier"))


def _flag(name: str, where: str, entry: dict, key: str) -> bool:
    value = entry.get(key, False)
    if not isinstance(value, bool):
        raise GraphError(f"{name}: {where}: '{key}' is true or false, not '{value}'")
    return value


def _is_id(value: object) -> bool:
    return isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool))


def _kind(value: object) -> str:
    return {dict: "an object", list: "a list", str: "a string", bool: "a boolean", type(None): "null"}.get(
        type(value), "a number")


def schedule_to_json(graph: Graph, result: Schedule) -> str:
    """The answer: the order of op ids, LOAD before and after, and what each method found
    (no times: the same graph gives the same file on every run without a time limit)."""
    document = {
        "order": [_plain(op_id) for op_id in result.ids(graph)],
        "method": result.method,
        "load": result.load,
        "given_load": result.given_load,
        "proved": result.proved,
        "trials": [{"method": t.method, "load": t.load, "proved": t.proved} for t in result.trials],
    }
    return json.dumps(document, indent=2) + "\n"


def write_schedule(path: str | os.PathLike, graph: Graph, result: Schedule) -> None:
    """`schedule_to_json` into `path`, whole or not at all."""
    write_atomically(path, schedule_to_json(graph, result))


def _plain(value: Hashable) -> str | int:
    return value if _is_id(value) else str(value)
