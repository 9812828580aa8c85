"""Models quantized by onnxruntime's own quantizer compile and match onnxruntime on them
(:mod:`tvm_partition.frontend.onnx_quant`).

Oracle: onnxruntime running the quantized model. The float model, written here with onnx.helper,
holds every operator onnxruntime's quantizer writes a quantized operator for in its QOperator form:
``QLinearConv``, ``QLinearMatMul``, ``QGemm`` (transposed weights, ``alpha``), ``QLinearAdd``,
``QLinearMul``, ``QLinearSigmoid``, ``QLinearLeakyRelu``, ``QLinearAveragePool``,
``QLinearConcat``, ``QLinearGlobalAveragePool``, ``QLinearSoftmax``; dynamic quantization writes
``ConvInteger`` and ``MatMulInteger``."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from test_onnx import ort_run, run_split
from tvm_partition import frontend
from tvm_partition.frontend import onnx_quant

pytestmark = [
    pytest.mark.filterwarnings("ignore:Renaming name:UserWarning"),
    pytest.mark.filterwarnings("ignore:.* in initializer but not in graph input:UserWarning"),
]

X_SHAPE = (2, 3, 16, 16)
C = 8


def _weight(rng, name, shape, scale):
    return numpy_helper.from_array((rng.standard_normal(shape) * scale).astype(np.float32), name)


def float_model(path) -> None:
    """A residual block, a gate, a channel shuffle, two pools joined, a classifier of transposed
    weights and a projection of its softmax; the block's output ``a2`` is an output too (4,096
    values)."""
    rng = np.random.default_rng(0)
    inits = [_weight(rng, "w1", (C, 3, 3, 3), 0.3), _weight(rng, "b1", (C,), 0.1),
             _weight(rng, "w2", (C, C, 3, 3), 0.2), _weight(rng, "b2", (C,), 0.1),
             _weight(rng, "m", (1, C, 1, 1), 1.0), _weight(rng, "fc", (10, 2 * C), 0.3),
             _weight(rng, "fcb", (10,), 0.1), _weight(rng, "mm", (10, 6), 0.3),
             numpy_helper.from_array(np.array([2, 2, C // 2, 16, 16], np.int64), "groups"),
             numpy_helper.from_array(np.array([2, C, 16, 16], np.int64), "channels")]
    n = helper.make_node
    nodes = [
        n("Conv", ["x", "w1", "b1"], ["c1"], pads=[1, 1, 1, 1]),
        n("Relu", ["c1"], ["r1"]),
        n("Conv", ["r1", "w2", "b2"], ["c2"], pads=[1, 1, 1, 1]),
        n("Add", ["c2", "r1"], ["a"]),
        n("Mul", ["a", "m"], ["mu"]),
        n("Sigmoid", ["mu"], ["s"]),
        n("LeakyRelu", ["a"], ["lr"], alpha=0.1),
        n("Add", ["s", "lr"], ["a2"]),
        n("Reshape", ["a2", "groups"], ["g1"]),  # a channel shuffle (ShuffleNet's)
        n("Transpose", ["g1"], ["g2"], perm=[0, 2, 1, 3, 4]),
        n("Reshape", ["g2", "channels"], ["sh"]),
        n("AveragePool", ["sh"], ["ap"], kernel_shape=[2, 2], strides=[2, 2]),
        n("MaxPool", ["sh"], ["mp"], kernel_shape=[2, 2], strides=[2, 2]),
        n("Concat", ["ap", "mp"], ["cat"], axis=1),
        n("GlobalAveragePool", ["cat"], ["g"]),
        n("Flatten", ["g"], ["f"]),
        n("Gemm", ["f", "fc", "fcb"], ["logits"], transB=1, alpha=0.5),
        n("Softmax", ["logits"], ["sm"], axis=-1),
        n("MatMul", ["sm", "mm"], ["y"]),
    ]
    graph = helper.make_graph(nodes, "quantizable", [helper.make_tensor_value_info("x", TensorProto.FLOAT, X_SHAPE)],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 6]),
                               helper.make_tensor_value_info("a2", TensorProto.FLOAT, [2, C, 16, 16])],
                              initializer=inits)
    proto = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    proto.ir_version = 9
    onnx.save(proto, str(path))


@pytest.fixture(scope="module")
def quantized(tmp_path_factory):
    """The float model quantized by onnxruntime four ways: static in its QOperator form per tensor
    and per channel, static in its QDQ form, and dynamic; by name, the paths."""
    from onnxruntime.quantization import QuantFormat, quantize_dynamic, quantize_static

    folder = tmp_path_factory.mktemp("quantized")
    source = folder / "float.onnx"
    float_model(source)
    paths = {"qoperator": folder / "qop.onnx", "qoperator-per-channel": folder / "qop_pc.onnx",
             "qdq": folder / "qdq.onnx", "dynamic": folder / "dyn.onnx"}
    quantize_static(str(source), str(paths["qoperator"]), _calibration(X_SHAPE), quant_format=QuantFormat.QOperator)
    quantize_static(str(source), str(paths["qoperator-per-channel"]), _calibration(X_SHAPE),
                    quant_format=QuantFormat.QOperator, per_channel=True)
    quantize_static(str(source), str(paths["qdq"]), _calibration(X_SHAPE), quant_format=QuantFormat.QDQ, per_channel=True)
    quantize_dynamic(str(source), str(paths["dynamic"]))
    return paths


def _calibration(shape):
    """onnxruntime's calibration reader of four seeded batches of N(0, 1) ``x`` of ``shape``."""
    from onnxruntime.quantization import CalibrationDataReader

    class Calibration(CalibrationDataReader):
        def __init__(self):
            rng = np.random.default_rng(1)
            self.batches = iter([{"x": rng.standard_normal(shape).astype(np.float32)} for _ in range(4)])

        def get_next(self):
            return next(self.batches, None)

    return Calibration()


