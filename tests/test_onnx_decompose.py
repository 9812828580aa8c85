"""ONNX operators TVM's importer lacks, written as others (``frontend.onnx_decompose``, and a
constant-free ``If`` by ``frontend.onnx_branches``), against ONNX's own test cases of them.

Oracle: the outputs the ``onnx`` package's test cases hold (its reference implementation), run
through ``benchmarks/onnx_node_cases.py``'s own steps (so that script cannot rot either): the case's
small integer inputs made constants as exported models hold them, ``frontend.load``, an ``equal``
build over ``cpu,cpu``, the runtime-only ``Runner``."""

from __future__ import annotations

import os
import sys

import numpy as np
import onnx
import pytest

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(REPO, "benchmarks"))

import onnx_node_cases  # noqa: E402

pytestmark = [pytest.mark.filterwarnings("ignore:Renaming name:UserWarning"),
              pytest.mark.filterwarnings("ignore::DeprecationWarning"),
              pytest.mark.filterwarnings("ignore::RuntimeWarning")]

NAMES = ("test_dft", "test_dft_axis_opset19", "test_dft_inverse", "test_dft_rfft", "test_dft_irfft",
         "test_stft", "test_stft_with_window", "test_lpnormalization_default", "test_reversesequence_batch",
         "test_reversesequence_time", "test_cumprod_1d_reverse_exclusive", "test_cumprod_2d_axis_0", "test_if",
         "test_maxpool_with_argmax_2d_precomputed_pads", "test_maxpool_with_argmax_2d_precomputed_strides",
         "test_col2im_strides", "test_col2im_5d")


@pytest.fixture(scope="module")
def found():
    return {c.name: c for c in onnx_node_cases.cases(None) if c.name in NAMES}


@pytest.mark.parametrize("name", NAMES)
def test_onnx_own_cases_of_the_operators_written_out(name, found, tmp_path):
    """``DFT`` (forward, along another axis at opset 19, inverse, one-sided, the inverse of a
    one-sided one), ``STFT`` (a constant window and one given as an input), ``LpNormalization``,
    ``ReverseSequence`` (either axis first), ``CumProd``, an ``If`` on an input, a ``MaxPool``'s
    indices (column-major in one) and ``Col2Im`` (2-D and 3-D): each was refused (``OpNotImplemented``; the ``If`` an
    ``IndexError`` on its scalar input; the ``MaxPool`` "Missing outputs")."""
    case = found[name]
    path, inputs = onnx_node_cases.saved(case, 8, str(tmp_path))
    got = onnx_node_cases.run_ours(path, inputs, "equal", str(tmp_path))
    # an inverse DFT's near-zero imaginary parts differ from numpy's float64 FFT by a few 1e-6
    assert onnx_node_cases.compare(got, list(case.data_sets[0][1]), rtol=1e-4, atol=1e-5) is None


def test_an_axis_computed_at_run_time_is_left_to_the_importer(found, tmp_path):
    from tvm_partition import frontend

    path, _ = onnx_node_cases.saved(found["test_cumprod_2d_axis_0"], 0, str(tmp_path))  # the axis an input
    with pytest.raises(frontend.ModelError, match="CumProd"):
        frontend.load(path)


def _one_node(tmp_path, node, inputs: dict, opset: int):
    """A model of ``node`` alone (float32 output ``y`` of ``inputs['x']``'s shape), saved; returns
    its path and proto."""
    from onnx import TensorProto, helper

    types = {np.dtype(np.float32): TensorProto.FLOAT, np.dtype(np.int64): TensorProto.INT64}
    graph = helper.make_graph([node], "one", [helper.make_tensor_value_info(k, types[v.dtype], list(v.shape))
                                              for k, v in inputs.items()],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, list(inputs["x"].shape))])
    proto = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    proto.ir_version = 8
    path = str(tmp_path / "one.onnx")
    onnx.save(proto, path)
    return path, proto


