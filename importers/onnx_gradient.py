"""`Gradient` (`ai.onnx.preview.training`) resolved at import: reverse-mode differentiation
written out as default-domain nodes.

ONNX's `Gradient(xs, zs, y)` node stands for the partial derivatives of the tensor `y`
with respect to the tensors named in `xs`, at the values its inputs give for `xs` then
`zs`. It is not a kernel (no runtime implements it, `onnx.reference` included) but a
request to differentiate part of the graph, so the import does it once, before anything
else reads the graph: `resolve_gradients` replaces each `Gradient` node by the nodes of
a reverse-mode pass, and the rest of the import plans and runs ordinary ops.

What is built, per `Gradient` node:
- the forward nodes from `xs` and `zs` to `y` (the ancestors of `y`, stopping at the
  named tensors and at graph inputs and constants): reused where the node's inputs are the
  named tensors themselves (the common case), copied with the given values otherwise;
- the seed: a tensor of ones of `y`'s shape and element type (for a scalar `y`, dy/dy = 1;
  for another shape, the gradient of the sum of `y`'s elements, the only reading that gives
  each output `x`'s shape);
- per forward node, in reverse order, the vector-Jacobian product of its op, summed over
  the uses of each tensor; a gradient of a broadcast operand is summed back to the
  operand's shape (`ReduceSum` over the broadcast axes, then `Reshape`);
- an `x` that `y` does not depend on gets zeros of its shape.

The ops differentiated (`DIFFERENTIABLE`): Add, Sub, Mul, Div, Neg, Identity, Sum, Relu,
Sigmoid, Tanh, Exp, and MatMul of 2-D operands. Anything else on the path from `xs` to
`y`, a shape not known statically where broadcasting or the seed needs it, a named tensor
that is no tensor of the graph, or a `Gradient` inside a subgraph is refused with one
line naming the node.
"""

from __future__ import annotations

from typing import Any

from telamalloc.importers.onnx_graph import OnnxImportError, fresh_name, inferred_tensors, node_label

GRADIENT_DOMAIN = "ai.onnx.preview.training"

DIFFERENTIABLE = ("Add", "Sub", "Mul", "Div", "Neg", "Identity", "Sum", "Relu", "Sigmoid", "Tanh", "Exp", "MatMul")
"""The default-domain op types whose derivatives `resolve_gradients` writes out."""


def has_gradients(graph) -> bool:
    return any(node.op_type == "Gradient" and node.domain == GRADIENT_DOMAIN for node in graph.node)