def _kinds(path) -> set[str]:
    return {n.op_type for n in onnx.load(str(path)).graph.node}


def _steps(proto) -> dict[str, float]:
    """Each graph output's quantization step: the scale of the DequantizeLinear producing it."""
    inits = {i.name: numpy_helper.to_array(i) for i in proto.graph.initializer}
    return {n.output[0]: float(inits[n.input[1]]) for n in proto.graph.node if n.op_type == "DequantizeLinear"
            and n.output[0] in {o.name for o in proto.graph.output}}


def unoptimized(proto, x) -> list[np.ndarray]:
    """onnxruntime without its graph optimizations: a QDQ model as written, each operator in float
    between its ``DequantizeLinear`` and ``QuantizeLinear`` (optimized, onnxruntime fuses them into
    its integer operators: this test's model then reads up to 3 steps apart on one of its 12 ``y``)."""
    import onnxruntime as ort

    opts = ort.SessionOptions()
    opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    return ort.InferenceSession(proto.SerializeToString(), opts, providers=["CPUExecutionProvider"]).run(None, {"x": x})


@pytest.mark.parametrize("form", ["qoperator", "qoperator-per-channel", "qdq"])
def test_a_statically_quantized_model_matches_onnxruntime(form, quantized, tmp_path):
    """Split on ``cpu,cpu`` with the kernels' templates, within two quantization steps of
    onnxruntime on every output and equal on nearly all of it: the float arithmetic rounds sums
    onnxruntime accumulates as integers (module docstring), and a rounding flipped before the
    classifier moves its outputs (the QDQ form's ``y``: one value 2 steps from onnxruntime's unfused
    run, 1 from its fused one). The QDQ form is TVM's own import, against its meaning as written
    (:func:`unoptimized`)."""
    path = quantized[form]
    if form.startswith("qoperator"):
        assert {"QLinearConv", "QLinearMatMul", "QGemm", "QLinearAdd", "QLinearMul", "QLinearSigmoid",
                "QLinearLeakyRelu", "QLinearAveragePool", "QLinearConcat", "QLinearGlobalAveragePool",
                "QLinearSoftmax"} <= _kinds(path)
    proto = onnx.load(str(path))
    if form == "qdq":  # the shuffle and the max pool move the integers: no dequantize before them
        rewritten = onnx.load(str(path))
        assert onnx_quant.quantized_as_float(rewritten) >= 4
        made = {o: n.op_type for n in rewritten.graph.node for o in n.output}
        assert not [n for n in rewritten.graph.node if n.op_type in ("Reshape", "Transpose", "MaxPool")
                    and made.get(n.input[0]) == "DequantizeLinear"]
    model = frontend.load(str(path))
    # weights are dequantized once, at load: no weight of the build is an integer but shapes and scalars
    assert all(p.dtype.kind == "f" or p.size == 1 or p.dtype == np.int64 for p in model.params) if form != "qdq" else True
    x = np.random.default_rng(3).standard_normal(X_SHAPE).astype(np.float32)
    _, outs = run_split(model, tmp_path, [x], schedules=True)
    steps = _steps(proto)
    refs = unoptimized(proto, x) if form == "qdq" else ort_run(proto, [x])
    for out, ref, info in zip(outs, refs, proto.graph.output):
        np.testing.assert_allclose(out, ref, rtol=0, atol=steps[info.name] * 2.01)
    assert sum(int(np.sum(o == r)) for o, r in zip(outs, refs)) >= 0.99 * sum(r.size for r in refs)


