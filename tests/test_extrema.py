"""``Clip`` after a convolution (PyTorch's ReLU6: Hugging Face's MobileNet-V1 and -V2) leaves the
convolution splittable (``frontend.extrema``): TVM's importer writes the clip as kernels of its own,
which no split rule read, so no plan could split the op. Oracle: onnxruntime on the same file,
through a build that splits every op."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

ort = pytest.importorskip("onnxruntime")


def _conv_clip(path: str, opset: int, low: float, high: float) -> onnx.ModelProto:
    """A 3x3 convolution (8 -> 16 channels, 12 x 12) then ``Clip(low, high)``: as inputs from
    opset 11, as attributes before."""
    rng = np.random.default_rng(0)
    inits = [numpy_helper.from_array(rng.standard_normal((16, 8, 3, 3)).astype(np.float32), "w"),
             numpy_helper.from_array(rng.standard_normal(16).astype(np.float32), "b")]
    if opset >= 11:
        inits += [numpy_helper.from_array(np.array(low, np.float32), "low"),
                  numpy_helper.from_array(np.array(high, np.float32), "high")]
        clip = helper.make_node("Clip", ["c", "low", "high"], ["y"])
    else:
        clip = helper.make_node("Clip", ["c"], ["y"], min=low, max=high)
    nodes = [helper.make_node("Conv", ["x", "w", "b"], ["c"], pads=[1, 1, 1, 1]), clip]
    graph = helper.make_graph(nodes, "conv_clip", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 8, 12, 12])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], initializer=inits)
    proto = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    proto.ir_version = 8
    onnx.save(proto, path)
    return proto


@pytest.mark.parametrize("opset,low,high", [(17, 0.0, 6.0), (9, 0.0, 6.0), (17, float("nan"), 1.0)],
                         ids=["bounds-as-inputs", "bounds-as-attributes", "nan-low-bound"])
def test_a_convolution_clipped_is_split_and_agrees_with_onnxruntime(opset, low, high, tmp_path):
    from tvm_partition import frontend
    from tvm_partition.cli.compile import compile_model
    from tvm_partition.devices import parse_devices
    from tvm_partition.ir.graph import OpGraph
    from tvm_partition.plan import Split
    from tvm_partition.runtime.runner import Runner

    path = str(tmp_path / "conv_clip.onnx")
    proto = _conv_clip(path, opset, low, high)
    model = frontend.load(path)
    (conv,) = [op for op in OpGraph(model.mod).ops.values() if op.kind == "conv2d"]
    assert 2 in conv.split_dims, conv.refusals
    compiled = compile_model(model, parse_devices("cpu,cpu"), "equal")
    assert isinstance(compiled.plan.decision(conv.id), Split)
    x = np.random.default_rng(1).standard_normal((1, 8, 12, 12)).astype(np.float32)
    (want,) = ort.InferenceSession(proto.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, {"x": x})
    assert 0 < (want == high).sum() and (np.isnan(low) or 0 < (want == low).sum())  # both bounds clip
    got = Runner(compiled.save(str(tmp_path / "art"))).run({"x": x})[0]
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