@pytest.mark.parametrize("p", [1, 2])
def test_lp_normalization_matches_onnxruntime(p, tmp_path):
    """Against onnxruntime (ONNX's reference sums ``x ** p``, not ``|x| ** p``: its only case is
    ``p = 2``); a row of zeros stays zeros."""
    from onnx import helper

    ort = pytest.importorskip("onnxruntime")
    x = np.random.default_rng(p).standard_normal((3, 4, 5)).astype(np.float32)
    x[1, :, 2] = 0
    path, proto = _one_node(tmp_path, helper.make_node("LpNormalization", ["x"], ["y"], p=p, axis=1), {"x": x}, 13)
    (want,) = ort.InferenceSession(proto.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, {"x": x})
    got = onnx_node_cases.run_ours(path, [x], "cpu", str(tmp_path))
    np.testing.assert_allclose(got[0], want, rtol=1e-5, atol=1e-6)


def test_reverse_sequence_lengths_read_at_run_time(tmp_path):
    """The lengths a graph input (a batch's padding), against onnxruntime for two sets of them."""
    from onnx import helper

    ort = pytest.importorskip("onnxruntime")
    x = np.random.default_rng(0).standard_normal((6, 3, 2)).astype(np.float32)  # time, batch, features
    lengths = np.array([6, 2, 1], np.int64)
    node = helper.make_node("ReverseSequence", ["x", "lengths"], ["y"], batch_axis=1, time_axis=0)
    path, proto = _one_node(tmp_path, node, {"x": x, "lengths": lengths}, 13)
    sess = ort.InferenceSession(proto.SerializeToString(), providers=["CPUExecutionProvider"])
    from tvm_partition import frontend
    from tvm_partition.cli.compile import compile_model
    from tvm_partition.devices import parse_devices
    from tvm_partition.runtime.runner import Runner

    runner = Runner(compile_model(frontend.load(path), parse_devices("cpu,cpu"), "cpu").save(str(tmp_path / "art")))
    for n in (lengths, np.array([3, 6, 4], np.int64)):
        (want,) = sess.run(None, {"x": x, "lengths": n})
        np.testing.assert_array_equal(runner.run({"x": x, "lengths": n})[0], want)


def _pool_model(x_shape, out_dtype=None, opset=17, **attrs):
    """A ``MaxPool`` of ``x`` whose values and ``Indices`` are both outputs."""
    from onnx import TensorProto, helper

    elem = TensorProto.INT8 if out_dtype == np.int8 else TensorProto.FLOAT
    node = helper.make_node("MaxPool", ["x"], ["y", "i"], **attrs)
    graph = helper.make_graph([node], "pool", [helper.make_tensor_value_info("x", elem, list(x_shape))],
                              [helper.make_tensor_value_info("y", elem, None),
                               helper.make_tensor_value_info("i", TensorProto.INT64, None)])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


POOLS = {  # name: (input shape, attributes)
    "2x2-by-2": ((2, 3, 8, 10), dict(kernel_shape=[2, 2], strides=[2, 2])),
    "3x3-by-2-padded": ((1, 4, 9, 7), dict(kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])),
    "ceil-mode": ((1, 2, 7, 9), dict(kernel_shape=[3, 2], strides=[2, 2], pads=[0, 1, 1, 0], ceil_mode=1)),
    "dilated": ((1, 2, 9, 9), dict(kernel_shape=[2, 3], dilations=[2, 2], pads=[1, 2, 1, 2])),
    "column-major": ((2, 2, 6, 5), dict(kernel_shape=[2, 2], strides=[1, 2], storage_order=1)),
    "same-upper": ((1, 2, 7, 6), dict(kernel_shape=[3, 2], strides=[2, 2], auto_pad="SAME_UPPER")),
    "same-lower": ((1, 2, 7, 6), dict(kernel_shape=[2, 3], strides=[2, 2], auto_pad="SAME_LOWER")),
    "1d": ((2, 3, 11), dict(kernel_shape=[3], strides=[2], pads=[1, 1])),
    "3d": ((1, 2, 4, 5, 6), dict(kernel_shape=[2, 2, 2], strides=[2, 2, 2])),
    "1x1": ((1, 3, 4, 4), dict(kernel_shape=[1, 1])),  # what PyTorch writes beside each pool
}


