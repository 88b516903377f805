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
Both lists are required. Ids are told apart by their text, as in the lifetimes CSV
(`1` and `"1"` cannot name two buffers), and sizes fit in 64 bits, alone and together.
Every error names the file and the entry (`graph.json: ops[2] ('sum'): ...`), or the line
and column of a JSON syntax error. The full description is `docs/schedule-format.md`.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Hashable, Sequence

from telamalloc.files import write_atomically
from telamalloc.runtime.alloc.op_order import Graph, GraphBuffer, GraphOp, Schedule, ScheduleError, build_model
from telamalloc.runtime.alloc.problem import INT64_MAX

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
    except ValueError:  # an integer of more digits than Python converts (`sys.get_int_max_str_digits`)
        raise GraphError(f"{name}: a number has more than {sys.get_int_max_str_digits()} digits; sizes are bytes "
                         "within 64 bits") from None
    except RecursionError:  # Python's JSON reader recurses once per nested list or object
        raise GraphError(f"{name}: the JSON nests too deeply to read; a graph nests three levels (an object of "
                         "lists of objects, each holding lists of ids)") from None
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
    total = sum(buffer.size for buffer in buffers)
    if total > INT64_MAX:
        raise GraphError(f"{name}: the buffers' sizes add up to '{total}' bytes, beyond the 64-bit limit "
                         f"'{INT64_MAX}'; give sizes in bytes that a LOAD can hold")
    _check_spellings(name, buffers, ops)
    graph = Graph(ops, buffers)
    try:
        build_model(graph)  # unknown buffers and ops, repeated ids, a bad size: name the file
    except ScheduleError as error:
        raise GraphError(f"{name}: {error}") from None
    return graph


def _list(name: str, document: dict, key: str) -> list:
    if key not in document:  # a misspelled or forgotten key would otherwise be an empty graph
        raise GraphError(f"{name}: no '{key}': the graph lists its 'buffers' and its 'ops' ([] for none)")
    value = document[key]
    if not isinstance(value, list):
        raise GraphError(f"{name}: '{key}' is a list, not {_kind(value)}")
    return value


def _check_spellings(name: str, buffers: Sequence[GraphBuffer], ops: Sequence[GraphOp]) -> None:
    """Ids are told apart by their text, as in the lifetimes CSV and in every message: `1`
    and `"1"` may not name two buffers (or two ops), and a reference spelled `"1"` to the
    buffer `1` is named as such, not as an unknown buffer."""
    for kind, entries in (("buffers", buffers), ("ops", ops)):
        seen: dict[str, tuple[int, Hashable]] = {}
        for index, entry in enumerate(entries):
            text = str(entry.id)
            if text in seen and type(seen[text][1]) is not type(entry.id):
                first, other = seen[text]
                raise GraphError(
                    f"{name}: {kind}[{index}]: id {json.dumps(entry.id)} and {kind}[{first}]'s id {json.dumps(other)} "
                    "are the same text, which the lifetimes CSV and the messages cannot tell apart; rename one"
                )
            seen.setdefault(text, (index, entry.id))
    for kind, entries, keys in (("buffer", buffers, ("reads", "writes")), ("op", ops, ("after",))):
        ids = {entry.id for entry in entries}
        by_text = {str(entry.id): entry.id for entry in entries}
        for op in ops:
            for key in keys:
                for reference in getattr(op, key):
                    if reference not in ids and str(reference) in by_text:
                        raise GraphError(
                            f"{name}: op '{op.id}': '{key}' names {kind} {json.dumps(reference)} ({_kind(reference)}), "
                            f"but its id is {json.dumps(by_text[str(reference)])} ({_kind(by_text[str(reference)])}); "
                            "write the id as its entry does"
                        )


def _entry(name: str, where: str, entry: object, keys: Sequence[str]) -> dict:
    if not isinstance(entry, dict):
        raise GraphError(f"{name}: {where}: each entry is a JSON object, not {_kind(entry)}")
    for key in entry:
        if key not in keys:
            listed = ", ".join(f"'{k}'" for k in keys)
            raise GraphError(f"{name}: {where}: unknown key '{key}'; the keys are {listed}")
    if "id" not in entry:
        raise GraphError(f"{name}: {where}: no 'id': give each entry an id (a string or an integer)")
    if not _is_id(entry["id"]):  # the value is not quoted: it may be any JSON, nested deep
        raise GraphError(f"{name}: {where}: the id is {_kind(entry['id'])}; ids are strings or integers")
    return entry


def _buffer(name: str, index: int, entry: object) -> GraphBuffer:
    where = f"buffers[{index}]"
    entry = _entry(name, where, entry, BUFFER_KEYS)
    where = f"{where} ('{entry['id']}')"
    size = entry.get("size")
    if not isinstance(size, int) or isinstance(size, bool) or size < 0:
        shown = f"'{size}'" if isinstance(size, int | float | str) else _kind(size)
        raise GraphError(f"{name}: {where}: size {shown} is not a number of bytes; give an integer >= 0")
    if size > INT64_MAX:
        raise GraphError(f"{name}: {where}: size '{size}' is beyond the 64-bit limit '{INT64_MAX}' bytes; "
                         "give the size in bytes")
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
        shown = f"'{value}'" if isinstance(value, int | float | str) or value is None else _kind(value)
        raise GraphError(f"{name}: {where}: '{key}' is true or false, not {shown}")
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
