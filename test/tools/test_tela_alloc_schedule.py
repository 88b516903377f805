"""`tela-alloc --schedule`: a graph on file to an op order with a lower LOAD, and its errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from telamalloc.tools.tela_alloc import main

ROOT = Path(__file__).resolve().parents[2]
FORK = ROOT / "examples" / "schedule" / "fork.json"


def test_fork_is_ordered_branch_by_branch(tmp_path, capsys):
    # three 100 B producers of one input: given LOAD 3 * 100 + x = 301; branch by branch
    # one big buffer at a time: x + 100 + two sums = 103, which the exact search proves
    output = tmp_path / "order.json"
    assert main(["--schedule", str(FORK), f"--output={output}"]) == 0
    out = capsys.readouterr().out
    assert "schedule: LOAD 301 -> 103 B (65.8% less)" in out
    assert "proved minimum" in out
    answer = json.loads(output.read_text())
    assert answer["order"][:2] == ["produce0", "reduce0"]
    assert (answer["load"], answer["given_load"], answer["proved"]) == (103, 301, True)
    again = tmp_path / "again.json"
    main(["--schedule", str(FORK), f"--output={again}"])
    assert again.read_bytes() == output.read_bytes()  # no times in the file: byte-identical


def test_lifetimes_csv_plans_with_tela_alloc(tmp_path, capsys):
    lifetimes = tmp_path / "lifetimes.csv"
    assert main(["--schedule", str(FORK), "--schedule-method=lpmf", f"--output={lifetimes}"]) == 0
    assert lifetimes.read_text().splitlines()[:3] == ["id,lower,upper,size", "x,0,5,1", "big0,0,2,100"]
    assert main(["--input", str(lifetimes), "--minimize"]) == 0
    assert "peak: 103" in capsys.readouterr().out


def test_integer_ids_round_trip_through_the_lifetimes_csv(tmp_path, capsys):
    # ids are strings or integers, told apart by their text: integer ids come back from the
    # CSV as the same ids, and tela-alloc --input plans the file it was given
    graph = tmp_path / "graph.json"
    graph.write_text(json.dumps({"buffers": [{"id": 1, "size": 4}, {"id": 2, "size": 8, "output": True}],
                                 "ops": [{"id": 10, "writes": [1]}, {"id": 11, "reads": [1], "writes": [2]}]}))
    lifetimes = tmp_path / "lifetimes.csv"
    assert main(["--schedule", str(graph), f"--output={lifetimes}"]) == 0
    assert lifetimes.read_text().splitlines() == ["id,lower,upper,size", "1,0,2,4", "2,1,2,8"]
    assert main(["--input", str(lifetimes), "--minimize"]) == 0
    assert "peak: 12" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('{"buffers": [], "ops": [\n  {"id": "a"}\n  {"id": "b"}]}', "graph.json:3:3: invalid JSON: expecting ',' delimiter"),
        ('[1, 2]', "graph.json: the graph is a JSON object with 'buffers' and 'ops', not a list"),
        ('{"nodes": []}', "graph.json: unknown key 'nodes'; the graph's keys are 'buffers' and 'ops'"),
        ('{"buffers": [], "ops": [{"id": "a", "read": ["q"]}]}', "graph.json: ops[0]: unknown key 'read'; the keys are"),
        ('{"buffers": [], "ops": [{"reads": []}]}', "graph.json: ops[0]: no 'id'"),
        ('{"buffers": [], "ops": [{"id": "a", "reads": "q"}]}', "graph.json: ops[0] ('a'): 'reads' is a list of ids"),
        ('{"buffers": [], "ops": [{"id": "a", "barrier": "yes"}]}', "graph.json: ops[0] ('a'): 'barrier' is true or false, not 'yes'"),
        ('{"buffers": [{"id": "q", "size": -3}], "ops": []}', "graph.json: buffers[0] ('q'): size '-3' is not a number of bytes"),
        ('{"buffers": [{"id": "q", "size": 1.5}], "ops": []}', "graph.json: buffers[0] ('q'): size '1.5' is not a number of bytes"),
        ('{"buffers": [], "ops": [{"id": "a", "reads": ["q"]}]}', "graph.json: op 'a' reads unknown buffer 'q'"),
        ('{"buffers": [], "ops": [{"id": "a", "after": ["b"]}, {"id": "b"}]}', "graph.json: op 'a' runs after op 'b', which comes later"),
        ('{"buffers": [{"id": "q", "size": 1}, {"id": "q", "size": 2}], "ops": []}', "graph.json: buffer 'q' is listed twice"),
        ('{"buffers": []}', "graph.json: no 'ops': the graph lists its 'buffers' and its 'ops' ([] for none)"),
        ('{"ops": []}', "graph.json: no 'buffers': the graph lists its 'buffers' and its 'ops' ([] for none)"),
        ('{"buffers": [{"id": "q", "size": 1180591620717411303424}], "ops": []}',
         "graph.json: buffers[0] ('q'): size '1180591620717411303424' is beyond the 64-bit limit '9223372036854775807' "
         "bytes; give the size in bytes"),
        ('{"buffers": [{"id": "p", "size": 5000000000000000000}, {"id": "q", "size": 5000000000000000000}], "ops": []}',
         "graph.json: the buffers' sizes add up to '10000000000000000000' bytes, beyond the 64-bit limit "
         "'9223372036854775807'; give sizes in bytes that a LOAD can hold"),
        ('{"buffers": [{"id": "q", "size": ' + "9" * 5000 + '}], "ops": []}',
         "graph.json: a number has more than 4300 digits; sizes are bytes within 64 bits"),
        ('{"buffers": [], "ops": ' + "[" * 3000 + "]" * 3000 + "}",
         "graph.json: the JSON nests too deeply to read; a graph nests three levels (an object of lists of objects, "
         "each holding lists of ids)"),
        ('{"buffers": [{"id": ' + "[" * 500 + "]" * 500 + ', "size": 1}], "ops": []}',
         "graph.json: buffers[0]: the id is a list; ids are strings or integers"),
        ('{"buffers": [{"id": 1, "size": 4}, {"id": "1", "size": 8}], "ops": []}',
         "graph.json: buffers[1]: id \"1\" and buffers[0]'s id 1 are the same text, which the lifetimes CSV and the "
         "messages cannot tell apart; rename one"),
        ('{"buffers": [{"id": 1, "size": 4}], "ops": [{"id": "a", "writes": ["1"]}]}',
         "graph.json: op 'a': 'writes' names buffer \"1\" (a string), but its id is 1 (a number); write the id as "
         "its entry does"),
    ],
)


def test_bad_graphs_are_one_line_errors(tmp_path, capsys, text, message):
    path = tmp_path / "graph.json"
    path.write_text(text)
    output = tmp_path / "order.json"
    assert main(["--schedule", str(path), f"--output={output}"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("tela-alloc: error: ")
    assert str(tmp_path / message.split(":")[0]) in err or message.split(":")[0] in err
    assert message.split(": ", 1)[1] in err
    assert len(err.strip().splitlines()) == 1
    assert not output.exists()


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (["--output=order.txt"], "--output 'order.txt' must end in '.json' (the order) or '.csv' (the lifetimes)"),
        (["--capacity=5"], "--capacity does not apply to --schedule"),
        (["--output=/nonexistent/dir/o.json"], "cannot write '/nonexistent/dir/o.json'"),
    ],
)
def test_bad_usage(capsys, arguments, message):
    assert main(["--schedule", str(FORK), *arguments]) == 2
    assert message in capsys.readouterr().err


def test_missing_file(capsys, tmp_path):
    assert main(["--schedule", str(tmp_path / "none.json")]) == 2
    assert "none.json: cannot read: No such file or directory" in capsys.readouterr().err
