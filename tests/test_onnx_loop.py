"""ONNX ``Loop`` nodes of a known trip count and ``Scan`` nodes written out
(``frontend.onnx_loop``), against onnxruntime running the same graph before and after, ONNX's own
``Scan`` and ``LinearAttention`` cases, and end to end through our build.

The loops are written here the way PyTorch exports ``nn.EmbeddingBag`` (its trip count the length
of a tensor of offsets, read through ``Shape``; each iteration a slice of the indices), plus
loop-carried values and loops that must be left alone (a computed condition, too many iterations).
The scans read their inputs along other axes and backwards, and write their outputs so.
"""

from __future__ import annotations

import os
import sys

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from tvm_partition.frontend.onnx_fold import fold_constants
from tvm_partition.frontend.onnx_loop import MAX_ITERATIONS, unroll_loops

ort = pytest.importorskip("onnxruntime")
pytestmark = pytest.mark.filterwarnings("ignore:Renaming name:UserWarning")


def ints(name: str, values) -> onnx.NodeProto:
    return helper.make_node("Constant", [], [name], value=numpy_helper.from_array(np.asarray(values, np.int64), name))


def embedding_bag(path=None, bags=4, bag=6, vocab=50, dim=8, classes=3, seed=0) -> onnx.ModelProto:
    """``fc(EmbeddingBag(ids, mode="mean"))`` on ``ids`` of ``[bags, bag]`` as PyTorch's TorchScript
    exporter writes it: a Loop over the bags whose trip count is ``Shape`` of the offsets' ends."""
    rng = np.random.default_rng(seed)
    inits = [numpy_helper.from_array(rng.standard_normal((vocab, dim)).astype(np.float32), "table"),
             numpy_helper.from_array(rng.standard_normal((classes, dim)).astype(np.float32), "fc_w"),
             numpy_helper.from_array(rng.standard_normal(classes).astype(np.float32), "fc_b")]
    body = helper.make_graph(
        [helper.make_node("Gather", ["starts", "i"], ["lo"]), helper.make_node("Gather", ["ends", "i"], ["hi"]),
         ints("zero", [0]),
         helper.make_node("Unsqueeze", ["lo", "zero"], ["lo1"]), helper.make_node("Unsqueeze", ["hi", "zero"], ["hi1"]),
         helper.make_node("Slice", ["flat", "lo1", "hi1", "zero"], ["ids_of_bag"]),
         helper.make_node("Gather", ["table", "ids_of_bag"], ["rows"]),
         helper.make_node("ReduceMean", ["rows"], ["mean"], axes=[0], keepdims=0),
         helper.make_node("Identity", ["cond_in"], ["cond_out"])],
        "bag", [helper.make_tensor_value_info("i", TensorProto.INT64, []),
                helper.make_tensor_value_info("cond_in", TensorProto.BOOL, [])],
        [helper.make_tensor_value_info("cond_out", TensorProto.BOOL, []),
         helper.make_tensor_value_info("mean", TensorProto.FLOAT, [dim])])
    nodes = [
        ints("minus_one", [-1]), helper.make_node("Reshape", ["ids", "minus_one"], ["flat"]),
        helper.make_node("Shape", ["flat"], ["flat_shape"]), ints("at0", 0),
        helper.make_node("Gather", ["flat_shape", "at0"], ["total"]), ints("axis0", [0]),
        helper.make_node("Unsqueeze", ["total", "axis0"], ["total1"]),
        ints("offsets", np.arange(bags) * bag),
        helper.make_node("Concat", ["offsets", "total1"], ["starts"], axis=0),
        ints("one", [1]), ints("end", [2 ** 62]),
        helper.make_node("Slice", ["starts", "one", "end", "axis0"], ["ends"]),
        helper.make_node("Shape", ["ends"], ["ends_shape"]),
        helper.make_node("Gather", ["ends_shape", "at0"], ["trips"]),
        helper.make_node("Constant", [], ["true"], value=numpy_helper.from_array(np.array(True), "true")),
        helper.make_node("Loop", ["trips", "true"], ["bagged"], body=body),
        helper.make_node("Gemm", ["bagged", "fc_w", "fc_b"], ["logits"], transB=1),
    ]
    graph = helper.make_graph(nodes, "textcls", [helper.make_tensor_value_info("ids", TensorProto.INT64, [bags, bag])],
                              [helper.make_tensor_value_info("logits", TensorProto.FLOAT, [bags, classes])], inits)
    proto = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    if path:
        onnx.save(proto, path)
    return proto