@pytest.mark.parametrize("name", POOLS)
def test_max_pool_indices_written_out_match_onnxruntime(name):
    """The ``Indices`` of a ``MaxPool`` (TVM's importer: "Missing outputs during conversion.
    Expected 2 but Got 1") written out, against onnxruntime on the graph before; the input holds
    ties (integers in 0..3), where the first of a window's maxima is the index."""
    from tvm_partition.frontend.onnx_decompose import decompose

    ort = pytest.importorskip("onnxruntime")
    shape, attrs = POOLS[name]
    proto = _pool_model(shape, **attrs)
    x = np.random.default_rng(len(name)).integers(0, 4, shape).astype(np.float32)
    run = lambda p: ort.InferenceSession(p.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, {"x": x})
    want = run(proto)
    assert decompose(proto, {"x": list(shape)}) == 1
    assert [len(n.output) for n in proto.graph.node if n.op_type == "MaxPool"] == [1]  # the values' alone
    got = run(proto)
    np.testing.assert_array_equal(got[0], want[0])
    np.testing.assert_array_equal(got[1], want[1])


def test_max_pool_indices_never_point_into_the_padding():
    """A window whose only elements in the input are the lowest value (-inf; int8's -128) still
    points at one of them, as ONNX's reference implementation does (onnxruntime, starting from the
    lowest finite value, answers -1 there): the padding is masked, not filled."""
    from onnx.reference import ReferenceEvaluator

    from tvm_partition.frontend.onnx_decompose import decompose

    for dtype, low in ((np.float32, -np.inf), (np.int8, -128)):
        attrs = dict(kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])
        proto = _pool_model((1, 1, 5, 5), dtype, 12, **attrs)
        x = np.full((1, 1, 5, 5), low, dtype)
        x[0, 0, 2:, 2:] = 1
        want = ReferenceEvaluator(proto).run(None, {"x": x})
        assert decompose(proto, {"x": [1, 1, 5, 5]}) == 1
        got = ReferenceEvaluator(proto).run(None, {"x": x})
        np.testing.assert_array_equal(got[1], want[1])
        np.testing.assert_array_equal(got[0], want[0])


def test_a_max_pool_of_values_only_is_left_to_the_importer():
    from onnx import helper

    from tvm_partition.frontend.onnx_decompose import decompose

    proto = _pool_model((1, 2, 4, 4), kernel_shape=[2, 2])
    del proto.graph.output[1]
    proto.graph.node[0].CopyFrom(helper.make_node("MaxPool", ["x"], ["y"], kernel_shape=[2, 2]))
    assert decompose(proto, {"x": [1, 2, 4, 4]}) == 0


def test_a_pool_and_unpool_builds_and_matches_onnxruntime(tmp_path):
    """SegNet's decoder pattern end to end: a ``MaxPool``'s indices read by a ``MaxUnpool``, between
    two convolutions, built whole and split (``equal``), against onnxruntime."""
    from onnx import TensorProto, helper, numpy_helper

    ort = pytest.importorskip("onnxruntime")
    rng = np.random.default_rng(3)
    inits = [numpy_helper.from_array(rng.standard_normal((8, 3, 3, 3)).astype(np.float32), "w1"),
             numpy_helper.from_array(rng.standard_normal((4, 8, 3, 3)).astype(np.float32), "w2")]
    nodes = [helper.make_node("Conv", ["x", "w1"], ["c1"], pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c1"], ["r1"]),
             helper.make_node("MaxPool", ["r1"], ["p", "i"], kernel_shape=[2, 2], strides=[2, 2]),
             helper.make_node("MaxUnpool", ["p", "i"], ["u"], kernel_shape=[2, 2], strides=[2, 2]),
             helper.make_node("Conv", ["u", "w2"], ["y"], pads=[1, 1, 1, 1])]
    graph = helper.make_graph(nodes, "segnet", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 16, 16])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4, 16, 16])], inits)
    proto = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    path = str(tmp_path / "segnet.onnx")
    onnx.save(proto, path)
    x = rng.standard_normal((1, 3, 16, 16)).astype(np.float32)
    (want,) = ort.InferenceSession(proto.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, {"x": x})
    for strategy in ("cpu", "equal"):
        (got,) = onnx_node_cases.run_ours(path, [x], strategy, str(tmp_path))
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


