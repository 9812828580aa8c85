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
         "test_reversesequence_time", "test_cumprod_1d_reverse_exclusive", "test_cumprod_2d_axis_0", "test_if")


@pytest.fixture(scope="module")
def found():
    return {c.name: c for c in onnx_node_cases.cases(None) if c.name in NAMES}


@pytest.mark.parametrize("name", NAMES)
def test_onnx_own_cases_of_the_operators_written_out(name, found, tmp_path):
    """``DFT`` (forward, along another axis at opset 19, inverse, one-sided, the inverse of a
    one-sided one), ``STFT`` (a constant window and one given as an input), ``LpNormalization``,
    ``ReverseSequence`` (either axis first), ``CumProd`` and an ``If`` on an input: each was
    refused (``OpNotImplemented``; the ``If`` an ``IndexError`` on its scalar input)."""
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