def counting_loop(trips: int, stop_after: int | None = None, computed_stop: bool = False) -> onnx.ModelProto:
    """``v`` carried through ``trips`` iterations (``v = v * 0.5 + x * i``), every ``v`` a scan
    output; ``stop_after``: the condition turns false after that many iterations (constants
    only); ``computed_stop``: the condition reads the input (a while loop)."""
    cond = [helper.make_node("Identity", ["cond_in"], ["cond_out"])]
    if stop_after is not None:
        cond = [ints("limit", stop_after - 1), helper.make_node("Less", ["i", "limit"], ["cond_out"])]
    elif computed_stop:
        cond = [helper.make_node("ReduceSum", ["v_next"], ["total"], keepdims=0),
                helper.make_node("Constant", [], ["big"], value=numpy_helper.from_array(np.array(1e9, np.float32))),
                helper.make_node("Less", ["total", "big"], ["cond_out"])]
    body = helper.make_graph(
        [helper.make_node("Cast", ["i"], ["fi"], to=TensorProto.FLOAT),
         helper.make_node("Mul", ["x", "fi"], ["xi"]),
         helper.make_node("Constant", [], ["half"], value=numpy_helper.from_array(np.array(0.5, np.float32))),
         helper.make_node("Mul", ["v_in", "half"], ["v_half"]),
         helper.make_node("Add", ["v_half", "xi"], ["v_next"]),
         helper.make_node("Identity", ["v_next"], ["v_scan"])] + cond,
        "body", [helper.make_tensor_value_info("i", TensorProto.INT64, []),
                 helper.make_tensor_value_info("cond_in", TensorProto.BOOL, []),
                 helper.make_tensor_value_info("v_in", TensorProto.FLOAT, [3])],
        [helper.make_tensor_value_info("cond_out", TensorProto.BOOL, []),
         helper.make_tensor_value_info("v_next", TensorProto.FLOAT, [3]),
         helper.make_tensor_value_info("v_scan", TensorProto.FLOAT, [3])])
    nodes = [ints("trips", trips),
             helper.make_node("Constant", [], ["true"], value=numpy_helper.from_array(np.array(True), "true")),
             helper.make_node("Constant", [], ["v0"], value=numpy_helper.from_array(np.ones(3, np.float32), "v0")),
             helper.make_node("Loop", ["trips", "true", "v0"], ["v_last", "vs"], body=body)]
    graph = helper.make_graph(nodes, "count", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [3])],
                              [helper.make_tensor_value_info("v_last", TensorProto.FLOAT, [3]),
                               helper.make_tensor_value_info("vs", TensorProto.FLOAT, [None, 3])])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def run_ort(proto, feeds):
    return ort.InferenceSession(proto.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, feeds)


def folded(proto, shapes):
    """``proto`` after :func:`fold_constants`, as the frontend hands it to ``unroll_loops``."""
    fold_constants(proto, shapes)
    return proto


def op_types(proto) -> list[str]:
    return [n.op_type for n in proto.graph.node]


def bag_ids(bags=4, bag=6, vocab=50, seed=1):
    return np.random.default_rng(seed).integers(0, vocab, (bags, bag)).astype(np.int64)


def test_an_embedding_bag_loop_is_written_out_bag_by_bag():
    proto = embedding_bag()
    ids = bag_ids()
    want = run_ort(proto, {"ids": ids})
    assert unroll_loops(folded(proto, {"ids": [4, 6]}), {"ids": [4, 6]}) == 1
    kinds = op_types(proto)
    assert "Loop" not in kinds and "Shape" not in kinds
    # each bag a slice of the indices at constant bounds, a gather of its rows and their mean
    assert kinds.count("Slice") == 4 and kinds.count("ReduceMean") == 4
    slices = [n for n in proto.graph.node if n.op_type == "Slice"]
    consts = {n.output[0] for n in proto.graph.node if n.op_type == "Constant"}
    assert all(x in consts for n in slices for x in n.input[1:])
    for got, ref in zip(run_ort(proto, {"ids": ids}), want):
        np.testing.assert_allclose(got, ref, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("trips", [1, 5])
def test_loop_carried_values_and_scan_outputs(trips):
    proto = counting_loop(trips)
    x = np.array([1.0, -2.0, 0.5], np.float32)
    want = run_ort(proto, {"x": x})
    assert unroll_loops(folded(proto, {"x": [3]}), {"x": [3]}) == 1
    assert "Loop" not in op_types(proto)
    got = run_ort(proto, {"x": x})
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-6)
    assert got[1].shape == (trips, 3)


@pytest.mark.parametrize("loop", [dict(trips=5, stop_after=3), dict(trips=4, computed_stop=True),
                                  dict(trips=MAX_ITERATIONS + 1)], ids=["stops-early", "while", "too-long"])
def test_loops_that_do_not_run_a_known_number_of_iterations_are_left_alone(loop):
    proto = folded(counting_loop(**loop), {"x": [3]})
    before = proto.SerializeToString()
    assert unroll_loops(proto, {"x": [3]}) == 0
    assert proto.SerializeToString() == before


