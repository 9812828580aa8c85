"""Small constant computations of an ONNX graph evaluated before TVM imports it
(``frontend.onnx_fold``), and ONNX models' inputs keyed by the graph's own names.

Oracles: onnxruntime on the graph before and after folding (the rewrite changes no output), and
on the original file against our build of it.
"""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from tvm_partition.frontend.onnx_fold import MAX_ELEMENTS, fold_constants

ort = pytest.importorskip("onnxruntime")
pytestmark = pytest.mark.filterwarnings("ignore:Renaming name:UserWarning")


def const(name: str, values, dtype=np.int64):
    return helper.make_node("Constant", [], [name], value=numpy_helper.from_array(np.asarray(values, dtype), name))


def torch_pad_chain(pads: list[int], rank: int, out: str) -> list:
    """The nodes PyTorch's TorchScript exporter (opset 17) writes for ``F.pad(x, pads)``'s pads:
    the pairs of the last axes first, zeros for the others, reversed into ONNX's begins-then-ends."""
    return [
        const("n_zeros", [2 * rank - len(pads)]),
        helper.make_node("ConstantOfShape", ["n_zeros"], ["zeros"],
                         value=numpy_helper.from_array(np.zeros(1, np.int64))),
        const("given", pads),
        helper.make_node("Concat", ["given", "zeros"], ["flat"], axis=0),
        const("pairs_shape", [-1, 2]),
        helper.make_node("Reshape", ["flat", "pairs_shape"], ["pairs"]),
        const("s_start", [-1]), const("s_end", [-(2 ** 63) + 1]), const("s_axes", [0]), const("s_step", [-1]),
        helper.make_node("Slice", ["pairs", "s_start", "s_end", "s_axes", "s_step"], ["reversed"]),
        helper.make_node("Transpose", ["reversed"], ["columns"], perm=[1, 0]),
        const("flat_shape", [-1]),
        helper.make_node("Reshape", ["columns", "flat_shape"], ["pads_i64"]),
        helper.make_node("Cast", ["pads_i64"], [out], to=TensorProto.INT64),
    ]


def causal_conv(path=None, channels=4, length=10, seed=0) -> onnx.ModelProto:
    """A temporal convolution with causal padding as PyTorch exports it: ``conv(F.pad(x, (2, 0)))``;
    its input is PyTorch's default name ``input.1``."""
    rng = np.random.default_rng(seed)
    w = numpy_helper.from_array((rng.standard_normal((channels, channels, 3)) * 0.3).astype(np.float32), "w")
    b = numpy_helper.from_array((rng.standard_normal(channels) * 0.1).astype(np.float32), "b")
    nodes = torch_pad_chain([2, 0], 3, "pads") + [
        helper.make_node("Pad", ["input.1", "pads"], ["padded"], mode="constant"),
        helper.make_node("Conv", ["padded", "w", "b"], ["y"], kernel_shape=[3]),
    ]
    graph = helper.make_graph(nodes, "tcn", [helper.make_tensor_value_info("input.1", TensorProto.FLOAT, [1, channels, length])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, channels, length])], [w, b])
    proto = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    if path:
        onnx.save(proto, path)
    return proto


def run_ort(proto, feeds):
    return ort.InferenceSession(proto.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, feeds)


def producers(proto) -> dict:
    return {o: n for n in proto.graph.node for o in n.output}


def test_pytorch_pad_chain_becomes_one_constant_and_computes_the_same():
    proto = causal_conv()
    x = np.random.default_rng(1).standard_normal((1, 4, 10)).astype(np.float32)
    (want,) = run_ort(proto, {"input.1": x})
    assert fold_constants(proto) == 7  # ConstantOfShape, Concat, Reshape, Slice, Transpose, Reshape, Cast
    pads = producers(proto)["pads"]
    assert pads.op_type == "Constant"
    assert list(numpy_helper.to_array(pads.attribute[0].t)) == [0, 0, 2, 0, 0, 0]
    # the chain's nodes and the constants only it read are gone
    assert [n.op_type for n in proto.graph.node] == ["Constant", "Pad", "Conv"]
    (got,) = run_ort(proto, {"input.1": x})
    np.testing.assert_array_equal(got, want)