def test_a_dynamically_quantized_model_matches_onnxruntime(quantized, tmp_path):
    """``ConvInteger`` and ``MatMulInteger`` as a float convolution and product of integers (exact at
    these sizes), ``DynamicQuantizeLinear`` by TVM's importer, its scalar min and max on the
    reduction template."""
    path = quantized["dynamic"]
    assert {"ConvInteger", "MatMulInteger", "DynamicQuantizeLinear"} <= _kinds(path)
    # the integers stay floats: each is read by a cast to float (TVM's cast to int32 after a
    # convolution took LLVM a minute to compile)
    proto = onnx.load(str(path))
    assert onnx_quant.quantized_as_float(proto) == 3  # two convolutions, one product
    assert not [n for n in proto.graph.node if n.op_type == "Cast" and n.attribute[0].i == TensorProto.INT32]
    x = np.random.default_rng(3).standard_normal(X_SHAPE).astype(np.float32)
    _, outs = run_split(frontend.load(str(path)), tmp_path, [x], schedules=True)
    for out, ref in zip(outs, ort_run(onnx.load(str(path)), [x])):
        np.testing.assert_allclose(out, ref, rtol=1e-4, atol=1e-5)


def _matmul_integer(path, a_shape, b, a_zp, b_zp, computed_zp=False) -> None:
    """``MatMulInteger(a, b, a_zp, b_zp)``: ``a`` a uint8 input, ``b`` and the zero points
    constants, unless ``computed_zp``: then ``a_zp`` is an input too."""
    inits = [numpy_helper.from_array(b, "b"), numpy_helper.from_array(b_zp, "b_zp")]
    inputs = [helper.make_tensor_value_info("a", TensorProto.UINT8, a_shape)]
    if computed_zp:
        inputs.append(helper.make_tensor_value_info("a_zp", TensorProto.UINT8, a_zp.shape))
    else:
        inits.append(numpy_helper.from_array(a_zp, "a_zp"))
    nodes = [helper.make_node("MatMulInteger", ["a", "b", "a_zp", "b_zp"], ["y"])]
    y_shape = [*a_shape[:-1], b.shape[-1]]
    graph = helper.make_graph(nodes, "mmi", inputs, [helper.make_tensor_value_info("y", TensorProto.INT32, y_shape)], inits)
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), str(path))


@pytest.mark.parametrize("zps", ["scalars", "vectors", "batched"])
def test_a_matmul_of_integers_is_a_float_product_that_matches_the_reference(zps, tmp_path):
    """``MatMulInteger``'s zero points per tensor, per row of ``a`` and column of ``b`` (vectors), or
    per row of each matrix of a batch (a constant of more axes, broadcast), against its schema's
    meaning in numpy (onnxruntime's kernel takes only a scalar ``a`` zero point; ONNX's reference
    implementation fails on a vector); the product a float one, cast to int32 (its reader is no
    cast to float)."""
    rng = np.random.default_rng(0)
    a_shape = (2, 5, 12) if zps == "batched" else (5, 12)
    b = rng.integers(-128, 128, (12, 7), dtype=np.int8)
    a_zp = {"scalars": np.array(3, np.uint8), "vectors": rng.integers(0, 255, 5, dtype=np.uint8),
            "batched": rng.integers(0, 255, (2, 5, 1), dtype=np.uint8)}[zps]
    b_zp = np.array(-2, np.int8) if zps == "scalars" else rng.integers(-128, 128, 7, dtype=np.int8)
    _matmul_integer(tmp_path / "mmi.onnx", a_shape, b, a_zp, b_zp)
    proto = onnx.load(str(tmp_path / "mmi.onnx"))
    assert onnx_quant.quantized_as_float(proto) == 1
    assert [n.op_type for n in proto.graph.node][-2:] == ["MatMul", "Cast"]
    a = rng.integers(0, 256, a_shape, dtype=np.uint8)
    _, outs = run_split(frontend.load(str(tmp_path / "mmi.onnx")), tmp_path, [a], strategy="cpu", schedules=True)
    rows = a_zp.reshape(-1, 1) if a_zp.ndim == 1 else a_zp
    ref = (a.astype(np.int64) - rows) @ (b.astype(np.int64) - b_zp)
    assert outs[0].dtype == np.int32
    np.testing.assert_array_equal(outs[0], ref)


