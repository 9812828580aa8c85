"""ONNX models, split over two CPU virtual devices, checked against independent references.

The references are not TVM: onnxruntime on the same file and input, and for the models the
``onnx`` package ships (exported from PyTorch, not written by us) also the expected output stored
next to them. Every model is loaded with ``frontend.load(path)``, compiled with a split plan, saved
as an artifact and run with the runtime-only ``Runner``, the way an edge server runs it.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper, version_converter

ort = pytest.importorskip("onnxruntime")
from onnxruntime.capi.onnxruntime_pybind11_state import NotImplemented as OrtNotImplemented  # noqa: E402

from onnx_transformers import bert_layer, gpt_block  # noqa: E402
from tvm_partition import frontend, planners  # noqa: E402
from tvm_partition.cli.compile import compile_model  # noqa
from tvm_partition.planners import make_plan  # noqa: E402
from tvm_partition.cost_models import default_cost_model  # noqa: E402
from tvm_partition.devices import parse_devices  # noqa: E402
from tvm_partition.ir.graph import OpGraph  # noqa: E402
from tvm_partition.plan import OnDevice, Plan, Split  # noqa: E402
from tvm_partition.runtime.runner import Runner  # noqa: E402

# TVM's importer renames "0" to "input_0", and onnx's checker notes the initializers the frontend
# drops from the graph inputs; both are expected here.
pytestmark = [
    pytest.mark.filterwarnings("ignore:Renaming name:UserWarning"),
    pytest.mark.filterwarnings("ignore:.* in initializer but not in graph input:UserWarning"),
]

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SHIPPED = os.path.join(os.path.dirname(onnx.__file__), "backend", "test", "data", "pytorch-converted")
CPU2 = "cpu,cpu"
RTOL, ATOL = 1e-4, 1e-5


# --- references ------------------------------------------------------------------------------

def ort_run(proto: onnx.ModelProto, inputs: list[np.ndarray]) -> list[np.ndarray]:
    """onnxruntime on the CPU; models stamped with an opset it no longer implements (the shipped
    PyTorch exports use opset 6) are first converted by onnx's own version converter."""
    opts = ort.SessionOptions()
    opts.log_severity_level = 3
    try:
        sess = ort.InferenceSession(proto.SerializeToString(), opts, providers=["CPUExecutionProvider"])
    except OrtNotImplemented:
        proto = version_converter.convert_version(proto, 13)
        sess = ort.InferenceSession(proto.SerializeToString(), opts, providers=["CPUExecutionProvider"])
    names = [i.name for i in sess.get_inputs()]
    return sess.run(None, dict(zip(names, inputs)))


def run_split(model, tmp_path, inputs: list[np.ndarray], plan_file=None, strategy="equal", schedules=False):
    """Compile over cpu,cpu, save the artifact, run it with the Runner; inputs are mapped by
    position (the artifact's are the ONNX graph's; ORT's oracle takes them by position too).
    ``schedules``: the kernels get the templates and transferred records a user's build gives them
    (a database folder that does not exist), else TVM's default schedules."""
    db = str(tmp_path / "no-database") if schedules else None
    compiled = compile_model(model, parse_devices(CPU2), strategy, plan_file, tuning_db=db)
    art = compiled.save(str(tmp_path / "art"))
    runner = Runner(art)
    names = [i["name"] for i in runner.input_info]
    assert len(names) == len(inputs)
    return compiled, runner.run(dict(zip(names, inputs)))


def n_splits(compiled) -> int:
    return sum(isinstance(d, Split) for d in compiled.plan.ops.values())


# --- a small CNN written here with onnx.helper -----------------------------------------------

def small_cnn(path, batch=4, cin=3, cout=8, hw=8, classes=10, seed=0, dropout=False, split=False) -> onnx.ModelProto:
    """Conv 3x3 pad 1 + Relu + MaxPool 2 + Flatten + Gemm + Softmax, seeded weights as initializers;
    with ``dropout``, a Dropout after the Relu (as in the onnx package's AlexNet, VGG-19, SqueezeNet
    and Inception-v1; TVM's importer makes it a tuple-valued op, which loading removes); with
    ``split``, the Relu's channels split in two halves and concatenated the other way round (a
    tuple-valued op that stays).

    The data input is named "0" as PyTorch exports name it; ``batch=None`` leaves the batch free."""
    rng = np.random.default_rng(seed)
    feat = cout * (hw // 2) ** 2
    weights = {
        "W": rng.standard_normal((cout, cin, 3, 3)).astype(np.float32) * 0.3,
        "B": rng.standard_normal(cout).astype(np.float32) * 0.1,
        "G": rng.standard_normal((feat, classes)).astype(np.float32) * 0.1,
        "GB": rng.standard_normal(classes).astype(np.float32) * 0.1,
    }
    nodes = [
        helper.make_node("Conv", ["0", "W", "B"], ["c"], kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c"], ["r0" if dropout or split else "r"]),
        *([helper.make_node("Dropout", ["r0"], ["r", "mask"])] if dropout else []),
        *([helper.make_node("Split", ["r0"], ["h0", "h1"], axis=1),
           helper.make_node("Concat", ["h1", "h0"], ["r"], axis=1)] if split else []),
        helper.make_node("MaxPool", ["r"], ["p"], kernel_shape=[2, 2], strides=[2, 2]),
        helper.make_node("Flatten", ["p"], ["f"], axis=1),
        helper.make_node("Gemm", ["f", "G", "GB"], ["g"]),
        helper.make_node("Softmax", ["g"], ["y"], axis=1),
    ]
    b = batch if batch is not None else "N"
    graph = helper.make_graph(
        nodes, "small_cnn",
        [helper.make_tensor_value_info("0", TensorProto.FLOAT, [b, cin, hw, hw])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [b, classes])],
        initializer=[numpy_helper.from_array(v, k) for k, v in weights.items()],
    )
    proto = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    proto.ir_version = 8
    onnx.checker.check_model(proto)
    onnx.save(proto, str(path))
    return proto


def cnn_input(batch=4, seed=7):
    return np.random.default_rng(seed).standard_normal((batch, 3, 8, 8)).astype(np.float32)


def test_small_cnn_equal_matches_onnxruntime(tmp_path):
    path = tmp_path / "cnn.onnx"
    proto = small_cnn(path)
    model = frontend.load(str(path))
    assert [i["shape"] for i in model.input_info()] == [[4, 3, 8, 8]]
    x = cnn_input()
    compiled, outs = run_split(model, tmp_path, [x])
    assert n_splits(compiled) >= 3  # conv, pool, gemm, softmax are all splittable along batch
    (ref,) = ort_run(proto, [x])
    assert len(outs) == 1 and outs[0].shape == ref.shape == (4, 10)
    np.testing.assert_allclose(outs[0], ref, rtol=RTOL, atol=ATOL)
    np.testing.assert_allclose(outs[0].sum(axis=1), 1.0, rtol=1e-5)


@pytest.mark.parametrize("strategy", ["eop", "auto", "fixed", "milp", "dp"])
def test_a_tuple_valued_op_under_the_planners(strategy, tmp_path):
    """A Split (a tuple of its halves in TVM's importer) between Relu and MaxPool: the simulator
    priced every value by its shape and refused tuples, so eop and auto failed on four of the onnx
    package's light models ("'lv111' has no static tensor shape": their Dropout, a tuple of the
    output and its mask, before loading removed it)."""
    path = tmp_path / "cnn.onnx"
    proto = small_cnn(path, split=True)
    x = cnn_input()
    _, outs = run_split(frontend.load(str(path)), tmp_path, [x], strategy=strategy)
    np.testing.assert_allclose(outs[0], ort_run(proto, [x])[0], rtol=RTOL, atol=ATOL)


def test_dropout_is_removed_at_load(tmp_path):
    """Dropout is the identity at inference; left in, it fused into its producer and made a kernel
    no record or template matched (AlexNet's classifier matmuls ran TVM's default schedule: 370 of
    its 380 ms). Its mask, unused, goes too; the model still matches onnxruntime."""
    path = tmp_path / "cnn.onnx"
    proto = small_cnn(path, dropout=True)
    model = frontend.load(str(path))
    assert "dropout" not in model.mod["main"].script()
    x = cnn_input()
    _, outs = run_split(model, tmp_path, [x])
    np.testing.assert_allclose(outs[0], ort_run(proto, [x])[0], rtol=RTOL, atol=ATOL)


def grouped_conv(path, cin, cout, groups, hw=9, seed=0) -> onnx.ModelProto:
    """One grouped 3x3 convolution with a bias, then Relu (AlexNet's conv2 at a small size)."""
    rng = np.random.default_rng(seed)
    weights = {"W": rng.standard_normal((cout, cin // groups, 3, 3)).astype(np.float32) * 0.1,
               "B": rng.standard_normal(cout).astype(np.float32) * 0.1}
    nodes = [helper.make_node("Conv", ["x", "W", "B"], ["c"], kernel_shape=[3, 3], pads=[1, 1, 1, 1], group=groups),
             helper.make_node("Relu", ["c"], ["y"])]
    return one_conv_model(path, nodes, weights, [1, cin, hw, hw], [1, cout, hw, hw])


def one_conv_model(path, nodes, weights: dict, x_shape, y_shape) -> onnx.ModelProto:
    """An opset-13 model of ``nodes`` from input ``x`` to output ``y``, ``weights`` its initializers, saved at ``path``."""
    graph = helper.make_graph(
        nodes, "model", [helper.make_tensor_value_info("x", TensorProto.FLOAT, x_shape)],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, y_shape)],
        initializer=[numpy_helper.from_array(v, k) for k, v in weights.items()])
    proto = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    proto.ir_version = 8
    onnx.save(proto, str(path))
    return proto


@pytest.mark.parametrize("cin,groups,convs", [(68, 2, 2), (64, 4, 1), (272, 8, 1)],
                         ids=["wide-groups", "narrow-groups", "many-groups"])
def test_grouped_convolutions_of_wide_groups_become_one_per_group(cin, groups, convs, tmp_path):
    """2 groups of 34 input channels: no grouped schedule applies, so the convolution is taken apart
    (one dense convolution per group runs the direct-convolution template); 4 groups of 16, and 8
    groups (more than were measured) of 34, stay one grouped convolution. Either way the model
    matches onnxruntime, whole and split."""
    from tvm_partition.build import templates
    from tvm_partition.frontend import inference

    assert inference.MIN_UNGROUPED_CHANNELS == templates.grouped.MAX_GROUP_CHANNELS + 1
    path = tmp_path / "grouped.onnx"
    proto = grouped_conv(path, cin, 32, groups)
    model = frontend.load(str(path))
    text = model.mod["main"].script()
    assert text.count("R.nn.conv2d(") == convs and (f"groups={groups}" in text) == (convs == 1)
    x = np.random.default_rng(3).standard_normal((1, cin, 9, 9)).astype(np.float32)
    (ref,) = ort_run(proto, [x])
    for strategy in ("cpu", "equal"):
        _, outs = run_split(model, tmp_path / strategy, [x], strategy=strategy)
        np.testing.assert_allclose(outs[0], ref, rtol=RTOL, atol=ATOL)


@pytest.mark.parametrize("c,convs,padded", [(272, 1, 80), (136, 4, None)], ids=["68-padded-to-80", "34-taken-apart"])
def test_groups_short_of_whole_vectors_are_padded_where_that_adds_little(c, convs, padded, tmp_path):
    """4 groups of 68 output channels (ShuffleNet's 1x1s at 14 x 14) stay one grouped convolution of
    4 x 80 channels, the zero ones sliced off after it; 4 groups of 34 would take 41% more work to
    reach 48 and are taken apart as before. Either way the model matches onnxruntime, whole and split."""
    path = tmp_path / "grouped.onnx"
    proto = grouped_conv(path, c, c, 4)
    model = frontend.load(str(path))
    text = model.mod["main"].script()
    assert text.count("R.nn.conv2d(") == convs and ("groups=4" in text) == (padded is not None)
    if padded:
        assert f"R.Tensor((1, {4 * padded}, 9, 9)" in text
    x = np.random.default_rng(3).standard_normal((1, c, 9, 9)).astype(np.float32)
    (ref,) = ort_run(proto, [x])
    for strategy in ("cpu", "equal"):
        _, outs = run_split(model, tmp_path / strategy, [x], strategy=strategy)
        np.testing.assert_allclose(outs[0], ref, rtol=RTOL, atol=ATOL)


def test_a_gather_clamps_its_indices_and_builds_without_the_fast_mode_warning(tmp_path, capfd):
    """An embedding-like Gather (rows of a weight table, negative indices among them, which TVM's
    importer turns into in-range ones) imports as a ``take`` of mode ``fast``, for which TOPI warns
    at every build that it "segfaults when there are out-of-bounds indices". The frontend makes it
    mode ``clip``: no such line while the model compiles, and it matches onnxruntime."""
    table = numpy_helper.from_array(np.random.default_rng(0).standard_normal((10, 16)).astype(np.float32), "table")
    nodes = [helper.make_node("Gather", ["table", "ids"], ["rows"], axis=0), helper.make_node("Relu", ["rows"], ["y"])]
    graph = helper.make_graph(nodes, "gather", [helper.make_tensor_value_info("ids", TensorProto.INT64, [2, 3])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3, 16])], [table])
    proto = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    path = tmp_path / "gather.onnx"
    onnx.save(proto, path)
    model = frontend.load(str(path))
    text = model.mod["main"].script()
    assert 'mode="clip"' in text and 'mode="fast"' not in text
    ids = np.array([[0, 9, -1], [-10, 3, 4]], dtype=np.int64)
    capfd.readouterr()
    _, outs = run_split(model, tmp_path, [ids], strategy="cpu")
    assert "Fast mode segfaults" not in capfd.readouterr().err
    np.testing.assert_allclose(outs[0], ort_run(proto, [ids])[0], rtol=RTOL, atol=ATOL)