class _Differentiator:
    """The reverse-mode pass of one model: fresh names, the emitted nodes, shapes and types."""

    def __init__(self, model):
        import onnx

        self.onnx = onnx
        graph = model.graph
        self.opset = next((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), 1)
        self.names = {name for node in graph.node for name in (*node.input, *node.output)}
        self.names |= {value.name for value in (*graph.input, *graph.output, *graph.initializer)}
        self.producer = {name: node for node in graph.node for name in node.output if name}
        self.shapes, self.types = inferred_tensors(model)
        self.emitted: list = []

    # -- emitting ------------------------------------------------------------------
    def fresh(self, base: str) -> str:
        return fresh_name(self.names, base)

    def emit(self, op_type: str, inputs, base: str, **attributes) -> str:
        output = self.fresh(base)
        self.emitted.append(self.onnx.helper.make_node(op_type, list(inputs), [output], **attributes))
        return output

    def filled(self, like: str, value: float, base: str, at: Any) -> str:
        """A constant of `like`'s static shape and element type, every element `value`."""
        import numpy as np

        shape = self.static_shape(like, at)
        dtype = self.onnx.helper.tensor_dtype_to_np_dtype(self.types[like])
        tensor = self.onnx.numpy_helper.from_array(np.full(shape, value, dtype=dtype))
        output = self.fresh(base)
        self.emitted.append(self.onnx.helper.make_node("Constant", [], [output], value=tensor))
        return output

    def static_shape(self, name: str, at: Any) -> tuple[int, ...]:
        shape = self.shapes.get(name)
        if shape is None or any(dim is None for dim in shape) or name not in self.types:
            raise OnnxImportError(f"{node_label(at)}: the shape of '{name}' is not known statically; the import "
                                  "differentiates static shapes only: bind the model's symbolic dimensions with --dim NAME=VALUE")
        return tuple(int(dim) for dim in shape)

    def unbroadcast(self, gradient: str, operand: str, result: str, at: Any) -> str:
        """`gradient` (of `result`'s shape) summed back to `operand`'s shape."""
        import numpy as np

        target, source = self.static_shape(operand, at), self.static_shape(result, at)
        if target == source:
            return gradient
        padded = (1,) * (len(source) - len(target)) + target
        axes = [axis for axis, (size, full) in enumerate(zip(padded, source, strict=True)) if size == 1 and full != 1]
        if axes:
            if self.opset >= 13:
                axes_name = self.emit("Constant", [], f"{gradient}.axes",
                                      value=self.onnx.numpy_helper.from_array(np.array(axes, dtype=np.int64)))
                gradient = self.emit("ReduceSum", [gradient, axes_name], f"{gradient}.sum", keepdims=1)
            else:
                gradient = self.emit("ReduceSum", [gradient], f"{gradient}.sum", axes=axes, keepdims=1)
        shape = self.emit("Constant", [], f"{gradient}.shape",
                          value=self.onnx.numpy_helper.from_array(np.array(target, dtype=np.int64)))
        return self.emit("Reshape", [gradient, shape], f"{gradient}.reshaped")

    # -- one Gradient node ---------------------------------------------------------
    def resolve(self, node) -> None:
        attributes = {a.name: self.onnx.helper.get_attribute_value(a) for a in node.attribute}
        xs = [name.decode() if isinstance(name, bytes) else name for name in attributes.get("xs", [])]
        zs = [name.decode() if isinstance(name, bytes) else name for name in attributes.get("zs", [])]
        y = attributes.get("y", b"")
        y = y.decode() if isinstance(y, bytes) else y
        if not xs or not y:
            raise OnnxImportError(f"{node_label(node)}: a Gradient needs its 'xs' and 'y' attributes; the model is "
                                  "malformed: export it again")
        if len(node.input) != len(xs) + len(zs):
            raise OnnxImportError(f"{node_label(node)}: a Gradient takes one input per name of 'xs' and 'zs' "
                                  f"({len(xs) + len(zs)}), not {len(node.input)}; the model is malformed: export it again")
        for name in (*xs, *zs, y):
            if name not in self.names:
                raise OnnxImportError(f"{node_label(node)}: '{name}' (named by the Gradient) is no tensor of the graph; "
                                      "name tensors of the main graph")
        values = dict(zip((*xs, *zs), node.input, strict=True))
        forward = self._forward(node, y, set(values))
        renamed = self._evaluate(forward, values)
        seed = self.filled(renamed.get(y, y), 1.0, f"{y}.grad", node)
        gradients: dict[str, str] = {renamed.get(y, y): seed}
        for step in reversed(forward):
            inputs = [renamed.get(name, name) for name in step.input]
            output = renamed.get(step.output[0], step.output[0])
            if output not in gradients:
                continue
            for operand, contribution in self._vjp(step, inputs, output, gradients[output]):
                known = gradients.get(operand)
                gradients[operand] = contribution if known is None else self.emit("Add", [known, contribution],
                                                                                  f"{operand}.grad")
        for x, output in zip(xs, node.output, strict=False):
            if not output:
                continue
            value = values[x]
            gradient = gradients.get(value)
            if gradient is None:
                gradient = self.filled(value, 0.0, f"{x}.grad.zero", node)
            self.emitted.append(self.onnx.helper.make_node("Identity", [gradient], [output]))

    def _forward(self, gradient, y: str, named: set[str]) -> list:
        """The nodes between the named tensors and `y`, producers first."""
        order: list = []
        seen: set[int] = set()

        def visit(name: str) -> None:
            node = self.producer.get(name)
            if name in named or node is None or id(node) in seen:
                return
            seen.add(id(node))
            for operand in node.input:
                if operand:
                    visit(operand)
            order.append(node)

        visit(y)
        for node in order:
            if node.domain not in ("", "ai.onnx") or node.op_type not in DIFFERENTIABLE:
                raise OnnxImportError(
                    f"{node_label(gradient)}: differentiates through {node_label(node)}, which the import cannot "
                    f"differentiate (it differentiates {', '.join(DIFFERENTIABLE)})"
                )
            if node.op_type == "MatMul" and any(len(self.static_shape(name, node)) != 2 for name in node.input):
                raise OnnxImportError(f"{node_label(gradient)}: differentiates through {node_label(node)} of "
                                      "operands that are not 2-D; the import differentiates 2-D MatMul only")
        return order

    def _evaluate(self, forward: list, values: dict[str, str]) -> dict[str, str]:
        """Where the Gradient's inputs are not the named tensors themselves, the forward nodes
        again on the given values; the map from each forward tensor to the one to use."""
        renamed = {name: value for name, value in values.items() if name != value}
        if not renamed:
            return {}
        for node in forward:
            inputs = [renamed.get(name, name) for name in node.input]
            output = self.fresh(f"{node.output[0]}.at")
            copy = self.onnx.helper.make_node(node.op_type, inputs, [output], domain=node.domain)
            copy.attribute.extend(node.attribute)
            self.emitted.append(copy)
            self.shapes[output] = self.shapes.get(node.output[0], ())
            if node.output[0] in self.types:
                self.types[output] = self.types[node.output[0]]
            renamed[node.output[0]] = output
        for name, value in values.items():  # the given values have the named tensors' shapes
            self.shapes.setdefault(value, self.shapes.get(name, ()))
            if name in self.types:
                self.types.setdefault(value, self.types[name])
        return renamed

    def _vjp(self, node, inputs: list[str], output: str, g: str) -> list[tuple[str, str]]:
        """(operand, its gradient) for each input of `node`, given `g`, the gradient of its output."""
        op = node.op_type
        if op in ("Identity", "Sum") or (op == "Add" and len(inputs) == 2):
            return [(name, self.unbroadcast(g, name, output, node)) for name in inputs]
        if op == "Neg":
            return [(inputs[0], self.emit("Neg", [g], f"{inputs[0]}.grad"))]
        a, b = (inputs + [""])[:2]
        if op == "Sub":
            negated = self.emit("Neg", [g], f"{b}.grad")
            return [(a, self.unbroadcast(g, a, output, node)), (b, self.unbroadcast(negated, b, output, node))]
        if op == "Mul":
            return [(a, self.unbroadcast(self.emit("Mul", [g, b], f"{a}.grad"), a, output, node)),
                    (b, self.unbroadcast(self.emit("Mul", [g, a], f"{b}.grad"), b, output, node))]
        if op == "Div":
            ga = self.emit("Div", [g, b], f"{a}.grad")
            gb = self.emit("Neg", [self.emit("Div", [self.emit("Mul", [g, output], f"{b}.grad"), b], f"{b}.grad")],
                           f"{b}.grad")  # d(a/b)/db = -(a/b)/b
            return [(a, self.unbroadcast(ga, a, output, node)), (b, self.unbroadcast(gb, b, output, node))]
        if op == "Relu":
            zero = self.filled(a, 0.0, f"{a}.zero", node)
            return [(a, self.emit("Where", [self.emit("Greater", [a, zero], f"{a}.positive"), g, zero], f"{a}.grad"))]
        if op in ("Sigmoid", "Tanh"):
            one = self.filled(output, 1.0, f"{output}.one", node)
            if op == "Sigmoid":  # s (1 - s)
                slope = self.emit("Mul", [output, self.emit("Sub", [one, output], f"{a}.grad")], f"{a}.grad")
            else:  # 1 - t^2
                slope = self.emit("Sub", [one, self.emit("Mul", [output, output], f"{a}.grad")], f"{a}.grad")
            return [(a, self.emit("Mul", [g, slope], f"{a}.grad"))]
        if op == "Exp":
            return [(a, self.emit("Mul", [g, output], f"{a}.grad"))]
        # MatMul of 2-D operands: dA = g B^T, dB = A^T g
        b_t = self.emit("Transpose", [b], f"{b}.T", perm=[1, 0])
        a_t = self.emit("Transpose", [a], f"{a}.T", perm=[1, 0])
        return [(a, self.emit("MatMul", [g, b_t], f"{a}.grad")), (b, self.emit("MatMul", [a_t, g], f"{b}.grad"))]


def resolve_gradients(model) -> int:
    """Replaces every `Gradient` node of the main graph by its reverse-mode pass (see the
    module doc), in place; the number of `Gradient` nodes resolved. `OnnxImportError` for
    what cannot be differentiated. Nodes inside subgraphs are not opened: a `Gradient`
    there is left to the interpreter, which refuses it."""
    graph = model.graph
    if not has_gradients(graph):
        return 0
    differentiator = _Differentiator(model)
    nodes = []
    count = 0
    for node in graph.node:
        if node.op_type == "Gradient" and node.domain == GRADIENT_DOMAIN:
            differentiator.emitted = []
            differentiator.resolve(node)
            nodes.extend(differentiator.emitted)
            count += 1
        else:
            nodes.append(node)
    del graph.node[:]
    graph.node.extend(nodes)
    if not any(node.domain == GRADIENT_DOMAIN for node in graph.node):
        kept = [o for o in model.opset_import if o.domain != GRADIENT_DOMAIN]
        del model.opset_import[:]
        model.opset_import.extend(kept)
    return count
