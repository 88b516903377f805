"""STRING tensors with a declared width (`ImportOptions.string_width`, `--string-width`):
byte slots in the scratchpad (`runtime/interp/strings.py`), the string ops run by ONNX's
reference, planned and verified on the interpreter, outputs compared with the reference
evaluator on the model itself."""

from __future__ import annotations

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper  # noqa: E402
from onnx.reference import ReferenceEvaluator  # noqa: E402

from telamalloc.importers.onnx_import import ImportOptions, OnnxImportError, import_onnx  # noqa: E402
from telamalloc.runtime.interp import InterpreterError  # noqa: E402
from telamalloc.runtime.interp.run import argument_name, find_entry  # noqa: E402
from telamalloc.runtime.interp.strings import StringSlotError, decode, encode  # noqa: E402
from telamalloc.verification import verify_program  # noqa: E402


def _model(nodes, inputs, outputs, initializers=(), value_info=()):
    graph = helper.make_graph(nodes, "g", inputs, outputs, initializer=list(initializers), value_info=list(value_info))
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 20)])
    model.ir_version = 9
    return model


def _strings(name: str, shape):
    return helper.make_tensor_value_info(name, TensorProto.STRING, list(shape))


def _normalize_and_compare():
    """Strings through StringNormalizer (upper case, a stop word dropped: the count it
    keeps depends on the values, so the model declares it, as ONNX's own cases do),
    StringConcat with a constant suffix, and Equal against another input: a string output
    and a bool one."""
    nodes = [
        helper.make_node("StringNormalizer", ["words"], ["upper"], case_change_action="UPPER",
                         stopwords=["the"], is_case_sensitive=0),
        helper.make_node("StringConcat", ["upper", "suffix"], ["joined"]),
        helper.make_node("Equal", ["joined", "other"], ["same"]),
    ]
    suffix = helper.make_tensor("suffix", TensorProto.STRING, [1], ["€".encode()])
    return _model(nodes, [_strings("words", [4]), _strings("other", [3])],
                  [_strings("joined", [3]), helper.make_tensor_value_info("same", TensorProto.BOOL, [3])], [suffix],
                  [_strings("upper", [3])])


FEEDS = {"words": np.array(["the", "Tea", "grüner", "Tee"], dtype=object),
         "other": np.array(["TEA€", "x", "TEE€"], dtype=object)}


def _run(model, feeds, width: int):
    imported = import_onnx(model, ImportOptions(string_width=width))
    assert imported.planned_only == {}
    function = find_entry(imported.module, None)
    expected = dict(zip([o.name for o in model.graph.output], ReferenceEvaluator(model).run(None, feeds), strict=True))
    arrays = []
    for name, direction in imported.arguments:
        value = feeds[name] if direction == "in" else expected[name]
        is_string = np.asarray(value).dtype.kind == "O"
        if direction == "in":
            arrays.append(encode(value, width) if is_string else np.asarray(value))
        else:
            arrays.append(np.zeros((*np.shape(value), width) if is_string else np.shape(value), np.int8 if is_string
                                   else np.asarray(value).dtype))
    report = verify_program(imported.module, inputs=arrays)
    values = {output.name: output.value for output in report.values}
    outputs = {name: values[argument_name(function, index)]
               for index, (name, direction) in enumerate(imported.arguments) if direction == "out"}
    return imported, report, outputs, expected


def test_string_ops_plan_verify_and_match_the_reference():
    imported, report, outputs, expected = _run(_normalize_and_compare(), FEEDS, width=16)
    assert report.ok, report.lines()
    # (ONNX's StringNormalizer drops accents when it changes case: "grüner" -> "GRUNER")
    assert decode(outputs["joined"]).tolist() == expected["joined"].tolist() == ["TEA€", "GRUNER€", "TEE€"]
    assert outputs["same"].tolist() == [True, False, True]
    text = str(imported.module)
    assert "memref<4x16xi8>" in text and "onnx_strings" in text  # 4 strings of 16 bytes, the kernels told which


def test_the_width_sizes_every_string_buffer():
    """The planned bytes follow the width: each string tensor is its count times the width."""
    narrow = import_onnx(_normalize_and_compare(), ImportOptions(string_width=8))
    wide = import_onnx(_normalize_and_compare(), ImportOptions(string_width=32))
    assert "memref<3x8xi8" in str(narrow.module) and "memref<3x32xi8" in str(wide.module)


def test_a_string_longer_than_the_width_is_a_run_time_error_not_a_truncation():
    """'GRUNER€' takes 9 bytes in UTF-8 (€ takes 3): with 8-byte slots, which hold every
    input, the StringConcat's output cannot hold it, and the run stops there, naming it."""
    with pytest.raises(InterpreterError) as raised:
        _run(_normalize_and_compare(), FEEDS, width=8)
    message = str(raised.value)
    assert "StringConcat" in message and "'GRUNER€' at [1] takes 9 bytes in UTF-8, more than the string width of 8" in message
    assert "\n" not in message


def test_slots_round_trip_and_refuse_what_they_cannot_hold():
    values = np.array([["", "a"], ["ß", "zz"]], dtype=object)
    slots = encode(values, 4)
    assert slots.shape == (2, 2, 4) and slots.dtype == np.int8
    assert decode(slots).tolist() == values.tolist()
    with pytest.raises(StringSlotError, match=r"string 'abcde' at \[0\] takes 5 bytes"):
        encode(np.array(["abcde"], dtype=object), 4)
    with pytest.raises(StringSlotError, match="holds a NUL byte"):
        encode(np.array(["a\0b"], dtype=object), 4)
    with pytest.raises(StringSlotError, match=r"the 2-byte string slot at \[1\] is not UTF-8 text"):
        decode(np.array([[65, 0], [-1, -1]], dtype=np.int8))


def test_random_bytes_as_string_inputs_are_one_located_error():
    """Random inputs (tela-run without --inputs) are no UTF-8 text: the kernel that reads
    them says so, and how to give strings."""
    model = _model([helper.make_node("StringNormalizer", ["words"], ["upper"], case_change_action="UPPER")],
                   [_strings("words", [2])], [_strings("upper", [2])])
    imported = import_onnx(model, ImportOptions(string_width=8))
    with pytest.raises(InterpreterError, match="is not UTF-8 text; give string inputs as UTF-8 bytes, NUL-padded"):
        verify_program(imported.module, inputs=[np.full((2, 8), -1, np.int8), np.zeros((2, 8), np.int8)])


def test_a_width_that_is_no_positive_number_is_refused():
    with pytest.raises(OnnxImportError, match="string width '0' must be a positive number of bytes"):
        import_onnx(_normalize_and_compare(), ImportOptions(string_width=0))