def test_an_unpool_to_an_output_shape_matches_onnxruntime():
    """A ``MaxUnpool`` given the shape its ``MaxPool`` read (5 x 5, where 2 x 2 unpools to 4 x 4 by
    the attributes): TVM's converter failed on it; the indices are read in that shape, as
    onnxruntime and PyTorch read them."""
    from onnx import TensorProto, helper

    from tvm_partition.frontend.onnx_decompose import decompose

    ort = pytest.importorskip("onnxruntime")
    nodes = [helper.make_node("MaxPool", ["x"], ["p", "i"], kernel_shape=[2, 2], strides=[2, 2]),
             helper.make_node("Constant", [], ["shape"], value=onnx.numpy_helper.from_array(np.array([1, 2, 5, 5], np.int64))),
             helper.make_node("MaxUnpool", ["p", "i", "shape"], ["y"], kernel_shape=[2, 2], strides=[2, 2])]
    graph = helper.make_graph(nodes, "unpool", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 2, 5, 5])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    proto = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    x = np.random.default_rng(5).standard_normal((1, 2, 5, 5)).astype(np.float32)
    run = lambda p: ort.InferenceSession(p.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, {"x": x})
    (want,) = run(proto)
    assert decompose(proto, {"x": [1, 2, 5, 5]}) == 2
    assert "MaxUnpool" not in [n.op_type for n in proto.graph.node]
    (got,) = run(proto)
    np.testing.assert_array_equal(got, want)


def test_a_one_tap_pools_indices_are_constants():
    """PyTorch writes a 1x1 ``MaxPool`` beside each pool for its indices' plane offsets: they are
    constants, not a comparison with its values (whose kernel, fused with the offsets' slice and
    the subtraction after, failed our pooling template in SegNet's ``equal`` build)."""
    from tvm_partition.frontend.onnx_decompose import decompose

    proto = _pool_model((1, 3, 4, 4), kernel_shape=[1, 1])
    assert decompose(proto, {"x": [1, 3, 4, 4]}) == 1
    assert not {"Equal", "Where"} & {n.op_type for n in proto.graph.node}