def reflect_normalised(path) -> onnx.ModelProto:
    """The input divided by its norm over the channels, that norm padded by reflection and cropped
    back (each element its own again): TVM's importer emits the reflecting ``Pad`` as a ``call_tir``
    of TOPI's ``mirror_pad``, a PrimFunc of the model's own. (PyTorch's ``F.normalize``, the
    norm clipped from below by a ``Clip``, was such a model until ``frontend.extrema`` made its
    clip ``relax.maximum``.)"""
    const = [helper.make_node("Constant", [], [name], value=numpy_helper.from_array(value, name))
             for name, value in (("pads", np.array([0, 0, 1, 1, 0, 0, 1, 1], np.int64)),
                                 ("starts", np.array([1, 1], np.int64)), ("ends", np.array([17, 17], np.int64)),
                                 ("axes", np.array([2, 3], np.int64)), ("shape", np.array([1, 8, 16, 16], np.int64)))]
    nodes = [*const, helper.make_node("ReduceL2", ["x"], ["n"], axes=[1], keepdims=1),
             helper.make_node("Pad", ["n", "pads"], ["p"], mode="reflect"),
             helper.make_node("Slice", ["p", "starts", "ends", "axes"], ["c"]),
             helper.make_node("Expand", ["c", "shape"], ["e"]),
             helper.make_node("Div", ["x", "e"], ["y"])]
    return one_conv_model(path, nodes, {}, [1, 8, 16, 16], [1, 8, 16, 16])


def test_a_models_own_primfuncs_go_with_its_samples(tmp_path):
    """A split build, its profile samples and ``bench``'s single ops re-emit an op's bindings in a
    module of their own; an op that calls a PrimFunc of the model (a normalisation's clip) failed
    them all, ``compile`` with the default settings included ("There is no definition of
    I.GlobalVar("maximum")"). Its sample carries the PrimFunc; the split build matches onnxruntime."""
    from tvm_partition.profiling.samples import lower_sample, sample_module

    path = tmp_path / "norm.onnx"
    proto = reflect_normalised(path)
    model = frontend.load(str(path))
    assert "call_tir" in model.mod["main"].script()
    graph = OpGraph(model.mod)
    (op,) = [op for op in graph.ops.values() if "mirror_pad" in op.fused_name]
    assert lower_sample(sample_module(graph, op, min(op.split_dims), 4))
    x = np.random.default_rng(0).standard_normal((1, 8, 16, 16)).astype(np.float32)
    _, outs = run_split(model, tmp_path, [x], schedules=True)
    np.testing.assert_allclose(outs[0], ort_run(proto, [x])[0], rtol=RTOL, atol=ATOL)


@pytest.mark.parametrize("opset", [13, 10])
def test_a_pad_of_zero_widths_is_its_input(opset, tmp_path):
    """A ``Pad`` of zeros everywhere after a convolution (MobileViT-v2's dynamo export writes them):
    TVM's importer made a pad kernel of it, fused into the convolution's, which then had no axis to
    split. As ``Identity`` the convolution splits, whole and split it matches onnxruntime."""
    w = {"W": np.random.default_rng(0).standard_normal((8, 8, 3, 3)).astype(np.float32)}
    zeros = [0] * 8
    if opset >= 11:
        w["p"] = np.array(zeros, np.int64)
        pad = helper.make_node("Pad", ["c", "p"], ["y"])
    else:
        pad = helper.make_node("Pad", ["c"], ["y"], pads=zeros)
    path = tmp_path / "zero_pad.onnx"
    proto = one_conv_model(path, [helper.make_node("Conv", ["x", "W"], ["c"], kernel_shape=[3, 3]), pad], w,
                           [1, 8, 10, 10], [1, 8, 8, 8])
    proto.opset_import[0].version = opset
    onnx.save(proto, str(path))
    model = frontend.load(str(path))
    assert "call_tir" not in model.mod["main"].script()
    (conv,) = [op for op in OpGraph(model.mod).ops.values() if op.kind == "conv2d"]
    assert conv.split_dims
    x = np.random.default_rng(1).standard_normal((1, 8, 10, 10)).astype(np.float32)
    (ref,) = ort_run(proto, [x])
    for strategy in ("cpu", "equal"):
        compiled, outs = run_split(frontend.load(str(path)), tmp_path / strategy, [x], strategy=strategy)
        np.testing.assert_allclose(outs[0], ref, rtol=RTOL, atol=ATOL)
    assert n_splits(compiled) >= 1


def test_the_splittable_survey_names_an_op_no_plan_can_split(tmp_path, capsys):
    """``benchmarks/splittable.py``: a reflecting ``Pad`` after a convolution (TVM's importer writes it
    as a kernel of its own, which no split rule reads) is named with its reason and its share of
    FLOPs; the convolution alone leaves nothing to name."""
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "benchmarks"))
    import splittable

    w = {"W": np.random.default_rng(0).standard_normal((8, 8, 3, 3)).astype(np.float32),
         "p": np.array([0, 0, 1, 1, 0, 0, 1, 1], np.int64)}
    rows = {}
    for name, padded in (("reflected", True), ("plain", False)):
        nodes = [helper.make_node("Conv", ["x", "W"], ["c" if padded else "y"], kernel_shape=[3, 3])]
        nodes += [helper.make_node("Pad", ["c", "p"], ["y"], mode="reflect")] if padded else []
        one_conv_model(tmp_path / f"{name}.onnx", nodes, w if padded else {"W": w["W"]}, [1, 8, 10, 10], None)
        splittable.main([str(tmp_path / f"{name}.onnx")])
        rows[name] = capsys.readouterr().out.splitlines()[-1]
    assert "| 2 | 1 |" in rows["reflected"] and "call_tir has no split rule" in rows["reflected"]
    assert "| 0 | 0.0% |" in rows["plain"]


def test_a_kernel_without_a_root_block_keeps_tvms_schedule(tmp_path):
    """TOPI's ``ScatterElements`` (PyTorch's ``index_fill``, ``scatter``) is one block of its own
    name around loops it wrote itself, no ``root`` block: the templates and the record transfer
    looked that block up and failed every build with schedules ("Cannot find a block with the
    name: root"). Such a kernel keeps TVM's schedule; the split build matches onnxruntime."""
    idx = np.array([[[1] * 6, [3] * 6]], np.int64).repeat(2, 0)
    nodes = [helper.make_node("ScatterElements", ["x", "idx", "upd"], ["y"], axis=1)]
    weights = {"idx": idx, "upd": np.full((2, 2, 6), 0.5, np.float32)}
    path = tmp_path / "scatter.onnx"
    proto = one_conv_model(path, nodes, weights, [2, 12, 6], [2, 12, 6])
    x = np.random.default_rng(0).standard_normal((2, 12, 6)).astype(np.float32)
    _, outs = run_split(frontend.load(str(path)), tmp_path, [x], schedules=True)
    np.testing.assert_allclose(outs[0], ort_run(proto, [x])[0], rtol=RTOL, atol=ATOL)


@pytest.mark.parametrize("strategy", ["auto", "fixed", "dominators"])
def test_a_model_of_a_scan_alone_is_planned(strategy, tmp_path):
    """A scan is no op of the graph (the build's ``DispatchSortScan`` legalizes it): a model of a
    ``CumSum`` alone has a graph of no ops, on which the dominator decomposition of ``fixed``,
    ``dominators`` and ``auto`` raised ("start is not in G"). It is planned and matches onnxruntime."""
    axis = helper.make_node("Constant", [], ["axis"], value=numpy_helper.from_array(np.array(1, np.int64), "axis"))
    path = tmp_path / "cumsum.onnx"
    proto = one_conv_model(path, [axis, helper.make_node("CumSum", ["x", "axis"], ["y"])], {}, [2, 12, 5], [2, 12, 5])
    x = np.random.default_rng(0).standard_normal((2, 12, 5)).astype(np.float32)
    _, outs = run_split(frontend.load(str(path)), tmp_path, [x], strategy=strategy)
    np.testing.assert_allclose(outs[0], ort_run(proto, [x])[0], rtol=RTOL, atol=ATOL)


def test_two_embeddings_of_computed_positions_are_told_apart(tmp_path):
    """Hugging Face's position ids from the attention mask (``mask.cumsum(1) * mask - 1``, clamped),
    then a token and a position embedding: TVM's importer normalises each Gather's indices by the
    table's shape (``take(shape_to_tensor(), axis)``), two kernel calls alike in all but their
    constant, and FuseOps moved the second ahead of the first; the graph matched them crosswise
    and refused the model ("fused kernel call take not found in the legalized module")."""
    rng = np.random.default_rng(0)
    const = [helper.make_node("Constant", [], [n], value=numpy_helper.from_array(np.array(v, np.int64), n))
             for n, v in (("axis", 1), ("one", 1), ("zero", 0))]
    nodes = [*const,
             helper.make_node("CumSum", ["mask", "axis"], ["c"]), helper.make_node("Mul", ["c", "mask"], ["m"]),
             helper.make_node("Sub", ["m", "one"], ["s"]), helper.make_node("Clip", ["s", "zero", ""], ["pos"]),
             helper.make_node("Gather", ["E", "ids"], ["e"]), helper.make_node("Gather", ["P", "pos"], ["p"]),
             helper.make_node("Add", ["e", "p"], ["y"])]
    # tables of one shape: their shape_to_tensor kernels are one PrimFunc
    weights = {"E": rng.standard_normal((40, 8)).astype(np.float32), "P": rng.standard_normal((40, 8)).astype(np.float32)}
    graph = helper.make_graph(
        nodes, "positions", [helper.make_tensor_value_info(n, TensorProto.INT64, [3, 12]) for n in ("ids", "mask")],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [3, 12, 8])],
        initializer=[numpy_helper.from_array(v, k) for k, v in weights.items()])
    proto = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    proto.ir_version = 8
    path = tmp_path / "positions.onnx"
    onnx.save(proto, str(path))
    ids, mask = rng.integers(0, 40, (3, 12)), (rng.random((3, 12)) > 0.3).astype(np.int64)
    _, outs = run_split(frontend.load(str(path)), tmp_path, [ids, mask])
    np.testing.assert_allclose(outs[0], ort_run(proto, [ids, mask])[0], rtol=RTOL, atol=ATOL)