def test_large_random_and_unevaluable_nodes_are_left_as_they_are():
    rng = np.random.default_rng(0)
    side = int(np.sqrt(MAX_ELEMENTS)) + 1  # one element over the limit
    big = numpy_helper.from_array(rng.standard_normal((side, side)).astype(np.float32), "big")
    nodes = [
        helper.make_node("Transpose", ["big"], ["big_t"], perm=[1, 0]),  # a weight's computation: TVM's
        helper.make_node("ReduceSum", ["big"], ["big_sum"], keepdims=0),  # small, but reads a weight
        const("small", [[1.0, 2.0]], np.float32),
        helper.make_node("RandomNormalLike", ["small"], ["noise"]),  # not a function of its input
        const("bad_shape", [3, 5]),
        helper.make_node("Reshape", ["small", "bad_shape"], ["bad"]),  # the reference refuses it: left to TVM
        helper.make_node("Neg", ["small"], ["neg"]),  # folded
    ]
    outs = [helper.make_tensor_value_info(n, TensorProto.FLOAT, None) for n in ("big_t", "big_sum", "noise", "bad", "neg")]
    proto = helper.make_model(helper.make_graph(nodes, "g", [], outs, [big]), opset_imports=[helper.make_opsetid("", 17)])
    assert fold_constants(proto) == 1
    kinds = {o: n.op_type for o, n in producers(proto).items()}
    assert kinds == {"big_t": "Transpose", "big_sum": "ReduceSum", "small": "Constant", "noise": "RandomNormalLike", "bad_shape": "Constant",
                     "bad": "Reshape", "neg": "Constant"}


def test_a_constant_read_only_inside_a_subgraph_is_kept():
    """A folded chain leaves its unread constants behind; one an ``If`` branch reads is still read."""
    branch = helper.make_graph([helper.make_node("Add", ["x", "inner_c"], ["then_y"])], "then", [],
                               [helper.make_tensor_value_info("then_y", TensorProto.FLOAT, [2])])
    other = helper.make_graph([helper.make_node("Identity", ["x"], ["else_y"])], "else", [],
                              [helper.make_tensor_value_info("else_y", TensorProto.FLOAT, [2])])
    nodes = [const("inner_c", [1.0, 1.0], np.float32), const("two", [2.0, 2.0], np.float32),
             helper.make_node("Neg", ["two"], ["minus_two"]),
             helper.make_node("Add", ["x", "minus_two"], ["shifted"]),
             helper.make_node("If", ["flag"], ["y"], then_branch=branch, else_branch=other)]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2]),
                                           helper.make_tensor_value_info("flag", TensorProto.BOOL, [])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2]),
                               helper.make_tensor_value_info("shifted", TensorProto.FLOAT, [2])])
    proto = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    feeds = {"x": np.array([3.0, 4.0], np.float32), "flag": np.array(True)}
    want = run_ort(proto, feeds)
    assert fold_constants(proto) == 1
    assert sorted(producers(proto)) == ["inner_c", "minus_two", "shifted", "y"]  # "two" no longer read
    for got, ref in zip(run_ort(proto, feeds), want):
        np.testing.assert_array_equal(got, ref)


def test_a_causal_convolution_builds_and_runs_under_its_own_input_name(tmp_path):
    """End to end: TVM's importer refused the chain (``Dynamic pads are not supported yet``); the
    artifact takes the input by the graph's name (``input.1``, which TVM's importer renames)."""
    from tvm_partition import frontend
    from tvm_partition.cli.compile import compile_model
    from tvm_partition.devices import parse_devices
    from tvm_partition.runtime.runner import Runner

    path = str(tmp_path / "tcn.onnx")
    proto = causal_conv(path, channels=8, length=32)
    model = frontend.load(path)
    assert list(model.inputs) == ["input.1"]
    runner = Runner(compile_model(model, parse_devices("cpu,cpu"), "equal").save(str(tmp_path / "art")))
    x = np.random.default_rng(2).standard_normal((1, 8, 32)).astype(np.float32)
    (got,) = runner.run({"input.1": x})
    (want,) = run_ort(proto, {"input.1": x})
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("start,end,want", [(None, None, [2, 3, 4]), (1, None, [3, 4]), (0, -1, [2, 3]), (-5, 9, [2, 3, 4])])
def test_the_shape_of_a_static_tensor_is_folded_once_the_inputs_are_bound(start, end, want):
    """``Shape`` (its ``start`` / ``end``, opset 15, clamped as ONNX says) and ``Size`` of a tensor
    whose shape inference gives static dims; nothing without the inputs' shapes."""
    attrs = {k: v for k, v in (("start", start), ("end", end)) if v is not None}
    nodes = [helper.make_node("Relu", ["x"], ["r"]), helper.make_node("Shape", ["r"], ["s"], **attrs),
             helper.make_node("Size", ["r"], ["n"])]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["b", 3, 4])],
                              [helper.make_tensor_value_info("s", TensorProto.INT64, None),
                               helper.make_tensor_value_info("n", TensorProto.INT64, None)])
    proto = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    assert fold_constants(proto) == 0  # the batch is free: no shape known
    assert fold_constants(proto, {"x": [2, 3, 4]}) == 2
    got = {n.output[0]: numpy_helper.to_array(n.attribute[0].t) for n in proto.graph.node if n.op_type == "Constant"}
    assert list(got["s"]) == want and int(got["n"]) == 24
    x = np.ones((2, 3, 4), np.float32)
    assert [list(np.atleast_1d(v)) for v in run_ort(proto, {"x": x})] == [want, [24]]