def test_a_matmul_of_integers_whose_zero_point_is_computed_is_left_to_tvm(tmp_path):
    """A zero point computed other than by a ``DynamicQuantizeLinear`` (a scalar) may be a batch's
    of more axes, which a ``DequantizeLinear`` cannot take: TVM's importer converts that one (here a
    scalar given as an input)."""
    rng = np.random.default_rng(1)
    b = rng.integers(-128, 128, (12, 7), dtype=np.int8)
    a_zp = np.array(7, np.uint8)
    _matmul_integer(tmp_path / "mmi.onnx", (5, 12), b, a_zp, np.array(0, np.int8), computed_zp=True)
    proto = onnx.load(str(tmp_path / "mmi.onnx"))
    assert onnx_quant.quantized_as_float(proto) == 0
    a = rng.integers(0, 256, (5, 12), dtype=np.uint8)
    _, outs = run_split(frontend.load(str(tmp_path / "mmi.onnx")), tmp_path, [a, a_zp], strategy="cpu")
    np.testing.assert_array_equal(outs[0], (a.astype(np.int64) - 7) @ b.astype(np.int64))


def _one_op(path, node, x_shape, y_shape, opset=17) -> onnx.ModelProto:
    """``x`` quantized, ``node`` on it (reading ``xq``, writing ``yq``), dequantized to ``y``."""
    scalars = [numpy_helper.from_array(np.array(v, dt), name) for name, v, dt in
               [("xs", 0.05, np.float32), ("xz", 128, np.uint8), ("ys", 1 / 256, np.float32), ("yz", 0, np.uint8)]]
    nodes = [helper.make_node("QuantizeLinear", ["x", "xs", "xz"], ["xq"]), node,
             helper.make_node("DequantizeLinear", ["yq", "ys", "yz"], ["y"])]
    graph = helper.make_graph(nodes, "one", [helper.make_tensor_value_info("x", TensorProto.FLOAT, x_shape)],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, y_shape)], initializer=scalars)
    proto = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset), helper.make_opsetid("com.microsoft", 1)])
    proto.ir_version = 9
    onnx.save(proto, str(path))
    return proto


@pytest.mark.parametrize("version,axis", [(12, 1), (13, 1), (12, 2)])
def test_a_quantized_softmax_of_either_meaning_matches_onnxruntime(version, axis, tmp_path):
    """``QLinearSoftmax``'s ``opset`` says which softmax it means: before 13 the input flattened
    into rows at ``axis`` (over the last two axes here), from 13 the one axis."""
    node = helper.make_node("QLinearSoftmax", ["xq", "xs", "xz", "ys", "yz"], ["yq"], domain="com.microsoft",
                            opset=version, axis=axis)
    proto = _one_op(tmp_path / "softmax.onnx", node, (2, 3, 4), (2, 3, 4))
    x = np.random.default_rng(0).standard_normal((2, 3, 4)).astype(np.float32) * 3
    _, outs = run_split(frontend.load(str(tmp_path / "softmax.onnx")), tmp_path, [x], strategy="cpu")
    np.testing.assert_allclose(outs[0], ort_run(proto, [x])[0], rtol=0, atol=1.01 / 256)


def test_a_quantized_pool_over_channels_last_is_refused_in_one_line(tmp_path):
    node = helper.make_node("QLinearGlobalAveragePool", ["xq", "xs", "xz", "ys", "yz"], ["yq"],
                            domain="com.microsoft", channels_last=1)
    _one_op(tmp_path / "pool.onnx", node, (1, 4, 4, 8), (1, 1, 1, 8))
    with pytest.raises(frontend.ModelError, match=r"pool.onnx: GlobalAveragePool of channels_last=1 .* not written out"):
        frontend.load(str(tmp_path / "pool.onnx"))


def test_a_quantized_models_check_allows_few_flipped_roundings_and_no_large_one(quantized, tmp_path):
    """``compile --check``: where two builds sum in different orders a quantized model's roundings
    flip on a few elements (the light ResNet-50: 0.6%, by up to 6% of the range); a float model
    allows none beyond the tolerance, a quantized one at most 2%, none by more than 10% of the range."""
    from tvm_partition.ir.relax_utils import quantizes
    from tvm_partition.runtime.ort import agreement

    assert quantizes(frontend.load(str(quantized["qoperator"])).mod)
    source = tmp_path / "float.onnx"
    float_model(source)
    assert not quantizes(frontend.load(str(source)).mod)
    ref = [np.linspace(-1, 1, 1000, dtype=np.float32)]

    def moved(n, by):
        out = ref[0].copy()
        out[:n] += by
        return [out]

    assert agreement(moved(6, 0.06), ref, quantized=True).ok
    assert agreement(moved(6, 0.06), ref, quantized=True).share == pytest.approx(0.006)
    assert not agreement(moved(6, 0.06), ref, quantized=False).ok
    assert not agreement(moved(30, 0.01), ref, quantized=True).ok  # 3% of the elements
    assert not agreement(moved(1, 0.2), ref, quantized=True).ok  # 20% of the range
    assert agreement(moved(1000, 1e-5), ref, quantized=False).ok