def _function_op(name: str):
    """``(nodes, inputs, output shape, opset, initializers)`` of a model of one operator that TVM
    0.27's importer lacks and ONNX defines as a function."""
    t = numpy_helper.from_array
    angles = np.arange(8)[:, None] * np.arange(4)[None] / 8
    return {
        "celu": ([helper.make_node("Celu", ["x"], ["y"], alpha=0.7)], [2, 3, 4], [2, 3, 4], 13, []),
        # its alpha a Constant of value_float in the body, a form TVM's importer does not read
        "swish": ([helper.make_node("Swish", ["x"], ["y"], alpha=1.5)], [2, 3, 4], [2, 3, 4], 24, []),
        # a context-dependent body, built for the types of its inputs (its shape an initializer)
        "center-crop-pad": ([helper.make_node("CenterCropPad", ["x", "s"], ["y"], axes=[1, 2])], [2, 6, 5], [2, 4, 7],
                            18, [t(np.array([4, 7], np.int64), "s")]),
        # periodic left to its default, which the inliner does not apply by itself
        "hann-window": ([helper.make_node("HannWindow", ["n"], ["w"]), helper.make_node("Mul", ["x", "w"], ["y"])],
                        [3, 16], [3, 16], 17, [t(np.array(16, np.int64), "n")]),
        "rotary-embedding": ([helper.make_node("RotaryEmbedding", ["x", "cos", "sin"], ["y"])], [2, 4, 8, 8],
                             [2, 4, 8, 8], 23, [t(np.tile(np.cos(angles), (2, 1, 1)).astype(np.float32), "cos"),
                                                t(np.tile(np.sin(angles), (2, 1, 1)).astype(np.float32), "sin")]),
        # the standard's Attention, which the importer converted as onnxruntime's com.microsoft one
        "attention": ([helper.make_node("Attention", ["x", "x", "x"], ["y"], is_causal=1)], [2, 4, 8, 8], [2, 4, 8, 8],
                      23, []),
        # a cache given, the mask before it omitted: ONNX's inliner asked for the empty name's type
        "attention-past": ([helper.make_node("Attention", ["x", "x", "x", "", "pk", "pv"], ["y", "pk2", "pv2"])], [2, 4, 8, 8],
                           [2, 4, 8, 8], 23, [t(np.cos(np.arange(2 * 4 * 3 * 8)).reshape(2, 4, 3, 8).astype(np.float32), "pk"),
                                              t(np.sin(np.arange(2 * 4 * 3 * 8)).reshape(2, 4, 3, 8).astype(np.float32), "pv")]),
    }[name]


@pytest.mark.parametrize("name", ["celu", "swish", "center-crop-pad", "hann-window", "rotary-embedding", "attention",
                                  "attention-past"])
def test_operators_onnx_defines_as_functions_are_written_out(name, tmp_path):
    """PyTorch's ``F.celu`` exports as ``Celu``, which TVM's importer refused ("OpNotImplemented");
    the operators it lacks that ONNX defines as functions are replaced by their bodies before it
    reads the graph (:mod:`tvm_partition.frontend.onnx_functions`), and the split build matches
    onnxruntime."""
    nodes, x_shape, y_shape, opset, inits = _function_op(name)
    graph = helper.make_graph(nodes, name, [helper.make_tensor_value_info("x", TensorProto.FLOAT, x_shape)],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, y_shape)], initializer=inits)
    proto = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    proto.ir_version = 10
    path = tmp_path / f"{name}.onnx"
    onnx.save(proto, str(path))
    x = np.random.default_rng(0).standard_normal(x_shape).astype(np.float32)
    _, outs = run_split(frontend.load(str(path)), tmp_path, [x])
    np.testing.assert_allclose(outs[0], ort_run(proto, [x])[0], rtol=RTOL, atol=ATOL)


@pytest.mark.parametrize("cout,wide", [(250, 256), (1000, 1024), (496, None), (24, None), (27, 32), (21, 24), (3, None)],
                         ids=["padded-to-256", "padded-to-two-vectors", "whole-vectors-left-alone", "narrow-left-alone",
                              "padded-to-32", "padded-to-24", "rgb-left-alone"])
def test_output_channels_padded_to_whole_vectors(cout, wide, tmp_path):
    """250 output channels compute 256 (6 zero channels: 2.4% more work) and a slice keeps 250;
    1000 compute 1024, two vectors (not 1008), where 496, whole vectors, stay;
    24 (a whole number of 8-lane vectors) would take a third more to reach 32 and stays; 27 and 21,
    no whole number of vectors, compute 32 and 24; 3 would take 167% more and stays. Whole and
    split, the model matches onnxruntime."""
    path = tmp_path / "conv.onnx"
    proto = grouped_conv(path, 8, cout, 1)
    model = frontend.load(str(path))
    text = model.mod["main"].script()
    assert "R.strided_slice(" in text if wide else "R.strided_slice(" not in text
    assert f"R.Tensor((1, {wide or cout}, 9, 9)" in text
    x = np.random.default_rng(3).standard_normal((1, 8, 9, 9)).astype(np.float32)
    (ref,) = ort_run(proto, [x])
    for strategy in ("cpu", "equal"):
        _, outs = run_split(model, tmp_path / strategy, [x], strategy=strategy)
        np.testing.assert_allclose(outs[0], ref, rtol=RTOL, atol=ATOL)


@pytest.mark.parametrize("rows,padded", [(101, True), (100, False), (7, False)],
                         ids=["101-rows-to-104", "whole-tiles-left-alone", "few-rows-left-alone"])
def test_matmul_rows_padded_to_whole_register_tiles(rows, padded, tmp_path):
    """ViT-B/16's 197 tokens: a MatMul by weights whose rows are no multiple of the matmul template's
    4-row tile computes zero rows up to one (101 -> 104: 3% more) and a slice keeps the model's rows,
    then the bias and ReLU; 100 rows are whole tiles, and 7 -> 8 would add 14%. Whole and split, the
    model matches onnxruntime."""
    from tvm_partition.build import templates
    from tvm_partition.frontend import inference

    assert inference.MATMUL_ROW_MULTIPLE == templates.matmul.MATMUL_ROWS
    rng = np.random.default_rng(0)
    weights = {"W": rng.standard_normal((24, 32)).astype(np.float32) * 0.2,
               "B": rng.standard_normal(32).astype(np.float32) * 0.1}
    nodes = [helper.make_node("MatMul", ["x", "W"], ["m"]), helper.make_node("Add", ["m", "B"], ["a"]),
             helper.make_node("Relu", ["a"], ["y"])]
    path = tmp_path / "mm.onnx"
    proto = one_conv_model(path, nodes, weights, [1, rows, 24], [1, rows, 32])
    model = frontend.load(str(path))
    text = model.mod["main"].script()
    assert ("R.nn.pad(" in text and f"R.Tensor((1, {rows + 3}, 32)" in text) == padded
    x = rng.standard_normal((1, rows, 24)).astype(np.float32)
    (ref,) = ort_run(proto, [x])
    for strategy in ("cpu", "equal"):
        _, outs = run_split(model, tmp_path / strategy, [x], strategy=strategy)
        np.testing.assert_allclose(outs[0], ref, rtol=RTOL, atol=ATOL)


def test_a_sequence_first_matmul_is_tiled_over_its_tokens(tmp_path):
    """PyTorch's sequence-first attention projects ``[tokens, 1, features]`` by a weight: the
    tokens (101) are the rows, padded to 104 on that axis, and the matmul template tiles them (not
    101 matrix-vector products); whole and split, the model matches onnxruntime."""
    from tvm_partition.build import templates

    rng = np.random.default_rng(0)
    weights = {"W": rng.standard_normal((24, 32)).astype(np.float32) * 0.2,
               "B": rng.standard_normal(32).astype(np.float32) * 0.1}
    nodes = [helper.make_node("MatMul", ["x", "W"], ["m"]), helper.make_node("Add", ["m", "B"], ["y"])]
    path = tmp_path / "mm.onnx"
    proto = one_conv_model(path, nodes, weights, [101, 1, 24], [101, 1, 32])
    model = frontend.load(str(path))
    assert "R.Tensor((104, 1, 32)" in model.mod["main"].script()
    x = rng.standard_normal((101, 1, 24)).astype(np.float32)
    (ref,) = ort_run(proto, [x])
    built = {}
    for strategy in ("cpu", "equal"):
        built[strategy], outs = run_split(model, tmp_path / strategy, [x], strategy=strategy, schedules=True)
        np.testing.assert_allclose(outs[0], ref, rtol=RTOL, atol=ATOL)
    (label,) = [v for k, v in built["cpu"].kernel_schedules.items() if "matmul" in k and not k.endswith("prepack")]
    assert label == templates.MATMUL_LABEL
    from tvm_partition.build.align import kernel_of
    from tvm_partition.build.tuning import tuning_target

    graph = OpGraph(model.mod)
    (op,) = [op for op in graph.ops.values() if "matmul" in op.fused_name]
    plan = templates.matmul._matmul_plan(kernel_of(graph, op, 0), tuning_target(parse_devices("cpu")[0]))
    assert plan.row_axis == 0 and plan.rows > 1 and 104 % plan.rows == 0  # tiles of tokens (4, or 13 on wide AVX-512)


def test_a_channels_last_mlp_is_one_matrix_of_pixels(tmp_path):
    """ConvNeXt's block after its depthwise convolution: ``nn.Linear`` on ``[1, 7, 7, C]`` (rows of
    7 pixels: no whole 4-row tile), GELU, ``nn.Linear`` back and the residual. Each matmul becomes one
    of 49 pixel rows, padded to 52, the reshapes back to the map moved below the bias, GELU and
    residual, so both kernels take the matmul template; a transpose after them stays on the map.
    Whole and split, the model matches onnxruntime."""
    from tvm_partition.build import templates

    rng = np.random.default_rng(0)
    weights = {"W1": rng.standard_normal((24, 48)).astype(np.float32) * 0.2, "B1": rng.standard_normal(48).astype(np.float32),
               "W2": rng.standard_normal((48, 24)).astype(np.float32) * 0.2, "B2": rng.standard_normal(24).astype(np.float32),
               "r2": np.array(2 ** 0.5, np.float32), "one": np.array(1.0, np.float32), "half": np.array(0.5, np.float32)}
    nodes = [helper.make_node("MatMul", ["x", "W1"], ["m"]), helper.make_node("Add", ["m", "B1"], ["a"]),
             helper.make_node("Div", ["a", "r2"], ["d"]), helper.make_node("Erf", ["d"], ["e"]),
             helper.make_node("Add", ["e", "one"], ["e1"]), helper.make_node("Mul", ["a", "e1"], ["g0"]),
             helper.make_node("Mul", ["g0", "half"], ["g"]), helper.make_node("MatMul", ["g", "W2"], ["m2"]),
             helper.make_node("Add", ["m2", "B2"], ["b2"]), helper.make_node("Add", ["b2", "x"], ["res"]),
             helper.make_node("Transpose", ["res"], ["y"], perm=[0, 3, 1, 2])]
    path = tmp_path / "mlp.onnx"
    proto = one_conv_model(path, nodes, weights, [1, 7, 7, 24], [1, 24, 7, 7])
    model = frontend.load(str(path))
    text = model.mod["main"].script()
    assert "R.Tensor((52, 48)" in text and "R.Tensor((52, 24)" in text and "R.Tensor((1, 7, 7, 48)" not in text
    x = rng.standard_normal((1, 7, 7, 24)).astype(np.float32)
    (ref,) = ort_run(proto, [x])
    built = {}
    for strategy in ("cpu", "equal"):
        built[strategy], outs = run_split(model, tmp_path / strategy, [x], strategy=strategy, schedules=True)
        np.testing.assert_allclose(outs[0], ref, rtol=RTOL, atol=1e-4)
    for compiled in built.values():  # whole, and the parts of its split, on whole 4-row tiles
        labels = [v for k, v in compiled.kernel_schedules.items() if "matmul" in k and not k.endswith("prepack")]
        assert labels and set(labels) == {templates.MATMUL_LABEL}, labels
    assert n_splits(built["equal"]) >= 1


def attention(path, tokens: int, width: int = 64, seed: int = 0) -> onnx.ModelProto:
    """One attention head over ``tokens`` tokens of ``width`` features: ``softmax(q k^T / 8) v``,
    ``q``, ``k``, ``v`` projections of the input, so both attention matmuls multiply computed operands."""
    rng = np.random.default_rng(seed)
    weights = {n: rng.standard_normal((width, width)).astype(np.float32) * 0.2 for n in ("Wq", "Wk", "Wv")}
    weights["s"] = np.array(0.125, np.float32)
    nodes = [helper.make_node("MatMul", ["x", "Wq"], ["q"]), helper.make_node("MatMul", ["x", "Wk"], ["k"]),
             helper.make_node("MatMul", ["x", "Wv"], ["v"]), helper.make_node("Transpose", ["k"], ["kt"], perm=[0, 2, 1]),
             helper.make_node("MatMul", ["q", "kt"], ["a"]), helper.make_node("Mul", ["a", "s"], ["b"]),
             helper.make_node("Softmax", ["b"], ["p"], axis=-1), helper.make_node("MatMul", ["p", "v"], ["y"])]
    return one_conv_model(path, nodes, weights, [1, tokens, width], [1, tokens, width])


