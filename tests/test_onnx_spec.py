"""ONNX nodes TVM's importer converted against the specification (``frontend.onnx_spec``), against
onnxruntime, numpy and ONNX's own test cases: a ``ConvTranspose`` given ``output_shape`` had the
shape its pads give, ``Expand``, ``Tile``, ``Compress``, ``IsInf``, ``LayerNormalization``'s
statistics, ``Pow`` and ``EyeLike``."""

from __future__ import annotations

import os
import sys

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "benchmarks"))

import onnx_node_cases  # noqa: E402

ort = pytest.importorskip("onnxruntime")
pytestmark = pytest.mark.filterwarnings("ignore:Renaming name:UserWarning")


@pytest.mark.parametrize("out,attrs", [([10, 8], {}), ([8, 5], {}), ([9, 6], {"auto_pad": "SAME_UPPER"}),
                                       ([10, 8], {"output_padding": [1, 1]})],
                         ids=["padded-after", "cropped-both-ends", "same-upper", "with-output-padding"])
def test_a_transposed_convolution_has_the_output_shape_it_asks_for(out, attrs, tmp_path):
    from tvm_partition import frontend
    from tvm_partition.cli.compile import compile_model
    from tvm_partition.devices import parse_devices
    from tvm_partition.runtime.runner import Runner

    rng = np.random.default_rng(0)
    w = numpy_helper.from_array(rng.standard_normal((2, 3, 3, 3)).astype(np.float32), "w")
    node = helper.make_node("ConvTranspose", ["x", "w"], ["y"], strides=[3, 2], output_shape=out, **attrs)
    graph = helper.make_graph([node], "ct", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 2, 3, 3])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], initializer=[w])
    proto = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    proto.ir_version = 8
    path = str(tmp_path / "ct.onnx")
    onnx.save(proto, path)
    x = rng.standard_normal((1, 2, 3, 3)).astype(np.float32)
    (want,) = ort.InferenceSession(proto.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, {"x": x})
    assert list(want.shape[2:]) == out
    runner = Runner(compile_model(frontend.load(path), parse_devices("cpu,cpu"), "cpu").save(str(tmp_path / "art")))
    np.testing.assert_allclose(runner.run({"x": x})[0], want, rtol=1e-5, atol=1e-5)


def test_an_expand_by_an_initializer_shape_broadcasts_both_ways(tmp_path):
    """``[3, 1]`` expanded by an initializer ``[2, 1, 6]`` is ``[2, 3, 6]``: taken as a weight, the
    shape sent TVM's importer down its run-time path, which gave ``[2, 1, 6]`` without a word."""
    from tvm_partition import frontend
    from tvm_partition.cli.compile import compile_model
    from tvm_partition.devices import parse_devices
    from tvm_partition.runtime.runner import Runner

    shape = numpy_helper.from_array(np.array([2, 1, 6], np.int64), "shape")
    graph = helper.make_graph([helper.make_node("Expand", ["x", "shape"], ["y"])], "expand",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [3, 1])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], initializer=[shape])
    proto = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    proto.ir_version = 8
    path = str(tmp_path / "expand.onnx")
    onnx.save(proto, path)
    x = np.arange(3, dtype=np.float32).reshape(3, 1)
    runner = Runner(compile_model(frontend.load(path), parse_devices("cpu,cpu"), "cpu").save(str(tmp_path / "art")))
    np.testing.assert_array_equal(runner.run({"x": x})[0], np.broadcast_to(x, (2, 3, 6)))


@pytest.mark.parametrize("shape,repeats,form", [([2, 3, 4, 5], [7, 6, 4, 2], "Gather"), ([3, 1], [1, 5], "Concat"),
                                                ([4, 16], [3, 1], "Concat"), ([2, 3, 4, 5], [30, 30, 4, 2], "Gather"),
                                                ([3], [[4]], "Concat"), ([2, 3], [[2, 3]], "Concat")])
def test_a_tile_of_constant_repeats_equals_numpys(shape, repeats, form, tmp_path):
    """ONNX's ``test_tile`` (the first) read garbage in half its outputs on this AVX-512 VM, and
    66 copies of it (the last) likewise: LLVM compiles the kernel TVM writes for ``Tile`` wrong for
    AVX-512 targets (TVM's own build too). Written as concatenations of a few copies, or gathers of
    more, it equals ``numpy.tile`` (on a machine without AVX-512 this test passes either way). The
    last two: repeats of two dimensions, one an axis all the same (PyTorch's TorchScript export of
    Hugging Face's Mamba writes ``[[64]]``; out of the specification, onnxruntime refuses the file),
    which had stopped ``compile`` with a traceback."""
    from tvm_partition.frontend.onnx_spec import conform

    from tvm_partition import frontend
    from tvm_partition.cli.compile import compile_model
    from tvm_partition.devices import parse_devices
    from tvm_partition.runtime.runner import Runner

    reps = numpy_helper.from_array(np.array(repeats, np.int64), "repeats")
    graph = helper.make_graph([helper.make_node("Tile", ["x", "repeats"], ["y"])], "tile",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], initializer=[reps])
    proto = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    proto.ir_version = 8
    path = str(tmp_path / "tile.onnx")
    onnx.save(proto, path)
    conform(proto, {"x": shape})
    assert form in {n.op_type for n in proto.graph.node} and "Tile" not in {n.op_type for n in proto.graph.node}
    x = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
    runner = Runner(compile_model(frontend.load(path), parse_devices("cpu,cpu"), "cpu").save(str(tmp_path / "art")))
    np.testing.assert_array_equal(runner.run({"x": x})[0], np.tile(x, np.ravel(repeats)))