@pytest.mark.parametrize("image, block, attrs", [
    ([6, 7], [2, 3], {}),
    ([9, 8], [3, 2], dict(strides=[2, 3], dilations=[1, 2], pads=[1, 0, 2, 1])),
    ([5, 5], [3, 3], dict(strides=[2, 2], pads=[1, 1, 1, 1])),  # windows that overlap: sums
], ids=["plain", "strided-dilated-padded", "overlapping"])
def test_col2im_matches_onnxruntime(image, block, attrs):
    """``Col2Im`` (``nn.Fold``) written out, against onnxruntime on the graph before; blocks that
    overlap add, taps that fall in the padding are dropped."""
    from onnx import TensorProto, helper

    from tvm_partition.frontend.onnx_decompose import decompose

    ort = pytest.importorskip("onnxruntime")
    dims = len(image)
    pads, strides, dilations = (attrs.get("pads", [0] * 2 * dims), attrs.get("strides", [1] * dims),
                                attrs.get("dilations", [1] * dims))
    blocks = [(i + pads[k] + pads[k + dims] - d * (b - 1) - 1) // s + 1
              for k, (i, b, d, s) in enumerate(zip(image, block, dilations, strides))]
    shape = [2, 3 * int(np.prod(block)), int(np.prod(blocks))]
    const = lambda name, v: helper.make_node("Constant", [], [name], value=onnx.numpy_helper.from_array(np.array(v, np.int64)))
    nodes = [const("image", image), const("block", block), helper.make_node("Col2Im", ["x", "image", "block"], ["y"], **attrs)]
    graph = helper.make_graph(nodes, "fold", [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    proto = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    x = np.random.default_rng(7).standard_normal(shape).astype(np.float32)
    run = lambda p: ort.InferenceSession(p.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, {"x": x})
    (want,) = run(proto)
    assert decompose(proto, {"x": shape}) == 1
    assert "Col2Im" not in [n.op_type for n in proto.graph.node]
    (got,) = run(proto)
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)


def _cache_update(shape, update_shape, mode, axis=None, indices=True, opset=24):
    from onnx import TensorProto, helper

    kw = dict(mode=mode) if axis is None else dict(mode=mode, axis=axis)
    inputs = ["cache", "update"] + (["at"] if indices else [])
    graph = helper.make_graph(
        [helper.make_node("TensorScatter", inputs, ["y"], **kw)], "kv",
        [helper.make_tensor_value_info("cache", TensorProto.FLOAT, shape),
         helper.make_tensor_value_info("update", TensorProto.FLOAT, update_shape)]
        + ([helper.make_tensor_value_info("at", TensorProto.INT64, [shape[0]])] if indices else []),
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


@pytest.mark.parametrize("shape, update_shape, mode, axis, at", [
    ([2, 3, 8, 4], [2, 3, 3, 4], "linear", None, [0, 5]),
    ([2, 3, 8, 4], [2, 3, 3, 4], "circular", None, [6, 2]),  # wraps round the end
    ([3, 6, 5], [3, 2, 5], "linear", 1, [4, 0, 1]),
    ([2, 5, 4], [2, 1, 4], "circular", -2, None),  # no write indices: from 0
], ids=["linear", "circular-wraps", "3d-axis-1", "no-indices"])
def test_tensor_scatter_matches_onnx_reference(shape, update_shape, mode, axis, at):
    """``TensorScatter`` (a decoder step's cache update) written out, against ONNX's reference
    implementation on the graph before, the write indices a graph input (read at run time)."""
    from onnx.reference import ReferenceEvaluator

    from tvm_partition.frontend.onnx_decompose import decompose

    proto = _cache_update(shape, update_shape, mode, axis, at is not None)
    rng = np.random.default_rng(4)
    feeds = {"cache": rng.standard_normal(shape).astype(np.float32),
             "update": rng.standard_normal(update_shape).astype(np.float32)}
    if at is not None:
        feeds["at"] = np.array(at, np.int64)
    (want,) = ReferenceEvaluator(proto).run(None, feeds)
    shapes = {k: list(v.shape) for k, v in feeds.items()}
    assert decompose(proto, shapes) == 1
    assert "TensorScatter" not in [n.op_type for n in proto.graph.node]
    (got,) = ReferenceEvaluator(proto).run(None, feeds)
    np.testing.assert_array_equal(got, want)


def test_a_cache_update_builds_and_takes_its_write_indices_at_run_time(tmp_path):
    from onnx.reference import ReferenceEvaluator

    from tvm_partition import frontend
    from tvm_partition.cli.compile import compile_model
    from tvm_partition.devices import parse_devices
    from tvm_partition.runtime.runner import Runner

    proto = _cache_update([2, 4, 16, 8], [2, 4, 1, 8], "linear")
    path = str(tmp_path / "kv.onnx")
    onnx.save(proto, path)
    runner = Runner(compile_model(frontend.load(path), parse_devices("cpu,cpu"), "cpu").save(str(tmp_path / "art")))
    rng = np.random.default_rng(5)
    feeds = {"cache": rng.standard_normal((2, 4, 16, 8)).astype(np.float32),
             "update": rng.standard_normal((2, 4, 1, 8)).astype(np.float32)}
    for at in ([0, 15], [7, 3]):
        feeds["at"] = np.array(at, np.int64)
        (want,) = ReferenceEvaluator(proto).run(None, feeds)
        np.testing.assert_array_equal(runner.run(feeds)[0], want)
