"""ONNX operators without a hand-written kernel, run by ONNX's own reference implementation.

The ONNX importer maps the operators whose bits must match on every CPU to the kernel
library (`kernels.py`, on `detmath`'s CPU-independent numerics). Every other operator of
the default ONNX domain becomes `scratchpad.kernel "onnx.<OpType>"` carrying its node:
parameter `onnx_node` (the `NodeProto`, serialized and base64-encoded, its inputs renamed
`in0, in1, ...` in the order of the kernel's `ins` and its outputs `out0, out1, ...` in the
order of its `outs`, an omitted optional one left empty) and `onnx_opset` (the model's
default-domain opset). This module runs such a kernel: it builds a one-node model of that
opset and runs `onnx.reference.ReferenceEvaluator` on the arrays the interpreter read from
the virtual memory, then returns the outputs for the interpreter to write, so the shadow
memory checks every read and write as for any kernel.

Bits. The reference implementation computes with numpy, whose sums (BLAS, pairwise
reductions) and transcendental functions may round differently on another CPU: these
kernels are deterministic on one machine, not across machines. `tela-run --verify`
compares runs before and after planning on the same machine, so it proves a plan with
them all the same; goldens that must hold on every CPU use the hand-written kernels
(`docs/tools/tela-run.md`, "What it runs", lists which are which).

Only the `onnx` package (and numpy) is imported, and only when such a kernel runs.
"""

from __future__ import annotations

import base64
import functools
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from .kernel_args import KernelError, shape_text
from .strings import StringSlotError, decode, encode

PREFIX = "onnx."
"""The kernel names of ONNX operators (`onnx.Less`); those with an `onnx_node` param run here."""

NODE_PARAM = "onnx_node"
OPSET_PARAM = "onnx_opset"
DOMAIN_OPSET_PARAM = "onnx_domain_opset"
"""The model's opset of the node's domain when it is not the default one (`ai.onnx.ml`,
`ai.onnx.preview.training`: the node's `domain` says which)."""
STRINGS_PARAM = "onnx_strings"
"""The positions, among the kernel's ins then outs, of STRING operands: `i8` memrefs of the
tensor's shape and one more dimension, each string's NUL-padded UTF-8 bytes
(`strings.py`); decoded to Python strings for the reference, its strings encoded back."""


def is_reference_kernel(name: str, params: Mapping[str, Any]) -> bool:
    """Whether kernel `name` with `params` is an ONNX node this module runs."""
    return name.startswith(PREFIX) and NODE_PARAM in params


@functools.lru_cache(maxsize=512)
def _evaluator(encoded: str, opset: int, domain_opset: int | None = None, types: tuple = ()):
    """The node's one-node evaluator; `types`, each input's (numpy dtype, rank), types the
    inputs, which an operator defined by a context-dependent function (GroupNormalization,
    Gelu) needs to expand its body."""
    from onnx import NodeProto, helper
    from onnx.reference import ReferenceEvaluator

    node = NodeProto()
    node.ParseFromString(base64.b64decode(encoded))
    present = [name for name in node.input if name]
    inputs = [helper.make_empty_tensor_value_info(name) for name in present]
    if len(types) == len(present):
        inputs = [_typed(name, dtype, rank) or value for name, (dtype, rank), value in zip(present, types, inputs)]
    outputs = [helper.make_empty_tensor_value_info(name) for name in node.output if name]
    graph = helper.make_graph([node], "kernel", inputs, outputs)
    opsets = [helper.make_opsetid("", opset)]
    if node.domain not in ("", "ai.onnx"):
        opsets.append(helper.make_opsetid(node.domain, domain_opset or 1))
    model = helper.make_model(graph, opset_imports=opsets)
    return node, ReferenceEvaluator(model)


def _typed(name: str, dtype: str, rank: int):
    """A value info of `name` with numpy `dtype`'s element type and `rank` unknown
    dimensions, or None for a dtype ONNX's table does not map."""
    from onnx import helper

    try:
        element = helper.np_dtype_to_tensor_dtype(np.dtype(dtype))
    except (KeyError, TypeError, ValueError):
        return None
    return helper.make_tensor_value_info(name, element, [None] * rank)


