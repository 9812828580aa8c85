"""ONNX ``If`` nodes of a constant condition replaced by their branch (``frontend.onnx_branches``),
against onnxruntime running the same graph before and after, and end to end through our build.

The conditions are written the way exporters write them: on a shape read through ``Shape`` (a
scripted ``if x.size(-1) > 4``), one branch holding an ``If`` of its own and an initializer, and a
condition computed from the data, which must be left to TVM's importer."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from tvm_partition.frontend.onnx_branches import inline_constant_branches, select_branches
from tvm_partition.frontend.onnx_fold import fold_constants

ort = pytest.importorskip("onnxruntime")
pytestmark = pytest.mark.filterwarnings("ignore:Renaming name:UserWarning")


def _const(name: str, value) -> onnx.NodeProto:
    return helper.make_node("Constant", [], [name], value=numpy_helper.from_array(np.asarray(value), name))


def _graph(name: str, nodes, outputs, initializer=()) -> onnx.GraphProto:
    return helper.make_graph(nodes, name, [], [helper.make_tensor_value_info(o, TensorProto.FLOAT, None) for o in outputs],
                             initializer=list(initializer))


def branching(width: int = 6, data_condition: bool = False, other_shape: bool = False) -> onnx.ModelProto:
    """``y = x * w + 1`` (then ``y = relu(y)`` if ``x``'s rows hold more than 5 values) where ``x``
    is wider than 4, else ``-x``: the outer condition on ``Shape(x)[-1]`` (or, with
    ``data_condition``, on the sum of ``x``), the inner one on the same shape against 5; with
    ``other_shape``, the else branch gives ``-x``'s first row only."""
    n = helper.make_node
    inner = n("If", ["wide"], ["t2"],
              then_branch=_graph("relu", [n("Relu", ["t1"], ["r"])], ["r"]),
              else_branch=_graph("same", [n("Identity", ["t1"], ["s"])], ["s"]))
    then = _graph("scaled", [n("Mul", ["x", "w"], ["t0"]), _const("one", np.float32(1)), n("Add", ["t0", "one"], ["t1"]),
                             _const("five", np.int64(5)), n("Greater", ["last", "five"], ["wide"]), inner],
                  ["t2"], [numpy_helper.from_array(np.linspace(-1, 1, width, dtype=np.float32), "w")])
    other = _graph("negated", [n("Neg", ["x"], ["e"])], ["e"])
    if other_shape:
        other = _graph("row", [n("Neg", ["x"], ["e0"]), _const("zero_i", np.array([0], np.int64)),
                               _const("one_i", np.array([1], np.int64)), n("Slice", ["e0", "zero_i", "one_i"], ["e"])], ["e"])
    if data_condition:
        head = [n("ReduceSum", ["x"], ["total"], keepdims=0), _const("zero", np.float32(0)),
                n("Greater", ["total", "zero"], ["cond"]), n("Shape", ["x"], ["shape"]),
                _const("minus1", np.int64(-1)), n("Gather", ["shape", "minus1"], ["last"])]
    else:
        head = [n("Shape", ["x"], ["shape"]), _const("minus1", np.int64(-1)), n("Gather", ["shape", "minus1"], ["last"]),
                _const("four", np.int64(4)), n("Greater", ["last", "four"], ["cond"])]
    graph = helper.make_graph(head + [n("If", ["cond"], ["y"], then_branch=then, else_branch=other)], "branching",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, width])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [None, width])])
    proto = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    proto.ir_version = 8
    onnx.checker.check_model(proto)
    return proto


def run_ort(proto, x):
    return ort.InferenceSession(proto.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]


@pytest.mark.parametrize("width,taken", [(6, "Relu"), (5, "Mul"), (3, "Neg")], ids=["both-then", "then-else", "else"])
def test_a_condition_on_a_shape_takes_its_branch(width, taken):
    proto = branching(width)
    x = np.random.default_rng(0).standard_normal((2, width)).astype(np.float32)
    want = run_ort(proto, x)
    fold_constants(proto, {"x": [2, width]})
    assert inline_constant_branches(proto, {"x": [2, width]}) == (2 if width > 4 else 1)
    kinds = {n.op_type for n in proto.graph.node}
    assert "If" not in kinds and taken in kinds
    assert ("Relu" in kinds) == (width > 5) and ("Neg" in kinds) == (width <= 4)
    np.testing.assert_array_equal(run_ort(proto, x), want)


@pytest.mark.parametrize("sign", [1, -1])
def test_a_condition_on_the_data_selects_between_both_branches(sign):
    proto = branching(6, data_condition=True)
    x = sign * np.abs(np.random.default_rng(0).standard_normal((2, 6)).astype(np.float32))
    want = run_ort(proto, x)
    fold_constants(proto, {"x": [2, 6]})
    before = proto.SerializeToString()
    assert inline_constant_branches(proto, {"x": [2, 6]}) == 0
    assert proto.SerializeToString() == before
    assert select_branches(proto, {"x": [2, 6]}) == 1
    kinds = [n.op_type for n in proto.graph.node]
    assert "If" not in kinds and kinds.count("Where") == 1 and {"Neg", "Mul"} <= set(kinds)
    np.testing.assert_array_equal(run_ort(proto, x), want)


def test_branches_of_different_shapes_are_left_alone():
    proto = branching(6, data_condition=True, other_shape=True)
    fold_constants(proto, {"x": [2, 6]})
    before = proto.SerializeToString()
    assert select_branches(proto, {"x": [2, 6]}) == 0
    assert proto.SerializeToString() == before


@pytest.mark.parametrize("data_condition", [False, True], ids=["shape", "data"])
def test_a_branching_model_builds_and_matches_onnxruntime(data_condition, tmp_path):
    """End to end: TVM's importer makes an ``If`` a ``relax.If``, which our build failed on
    ("Var gv5 is not defined"); branches of different shapes on the data are refused in one line
    that names the node."""
    from tvm_partition import frontend
    from tvm_partition.cli.compile import compile_model
    from tvm_partition.devices import parse_devices
    from tvm_partition.frontend import ModelError
    from tvm_partition.runtime.runner import Runner

    path = str(tmp_path / "branching.onnx")
    onnx.save(branching(6, data_condition), path)
    runner = Runner(compile_model(frontend.load(path), parse_devices("cpu,cpu"), "equal").save(str(tmp_path / "art")))
    for seed in (1, 2, 3):
        x = np.random.default_rng(seed).standard_normal((2, 6)).astype(np.float32)
        (got,) = runner.run({"x": x})
        np.testing.assert_allclose(got, run_ort(branching(6, data_condition), x), rtol=1e-6, atol=1e-6)
    onnx.save(branching(6, data_condition=True, other_shape=True), path)
    with pytest.raises(ModelError, match="If 'y'.* different shapes"):
        frontend.load(path)