@pytest.mark.parametrize("axis", [1, None], ids=["axis", "flattened"])
def test_a_compress_of_a_constant_condition_is_a_gather(axis, tmp_path):
    """With its condition an initializer, ONNX's ``Compress`` cases killed the build with a
    segmentation fault in TVM's passes (a ``nonzero`` of a weight); now a ``Gather``, equal to
    ``numpy.compress``."""
    from tvm_partition import frontend
    from tvm_partition.cli.compile import compile_model
    from tvm_partition.devices import parse_devices
    from tvm_partition.runtime.runner import Runner

    condition = np.array([True, False, True, True], np.bool_)
    attrs = {} if axis is None else {"axis": axis}
    graph = helper.make_graph([helper.make_node("Compress", ["x", "condition"], ["y"], **attrs)], "compress",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [3, 5])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                              initializer=[numpy_helper.from_array(condition, "condition")])
    proto = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    proto.ir_version = 8
    path = str(tmp_path / "compress.onnx")
    onnx.save(proto, path)
    x = np.random.default_rng(0).standard_normal((3, 5)).astype(np.float32)
    runner = Runner(compile_model(frontend.load(path), parse_devices("cpu,cpu"), "cpu").save(str(tmp_path / "art")))
    np.testing.assert_array_equal(runner.run({"x": x})[0], np.compress(condition, x, axis=axis))


# ONNX's own cases of each (its reference implementation's outputs), through the sweep's steps
CASES = ("test_isinf_negative", "test_isinf_positive", "test_layer_normalization_4d_axis1",
         "test_layer_normalization_3d_axis_negative_2_epsilon", "test_pow_types_float32_int64",
         "test_pow_types_int32_int32", "test_pow_types_int64_float32", "test_eyelike_with_dtype",
         "test_eyelike_populate_off_main_diagonal")


@pytest.mark.parametrize("name", CASES)
def test_onnx_own_cases_of_the_typed_rewrites(name, tmp_path):
    """``IsInf`` of one sign (the importer detected both, without a word), ``LayerNormalization``'s
    mean and inverse deviation (the importer gave them shape ``[]``), ``Pow`` of two types or of
    integers and ``EyeLike`` of another ``dtype`` (refused)."""
    (case,) = [c for c in onnx_node_cases.cases(name) if c.name == name]
    path, inputs = onnx_node_cases.saved(case, 8, str(tmp_path))
    got = onnx_node_cases.run_ours(path, inputs, "equal", str(tmp_path))
    assert onnx_node_cases.compare(got, list(case.data_sets[0][1]), case.rtol, case.atol) is None


@pytest.mark.parametrize("opset", [17, 18])
def test_layer_norm_statistics_of_half_floats_against_onnxruntime(opset, tmp_path):
    """float16 in, the statistics in ``stash_type`` float32, over the last two axes (``ReduceMean``'s
    axes an attribute at opset 17, an input from 18)."""
    from tvm_partition import frontend
    from tvm_partition.cli.compile import compile_model
    from tvm_partition.devices import parse_devices
    from tvm_partition.runtime.runner import Runner

    rng = np.random.default_rng(1)
    scale = numpy_helper.from_array(rng.standard_normal((4, 6)).astype(np.float16), "scale")
    node = helper.make_node("LayerNormalization", ["x", "scale"], ["y", "mean", "inv"], axis=-2, epsilon=1e-3)
    graph = helper.make_graph([node], "ln", [helper.make_tensor_value_info("x", TensorProto.FLOAT16, [3, 4, 6])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT16, None),
                               helper.make_tensor_value_info("mean", TensorProto.FLOAT, None),
                               helper.make_tensor_value_info("inv", TensorProto.FLOAT, None)], initializer=[scale])
    proto = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    proto.ir_version = 8
    path = str(tmp_path / "ln.onnx")
    onnx.save(proto, path)
    x = (rng.standard_normal((3, 4, 6)) * 3 + 1).astype(np.float16)
    want = ort.InferenceSession(proto.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, {"x": x})
    got = Runner(compile_model(frontend.load(path), parse_devices("cpu,cpu"), "cpu").save(str(tmp_path / "art"))).run({"x": x})
    assert [g.shape for g in got] == [w.shape for w in want] == [(3, 4, 6), (3, 1, 1), (3, 1, 1)]
    np.testing.assert_allclose(got[0].astype(np.float32), want[0].astype(np.float32), rtol=1e-2, atol=1e-2)
    for g, w in zip(got[1:], want[1:]):
        assert g.dtype == w.dtype == np.float32
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-5)