def test_a_quantized_models_check_sets_its_mean_difference_against_onnxruntimes_own():
    """Flips beyond :data:`FLIPPED_SHARE` pass where their mean difference is within
    :data:`SPREAD_FACTOR` of onnxruntime's own spread; never one beyond :data:`FLIPPED_RANGE`, never
    a float model's."""
    from tvm_partition.runtime.ort import SPREAD_FACTOR, agreement

    ref = [np.linspace(-1, 1, 1000, dtype=np.float32)]
    out = ref[0].copy()
    out[:30] += 0.01  # 3% of the elements: more than FLIPPED_SHARE; a mean difference of 3e-4
    assert not agreement([out], ref, quantized=True).ok
    assert agreement([out], ref, quantized=True, spread=3e-4 / SPREAD_FACTOR * 1.01).ok
    assert agreement([out], ref, quantized=True, spread=3e-4 / SPREAD_FACTOR * 1.01).note().endswith(
        "mean_abs_err=0.0003, spread_onnxruntime=0.000101)")
    assert not agreement([out], ref, quantized=True, spread=3e-4 / SPREAD_FACTOR * 0.99).ok
    assert agreement([out], ref, quantized=True, spread=lambda: 3e-4 / SPREAD_FACTOR * 1.01).ok  # measured lazily
    few = ref[0].copy()
    few[:10] += 0.01  # 1%: within FLIPPED_SHARE, so onnxruntime's spread is never measured
    assert agreement([few], ref, quantized=True, spread=lambda: pytest.fail("spread measured")).ok
    assert not agreement([out], ref, quantized=False, spread=1.0).ok
    out[0] += 0.2  # 20% of the range
    assert not agreement([out], ref, quantized=True, spread=1.0).ok


def _gelu_stack(path, layers: int, width: int, rows: int) -> None:
    """``layers`` residual blocks of a matmul, the erf form of GELU and a layer norm, as PyTorch
    exports a transformer's feed-forward (onnxruntime fuses the GELU)."""
    rng = np.random.default_rng(0)
    inits = [numpy_helper.from_array(np.array(v, np.float32), n) for n, v in (("sq2", 2 ** 0.5), ("one", 1), ("half", 0.5))]
    nodes, x = [], "x"
    for i in range(layers):
        inits += [_weight(rng, f"w{i}", (width, width), width ** -0.5),
                  numpy_helper.from_array(np.ones(width, np.float32), f"g{i}"),
                  numpy_helper.from_array(np.zeros(width, np.float32), f"b{i}")]
        n = helper.make_node
        nodes += [n("MatMul", [x, f"w{i}"], [f"m{i}"]), n("Div", [f"m{i}", "sq2"], [f"d{i}"]),
                  n("Erf", [f"d{i}"], [f"e{i}"]), n("Add", [f"e{i}", "one"], [f"p{i}"]),
                  n("Mul", [f"m{i}", f"p{i}"], [f"q{i}"]), n("Mul", [f"q{i}", "half"], [f"h{i}"]),
                  n("Add", [f"h{i}", x], [f"r{i}"]),
                  n("LayerNormalization", [f"r{i}", f"g{i}", f"b{i}"], [f"y{i}"], axis=-1)]
        x = f"y{i}"
    graph = helper.make_graph(nodes, "gelu_stack", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, rows, width])],
                              [helper.make_tensor_value_info(x, TensorProto.FLOAT, [1, rows, width])], inits)
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), str(path))


