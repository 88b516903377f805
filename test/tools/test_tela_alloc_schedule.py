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


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('{"ops": [\n  {"id": "a"}\n  {"id": "b"}]}', "graph.json:3:3: invalid JSON: expecting ',' delimiter"),
        ('[1, 2]', "graph.json: the graph is a JSON object with 'buffers' and 'ops', not a list"),
        ('{"nodes": []}', "graph.json: unknown key 'nodes'; the graph's keys are 'buffers' and 'ops'"),
        ('{"ops": [{"id": "a", "read": ["q"]}]}', "graph.json: ops[0]: unknown key 'read'; the keys are"),
        ('{"ops": [{"reads": []}]}', "graph.json: ops[0]: no 'id'"),
        ('{"ops": [{"id": "a", "reads": "q"}]}', "graph.json: ops[0] ('a'): 'reads' is a list of ids"),
        ('{"ops": [{"id": "a", "barrier": "yes"}]}', "graph.json: ops[0] ('a'): 'barrier' is true or false, not 'yes'"),
        ('{"buffers": [{"id": "q", "size": -3}]}', "graph.json: buffers[0] ('q'): size '-3' is not a number of bytes"),
        ('{"buffers": [{"id": "q", "size": 1.5}]}', "graph.json: buffers[0] ('q'): size '1.5' is not a number of bytes"),
        ('{"ops": [{"id": "a", "reads": ["q"]}]}', "graph.json: op 'a' reads unknown buffer 'q'"),
        ('{"ops": [{"id": "a", "after": ["b"]}, {"id": "b"}]}', "graph.json: op 'a' runs after op 'b', which comes later"),
        ('{"buffers": [{"id": "q", "size": 1}, {"id": "q", "size": 2}]}', "graph.json: buffer 'q' is listed twice"),
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