@pytest.mark.parametrize("tokens,rows,cols", [(133, 136, 144), (49, 49, 56)], ids=["vit-like", "swin-window"])
def test_attention_matmuls_padded_to_whole_tiles_and_vectors(tokens, rows, cols, tmp_path):
    """ViT-B/16's 197 tokens, here 133: the scores ``q @ k^T`` (both computed) compute 136 rows
    (whole 4-row tiles, 2% more) of 144 columns (whole 16-lane vectors, 8% more), ``softmax @ v``
    136 rows, and slices keep the model's; ``softmax @ v`` (a reduction of 133) takes the matmul
    template on its operands in place. Swin-T's windows of 49 tokens: 56 columns (whole 8-lane
    vectors, 14% more; 16-lane ones would add 31%), 49 rows (52 would add 6%). Whole and split, the
    model matches onnxruntime."""
    from tvm_partition.build import templates
    from tvm_partition.frontend import inference

    assert 133 * inference.MAX_PADDED_COLUMNS >= 144 - 133 and 133 >= templates.matmul.MIN_BATCHED_REDUCTION
    path = tmp_path / "attention.onnx"
    proto = attention(path, tokens)
    model = frontend.load(str(path))
    text = model.mod["main"].script()
    assert f"R.Tensor((1, {rows}, {cols})" in text and f"R.Tensor((1, 64, {cols})" in text
    assert rows == tokens or f"R.Tensor((1, {rows}, 64)" in text  # softmax @ v's rows padded too
    x = np.random.default_rng(3).standard_normal((1, tokens, 64)).astype(np.float32)
    (ref,) = ort_run(proto, [x])
    for strategy in ("cpu", "equal"):
        compiled, outs = run_split(model, tmp_path / strategy, [x], strategy=strategy, schedules=True)
        np.testing.assert_allclose(outs[0], ref, rtol=RTOL, atol=ATOL)
    assert (templates.BATCHED_MATMUL_LABEL in compiled.kernel_schedules.values()) == (tokens >= templates.matmul.MIN_BATCHED_REDUCTION)


@pytest.mark.parametrize("groups,attrs", [(1, dict(kernel_shape=[3], dilations=[2], strides=[2], pads=[2, 1])),
                                          (16, dict(kernel_shape=[5], pads=[2, 2]))], ids=["dilated-strided", "depthwise"])
def test_one_dimensional_convolutions_run_as_two_dimensional_ones(groups, attrs, tmp_path):
    """PyTorch's Conv1d (a TCN's dilated causal convolution, a Conformer's depthwise one) is a
    conv2d over one row once loaded, so the templates and split rules take it; whole and split,
    the model matches onnxruntime."""
    rng = np.random.default_rng(0)
    weights = {"W": rng.standard_normal((16, 16 // groups, attrs["kernel_shape"][0])).astype(np.float32) * 0.2,
               "B": rng.standard_normal(16).astype(np.float32) * 0.1}
    path = tmp_path / "conv1d.onnx"
    out_len = 20 if groups == 16 else 10
    proto = one_conv_model(path, [helper.make_node("Conv", ["x", "W", "B"], ["c"], group=groups, **attrs),
                                  helper.make_node("Relu", ["c"], ["y"])], weights, [1, 16, 20], [1, 16, out_len])
    model = frontend.load(str(path))
    text = model.mod["main"].script()
    assert "R.nn.conv1d(" not in text and "R.nn.conv2d(" in text
    x = rng.standard_normal((1, 16, 20)).astype(np.float32)
    (ref,) = ort_run(proto, [x])
    assert ref.shape == (1, 16, out_len)
    for strategy in ("cpu", "equal"):
        _, outs = run_split(model, tmp_path / strategy, [x], strategy=strategy)
        np.testing.assert_allclose(outs[0], ref, rtol=RTOL, atol=ATOL)


@pytest.mark.parametrize("groups,attrs,out_shape", [
    (1, dict(kernel_shape=[3, 3, 3], dilations=[2, 1, 1], strides=[2, 2, 1], pads=[2, 1, 0, 1, 1, 2]), [1, 16, 3, 4, 8]),
    (2, dict(kernel_shape=[2, 3, 3], pads=[1, 1, 1, 0, 1, 1]), [1, 16, 6, 7, 8]),
    (1, dict(kernel_shape=[1, 1, 1], strides=[2, 2, 2]), [1, 16, 3, 4, 4])], ids=["dilated-strided", "grouped", "pointwise"])
def test_three_dimensional_convolutions_run_as_two_dimensional_ones(groups, attrs, out_shape, tmp_path):
    """A video model's Conv3d is a conv2d over its output frames once loaded, each frame's input
    frames stacked as channels (``frontend.conv3d``), so the templates and split rules take it;
    whole and split, the model matches onnxruntime."""
    rng = np.random.default_rng(0)
    weights = {"W": rng.standard_normal((16, 8 // groups, *attrs["kernel_shape"])).astype(np.float32) * 0.2,
               "B": rng.standard_normal(16).astype(np.float32) * 0.1}
    path = tmp_path / "conv3d.onnx"
    proto = one_conv_model(path, [helper.make_node("Conv", ["x", "W", "B"], ["c"], group=groups, **attrs),
                                  helper.make_node("Relu", ["c"], ["y"])], weights, [1, 8, 6, 7, 8], out_shape)
    model = frontend.load(str(path))
    text = model.mod["main"].script()
    assert "R.nn.conv3d(" not in text and "R.nn.conv2d(" in text
    x = rng.standard_normal((1, 8, 6, 7, 8)).astype(np.float32)
    (ref,) = ort_run(proto, [x])
    assert list(ref.shape) == out_shape
    for strategy in ("cpu", "equal"):
        _, outs = run_split(model, tmp_path / strategy, [x], strategy=strategy)
        np.testing.assert_allclose(outs[0], ref, rtol=RTOL, atol=ATOL)


def atrous_model(path, rng, cin, cout, size, out, groups=1, **attrs) -> onnx.ModelProto:
    """A 3x3 ``Conv`` of ``attrs`` (dilations, pads, strides) with a bias, then a ReLU, from a
    ``size`` x ``size`` map of ``cin`` channels to an ``out`` x ``out`` one, random weights."""
    weights = {"W": rng.standard_normal((cout, cin // groups, 3, 3)).astype(np.float32) * 0.2,
               "B": rng.standard_normal(cout).astype(np.float32) * 0.1}
    conv = helper.make_node("Conv", ["x", "W", "B"], ["c"], group=groups, kernel_shape=[3, 3], **attrs)
    return one_conv_model(path, [conv, helper.make_node("Relu", ["c"], ["y"])], weights, [1, cin, size, size],
                          [1, cout, out, out])


def reading(o, size, taps, stride, dilation, pad) -> list[int]:
    """Brute force: the taps through which output ``o`` of one axis reads the map, not padding."""
    return [t for t in range(taps) if 0 <= o * stride + t * dilation - pad < size]


@pytest.mark.parametrize("dilation,pads,groups,window", [
    (6, [6, 6, 6, 6], 1, "[16, 8, 1, 1]"), (3, [5, 5, 1, 1], 1, "[16, 8, 2, 2]"), (1, [1, 1, 1, 1], 1, "[16, 8, 3, 3]"),
    (5, [5, 5, 5, 5], 8, "[8, 1, 1, 1]")], ids=["centre-only", "one-side", "all-live", "depthwise"])
def test_taps_that_read_only_padding_are_dropped(dilation, pads, groups, window, tmp_path):
    """DeepLabV3's atrous convolutions on a map narrower than their dilation: the taps that read
    only padding are gone from the window (a 5 x 5 map: at dilation 6 the centre tap alone is left,
    padded 5 before and 1 after at dilation 3 the first row and column go; undilated, padded 1, all
    three read the map), the outputs unchanged: whole and split, the model matches onnxruntime."""
    from tvm_partition.frontend.dead_taps import live_taps

    rng = np.random.default_rng(0)
    path = tmp_path / "atrous.onnx"
    proto = atrous_model(path, rng, 8, 16 if groups == 1 else 8, 5, 5, groups, dilations=[dilation, dilation], pads=pads)
    model = frontend.load(str(path))
    text = model.mod["main"].script()
    assert f"R.Tensor({tuple(json.loads(window))}".replace(" ", "") in text.replace(" ", "")
    assert ("R.strided_slice(" in text) == (window != "[16, 8, 3, 3]")  # the weights sliced where taps go
    assert text.count("R.nn.conv2d(") == 1
    x = rng.standard_normal((1, 8, 5, 5)).astype(np.float32)
    (ref,) = ort_run(proto, [x])
    for strategy in ("cpu", "equal"):
        _, outs = run_split(model, tmp_path / strategy, [x], strategy=strategy)
        np.testing.assert_allclose(outs[0], ref, rtol=RTOL, atol=ATOL)
    # brute force: a tap is live where some output reads a row of the map through it
    for size, taps, stride, dil, pad in [(5, 3, 1, 6, 6), (14, 3, 1, 12, 12), (7, 5, 2, 1, 2), (9, 3, 2, 4, 0)]:
        out = (size + 2 * pad - (taps - 1) * dil - 1) // stride + 1
        live = [t for y in range(out) for t in reading(y, size, taps, stride, dil, pad)]
        assert live_taps(size, out, taps, stride, dil, pad) == (min(live), max(live))


def test_tap_bands_group_the_outputs_that_read_the_same_taps():
    """Brute force: every output position of a band reads the map through exactly its taps, the
    bands cover the outputs in order, and neighbouring bands differ."""
    from tvm_partition.frontend.dead_taps import tap_bands

    for size, taps, stride, dil, pad in [(14, 3, 1, 12, 12), (5, 3, 1, 3, 3), (7, 5, 2, 1, 2), (9, 3, 2, 4, 4),
                                         (6, 3, 1, 1, 1), (11, 3, 3, 5, 6)]:
        out = (size + 2 * pad - (taps - 1) * dil - 1) // stride + 1
        bands = tap_bands(size, out, taps, stride, dil, pad)
        assert [b[0] for b in bands] == [0] + [b[1] for b in bands[:-1]] and bands[-1][1] == out
        for (o0, o1, first, last), after in zip(bands, bands[1:] + [None]):
            for o in range(o0, o1):
                assert reading(o, size, taps, stride, dil, pad) == list(range(first, last + 1))
            assert after is None or after[2:] != (first, last)
    assert tap_bands(1, 4, 2, 1, 1, 2) is None  # an output that reads only padding


@pytest.mark.parametrize("size,dilation,stride,groups,convs", [(14, 12, 1, 1, 9), (10, 5, 2, 1, 4), (7, 4, 1, 8, 9),
                                                               (14, 2, 1, 1, 1)],
                         ids=["aspp", "strided", "depthwise", "most-taps-live"])
def test_dilated_convolutions_run_in_bands_of_the_taps_they_read(size, dilation, stride, groups, convs, tmp_path):
    """DeepLabV3's dilation-12 window on a 14 x 14 map reads the map through 1-4 of its 9 taps per
    output (18% of its products): the convolution becomes one per band of rows x columns over the
    slice of the map that band reads (9 here), joined back; strided (2 x 2 bands) and depthwise
    alike. Where most products read the map (dilation 2 on 14 x 14) it stays one convolution.
    Whole and split, the model matches onnxruntime."""
    rng = np.random.default_rng(1)
    path = tmp_path / "bands.onnx"
    proto = atrous_model(path, rng, 8, 16 if groups == 1 else 8, size, (size - 1) // stride + 1, groups,
                         dilations=[dilation, dilation], pads=[dilation] * 4, strides=[stride, stride])
    model = frontend.load(str(path))
    assert model.mod["main"].script().count("R.nn.conv2d(") == convs
    x = rng.standard_normal((1, 8, size, size)).astype(np.float32)
    (ref,) = ort_run(proto, [x])
    for strategy in ("cpu", "equal"):
        _, outs = run_split(model, tmp_path / strategy, [x], strategy=strategy)
        np.testing.assert_allclose(outs[0], ref, rtol=RTOL, atol=ATOL)


def lrn_model(path, c=12, hw=7, size=5) -> onnx.ModelProto:
    """One LRN (AlexNet's and ZFNet's: alpha 1e-4, beta 0.75, bias 1) between two ReLUs."""
    nodes = [helper.make_node("Relu", ["x"], ["r"]),
             helper.make_node("LRN", ["r"], ["n"], size=size, alpha=1e-4, beta=0.75, bias=1.0),
             helper.make_node("Relu", ["n"], ["y"])]
    graph = helper.make_graph(nodes, "lrn", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, c, hw, hw])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, c, hw, hw])])
    proto = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    onnx.save(proto, path)
    return proto


@pytest.mark.parametrize("size", [5, 3])
def test_an_lrn_is_one_kernel_without_powf(size, tmp_path):
    """LRN's channel pool takes no reduction (it fuses with the square before it and the
    normalisation after it) and its ``** 0.75`` is two square roots: one kernel, no ``power``;
    whole and split over the channels it pools, the model matches onnxruntime."""
    from tvm_partition.ir.graph import OpGraph

    path = tmp_path / "lrn.onnx"
    proto = lrn_model(path, size=size)
    model = frontend.load(str(path))
    assert "R.power" not in model.mod["main"].script() and "R.sqrt" in model.mod["main"].script()
    ops = [op for op in OpGraph(model.mod).ops.values() if not op.is_view]
    assert len(ops) == 1 and "avg_pool3d" in ops[0].fused_name, [op.fused_name for op in ops]
    x = np.random.default_rng(5).standard_normal((1, 12, 7, 7)).astype(np.float32) * 30
    (ref,) = ort_run(proto, [x])
    for strategy in ("cpu", "equal"):
        _, outs = run_split(model, tmp_path / strategy, [x], strategy=strategy)
        np.testing.assert_allclose(outs[0], ref, rtol=RTOL, atol=ATOL)


@pytest.mark.parametrize("exponent,rooted", [(0.75, True), (2.0, True), (-0.5, True), (0.25, True), (0.6, False),
                                             ([[[2.0]]], False)])
def test_powers_of_whole_quarters_are_products_of_roots(exponent, rooted, tmp_path):
    """``x ** c`` for a constant ``c`` of whole quarters becomes multiplies and square roots (no
    libm ``powf`` a element), others stay ``power`` (an exponent of higher rank broadcasts ``x``
    to it); the model matches onnxruntime."""
    nodes = [helper.make_node("Pow", ["x", "c"], ["y"])]
    c = numpy_helper.from_array(np.array(exponent, dtype=np.float32), "c")
    out = [1, 4, 16] if np.ndim(exponent) == 3 else [4, 16]
    graph = helper.make_graph(nodes, "pow", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 16])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, out)], [c])
    proto = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    onnx.save(proto, tmp_path / "pow.onnx")
    model = frontend.load(str(tmp_path / "pow.onnx"))
    assert ("R.power" not in model.mod["main"].script()) == rooted
    x = np.random.default_rng(2).uniform(0.1, 20.0, (4, 16)).astype(np.float32)
    (ref,) = ort_run(proto, [x])
    _, outs = run_split(model, tmp_path / "cpu", [x], strategy="cpu")
    np.testing.assert_allclose(outs[0], ref, rtol=RTOL, atol=ATOL)