def test_an_embedding_bag_classifier_builds_and_matches_onnxruntime(tmp_path):
    """End to end: TVM's importer had no converter for the Loop (``OpNotImplemented: Loop``)."""
    from tvm_partition import frontend
    from tvm_partition.cli.compile import compile_model
    from tvm_partition.devices import parse_devices
    from tvm_partition.runtime.runner import Runner

    path = str(tmp_path / "textcls.onnx")
    proto = embedding_bag(path)
    model = frontend.load(path)
    runner = Runner(compile_model(model, parse_devices("cpu,cpu"), "cpu").save(str(tmp_path / "art")))
    ids = bag_ids()
    (got,) = runner.run({"ids": ids})
    (want,) = run_ort(proto, {"ids": ids})
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def scan_model(length=5, opset=17, x_dims=None) -> onnx.ModelProto:
    """A ``Scan`` of two states (``s = s * 0.5 + x_t``, ``p = p + y_t``) over ``x`` read along its
    axis 1 and ``y`` read backwards along its last axis, writing ``s`` along axis 1, ``x_t - y_t``
    reversed along axis -1 and ``p`` along axis 0: every axis and direction attribute used."""
    body = helper.make_graph(
        [helper.make_node("Constant", [], ["half"], value=numpy_helper.from_array(np.array(0.5, np.float32))),
         helper.make_node("Mul", ["s_in", "half"], ["s_half"]),
         helper.make_node("Add", ["s_half", "x_t"], ["s_out"]),
         helper.make_node("Add", ["p_in", "y_t"], ["p_out"]),
         helper.make_node("Sub", ["x_t", "y_t"], ["d_t"]),
         helper.make_node("Identity", ["s_out"], ["s_scan"]),
         helper.make_node("Identity", ["p_out"], ["p_scan"])],
        "body", [helper.make_tensor_value_info(n, TensorProto.FLOAT, [2, 3]) for n in ("s_in", "p_in", "x_t", "y_t")],
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, None) for n in ("s_out", "p_out", "s_scan", "d_t", "p_scan")])
    scan = helper.make_node("Scan", ["s0", "p0", "x", "y"], ["s_last", "p_last", "ss", "ds", "ps"], body=body,
                            num_scan_inputs=2, scan_input_axes=[1, -1], scan_input_directions=[0, 1],
                            scan_output_axes=[1, -1, 0], scan_output_directions=[0, 1, 0])
    graph = helper.make_graph(
        [scan], "scan",
        [helper.make_tensor_value_info("s0", TensorProto.FLOAT, [2, 3]), helper.make_tensor_value_info("p0", TensorProto.FLOAT, [2, 3]),
         helper.make_tensor_value_info("x", TensorProto.FLOAT, x_dims or [2, length, 3]),
         helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3, length])],
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, None) for n in ("s_last", "p_last", "ss", "ds", "ps")])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


def scan_feeds(length=5, seed=2):
    rng = np.random.default_rng(seed)
    return {"s0": rng.standard_normal((2, 3)).astype(np.float32), "p0": rng.standard_normal((2, 3)).astype(np.float32),
            "x": rng.standard_normal((2, length, 3)).astype(np.float32),
            "y": rng.standard_normal((2, 3, length)).astype(np.float32)}


def scan_shapes(length=5):
    return {"s0": [2, 3], "p0": [2, 3], "x": [2, length, 3], "y": [2, 3, length]}


@pytest.mark.parametrize("opset", [11, 17])
@pytest.mark.parametrize("length", [1, 5])
def test_a_scan_is_written_out_step_by_step_along_its_axes_and_directions(length, opset):
    proto = scan_model(length, opset)
    feeds = scan_feeds(length)
    want = run_ort(proto, feeds)
    assert unroll_loops(folded(proto, scan_shapes(length)), scan_shapes(length)) == 1
    assert "Scan" not in op_types(proto)
    got = run_ort(proto, feeds)
    assert [g.shape for g in got] == [w.shape for w in want]
    assert want[3].shape == (2, 3, length)  # written along the last axis, not a new first one
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("model, shapes", [
    (scan_model(opset=8), scan_shapes()),  # opset 8's Scan: a batch axis and sequence lengths
    (scan_model(MAX_ITERATIONS + 1), scan_shapes(MAX_ITERATIONS + 1)),
    (scan_model(x_dims=[2, "n", 3]), {})],  # its length not known
    ids=["opset-8", "too-long", "free-length"])
def test_scans_of_no_known_length_or_opset_8_are_left_alone(model, shapes):
    before = model.SerializeToString()
    assert unroll_loops(model, shapes) == 0
    assert model.SerializeToString() == before


sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "benchmarks"))


@pytest.mark.parametrize("name", ["test_scan9_multi_state", "test_linear_attention_gated_delta_gqa",
                                  "test_linear_attention_prefill_with_past_expanded"])
def test_onnx_own_scan_cases_build_and_match_the_reference(name, tmp_path):
    """ONNX's cases through ``benchmarks/onnx_node_cases.py``'s steps: ``LinearAttention`` (opset
    27) is a function whose body is a ``Scan``; TVM's importer refused both."""
    import onnx_node_cases

    (case,) = [c for c in onnx_node_cases.cases(name) if c.name == name]
    path, inputs = onnx_node_cases.saved(case, 8, str(tmp_path))
    got = onnx_node_cases.run_ours(path, inputs, "equal", str(tmp_path))
    assert onnx_node_cases.compare(got, list(case.data_sets[0][1]), case.rtol, case.atol) is None
