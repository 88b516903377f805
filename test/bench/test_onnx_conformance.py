"""bench/onnx_conformance on a representative subset of ONNX's backend tests: every case that
runs matches ONNX's expected outputs, none crashes, and a wrong number would be caught.
The whole suite is the benchmark's (docs/benchmarks.md, section onnx_conformance).
Generating ONNX's node cases (importing the onnx package's case modules) takes ~5 s, once."""

from __future__ import annotations

import dataclasses
import importlib.machinery
import importlib.util
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("onnx")

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "bench" / "onnx_conformance"
_LOADER = importlib.machinery.SourceFileLoader("onnx_conformance", str(SCRIPT))
_SPEC = importlib.util.spec_from_loader("onnx_conformance", _LOADER)
conformance = importlib.util.module_from_spec(_SPEC)
sys.modules["onnx_conformance"] = conformance  # dataclasses look their module up
_LOADER.exec_module(conformance)

# Cases that run and match: elementwise, broadcasting, matmul, conv, pooling, softmax,
# normalizations, global pooling, views, integer and boolean tensors.
MATCHING = (
    "test_abs", "test_add_bcast", "test_matmul_3d", "test_gemm_all_attributes", "test_conv_with_strides_padding",
    "test_maxpool_2d_pads", "test_averagepool_2d_ceil", "test_softmax_axis_0", "test_batchnorm_epsilon",
    "test_globalaveragepool", "test_leakyrelu", "test_flatten_axis2",
    "test_transpose_all_permutations_3", "test_concat_3d_axis_1", "test_clip_default_int8_inbounds",
    "test_lrn", "test_relu", "test_erf", "test_sum_one_input",
    # on ONNX's reference implementation: no hand-written kernel, or attributes outside it, or
    # a second output read, or an element type through ml_dtypes
    "test_less", "test_where_example", "test_top_k", "test_attention_3d", "test_div_int8", "test_maxpool_1d_default",
    "test_layer_normalization_4d_axis1", "test_reduce_sum_keepdims_example", "test_cast_FLOAT_to_BFLOAT16",
    "test_cast_FLOAT_to_INT4", "test_dequantizelinear_float4e2m1",
    # other domains on the reference: a training optimizer, a classic ML op; an operator ONNX
    # defines as a function; a Loop whose body reads only its own inputs
    "test_adam", "test_ai_onnx_ml_binarizer", "test_group_normalization_example", "test_loop11",
    "test_flexattention_score_mod",
    # a sequence input (its tensors' shapes from the case's data) and a sequence output
    "test_sequence_insert_at_back", "test_sequence_map_extract_shapes",
    # strings in 64-byte slots (multi-byte UTF-8, broadcasting), a string compared to a bool
    "test_string_concat_utf8", "test_string_concat_broadcasting", "test_equal_string",
    "test_ai_onnx_ml_label_encoder_string_int", "test_strnormalizer_export_monday_casesensintive_upper",
)
# Cases refused or not run today, each for another reason (they may run one day: then they move above).
OTHERS = ("test_string_split_empty_tensor", "test_sequence_insert_at_front", "test_constantofshape_float_ones")


@pytest.fixture(scope="module")
def cases():
    found = conformance.all_cases(["node"], set(MATCHING + OTHERS), None)
    assert {case.name for case in found} == set(MATCHING + OTHERS)
    return {case.name: case for case in found}


@pytest.mark.parametrize("name", MATCHING)
def test_the_case_runs_and_matches_onnx(cases, name):
    outcome = conformance.run_case(cases[name])
    assert outcome.outcome == "match", outcome


@pytest.mark.parametrize("name", OTHERS)
def test_a_case_that_does_not_run_says_why(cases, name):
    outcome = conformance.run_case(cases[name])
    assert outcome.outcome in ("refused", "not run", "match"), outcome
    assert outcome.outcome == "match" or outcome.reason


@pytest.mark.parametrize("name", ["test_sequence_model3", "test_sequence_model5", "test_sequence_model7",
                                  "test_gradient_of_add_and_mul", "test_strnorm_model_monday_insensintive_upper_twodim"])
def test_a_simple_model_runs_and_matches_onnx(name):
    """Sequences built in the graph, resolved at import (insert/erase/at with negative
    positions, concat with a new axis, split without keepdims); a Gradient resolved at
    import; strings in a 2-D tensor."""
    (case,) = conformance.all_cases(["simple"], {name}, None)
    outcome = conformance.run_case(case)
    assert outcome.outcome == "match", outcome


def test_a_wrong_expected_output_is_caught(cases):
    case = cases["test_relu"]
    wrong = tuple(np.asarray(value) + np.asarray(1, dtype=value.dtype) for value in case.outputs)
    outcome = conformance.run_case(dataclasses.replace(case, outputs=wrong))
    assert outcome.outcome == "WRONG" and "elements differ" in outcome.detail


def test_the_comparison_is_onnx_s():
    assert conformance.compare(np.float32([1.0, np.nan]), np.float32([1.0005, np.nan]), 1e-3, 1e-7)[:2] == (True, False)
    assert not conformance.compare(np.float32([1.0]), np.float32([1.01]), 1e-3, 1e-7)[0]
    assert not conformance.compare(np.int64([2]), np.int64([3]), 1e-3, 1e-7)[0]
    assert conformance.compare(np.int64([2, 3]), np.int64([2, 3]), 1e-3, 1e-7)[:2] == (True, True)