def test_a_dynamically_quantized_stack_whose_flips_cascade_passes_the_check(tmp_path, capsys):
    """Dynamic quantization takes each activation's scale from its own range: one flipped rounding
    moves a whole tensor's grid, and the flips cascade (a quantized DistilBERT: 97% of its outputs
    beyond the tolerance, as far between onnxruntime's runs with and without its graph
    optimizations as from our build). 24 such blocks: 3.05% of the elements beyond the tolerance
    against TVM's unpartitioned build, which ``--check`` refused; their mean difference 1.55x
    onnxruntime's own (2026-12-05, this VM)."""
    from onnxruntime.quantization import quantize_dynamic

    from tvm_partition.cli.compile import main
    from tvm_partition.runtime import ort

    _gelu_stack(tmp_path / "float.onnx", layers=24, width=128, rows=64)
    quantize_dynamic(str(tmp_path / "float.onnx"), str(tmp_path / "dyn.onnx"))
    # onnxruntime's own spread: 0.00057 where its fused GELU flips roundings (the Xeon VM of
    # 2026-12-05), 1.6e-7 on a Zen 2 (AVX2, 2026-12-07), where its distance from TVM's build counts
    assert ort.spread(frontend.load(str(tmp_path / "dyn.onnx")), 2) is not None
    assert main([str(tmp_path / "dyn.onnx"), "--devices", "cpu,cpu", "--strategy", "cpu", "--check"]) == 0
    assert "max_abs_err_onnxruntime=" in capsys.readouterr().out


def test_onnxruntime_multiplies_bytes_without_saturating_and_loads_what_that_option_cannot(tmp_path):
    """Every session asks for onnxruntime's exact byte products (``session.x64quantprecision``: on x86
    without VNNI its u8 x s8 products saturate in int16, a Zen 2's dynamically quantized stack 0.030
    from TVM's build, 0.00021 with it); a QOperator model of int8 matmuls, which that rewrite leaves
    without a kernel, loads without it."""
    from onnxruntime.quantization import QuantFormat, quantize_static

    from tvm_partition.runtime import ort

    _gelu_stack(tmp_path / "float.onnx", layers=1, width=32, rows=4)
    assert ort.session(str(tmp_path / "float.onnx"), 1).get_session_options().get_session_config_entry(
        ort.PRECISE_BYTES[0]) == ort.PRECISE_BYTES[1]
    quantize_static(str(tmp_path / "float.onnx"), str(tmp_path / "q.onnx"), _calibration((1, 4, 32)),
                    quant_format=QuantFormat.QOperator)
    assert ort.session(str(tmp_path / "q.onnx"), 1).run(None, {"x": np.ones((1, 4, 32), np.float32)})


def test_a_spread_leaves_out_the_run_without_graph_optimizations_where_it_saturates(monkeypatch):
    """Without its graph optimizations onnxruntime has no exact byte products: where they change its
    outputs, that run is no valid evaluation of the model and its distance is no spread."""
    from tvm_partition.runtime import ort

    exact, saturated = [np.zeros(4)], [np.full(4, 0.03)]

    def outputs(model, num_threads, optimized=True, proto=None, precise=True):
        return exact if optimized and precise else saturated

    monkeypatch.setattr(ort, "outputs", outputs)
    monkeypatch.setattr(ort, "_read", lambda path: None)
    monkeypatch.setattr(ort, "nudged", lambda read, ulps, sign: b"")
    monkeypatch.setattr(ort, "source", lambda model: "m.onnx")
    assert ort.spread(None, 1) == 0.0  # the nudges alone
    monkeypatch.setattr(ort, "outputs", lambda model, num_threads, optimized=True, proto=None, precise=True:
                        exact if optimized else saturated)  # the option changes nothing: the run counts
    assert ort.spread(None, 1) == pytest.approx(0.03)


def _flipped(base: np.ndarray, share: float, by: float, seed: int) -> list[np.ndarray]:
    """``base`` with ``share`` of its elements moved by ``by`` (cascaded flips, or a fault)."""
    moved = base.copy()
    idx = np.random.default_rng(seed).choice(base.size, int(share * base.size), replace=False)
    moved.flat[idx] += by
    return [moved]


@pytest.mark.parametrize("ours,theirs,verdict", [
    ((0.03, 0.02, 1), (0.03, 0.02, 2), 0),  # flips of other sums: each pair as far apart
    ((0.03, 0.02, 1), (0.30, 0.05, 2), 1),  # a fault shared with TVM's build: far from onnxruntime alone
    ((0.30, 0.05, 1), (0.03, 0.02, 2), 1),  # a fault of the artifact's own: far from TVM's build alone
], ids=["flips", "shared-fault", "own-fault"])
def test_a_quantized_build_is_held_to_the_third_pairs_distance(monkeypatch, ours, theirs, verdict):
    """Where flips cascade and onnxruntime's own runs agree (its spread 1e-7), the artifact held to
    TVM's build is measured against onnxruntime's distance from it, and held to onnxruntime against
    its own distance from TVM's build: either fault is caught, the flips pass."""
    from tvm_partition.cli import compile as cmd

    ref, runs = [np.linspace(-1.0, 1.0, 2000)], []
    monkeypatch.setattr(cmd, "onnxruntime_outputs", lambda compiled: runs.append(1) or _flipped(ref[0], *theirs))
    assert cmd.judged(None, _flipped(ref[0], *ours), ref, quantized=True, spread=lambda: 1e-7) == verdict
    assert len(runs) <= 1  # onnxruntime run once for every comparison that needs it