def conv_bn(path, cin=8, cout=16, hw=9, shared=False, seed=0) -> onnx.ModelProto:
    """A 3x3 convolution, then BatchNormalization and Relu (ResNet's); with ``shared``, the
    convolution's output is also added to the result (it cannot be folded away)."""
    rng = np.random.default_rng(seed)
    weights = {"W": rng.standard_normal((cout, cin, 3, 3)).astype(np.float32) * 0.2,
               "s": rng.uniform(0.5, 1.5, cout).astype(np.float32), "b": rng.standard_normal(cout).astype(np.float32),
               "m": rng.standard_normal(cout).astype(np.float32), "v": rng.uniform(0.5, 2.0, cout).astype(np.float32)}
    nodes = [helper.make_node("Conv", ["x", "W"], ["c"], kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
             helper.make_node("BatchNormalization", ["c", "s", "b", "m", "v"], ["n"], epsilon=1e-3),
             helper.make_node("Relu", ["n"], ["r" if shared else "y"]),
             *([helper.make_node("Add", ["r", "c"], ["y"])] if shared else [])]
    return one_conv_model(path, nodes, weights, [1, cin, hw, hw], [1, cout, hw, hw])


@pytest.mark.parametrize("shared", [False, True], ids=["folded", "conv-output-shared"])
def test_a_batch_norm_after_a_convolution_is_folded_into_its_weights(shared, tmp_path):
    """The batch norm's scale goes into the convolution's weights and its shift into a bias (both
    computed from the weights alone: load time), so the kernel's epilogue is one add, not a
    subtract, a divide, a multiply and an add per output; where the convolution's output has
    another use it stays as it was. Whole and split, the model matches onnxruntime."""
    path = tmp_path / "conv_bn.onnx"
    proto = conv_bn(path, shared=shared)
    text = frontend.load(str(path)).mod["main"].script()
    assert ("R.subtract(" in text) == shared and text.count("R.nn.conv2d(") == 1
    x = np.random.default_rng(5).standard_normal((1, 8, 9, 9)).astype(np.float32)
    (ref,) = ort_run(proto, [x])
    for strategy in ("cpu", "equal"):
        _, outs = run_split(frontend.load(str(path)), tmp_path / strategy, [x], strategy=strategy)
        np.testing.assert_allclose(outs[0], ref, rtol=RTOL, atol=ATOL)


def rep_block(path, branches, stride=1, identity=False, shared=False, c=16, hw=9, seed=0) -> onnx.ModelProto:
    """Convolutions of one input, each with a bias, summed (and, with ``identity``, a
    BatchNormalization of that input), then Relu: TextNet's and RepVGG's blocks in their training
    form. ``branches``: ``(kernel_shape, pads, dilation, group)`` each; ``shared``: the first one's
    output is added to the result too."""
    rng = np.random.default_rng(seed)
    weights, nodes, terms = {}, [], []
    for i, (kernel, pads, dilation, group) in enumerate(branches):
        weights[f"W{i}"] = rng.standard_normal((c, c // group, *kernel)).astype(np.float32) * 0.2
        weights[f"B{i}"] = rng.standard_normal(c).astype(np.float32) * 0.1
        nodes.append(helper.make_node("Conv", ["x", f"W{i}", f"B{i}"], [f"c{i}"], kernel_shape=kernel, pads=pads,
                                      strides=[stride, stride], dilations=[dilation, dilation], group=group))
        terms.append(f"c{i}")
    if identity:
        weights |= {"s": rng.uniform(0.5, 1.5, c).astype(np.float32), "b": rng.standard_normal(c).astype(np.float32),
                    "m": rng.standard_normal(c).astype(np.float32), "v": rng.uniform(0.5, 2.0, c).astype(np.float32)}
        nodes.append(helper.make_node("BatchNormalization", ["x", "s", "b", "m", "v"], ["n"], epsilon=1e-3))
        terms.append("n")
    total = terms[0]
    for i, term in enumerate(terms[1:]):
        nodes.append(helper.make_node("Add", [total, term], [f"sum{i}"]))
        total = f"sum{i}"
    nodes.append(helper.make_node("Relu", [total], ["r" if shared else "y"]))
    nodes += [helper.make_node("Add", ["r", "c0"], ["y"])] if shared else []
    out = (hw - 1) // stride + 1
    return one_conv_model(path, nodes, weights, [1, c, hw, hw], [1, c, out, out])


_3X3, _3X1, _1X3 = ([3, 3], [1, 1, 1, 1], 1, 1), ([3, 1], [1, 0, 1, 0], 1, 1), ([1, 3], [0, 1, 0, 1], 1, 1)


_1X1 = ([1, 1], [0] * 4, 1, 1)


@pytest.mark.parametrize("branches,stride,identity,shared,convs", [
    ([_3X3, _3X1, _1X3], 1, True, False, 1), ([_3X3, _3X1, _1X3], 2, False, False, 1), ([_3X3, _1X1], 1, True, False, 1),
    ([([2, 2], [1, 1, 0, 0], 1, 1), _1X1], 1, False, False, 1),
    ([([3, 3], [1] * 4, 1, 16), ([1, 1], [0] * 4, 1, 16)], 1, True, False, 1),
    ([([3, 3], [1] * 4, 1, 4), ([3, 1], [1, 0, 1, 0], 1, 4)], 1, True, False, 1),
    ([([3, 3], [1] * 4, 1, 2), _3X3, ([3, 3], [2] * 4, 2, 1)], 1, False, False, 3), ([_3X3, _1X1], 1, False, True, 2)],
    ids=["textnet", "strided", "repvgg", "one-sided", "depthwise", "grouped", "other-groups-and-dilated-kept",
         "shared-kept"])
def test_convolutions_of_one_input_summed_are_one_convolution(branches, stride, identity, shared, convs, tmp_path):
    """TextNet's block (a 3x3, a 3x1 and a 1x3 convolution of one input and a batch norm of it,
    summed) is one 3x3 convolution of their windows summed, strided alike; RepVGG's (3x3, 1x1,
    batch norm) too, and MobileOne's depthwise one, and grouped ones (the batch norm on each group's
    diagonal); a 2x2 window padded before only takes a 1x1 at its last tap. A dilated convolution or
    one of other groups than its sibling keeps its own, and so does one whose output has another use
    (no weights padded into a merged window). Whole and split, the model matches onnxruntime."""
    path = tmp_path / "rep.onnx"
    proto = rep_block(path, branches, stride, identity, shared)
    text = frontend.load(str(path)).mod["main"].script()
    assert text.count("R.nn.conv2d(") == convs and ("R.nn.pad(" in text) == (convs == 1)
    assert ("R.eye(" in text) == identity  # the batch norm merged: its scale on the diagonal
    x = np.random.default_rng(5).standard_normal((1, 16, 9, 9)).astype(np.float32)
    (ref,) = ort_run(proto, [x])
    for strategy in ("cpu", "equal"):
        _, outs = run_split(frontend.load(str(path)), tmp_path / strategy, [x], strategy=strategy)
        np.testing.assert_allclose(outs[0], ref, rtol=RTOL, atol=ATOL)


def test_a_half_precision_block_is_merged_in_its_own_precision(tmp_path):
    """TextNet's block with float16 weights and input: the merged weights (the batch norm's
    diagonal, its epsilon) are made in float16, not float32 (which Relax refuses to add to them)."""
    proto = rep_block(tmp_path / "rep.onnx", [_3X3, _3X1, _1X3], identity=True)
    for init in proto.graph.initializer:
        init.CopyFrom(numpy_helper.from_array(numpy_helper.to_array(init).astype(np.float16), init.name))
    for value in [*proto.graph.input, *proto.graph.output]:
        value.type.tensor_type.elem_type = TensorProto.FLOAT16
    onnx.save(proto, str(tmp_path / "rep16.onnx"))
    text = frontend.load(str(tmp_path / "rep16.onnx")).mod["main"].script()
    assert text.count("R.nn.conv2d(") == 1 and 'R.eye(16, 16, 0, dtype="float16")' in text


def test_a_covering_window_reads_what_each_window_read():
    """Brute force over windows of 1-3 taps padded 0-2 on either side, strides 1-3: where two
    windows give one output size (at an unstrided extent of their own, not by a stride's rounding),
    the covering window, each placed in it at its padding's offset, has that many outputs and holds
    each window's taps (output ``o`` reads row ``o * stride - top + r + offset`` through tap ``r +
    offset``, the row ``o * stride - before + r`` it read); elsewhere there is none."""
    import itertools

    from tvm_partition.frontend.conv_sums import covering

    sides = [(k, before, after) for k in (1, 2, 3) for before in (0, 1, 2) for after in (0, 1, 2)]
    merged = 0
    for (k1, b1, a1), (k2, b2, a2), (size, stride) in itertools.product(sides, sides, [(7, 1), (8, 2), (9, 3)]):
        outs = [(size + b + a - k) // stride + 1 for k, b, a in ((k1, b1, a1), (k2, b2, a2))]
        pads = covering(((k1, 1), (b1, 0, a1, 0)), ((k2, 1), (b2, 0, a2, 0)))
        if k1 - b1 - a1 != k2 - b2 - a2:
            assert pads is None
            continue
        merged += 1
        top, _, bottom, _ = pads
        sizes = {k + (top - b) + (bottom - a) for k, b, a in ((k1, b1, a1), (k2, b2, a2))}  # each padded into it
        assert len(sizes) == 1
        window = sizes.pop()
        assert outs[0] == outs[1] == (size + top + bottom - window) // stride + 1
        for k, b, a in ((k1, b1, a1), (k2, b2, a2)):
            offset = top - b  # output o reads row o * stride - b + r through tap r, the merged window's r + offset
            assert offset >= 0 and bottom >= a and all(0 <= r + offset < window for r in range(k))
    assert merged > 100


def pad_conv(path, pads, conv_pads=(0, 0, 0, 0), value=0.0, mode="constant", group=1, stride=2, also_pooled=False,
             opset=13, valid=False) -> onnx.ModelProto:
    """A ``Pad`` of ``pads`` (ONNX order: every axis's begin, then its end) before a 3x3 ``Conv`` of
    ``conv_pads`` and ``stride`` (TensorFlow's ``SAME`` through its converters), 16 channels at 9 x
    9; ``also_pooled``: the padded tensor is read by a 3x3 ``MaxPool`` too, added to the output
    (stride 1 and a pad of 1 around: the same shape); ``valid``: the ``Conv`` says ``auto_pad`` ``VALID``
    instead of its ``pads``."""
    rng = np.random.default_rng(3)
    channels = 16 + pads[1] + pads[5]  # what the convolution reads
    weights = {"W": rng.standard_normal((16, channels // group, 3, 3)).astype(np.float32) * 0.2}
    if opset >= 11:
        weights |= {"p": np.array(pads, np.int64), "v": np.array(value, np.float32)}
        pad = helper.make_node("Pad", ["x", "p", "v"], ["padded"], mode=mode)
    else:
        pad = helper.make_node("Pad", ["x"], ["padded"], mode=mode, pads=list(pads), value=value)
    padding = {"auto_pad": "VALID"} if valid else {"pads": list(conv_pads)}
    nodes = [pad, helper.make_node("Conv", ["padded", "W"], ["c"], kernel_shape=[3, 3], strides=[stride, stride],
                                   group=group, **padding)]
    if also_pooled:
        nodes += [helper.make_node("MaxPool", ["padded"], ["r"], kernel_shape=[3, 3]), helper.make_node("Add", ["c", "r"], ["y"])]
    else:
        nodes[-1].output[0] = "y"
    out = (9 + pads[2] + pads[6] + conv_pads[0] + conv_pads[2] - 3) // stride + 1
    proto = one_conv_model(path, nodes, weights, [1, 16, 9, 9], [1, 16, out, out])
    proto.opset_import[0].version = opset
    onnx.save(proto, str(path))
    return proto


@pytest.mark.parametrize("settings,folded", [
    (dict(pads=[0, 0, 0, 0, 0, 0, 1, 1]), True), (dict(pads=[0, 0, 1, 2, 0, 0, 1, 0], conv_pads=(1, 0, 0, 1), group=16), True),
    (dict(pads=[0, 0, 0, 0, 0, 0, 1, 1], opset=10), True), (dict(pads=[0, 0, 0, 0, 0, 0, 1, 1], group=16, valid=True), True),
    (dict(pads=[0, 0, 0, 0, 0, 0, 1, 1], value=1.0), False),
    (dict(pads=[0, 0, 1, 1, 0, 0, 1, 1], mode="reflect"), False), (dict(pads=[0, 2, 0, 0, 0, 0, 0, 0], stride=1), False),
    (dict(pads=[0, 0, 1, 1, 0, 0, 1, 1], stride=1, also_pooled=True), False)],
    ids=["tf-same", "asymmetric-depthwise-own-pads", "opset-10", "valid-depthwise", "ones-kept", "reflect-kept", "channels-kept",
         "read-twice-kept"])
def test_a_pad_of_zeros_before_a_convolution_is_its_padding(settings, folded, tmp_path):
    """TensorFlow's ``SAME`` padding as a ``Pad`` before a ``Conv`` of padding 0: folded into the
    convolution's padding (with its own, asymmetric, depthwise, the attribute form of opset 10, a
    ``VALID`` convolution's: Hugging Face's EfficientNet);
    a pad of ones, a reflection, one of the channels or one read by another node too stays a
    kernel of its own. The rewritten graph is valid ONNX that onnxruntime runs to the same outputs;
    whole and split, our build matches onnxruntime."""
    from tvm_partition.frontend.onnx_pads import pads_into_convs

    path = tmp_path / "pad_conv.onnx"
    proto = pad_conv(path, **settings)
    model = frontend.load(str(path))
    assert ("R.nn.conv2d(x," in model.mod["main"].script()) == folded  # the convolution reads the input itself
    # the weights: the convolution's, and a kept pad's widths (its value, one element, is bound as a constant)
    assert len(model.params) == 1 + (not folded and settings.get("opset", 13) >= 11)
    x = np.random.default_rng(5).standard_normal((1, 16, 9, 9)).astype(np.float32)
    (ref,) = ort_run(proto, [x])
    rewritten = onnx.ModelProto()
    rewritten.CopyFrom(proto)
    assert pads_into_convs(rewritten) == folded
    onnx.checker.check_model(rewritten)
    np.testing.assert_allclose(ort_run(rewritten, [x])[0], ref, rtol=RTOL, atol=ATOL)  # the rewrite itself, by onnxruntime
    for strategy in ("cpu", "equal"):
        _, outs = run_split(frontend.load(str(path)), tmp_path / strategy, [x], strategy=strategy)
        np.testing.assert_allclose(outs[0], ref, rtol=RTOL, atol=ATOL)


@pytest.mark.parametrize("auto_pad,kernel,stride,dilation,size,group", [
    ("SAME_UPPER", 1, 1, 1, 9, 1), ("SAME_UPPER", 3, 2, 1, 10, 16), ("SAME_LOWER", 3, 2, 1, 9, 1),
    ("SAME_UPPER", 5, 1, 1, 9, 16), ("SAME_LOWER", 4, 3, 1, 10, 1)],
    ids=["1x1", "strided-depthwise-even", "lower-strided-odd", "depthwise-5x5", "lower-even-kernel"])  # onnxruntime refuses dilated ones
def test_a_same_padded_convolution_gets_the_pads_it_means(auto_pad, kernel, stride, dilation, size, group, tmp_path):
    """``auto_pad`` ``SAME_UPPER`` / ``SAME_LOWER`` (PyTorch's ``padding="same"``: Hugging Face's
    EfficientNet) as the explicit ``pads`` the specification derives: no pad kernel before the
    convolution (TVM's importer wrote one, which no split rule reads), the rewritten graph valid
    ONNX that onnxruntime runs to the same outputs, and our build, whole and split, matching it."""
    from tvm_partition.frontend.onnx_pads import same_pads_explicit

    rng = np.random.default_rng(4)
    weights = {"W": rng.standard_normal((16, 16 // group, kernel, kernel)).astype(np.float32) * 0.2}
    out = -(-size // stride)
    conv = helper.make_node("Conv", ["x", "W"], ["y"], kernel_shape=[kernel, kernel], strides=[stride, stride],
                            dilations=[dilation, dilation], group=group, auto_pad=auto_pad)
    path = tmp_path / "same.onnx"
    proto = one_conv_model(path, [conv], weights, [1, 16, size, size], [1, 16, out, out])
    model = frontend.load(str(path))
    assert "R.nn.conv2d(x," in model.mod["main"].script() and "call_tir" not in model.mod["main"].script()
    x = rng.standard_normal((1, 16, size, size)).astype(np.float32)
    (ref,) = ort_run(proto, [x])
    rewritten = onnx.ModelProto()
    rewritten.CopyFrom(proto)
    assert same_pads_explicit(rewritten, {"x": [1, 16, size, size]}) == 1
    onnx.checker.check_model(rewritten)
    np.testing.assert_allclose(ort_run(rewritten, [x])[0], ref, rtol=RTOL, atol=ATOL)  # the rewrite itself, by onnxruntime
    for strategy in ("cpu", "equal"):
        _, outs = run_split(frontend.load(str(path)), tmp_path / strategy, [x], strategy=strategy)
        np.testing.assert_allclose(outs[0], ref, rtol=RTOL, atol=ATOL)


def test_small_cnn_manual_plan_h_and_n_splits(tmp_path):
    """Conv split along H (halo rows, uneven), pool re-split along H, Gemm split along N."""
    path = tmp_path / "cnn.onnx"
    proto = small_cnn(path)
    model = frontend.load(str(path))
    devices = parse_devices(CPU2)
    g = OpGraph(model.mod)

    def op_of(kind):
        (op_id,) = [i for i, op in g.ops.items() if op.kind == kind]
        return op_id

    conv, pool, gemm, softmax = op_of("conv2d"), op_of("max_pool2d"), op_of("matmul"), op_of("softmax")
    assert g.dim_name(g.ops[conv], 2) == "H" and 2 in g.ops[conv].split_dims
    assert g.dim_name(g.ops[gemm], 1) == "N" and 1 in g.ops[gemm].split_dims
    plan = Plan(devices, {
        conv: Split(2, (0.35, 0.65), ("cpu1", "cpu")),  # 8 rows -> 3 + 5
        pool: Split(2, (0.75, 0.25), ("cpu", "cpu1")),  # 4 rows -> 3 + 1
        gemm: Split(1, (0.6, 0.4), ("cpu1", "cpu")),  # 10 classes -> 6 + 4
        softmax: OnDevice("cpu1"),
    })
    plan_file = tmp_path / "plan.json"
    plan.save(plan_file)

    x = cnn_input(seed=11)
    compiled, outs = run_split(model, tmp_path, [x], plan_file=str(plan_file))
    assert compiled.plan.ops[conv] == Split(2, (0.35, 0.65), ("cpu1", "cpu"))
    assert compiled.plan.ops[gemm] == Split(1, (0.6, 0.4), ("cpu1", "cpu"))
    # the kernels really landed on both devices
    assert {"cpu", "cpu1"} <= set(compiled.manifest()["kernel_devices"].values())
    (ref,) = ort_run(proto, [x])
    np.testing.assert_allclose(outs[0], ref, rtol=RTOL, atol=ATOL)


def test_free_batch_is_fixed_by_batch_option(tmp_path):
    path = tmp_path / "cnn_free.onnx"
    proto = small_cnn(path, batch=None)
    model = frontend.load(str(path), batch=3)
    assert [i["shape"] for i in model.input_info()] == [[3, 3, 8, 8]]
    assert "batch_defaulted" not in model.config  # bound by the flag: nothing to say
    assert frontend.load(str(path)).config["batch_defaulted"] == ["0[0] (N)"]
    x = cnn_input(batch=3, seed=3)
    compiled, outs = run_split(model, tmp_path, [x])
    assert n_splits(compiled) >= 1
    (ref,) = ort_run(proto, [x])
    np.testing.assert_allclose(outs[0], ref, rtol=RTOL, atol=ATOL)


def free_text_model(path) -> onnx.ModelProto:
    """A Hugging Face-like text export: ``input_ids`` (int64) and ``attention_mask`` of
    ``[batch_size, sequence_length]``, both free; an embedding gathered, masked, a MatMul and a
    softmax over the sequence."""
    rng = np.random.default_rng(5)
    weights = {"E": rng.standard_normal((4, 8)).astype(np.float32), "W": rng.standard_normal((8, 6)).astype(np.float32),
               "one": np.array([2], np.int64)}
    nodes = [helper.make_node("Gather", ["E", "input_ids"], ["e"]),
             helper.make_node("Cast", ["attention_mask"], ["m0"], to=TensorProto.FLOAT),
             helper.make_node("Unsqueeze", ["m0", "one"], ["m"]),
             helper.make_node("Mul", ["e", "m"], ["h"]),
             helper.make_node("MatMul", ["h", "W"], ["s"]),
             helper.make_node("Softmax", ["s"], ["y"], axis=1)]
    dims = ["batch_size", "sequence_length"]
    graph = helper.make_graph(
        nodes, "free_text",
        [helper.make_tensor_value_info("input_ids", TensorProto.INT64, dims),
         helper.make_tensor_value_info("attention_mask", TensorProto.INT64, dims)],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [*dims, 6])],
        initializer=[numpy_helper.from_array(v, k) for k, v in weights.items()])
    return _saved(graph, path)


def free_image_model(path) -> onnx.ModelProto:
    """A fully convolutional export with a free batch, height and width (``[N, 3, H, W]``): a 3x3
    convolution, ReLU and a global average pool."""
    rng = np.random.default_rng(6)
    weights = {"W": rng.standard_normal((8, 3, 3, 3)).astype(np.float32) * 0.3}
    nodes = [helper.make_node("Conv", ["x", "W"], ["c"], kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c"], ["r"]),
             helper.make_node("GlobalAveragePool", ["r"], ["y"])]
    graph = helper.make_graph(
        nodes, "free_image", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 3, "H", "W"])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 8, 1, 1])],
        initializer=[numpy_helper.from_array(v, k) for k, v in weights.items()])
    return _saved(graph, path)


def cached_decoder_step(path) -> onnx.ModelProto:
    """A decoder step with a cache, as Hugging Face exports GPT-2's: ``input_ids`` of
    ``[batch_size, sequence_length]``, an ``attention_mask`` of ``[batch_size,
    total_sequence_length]`` and ``past_key`` of ``[batch_size, 2, past_sequence_length, 4]`` (two
    heads); the new tokens' keys are appended to the past (Concat), queried and attended over the
    whole masked sequence; outputs the attention and the ``present`` keys."""
    rng = np.random.default_rng(7)
    weights = {"E": rng.standard_normal((10, 8)).astype(np.float32),
               "Wq": rng.standard_normal((8, 8)).astype(np.float32), "Wk": rng.standard_normal((8, 8)).astype(np.float32),
               "heads": np.array([0, 0, 2, 4], np.int64), "axes": np.array([1, 2], np.int64),
               "big": np.array(-1e4, np.float32), "one": np.array(1, np.float32)}
    nodes = [helper.make_node("Gather", ["E", "input_ids"], ["e"]),
             *[n for w in ("q", "k") for n in (
                 helper.make_node("MatMul", ["e", f"W{w}"], [f"{w}0"]),
                 helper.make_node("Reshape", [f"{w}0", "heads"], [f"{w}1"]),
                 helper.make_node("Transpose", [f"{w}1"], [w], perm=[0, 2, 1, 3]))],
             helper.make_node("Concat", ["past_key", "k"], ["present"], axis=2),
             helper.make_node("Transpose", ["present"], ["kt"], perm=[0, 1, 3, 2]),
             helper.make_node("MatMul", ["q", "kt"], ["s"]),
             helper.make_node("Cast", ["attention_mask"], ["m0"], to=TensorProto.FLOAT),
             helper.make_node("Sub", ["one", "m0"], ["m1"]),
             helper.make_node("Mul", ["m1", "big"], ["m2"]),
             helper.make_node("Unsqueeze", ["m2", "axes"], ["m"]),
             helper.make_node("Add", ["s", "m"], ["sm"]),
             helper.make_node("Softmax", ["sm"], ["p"], axis=-1),
             helper.make_node("MatMul", ["p", "present"], ["y"])]
    b, s, t, p = "batch_size", "sequence_length", "total_sequence_length", "past_sequence_length"
    graph = helper.make_graph(
        nodes, "cached_step",
        [helper.make_tensor_value_info("input_ids", TensorProto.INT64, [b, s]),
         helper.make_tensor_value_info("attention_mask", TensorProto.INT64, [b, t]),
         helper.make_tensor_value_info("past_key", TensorProto.FLOAT, [b, 2, p, 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [b, 2, s, 4]),
         helper.make_tensor_value_info("present", TensorProto.FLOAT, [b, 2, t, 4])],
        initializer=[numpy_helper.from_array(v, k) for k, v in weights.items()])
    return _saved(graph, path)


def _saved(graph, path) -> onnx.ModelProto:
    """``graph`` as an opset-13 model, checked and saved to ``path``."""
    proto = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    proto.ir_version = 8
    onnx.checker.check_model(proto)
    onnx.save(proto, str(path))
    return proto


def test_a_free_sequence_is_bound_by_seq_len_and_matches_onnxruntime(tmp_path):
    path = tmp_path / "text.onnx"
    proto = free_text_model(path)
    assert frontend.model_options(str(path)) == ("batch", "seq_len", "dims")
    (tmp_path / "corrupt.onnx").write_bytes(b"not a model")
    assert frontend.model_options(str(tmp_path / "corrupt.onnx")) == ("batch",)  # load() says why, later
    with pytest.raises(frontend.ModelError, match=r"input 'input_ids' has a free dimension 1 \(sequence_length\): "
                                                  r"give --seq-len N"):
        frontend.load(str(path))
    model = frontend.load(str(path), batch=2, seq_len=5)
    assert [i["shape"] for i in model.input_info()] == [[2, 5], [2, 5]]
    assert model.config["seq_len"] == 5 and model.config["batch"] == 2
    ids = np.random.default_rng(1).integers(0, 4, (2, 5)).astype(np.int64)
    mask = np.array([[1, 1, 1, 0, 0], [1, 1, 1, 1, 1]], np.int64)
    _, outs = run_split(model, tmp_path, [ids, mask], strategy="cpu")
    (ref,) = ort_run(proto, [ids, mask])
    np.testing.assert_allclose(outs[0], ref, rtol=RTOL, atol=ATOL)


def test_a_free_height_and_width_are_bound_by_image_size_and_match_onnxruntime(tmp_path):
    path = tmp_path / "image.onnx"
    proto = free_image_model(path)
    assert frontend.model_options(str(path)) == ("batch", "image_size", "dims")
    with pytest.raises(frontend.ModelError, match=r"free dimension 2 \(H\): give --image-size N"):
        frontend.load(str(path))
    with pytest.raises(frontend.ModelError, match=r"--seq-len binds a free sequence .* no input has one "
                                                  r"\(inputs: x 1x3x12x12\)"):
        frontend.load(str(path), image_size=12, seq_len=4)
    model = frontend.load(str(path), image_size=12)
    assert [i["shape"] for i in model.input_info()] == [[1, 3, 12, 12]]
    x = np.random.default_rng(2).standard_normal((1, 3, 12, 12)).astype(np.float32)
    _, outs = run_split(model, tmp_path, [x], strategy="cpu", schedules=True)
    (ref,) = ort_run(proto, [x])
    np.testing.assert_allclose(outs[0], ref, rtol=RTOL, atol=ATOL)


def test_a_cached_decoder_step_is_bound_by_name_and_matches_onnxruntime(tmp_path):
    # one token against a past of 5: three free lengths that position alone cannot tell apart
    path = tmp_path / "step.onnx"
    proto = cached_decoder_step(path)
    assert frontend.model_options(str(path)) == ("batch", "seq_len", "image_size", "dims")
    with pytest.raises(frontend.ModelError, match=r"input 'past_key' has a free dimension 2 \(past_sequence_length\): "
                                                  r"give --image-size N or --dim past_sequence_length=N"):
        frontend.load(str(path), seq_len=1)
    with pytest.raises(frontend.ModelError, match=r"--dim past_length: no input has a free dimension of that name "
                                                  r"\(the free ones: batch_size, sequence_length, "
                                                  r"total_sequence_length, past_sequence_length\)"):
        frontend.load(str(path), seq_len=1, dims={"past_length": 5, "total_sequence_length": 6})
    model = frontend.load(str(path), seq_len=1, dims={"past_sequence_length": 5, "total_sequence_length": 6})
    assert [i["shape"] for i in model.input_info()] == [[1, 1], [1, 6], [1, 2, 5, 4]]
    assert model.config["dims"] == "past_sequence_length=5,total_sequence_length=6"
    again = frontend.load(str(path), dims=model.config["dims"] + ",sequence_length=1")  # the config's text loads it
    assert [i["shape"] for i in again.input_info()] == [[1, 1], [1, 6], [1, 2, 5, 4]]
    rng = np.random.default_rng(3)
    inputs = [rng.integers(0, 10, (1, 1)).astype(np.int64), np.array([[0, 1, 1, 1, 1, 1]], np.int64),
              rng.standard_normal((1, 2, 5, 4)).astype(np.float32)]
    _, outs = run_split(model, tmp_path, inputs, strategy="cpu", schedules=True)
    for got, ref in zip(outs, ort_run(proto, inputs)):
        np.testing.assert_allclose(got, ref, rtol=RTOL, atol=ATOL)


@pytest.mark.parametrize("dims,options,expected", [
    (["N", 3, 8, 8], {}, ([1, 3, 8, 8], ["x[0] (N)"])),
    ([4, 3, 8, 8], {"batch": 2}, ([2, 3, 8, 8], [])),  # --batch also replaces a static batch
    ([4, "L"], {"seq_len": 7}, ([4, 7], [])),
    (["N", "T", 16], {"batch": 3, "seq_len": 9}, ([3, 9, 16], [])),  # a series [batch, time, features]
    ([1, 3, "H", "W"], {"image_size": 32}, ([1, 3, 32, 32], [])),
    ([1, 8, "K"], {}, r"free dimension 2 \(K\) of 3: give --dim K=N; the batch"),  # no flag binds it
    ([1, "C", 8, 8], {}, r"free dimension 1 \(C\) of 4: give --dim C=N; the batch"),
    ([1, 8, None], {}, r"free dimension 2 \(\?\) of 3: it has no name for --dim; the batch"),
    ([1, "L"], {}, r"give --seq-len N or --dim L=N$"),
    ([1, 8, "K"], {"dims": {"K": 3}}, ([1, 8, 3], [])),  # by name where no position binds
    (["N", "L"], {"dims": {"L": 3}}, ([1, 3], ["x[0] (N)"])),
    (["N", "L"], {"dims": {"N": 2, "L": 3}}, ([2, 3], [])),
    ([1, "L"], {"dims": {"Q": 3}, "seq_len": 2}, r"--dim Q: no input has a free dimension of that name \(the free "
                                                 r"ones: L\)"),
    ([1, 4], {"dims": {"Q": 3}}, r"--dim Q: .* \(none has a named free dimension\)"),
    ([1, 4], {"seq_len": 4}, r"--seq-len binds a free sequence .* \(inputs: x 1x4\)"),  # a static one is kept
    ([1, 3, 8, 8], {"image_size": 4}, r"--image-size binds a free height or width"),
])
def test_free_dimensions_bound_by_position(dims, options, expected):
    from tvm_partition.frontend import onnx_shapes

    inputs = [helper.make_tensor_value_info("x", TensorProto.FLOAT, dims)]
    if isinstance(expected, str):
        with pytest.raises(onnx_shapes.ShapeError, match=expected):
            onnx_shapes.bind(inputs, options)
        return
    shape, defaulted = expected
    assert onnx_shapes.bind(inputs, options) == ({"x": shape}, defaulted)


def test_layers_is_refused_for_an_onnx_model(tmp_path):
    path = tmp_path / "cnn.onnx"
    small_cnn(path)
    with pytest.raises(frontend.ModelError, match=r"--layers applies to the zoo's lstm, gru and bert only"):
        frontend.load(str(path), layers=2)


def test_a_model_larger_than_the_available_memory_is_refused_before_loading(tmp_path, monkeypatch):
    path = tmp_path / "cnn.onnx"
    small_cnn(path)
    monkeypatch.setattr(frontend, "available_memory", lambda: os.path.getsize(path) - 1)
    with pytest.raises(frontend.ModelError, match=r"does not fit in this machine's available memory"):
        frontend.load(str(path))
    monkeypatch.setattr(frontend, "available_memory", lambda: os.path.getsize(path))
    assert frontend.load(str(path)).input_info()


def test_a_sum_is_imported_as_adds_that_fuse(tmp_path):
    """ONNX Sum (three terms, one broadcast) becomes a chain of adds that fuse with their producer,
    not TVM's stack-and-reduce kernel; the result is onnxruntime's."""
    rng = np.random.default_rng(0)
    bias = numpy_helper.from_array(rng.standard_normal((1, 4, 1, 1)).astype(np.float32), "bias")
    w = numpy_helper.from_array(rng.standard_normal((4, 4, 1, 1)).astype(np.float32), "w")
    graph = helper.make_graph(
        [helper.make_node("Conv", ["x", "w"], ["c"], kernel_shape=[1, 1]),
         helper.make_node("Sum", ["c", "x", "bias"], ["y"])], "sum",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 4, 5, 5])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 4, 5, 5])], initializer=[bias, w])
    proto = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    proto.ir_version = 8
    onnx.save(proto, str(tmp_path / "sum.onnx"))
    model = frontend.load(str(tmp_path / "sum.onnx"))
    x = rng.standard_normal((2, 4, 5, 5)).astype(np.float32)
    compiled, outs = run_split(model, tmp_path, [x], strategy="cpu")
    kernels = list(compiled.manifest()["kernel_devices"])
    assert not [k for k in kernels if "stack" in k] and len([k for k in kernels if "conv2d" in k]) == 1, kernels
    np.testing.assert_allclose(outs[0], ort_run(proto, [x])[0], rtol=RTOL, atol=ATOL)


# --- transformer blocks as exporters write them ---------------------------------------------

TRANSFORMERS = {"bert_layer": bert_layer, "gpt_block": gpt_block}


@pytest.mark.parametrize("name", TRANSFORMERS)
def test_transformer_blocks_under_every_strategy_match_onnxruntime(name, tmp_path):
    """A BERT encoder layer and a GPT-2 decoder block (tests/onnx_transformers.py) planned by every
    strategy on cpu,cpu; each distinct plan is built, run by the Runner and checked against
    onnxruntime (strategies that agree on the plan share one build). The GPT block's plans that
    split no op (the whole block on one device, as the BERT layer's are built) are left out: two
    of its four builds, 24 s of the suite (2026-11-29)."""
    path = tmp_path / f"{name}.onnx"
    proto, inputs = TRANSFORMERS[name](path)
    model = frontend.load(str(path))
    graph, devices = OpGraph(model.mod), parse_devices(CPU2)
    cost_model = default_cost_model(devices)[0]
    by_plan: dict = {}
    for strategy in planners.NAMES:
        plan = make_plan(graph, devices, strategy, cost_model=cost_model)
        by_plan.setdefault(json.dumps(plan.to_json()["ops"], sort_keys=True), (plan, []))[1].append(strategy)
    (ref,) = ort_run(proto, inputs)
    splits = 0
    for i, (plan, strategies) in enumerate(by_plan.values()):
        if name == "gpt_block" and not any(isinstance(d, Split) for d in plan.ops.values()):
            continue
        compiled, outs = run_split(model, tmp_path / f"plan{i}", inputs, plan_file=plan)
        np.testing.assert_allclose(outs[0], ref, rtol=RTOL, atol=ATOL, err_msg=f"plan of {strategies}")
        splits = max(splits, n_splits(compiled))
    assert splits >= 10, "equal splits the blocks' ops"


# --- real models shipped with the onnx package -----------------------------------------------

SHIPPED_MODELS = [
    "test_Conv2d_depthwise_padded",
    "test_Conv2d_strided",
    "test_Conv2d_groups",
    "test_Linear",
    "test_BatchNorm2d_eval",
    "test_Embedding",
    "test_MaxPool2d_stride_padding_dilation",
    "test_AvgPool2d_stride",
    "test_PReLU_2d",
    "test_LogSoftmax",
    "test_GLU",  # Split -> tuple access -> Mul fuses into one kernel
    "test_GLU_dim",
]


def shipped(name: str) -> str:
    path = os.path.join(SHIPPED, name, "model.onnx")
    if not os.path.exists(path):
        pytest.skip(f"this onnx install does not ship {name}")
    return path


def shipped_tensor(name: str, which: str) -> np.ndarray:
    return numpy_helper.to_array(onnx.load_tensor(os.path.join(SHIPPED, name, "test_data_set_0", f"{which}.pb")))


@pytest.mark.parametrize("name", SHIPPED_MODELS)
def test_shipped_model_split(name, tmp_path):
    path = shipped(name)
    x, expected = shipped_tensor(name, "input_0"), shipped_tensor(name, "output_0")
    model = frontend.load(path)
    assert len(model.input_info()) == 1, "initializers listed as graph inputs must not become data inputs"
    compiled, outs = run_split(model, tmp_path, [x])
    assert n_splits(compiled) >= 1, "the equal plan should split at least one op"
    assert len(outs) == 1 and outs[0].shape == expected.shape and outs[0].dtype == expected.dtype
    np.testing.assert_allclose(outs[0], expected, rtol=RTOL, atol=ATOL)
    (ref,) = ort_run(onnx.load(path), [x])
    np.testing.assert_allclose(outs[0], ref, rtol=RTOL, atol=ATOL)


# --- the CLI form of the definition of done --------------------------------------------------

@pytest.mark.parametrize("name", ["test_Conv2d_strided", "test_Linear"])
def test_cli_check_on_shipped_model(name):
    path = shipped(name)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([REPO, os.environ.get("PYTHONPATH", "")]))
    proc = subprocess.run(
        [sys.executable, "-m", "tvm_partition.compile", path, "--strategy", "equal", "--devices", CPU2, "--check"],
        capture_output=True, text=True, cwd=REPO, env=env, timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    m = re.search(r"^max_abs_err=(\S+)$", proc.stdout, re.M)
    assert m, proc.stdout
    assert float(m.group(1)) <= 1e-4
    m = re.search(r"^max_abs_err_onnxruntime=(\S+)$", proc.stdout, re.M)  # the file read by onnxruntime too
    if name == "test_Linear":  # opset 6: onnxruntime has no Gemm of that version, and says so
        assert not m and "note: not compared with onnxruntime: onnxruntime cannot load" in proc.stderr, proc.stderr
    else:
        assert m and float(m.group(1)) <= 1e-4, proc.stdout + proc.stderr


def test_the_check_passes_where_the_reference_is_the_one_off(monkeypatch, capsys):
    """``compile --check`` where the artifact differs from the unpartitioned reference beyond
    tolerance: it passes only where onnxruntime agrees with the artifact and is further from the
    reference (BiT's group norms: TVM's default schedule sums each row into one float32), saying so;
    otherwise it fails as before, and a model onnxruntime cannot check fails on the reference alone."""
    from types import SimpleNamespace

    from tvm_partition.cli.compile import judged
    from tvm_partition.runtime import ort

    truth = np.linspace(-4, 4, 64, dtype=np.float32).reshape(8, 8)
    onnx_model = SimpleNamespace(model=SimpleNamespace(name="m", config={"source": "m.onnx"}), num_threads=2)
    ours, off = [truth + 1e-5], [truth + 2e-3]
    monkeypatch.setattr(ort, "outputs", lambda model, threads: [truth])
    assert judged(onnx_model, ours, off) == 0
    out, err = capsys.readouterr()
    assert out == "max_abs_err=0.00199\nmax_abs_err_onnxruntime=1e-05\n"
    assert "the unpartitioned model (TVM's default CPU pipeline) is the one off" in err and "error" not in err
    assert judged(onnx_model, off, ours) == 1  # the artifact is the one off
    assert "error: partitioned output differs from the unpartitioned model" in capsys.readouterr().err
    monkeypatch.setattr(ort, "outputs", lambda model, threads: [truth + 4e-3])  # onnxruntime off too: closer to the reference
    assert judged(onnx_model, ours, off) == 1
    monkeypatch.setattr(ort, "outputs", lambda model, threads: [truth])  # both within its tolerance, the reference closer
    assert judged(onnx_model, [truth + 3.5e-4], [truth - 2e-4]) == 1
    zoo = SimpleNamespace(model=SimpleNamespace(name="lstm", config={"batch": 16}), num_threads=2)
    assert judged(zoo, ours, off) == 1 and "error: partitioned output differs" in capsys.readouterr().err


def _layer_norm_of_offset(path, offset: float, width: int = 64) -> None:
    """A layer norm as PyTorch exports one (ReduceMean, Sub, Pow, ..., which onnxruntime fuses into
    one kernel), of its input plus ``offset``: the larger the offset, the more two float32
    evaluations that sum in other orders differ."""
    const = [numpy_helper.from_array(np.array(v, np.float32), n) for n, v in (
        ("off", offset), ("two", 2.0), ("eps", 1e-5), ("g", np.ones(width)), ("b", np.zeros(width)))]
    steps = [("Add", ["x", "off"], "h"), ("ReduceMean", ["h"], "m"), ("Sub", ["h", "m"], "d"), ("Pow", ["d", "two"], "d2"),
             ("ReduceMean", ["d2"], "v"), ("Add", ["v", "eps"], "ve"), ("Sqrt", ["ve"], "s"), ("Div", ["d", "s"], "n"),
             ("Mul", ["n", "g"], "ng"), ("Add", ["ng", "b"], "y")]  # scale and shift: onnxruntime's fusion wants them
    nodes = [helper.make_node(op, ins, [out], **({"axes": [-1]} if op == "ReduceMean" else {})) for op, ins, out in steps]
    io = [helper.make_tensor_value_info(n, TensorProto.FLOAT, [8, width]) for n in ("x", "y")]
    onnx.save(helper.make_model(helper.make_graph(nodes, "ln", io[:1], io[1:], const),
                                opset_imports=[helper.make_opsetid("", 13)]), str(path))


def test_a_float_model_beyond_the_tolerance_is_held_to_onnxruntimes_own_difference(tmp_path, capsys):
    """Where onnxruntime's own outputs with its graph optimizations and without differ beyond the
    tolerance (a layer norm of values near 1e4: 8.5e-4 apart, the tolerance 3.7e-4), a correct
    evaluation (float64 after the float32 offset) passes ``compile --check``, held to
    :data:`NOISE_FACTOR` times that difference and saying so, where the tolerance alone failed it, and
    settles a reference further off; one element moved by ten times that difference still fails."""
    import functools
    from types import SimpleNamespace

    from tvm_partition.cli.compile import judged
    from tvm_partition.runtime import ort

    _layer_norm_of_offset(tmp_path / "ln.onnx", 1e4)
    model = frontend.load(str(tmp_path / "ln.onnx"))
    noise = ort.own_difference(model, 2)
    assert noise > ort.tolerance(ort.outputs(model, 2))  # onnxruntime's own evaluations lie beyond the tolerance
    h = (next(iter(ort.feeds(model).values())) + np.float32(1e4)).astype(np.float64)
    d = h - h.mean(-1, keepdims=True)
    correct = [(d / np.sqrt((d * d).mean(-1, keepdims=True) + 1e-5)).astype(np.float32)]
    compiled = SimpleNamespace(model=model, num_threads=2)
    assert judged(compiled, correct, correct) == 1  # the tolerance alone
    assert "error: partitioned output differs from onnxruntime's" in capsys.readouterr().err
    measured = functools.partial(ort.own_difference, model, 2)
    assert judged(compiled, correct, correct, noise=measured) == 0
    out, err = capsys.readouterr()
    assert f"noise_onnxruntime={noise:.3g} (beyond the tolerance" in out and "error" not in err
    assert judged(compiled, correct, [correct[0] + 2 * noise], noise=measured) == 0  # the reference within it too
    out, err = capsys.readouterr()
    assert out.startswith(f"max_abs_err={2 * noise:.3g}\nnoise_onnxruntime=") and err == ""
    off = [correct[0] + 5 * noise]  # TVM's default pipeline further off (it was: 3.2e-3 from onnxruntime)
    assert judged(compiled, correct, off, noise=measured) == 0
    assert "the unpartitioned model (TVM's default CPU pipeline) is the one off" in capsys.readouterr().err
    wrong = [correct[0].copy()]
    wrong[0][3, 5] += 10 * noise
    assert judged(compiled, wrong, wrong, noise=measured) == 1


def test_a_float_models_agreement_measures_onnxruntimes_difference_only_beyond_the_tolerance():
    """:func:`agreement` of a float model: within :data:`NOISE_FACTOR` of onnxruntime's own
    difference passes, beyond it fails; the difference is measured only where the tolerance fails;
    a quantized model keeps its own route; a zoo model has no onnxruntime difference."""
    from tvm_partition.runtime import ort
    from tvm_partition.runtime.ort import NOISE_FACTOR, agreement

    ref = [np.ones((2, 3), np.float32)]
    out = [ref[0] + 3e-4]  # the tolerance: 1e-4
    assert not agreement(out, ref, False).ok
    assert agreement(out, ref, False, noise=3e-4 / NOISE_FACTOR * 1.01).ok
    assert not agreement(out, ref, False, noise=3e-4 / NOISE_FACTOR * 0.99).ok
    assert agreement(out, ref, False, noise=lambda: 3e-4 / NOISE_FACTOR * 1.01).ok
    assert agreement([ref[0] + 5e-5], ref, False, noise=lambda: pytest.fail("measured")).ok
    assert not agreement([ref[0] + 0.5], ref, True, noise=1.0).ok  # a quantized model: its flips, not this
    assert ort.own_difference(frontend.load("lstm"), 2) is None


def test_check_fails_where_onnxruntime_disagrees(monkeypatch, capsys):
    """``compile --check``'s second oracle: a build whose outputs differ from onnxruntime's by more
    than the tolerance fails in one line; where onnxruntime cannot run the file, a note says the
    check was TVM's alone; a zoo model (no file) compares nothing."""
    from types import SimpleNamespace

    from tvm_partition.cli.compile import check_onnxruntime
    from tvm_partition.runtime import ort

    outs = [np.ones((2, 3), np.float32)]
    onnx_model = SimpleNamespace(model=SimpleNamespace(name="m", config={"source": "m.onnx"}), num_threads=2)
    monkeypatch.setattr(ort, "outputs", lambda model, threads: [outs[0] + 2**-16])
    assert check_onnxruntime(onnx_model, outs) == 0
    assert capsys.readouterr().out == "max_abs_err_onnxruntime=1.53e-05\n"
    monkeypatch.setattr(ort, "outputs", lambda model, threads: [outs[0] + 0.5])
    assert check_onnxruntime(onnx_model, outs) == 1
    err = capsys.readouterr().err
    assert err == "error: partitioned output differs from onnxruntime's (tolerance 0.00015)\n"
    monkeypatch.setattr(ort, "outputs", lambda model, threads: [outs[0][:1]])  # another shape
    assert check_onnxruntime(onnx_model, outs) == 1 and "max_abs_err_onnxruntime=inf" in capsys.readouterr().out

    def unavailable(model, threads):
        raise ort.OrtError("onnxruntime is not installed here: pip install onnxruntime")

    monkeypatch.setattr(ort, "outputs", unavailable)
    assert check_onnxruntime(onnx_model, outs) == 0
    assert capsys.readouterr().err == "note: not compared with onnxruntime: onnxruntime is not installed here: pip install onnxruntime\n"
    zoo = SimpleNamespace(model=SimpleNamespace(name="lstm", config={"batch": 16}), num_threads=2)
    assert check_onnxruntime(zoo, outs) == 0 and capsys.readouterr() == ("", "")
