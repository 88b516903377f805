"""Real models from the onnx package (issue 15, item 6).

- The "light" models (`onnx/backend/test/data/light/`: alexnet, densenet121, inception
  v1/v2, resnet50, shufflenet, squeezenet, vgg19, zfnet512): the real graphs, with their
  weights as `ConstantOfShape` nodes. Those are constant-foldable subgraphs: imported like
  initializers (in main memory, moved in by `dma` right before their first reader), not
  as scratchpad intermediates live from the start. Each imports and plans at its LOAD.
  The reference interpreter runs none of them (LRN, Gemm, Concat, Dropout,
  BatchNormalization, GlobalAveragePool have no interpreter kernel), so none is
  executed here.
- The backend test models (`pytorch-converted`, `pytorch-operator`, `simple`; about 140):
  every one that imports with interpreter kernels only runs on the interpreter with its
  test inputs and must match ONNX's reference outputs within the backend test's own
  rtol/atol; planned and unplanned runs must agree bit for bit.

CI runs four light models (one of each family of layers) and every runnable backend model
(together about 20 s); `HYPOTHESIS_PROFILE=long` runs all nine light models.
"""

from __future__ import annotations

import os
from collections import Counter
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import numpy_helper

from telamalloc.dialects.scratchpad import DmaOp, KernelOp, ScratchpadSpaceAttr
from telamalloc.importers.onnx_import import import_onnx
from telamalloc.passes.tela_plan import collect_module, plan_module
from telamalloc.runtime.alloc.validate import compute_load
from telamalloc.runtime.interp import run_program
from telamalloc.verification import verify_program

LONG = os.environ.get("HYPOTHESIS_PROFILE") == "long"
DATA = Path(onnx.__file__).parent / "backend" / "test" / "data"

# name -> LOAD in bytes with the weights as main-memory constants (with them as
# scratchpad intermediates, as before, the LOADs were 245960608, 39875744, 34374816,
# 51305888, 111730592, 8785760, 11240864, 600351904 and 358069920 bytes).
LIGHT_LOADS = {
    "light_bvlc_alexnet": 151064576,
    "light_densenet121": 8430464,
    "light_inception_v1": 6422528,
    "light_inception_v2": 6423552,
    "light_resnet50": 10741760,
    "light_shufflenet": 3112704,
    "light_squeezenet": 6308352,
    "light_vgg19": 411174912,
    "light_zfnet512": 302096384,
}
CI_LIGHT = ("light_bvlc_alexnet", "light_inception_v1", "light_resnet50", "light_squeezenet")


@pytest.mark.parametrize("name", sorted(LIGHT_LOADS) if LONG else CI_LIGHT)
def test_light_model_imports_with_constant_weights_and_plans_at_load(name: str) -> None:
    path = DATA / "light" / f"{name}.onnx"
    if not path.exists():
        pytest.skip(f"the onnx package does not ship '{path.name}'")
    model = onnx.load(str(path))
    constant_of_shape = sum(node.op_type == "ConstantOfShape" for node in model.graph.node)
    imported = import_onnx(str(path))
    module = imported.module
    module.verify()
    # Every weight is a constant, none a kernel: the nodes left are the network's.
    assert "ConstantOfShape" not in imported.planned_only
    assert imported.folded >= constant_of_shape > 0
    assert imported.nodes == len(model.graph.node) - imported.folded
    kernels = [op for op in module.walk() if isinstance(op, KernelOp)]
    assert len(kernels) == imported.nodes
    # Each input and constant is moved in right before its first reader: the first kernel
    # after its dma reads it.
    function = next(op for op in module.walk() if op.name == "func.func")
    ops = list(function.body.block.ops)
    moved_in = 0
    for index, op in enumerate(ops):
        into_scratchpad = isinstance(op, DmaOp) and isinstance(op.destination.type.memory_space, ScratchpadSpaceAttr)
        if into_scratchpad and not isinstance(op.source.type.memory_space, ScratchpadSpaceAttr):
            reader = next((later for later in ops[index + 1 :] if isinstance(later, KernelOp)), None)
            if reader is None:
                continue  # an output that is an input, moved through
            assert op.destination in reader.operands
            moved_in += 1
    assert moved_in == imported.loads
    problem = collect_module(module, capacity=1 << 40)[0].problem()
    load = compute_load(problem)[0]
    assert load == LIGHT_LOADS[name]
    (plan,) = plan_module(module, capacity=load, time_limit=120)
    assert plan.solution.ok and plan.solution.peak == load


def _backend_cases():
    from onnx.backend.test.loader import load_model_tests

    cases = []
    for kind in ("pytorch-converted", "pytorch-operator", "simple"):
        for case in load_model_tests(kind=kind):
            cases.append(case)
    return cases


def _tensors(directory: Path, prefix: str) -> list[onnx.TensorProto]:
    tensors = []
    for file in sorted(directory.glob(f"{prefix}_*.pb"), key=lambda f: int(f.stem.split("_")[-1])):
        tensor = onnx.TensorProto()
        tensor.ParseFromString(file.read_bytes())
        tensors.append(tensor)
    return tensors


def _runnable_backend_cases():
    runnable, counts = [], Counter()
    for case in _backend_cases():
        try:
            imported = import_onnx(os.path.join(case.model_dir, "model.onnx"))
        except Exception:
            counts["rejected"] += 1  # sequence and string tensors: not dense numeric tensors
            continue
        if imported.planned_only:
            counts["planned only"] += 1
            continue
        runnable.append(case)
    return runnable, counts


RUNNABLE, COUNTS = _runnable_backend_cases()


def test_backend_models_that_the_interpreter_runs_are_the_expected_ones() -> None:
    # 140 models: 21 run on the interpreter, 105 need ops it lacks (planned only), 14 have
    # sequence or string tensors (rejected with a one-line error).
    assert len(RUNNABLE) >= 21 and COUNTS["planned only"] + COUNTS["rejected"] + len(RUNNABLE) >= 140


@pytest.mark.parametrize("case", RUNNABLE, ids=[case.name for case in RUNNABLE])
def test_backend_model_matches_onnx_reference_outputs(case) -> None:
    directory = Path(case.model_dir)
    model = onnx.load(str(directory / "model.onnx"))
    imported = import_onnx(str(directory / "model.onnx"))
    data = directory / "test_data_set_0"
    inputs, outputs = _tensors(data, "input"), _tensors(data, "output")
    initializers = {init.name for init in model.graph.initializer}
    input_names = [value.name for value in model.graph.input if value.name not in initializers]
    given = {tensor.name or input_names[index]: numpy_helper.to_array(tensor) for index, tensor in enumerate(inputs)}
    output_names = [value.name for value in model.graph.output]
    expected = {name: numpy_helper.to_array(tensor) for name, tensor in zip(output_names, outputs)}
    arguments = [given[name] if direction == "in" else np.zeros_like(expected[name]) for name, direction in imported.arguments]
    result = run_program(imported.module, inputs=arguments)
    by_argument = {output.name: output.value for output in result.outputs}
    function = next(op for op in imported.module.walk() if op.name == "func.func")
    for (name, direction), argument in zip(imported.arguments, function.body.block.args):
        if direction == "out":
            np.testing.assert_allclose(by_argument[f"%{argument.name_hint}"], expected[name], rtol=case.rtol, atol=case.atol)
    report = verify_program(imported.module, inputs=arguments)
    assert report.ok, report