def test_a_statically_quantized_stack_whose_flips_cascade_passes_the_check(tmp_path, capsys):
    """Quantized statically (QOperator), a value lands within float32's rounding of a step's midpoint
    (a GELU's ``erf + 1``: onnxruntime's ``QLinearAdd`` rounds 96.5000043 steps down, TVM up), and
    the blocks after it spread the move: 15.6% of the outputs beyond the tolerance from onnxruntime,
    none from TVM's unpartitioned build. onnxruntime runs the same kernels with its graph
    optimizations and without, so only its scales moved a few units in the last place
    (:func:`tvm_partition.runtime.ort.nudged`) measure its spread (0.0032 against our 0.0017;
    ``--check`` refused it before, 2026-12-06)."""
    from onnxruntime.quantization import QuantFormat, quantize_static

    from tvm_partition.cli.compile import main

    _gelu_stack(tmp_path / "float.onnx", layers=24, width=128, rows=64)
    quantize_static(str(tmp_path / "float.onnx"), str(tmp_path / "q.onnx"), _calibration((1, 64, 128)),
                    quant_format=QuantFormat.QOperator)
    assert main([str(tmp_path / "q.onnx"), "--devices", "cpu,cpu", "--strategy", "cpu", "--check"]) == 0
    out = capsys.readouterr().out
    assert "max_abs_err_onnxruntime=" in out and "spread_onnxruntime=" in out  # flips beyond FLIPPED_SHARE


def _midpoints(path) -> None:
    """Two quantizations of ``x`` (scales ``s0`` and ``s1``, both 1) dequantized: ``y0``, ``y1``."""
    inits = [numpy_helper.from_array(np.array(1.0, np.float32), name) for name in ("s0", "s1")]
    inits.append(numpy_helper.from_array(np.array(0, np.int8), "zp"))
    n = helper.make_node
    nodes = [n("QuantizeLinear", ["x", f"s{i}", "zp"], [f"q{i}"]) for i in (0, 1)]
    nodes += [n("DequantizeLinear", [f"q{i}", f"s{i}", "zp"], [f"y{i}"]) for i in (0, 1)]
    graph = helper.make_graph(nodes, "midpoints", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4])],
                              [helper.make_tensor_value_info(f"y{i}", TensorProto.FLOAT, [4]) for i in (0, 1)], inits)
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), str(path))


def _from_one(ulps: int) -> float:
    """The float32 ``ulps`` units in the last place from 1 (2**-23 apart above it, 2**-24 below)."""
    return 1 + ulps * 2.0 ** (-23 if ulps > 0 else -24)


@pytest.mark.parametrize("ulps", [1, 4])
def test_nudged_moves_scales_apart_and_each_quantizes_input_away_from_its_scale(tmp_path, ulps):
    """Scales by name, the first up where ``sign`` is 1, the next down; each quantize's input the
    other way: values on a step's midpoint, which onnxruntime rounds to even, round toward zero
    through ``s0`` and away from it through ``s1`` (the other way round for ``sign`` -1)."""
    import onnxruntime

    from tvm_partition.runtime.ort import nudged

    _midpoints(tmp_path / "m.onnx")
    x = np.array([2.5, 3.5, -2.5, 6.5], np.float32)
    even, down, up = [2, 4, -2, 6], [2, 3, -2, 6], [3, 4, -3, 7]  # down and up: in magnitude
    for sign, ways in ((1, (down, up)), (-1, (up, down))):
        proto = nudged(onnx.load(str(tmp_path / "m.onnx")), ulps, sign)
        scales = {t.name: float(numpy_helper.to_array(t)) for t in onnx.load_from_string(proto).graph.initializer
                  if t.name in ("s0", "s1")}
        assert scales == {"s0": _from_one(sign * ulps), "s1": _from_one(-sign * ulps)}
        y0, y1 = onnxruntime.InferenceSession(proto, providers=["CPUExecutionProvider"]).run(None, {"x": x})
        assert np.round(y0).tolist() == ways[0] and np.round(y1).tolist() == ways[1]
    plain = onnxruntime.InferenceSession(str(tmp_path / "m.onnx"), providers=["CPUExecutionProvider"]).run(None, {"x": x})
    assert plain[0].tolist() == even and plain[1].tolist() == even