def run_reference_kernel(name: str, ins: Sequence[np.ndarray], outs: Sequence[np.ndarray],
                         params: Mapping[str, Any]) -> list[np.ndarray]:
    """The outputs of ONNX node `params["onnx_node"]` on `ins`, each of its `outs`'s shape
    and dtype (the caller writes them). Raises `KernelError` (one line) when the node does
    not decode, the reference implementation fails, or an output's shape differs from the
    planned one."""
    encoded, opset = params.get(NODE_PARAM), params.get(OPSET_PARAM)
    domain_opset = params.get(DOMAIN_OPSET_PARAM)
    if not isinstance(encoded, str) or isinstance(opset, bool) or not isinstance(opset, int) or (
            domain_opset is not None and (isinstance(domain_opset, bool) or not isinstance(domain_opset, int))):
        raise KernelError(f"kernel '{name}' needs the string parameter '{NODE_PARAM}' and the integer '{OPSET_PARAM}' "
                          f"(and '{DOMAIN_OPSET_PARAM}' an integer when given)")
    strings = params.get(STRINGS_PARAM) or []
    if not isinstance(strings, list) or not all(isinstance(i, int) and 0 <= i < len(ins) + len(outs) for i in strings):
        raise KernelError(f"kernel '{name}': '{STRINGS_PARAM}' must list operand positions below {len(ins) + len(outs)}")
    try:
        ins = [decode(array) if index in strings else array for index, array in enumerate(ins)]
    except StringSlotError as error:
        raise KernelError(f"kernel '{name}': {error}") from None
    try:
        types = tuple((array.dtype.str, array.ndim) for array in ins)
        node, evaluator = _evaluator(encoded, opset, domain_opset, types)
    except ImportError:
        raise KernelError(f"kernel '{name}' runs ONNX's reference implementation: install the onnx package") from None
    except Exception as error:  # a malformed parameter or an operator the reference lacks
        raise KernelError(f"kernel '{name}': ONNX's reference implementation cannot run this node: "
                          f"{_first_line(error)}") from None
    feeds = {input_name: np.array(array, copy=True)  # a copy: the reference may write into its inputs
             for input_name, array in zip((n for n in node.input if n), ins, strict=False)}
    if len(feeds) != len([n for n in node.input if n]) or len(ins) != len(feeds):
        raise KernelError(f"kernel '{name}' takes {len(feeds)} inputs but {len(ins)} are given")
    try:
        with np.errstate(all="ignore"):
            results = evaluator.run(None, feeds)
    except Exception as error:  # the reference raises whatever numpy raises
        raise KernelError(f"kernel '{name}': ONNX's reference implementation failed: {_first_line(error)}") from None
    if len(results) != len(outs):
        raise KernelError(f"kernel '{name}' computes {len(results)} outputs but {len(outs)} are given")
    values = []
    for index, (result, out) in enumerate(zip(results, outs, strict=True)):
        result = np.asarray(result)
        if len(ins) + index in strings:
            try:
                result = encode(result, out.shape[-1] if out.ndim else 0)
            except StringSlotError as error:
                raise KernelError(f"kernel '{name}' output #{index}: {error}") from None
        if tuple(result.shape) != tuple(out.shape):
            raise KernelError(f"kernel '{name}' output #{index} has shape {shape_text(result.shape)} but "
                              f"{shape_text(out.shape)} was planned")
        values.append(result)
    return values


def _first_line(error: BaseException) -> str:
    lines = [line.strip() for line in str(error).splitlines() if line.strip()]
    return f"{type(error).__name__}: {lines[0]}" if lines else type(error).__name__


__all__ = ["DOMAIN_OPSET_PARAM", "NODE_PARAM", "OPSET_PARAM", "PREFIX", "STRINGS_PARAM", "is_reference_kernel",
           "run_reference_kernel"]