@pytest.mark.slow  # a second process generates every node case again (~5 s)
def test_the_script_prints_the_table():
    names = ",".join(("test_abs", "test_string_concat", "test_string_split_empty_tensor"))
    result = subprocess.run([sys.executable, str(SCRIPT), "--directories", "node", "--cases", names],
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    row = next(line for line in lines if line.startswith("node")).split()
    assert (row[1], row[6]) == ("3", "2")  # strings in 64-byte slots match; the split's count is unknown
    assert any("a shape unknown after ONNX's shape inference (StringSplit 1)" in line for line in lines)
    assert "Traceback" not in result.stderr


def test_the_cache_keeps_an_outcome_per_case_and_skips_a_line_cut_short(cases, tmp_path):
    case = cases["test_abs"]
    key = conformance.cache_key(case, "telamalloc", "digest")
    outcome = conformance.run_case(case)
    path = tmp_path / "cache.jsonl"
    conformance.append_cache(path, key, outcome)
    with open(path, "a") as stream:
        stream.write('{"key": "telamalloc/node/test_add/')  # a run killed while writing
    assert conformance.read_cache(path) == {key: outcome}
    other = conformance.cache_key(dataclasses.replace(case, model=cases["test_relu"].model), "telamalloc", "digest")
    assert other != key != conformance.cache_key(case, "iree", "digest")


def test_the_cached_only_table_states_its_coverage(tmp_path, capsys):
    path = tmp_path / "cache.jsonl"
    assert conformance.main(["--directories", "node", "--cases", "test_abs", "--cache", str(path)]) == 0
    capsys.readouterr()
    assert conformance.main(["--directories", "node", "--cases", "test_abs,test_relu", "--cache", str(path),
                             "--cached-only"]) == 0
    table = capsys.readouterr().out
    assert "coverage: 1 of the 2 chosen cases have run" in table
    assert next(line for line in table.splitlines() if line.startswith("node")).split()[1] == "1"


FAKE_WORKER = """
import json, os, subprocess, sys, time
for line in sys.stdin:
    argv = json.loads(line)
    if argv == ["die"]:
        os.kill(os.getpid(), 9)
    if argv[0] == "hang":  # a child of the case (as IREE's importer or the JIT would be), then hangs
        child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
        open(argv[1], "w").write(str(child.pid))
        time.sleep(60)
    print(json.dumps([0, "pid %d" % os.getpid()]), flush=True)
"""


def test_a_worker_that_dies_or_hangs_is_that_case_s_crash_and_is_replaced(monkeypatch, tmp_path):
    import time

    monkeypatch.setattr(conformance, "WORKER", FAKE_WORKER)
    worker = conformance.IreeWorker(timeout=1)
    try:
        status, first = worker.run(["ok"])
        assert status == 0 and worker.run(["ok"])[1] == first  # one process for the cases
        assert worker.run(["die"]) == (None, "the worker process died (killed by a signal: an abort or a crash of "
                                             "native code)")
        status, second = worker.run(["ok"])
        assert status == 0 and second != first  # replaced
        assert worker.run(["hang", str(tmp_path / "child")]) == (None, "timed out after 1 s")
        child = int((tmp_path / "child").read_text())
        stat = Path(f"/proc/{child}/stat")
        for _ in range(100):  # the case's child ends with the worker's process group (gone, or a zombie)
            try:
                if stat.read_text().rsplit(")", 1)[1].split()[0] == "Z":
                    break
            except (FileNotFoundError, ProcessLookupError):
                break
            time.sleep(0.05)
        else:
            pytest.fail(f"the hung case's child {child} outlived the worker")
        assert worker.run(["ok"])[0] == 0
    finally:
        worker.close()
    assert worker.process is None


@pytest.mark.slow  # IREE's importer, iree-opt and MLIR's JIT: ~5 s a case
def test_the_iree_run_goes_through_the_worker_and_resumes_from_the_cache(tmp_path, capsys):
    if importlib.util.find_spec("iree") is None:  # (not imported here: IREE's MLIR would clash with MLIR's)
        pytest.skip("IREE's compiler is not installed")
    path = tmp_path / "cache.jsonl"
    # f32, bool tensors (i1 memrefs, run as bytes), and indices that must be the case's own
    # (random ones read out of range: a run that differed before and after planning)
    names = "test_abs,test_and2d,test_gather_0"
    assert conformance.main(["--frontend", "iree", "--directories", "node", "--cases", names, "--cache", str(path)]) == 0
    first = capsys.readouterr().out
    assert next(line for line in first.splitlines() if line.startswith("node")).split()[6] == "3"  # all match
    assert conformance.main(["--frontend", "iree", "--directories", "node", "--cases", names, "--cache", str(path),
                             "--cached-only"]) == 0
    assert capsys.readouterr().out == first


def test_iree_reasons_group_messages_without_their_names():
    reason = conformance.iree_reason(
        "tela-import: error: /tmp/x/case.onnx: planning failed: the size of buffer 'alloc_13' of dynamic type "
        "'memref<2x?xf32>' is not an expression of the function's dimensions: '%38' comes from 'arith.select'")
    assert reason == ("iree: planning failed: the size of buffer '…' of dynamic type '…' is not an expression of the "
                      "fu", ())
    assert conformance.iree_reason("tela-import: error: m.onnx: node 'n1' (Attention): iree-opt cannot lower it")[1] == \
        ("Attention",)


def test_an_unknown_case_is_a_usage_error(cases, capsys):
    with pytest.raises(SystemExit) as stopped:
        conformance.main(["--directories", "node", "--cases", "test_no_such_case"])
    assert stopped.value.code == 2 and "test_no_such_case" in capsys.readouterr().err