def test_a_shape_behind_a_reshape_to_a_computed_shape_is_folded_in_the_same_pass(tmp_path):
    """Swin-T's window padding: pads computed from the ``Shape`` of a tensor that a ``Reshape`` to a
    computed target shape made. ONNX's inference of the whole graph knows no static shape past that
    ``Reshape``; the pass infers each node's outputs as it goes, after folding its inputs. The model
    then builds, and matches onnxruntime."""
    from tvm_partition import frontend
    from tvm_partition.cli.compile import compile_model
    from tvm_partition.devices import parse_devices
    from tvm_partition.runtime.runner import Runner

    nodes = [
        const("six", [6]), const("four", [4]),
        helper.make_node("Concat", ["six", "four"], ["target"], axis=0),  # computed: not an initializer
        helper.make_node("Reshape", ["x", "target"], ["r"]),
        helper.make_node("Shape", ["r"], ["s"]),
        const("one", [1]), const("two", [2]), const("zeros", [0, 0, 0]),
        helper.make_node("Slice", ["s", "one", "two"], ["width"]),  # [4]
        helper.make_node("Mod", ["width", "two"], ["odd"]),  # [0]
        helper.make_node("Sub", ["width", "odd"], ["pad_end"]),  # [4]
        helper.make_node("Concat", ["zeros", "pad_end"], ["pads"], axis=0),  # [0, 0, 0, 4]
        helper.make_node("Pad", ["r", "pads"], ["y"], mode="constant"),
    ]
    graph = helper.make_graph(nodes, "windows", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3, 4])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [6, 8])])
    proto = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    path = tmp_path / "windows.onnx"
    onnx.save(proto, path)
    folded = onnx.load(path)
    assert fold_constants(folded, {"x": [2, 3, 4]}) == 6  # the two Concats, Shape, Slice, Mod and Sub
    assert producers(folded)["pads"].op_type == "Constant"
    x = np.random.default_rng(0).standard_normal((2, 3, 4)).astype(np.float32)
    (want,) = run_ort(proto, {"x": x})
    runner = Runner(compile_model(frontend.load(str(path)), parse_devices("cpu"), "cpu").save(str(tmp_path / "art")))
    (got,) = runner.run({"x": x})
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)


def _shape_model(path, with_relu: bool):
    nodes = [helper.make_node("Shape", ["x"], ["s"])] + ([helper.make_node("Relu", ["x"], ["r"])] if with_relu else [])
    outputs = ([helper.make_tensor_value_info("r", TensorProto.FLOAT, None)] if with_relu else []) + [
        helper.make_tensor_value_info("s", TensorProto.INT64, None)]
    graph = helper.make_graph(nodes, "shape", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [3, 4, 5])], outputs)
    proto = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    onnx.save(proto, path)
    return proto


def test_a_model_whose_every_output_is_a_constant_is_refused_in_one_line(tmp_path):
    """ONNX's ``Shape`` and ``Size`` cases: folded, the model computes nothing, and the build had
    stopped in the VM's code generator ("Var gv is not defined": TVM's ``LiftTransformParams`` drops
    a weight ``main`` returns with nothing computed beside it)."""
    from tvm_partition import frontend

    path = str(tmp_path / "shape.onnx")
    _shape_model(path, with_relu=False)
    with pytest.raises(frontend.ModelError, match="every output is a constant"):
        frontend.load(path)


def test_a_constant_output_beside_a_computed_one_builds(tmp_path):
    from tvm_partition import frontend
    from tvm_partition.cli.compile import compile_model
    from tvm_partition.devices import parse_devices
    from tvm_partition.runtime.runner import Runner

    path = str(tmp_path / "shape2.onnx")
    proto = _shape_model(path, with_relu=True)
    runner = Runner(compile_model(frontend.load(path), parse_devices("cpu,cpu"), "cpu").save(str(tmp_path / "art")))
    x = np.random.default_rng(3).standard_normal((3, 4, 5)).astype(np.float32)
    for got, want in zip(runner.run({"x": x}), run_ort(proto, {"x": x})):
        np.testing.assert_array_equal(got, want)