def test_the_benchmark_refuses_an_unknown_form_in_one_line():
    import os
    import subprocess
    import sys

    script = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "benchmarks", "quantized.py")
    proc = subprocess.run([sys.executable, script, "--forms", "int4"], capture_output=True, text=True)
    assert proc.returncode == 2 and proc.stderr.strip().splitlines() == ["error: --forms takes qoperator,qdq,dynamic"]


def _vnni() -> bool:
    try:
        return "avx512_vnni" in open("/proc/cpuinfo").read()
    except OSError:
        return False


def test_the_vnni_benchmark_refuses_a_shape_it_cannot_tile_in_one_line():
    import os
    import subprocess
    import sys

    script = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "benchmarks", "vnni_matmul.py")
    proc = subprocess.run([sys.executable, script, "--shapes", "8x16x48"], capture_output=True, text=True)
    assert proc.returncode == 1 and proc.stderr.strip().splitlines() == [
        "error: --shapes '8x16x48': M must be a multiple of 4, K of 4, N of 64"]


@pytest.mark.skipif(not _vnni(), reason="this CPU has no AVX-512 VNNI")
def test_the_vnni_benchmarks_integer_kernel_sums_exactly():
    """The benchmark's uint8 x int8 kernel (``vpdpbusd`` on byte vectors: TVM 0.27's own intrinsic
    fails LLVM 22's verifier) against numpy's int64 product, extremes of both types included."""
    import os
    import sys

    import tvm

    sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "benchmarks"))
    from vnni_matmul import integer_kernel

    from tvm_partition.devices import host_target

    rng = np.random.default_rng(0)
    a = rng.integers(0, 256, (8, 32), dtype=np.uint8)
    b = rng.integers(-128, 128, (32, 64), dtype=np.int8)
    a[0], b[:, 0] = 255, -128
    kernel = integer_kernel(8, 32, 64, host_target())
    dev = tvm.cpu()
    packed = b.reshape(8, 4, 4, 16).transpose(2, 0, 3, 1).copy()
    args = [tvm.runtime.tensor(v, dev) for v in (a, packed, np.zeros((8, 64), np.int32))]
    kernel(*args)
    np.testing.assert_array_equal(args[2].numpy(), a.astype(np.int64) @ b.astype(np.int64))


@pytest.mark.parametrize("scale,moved", [(0.05, True), (0.1, False)], ids=["one-grid", "two-grids"])
def test_a_reshape_between_a_dequantize_and_a_quantize_of_one_grid_moves_the_integers(scale, moved, tmp_path):
    """``DequantizeLinear -> Reshape -> QuantizeLinear`` of one scale and zero point is the reshape of
    the integers; of two it requantizes, and stays (the model's output agrees either way)."""
    consts = [numpy_helper.from_array(np.array(v, dt), name) for name, v, dt in
              [("s", 0.05, np.float32), ("t", scale, np.float32), ("z", 128, np.uint8), ("shape", [4, 6], np.int64)]]
    n = helper.make_node
    nodes = [n("QuantizeLinear", ["x", "s", "z"], ["q"]), n("DequantizeLinear", ["q", "s", "z"], ["d"]),
             n("Reshape", ["d", "shape"], ["r"]), n("QuantizeLinear", ["r", "t", "z"], ["rq"]),
             n("DequantizeLinear", ["rq", "t", "z"], ["y"])]
    graph = helper.make_graph(nodes, "moves", [helper.make_tensor_value_info("x", TensorProto.FLOAT, (2, 12))],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, (4, 6))], initializer=consts)
    proto = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    proto.ir_version = 9
    onnx.save(proto, str(tmp_path / "moves.onnx"))
    rewritten = onnx.load(str(tmp_path / "moves.onnx"))
    assert onnx_quant.quantized_as_float(rewritten) == int(moved)
    assert [nd.op_type for nd in rewritten.graph.node].count("QuantizeLinear") == (1 if moved else 2)
    x = np.random.default_rng(0).standard_normal((2, 12)).astype(np.float32) * 3
    _, outs = run_split(frontend.load(str(tmp_path / "moves.onnx")), tmp_path, [x], strategy="cpu")
    np.testing.assert_allclose(outs[0], ort_run(proto, [x])[0], rtol=0, atol=1e-6)
