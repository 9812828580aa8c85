"""Models whose outputs' sizes depend on the data: the tail of a detector, ONNX ``NonMaxSuppression``
(the boxes it keeps) and ``NonZero`` (the scores over a threshold), each followed by the ``Gather``
of what it picked. Oracle: onnxruntime on the same file and input, the shapes of the outputs
included. Before, the first failed to build ("LegalizeOps changed the binding structure of
main"), then kept 249 rows where onnxruntime kept 30 (its ``max_output_boxes_per_class`` made a
weight, which TVM's legalization reads only as a constant), and the second was refused ("has a
dynamic shape"), then failed in every runtime-only process ("Cannot find ffi::Function
relax.run.nonzero")."""

from __future__ import annotations

import os
import sys

import numpy as np
import pytest

from tvm_partition import frontend
from tvm_partition.devices import parse_devices
from tvm_partition.ir.graph import OpGraph
from tvm_partition.plan import OnDevice, Plan, PlanError
from tvm_partition.planners import make_plan

from rpc_servers import REPO
from test_deploy import runtime_only
from test_onnx import ATOL, RTOL, ort_run, run_split

sys.path.insert(0, os.path.join(REPO, "benchmarks"))
from detectors import detector  # noqa: E402

#: Small settings of benchmarks/detectors.py's detector: 64 px, four convolutions, three of stride 2 (an 8 x 8 map:
#: 64 boxes), 3 classes, at most 10 boxes a class
HW, CHANNELS, CLASSES, PER_CLASS = 64, (8, 16, 16, 16), 3, 10
BOXES = (HW // 8) ** 2


def small_detector(path, tail: str):
    """The NMS's threshold passes every box, so that its bound of :data:`PER_CLASS` a class decides
    (30 rows); the NonZero's passes some of the places (13 of 64 on these images)."""
    threshold = 0.05 if tail == "nms" else 0.5
    return detector(path, tail, HW, CLASSES, CHANNELS, PER_CLASS, threshold=threshold, score_bias=0.0)


def image(seed=3) -> np.ndarray:
    return np.random.default_rng(seed).uniform(0, 1, (1, 3, HW, HW)).astype(np.float32)


@pytest.fixture(scope="module")
def models(tmp_path_factory) -> dict:
    folder = tmp_path_factory.mktemp("detectors")
    return {tail: (str(folder / f"{tail}.onnx"), small_detector(folder / f"{tail}.onnx", tail))
            for tail in ("nms", "nonzero")}


@pytest.mark.parametrize("tail", ["nms", "nonzero"])
@pytest.mark.parametrize("strategy", ["cpu", "equal"])
def test_a_detectors_tail_matches_onnxruntime(models, tail, strategy, tmp_path):
    """Every output as onnxruntime computes it, shape included (the NMS keeps at most 10 boxes a
    class; where the bound was lost, every box over the threshold), whole with a user's schedules
    and split with TVM's; the NMS is ir/nms.py's kernel (candidates kept before they are ordered)."""
    path, proto = models[tail]
    x = image()
    compiled, outs = run_split(frontend.load(path), tmp_path, [x], strategy=strategy, schedules=strategy == "cpu")
    if tail == "nms":
        assert "non_max_suppression" in compiled.kernel_schedules
    refs = ort_run(proto, [x])
    assert [o.shape for o in outs] == [r.shape for r in refs]
    assert 0 < refs[0].shape[0] < BOXES  # some boxes, not all or none
    if tail == "nms":
        assert refs[0].shape[0] == CLASSES * PER_CLASS  # the bound decides
    for out, ref in zip(outs, refs):
        np.testing.assert_allclose(out, ref, rtol=RTOL, atol=ATOL)
    if strategy == "equal":  # the backbone's ops split; the data-dependent ones are whole
        graph = compiled.graph
        assert graph.cpu_only and not any(op_id in graph.cpu_only for op_id, d in compiled.plan.ops.items()
                                          if not isinstance(d, OnDevice))
        assert any(not isinstance(d, OnDevice) for d in compiled.plan.ops.values())


@pytest.mark.parametrize("tail", ["nms", "nonzero"])
def test_a_detectors_tail_runs_where_only_the_runtime_is(models, tail, tmp_path):
    """An edge server's process (``TVM_USE_RUNTIME_LIB=1``) runs the artifact: its NMS calls
    ``tvm.contrib.sort.argsort`` (libtvm_runtime_extra.so, which such a process loads only when
    asked), and ``NonZero`` is kernels, not the compiler library's ``relax.run.nonzero``."""
    path, proto = models[tail]
    x = image(seed=5)
    compiled, _ = run_split(frontend.load(path), tmp_path, [x], strategy="cpu")
    np.save(tmp_path / "x.npy", x)
    code = (
        "import numpy as np\n"
        "from tvm_partition.runtime.runner import Runner\n"
        f"r = Runner({str(tmp_path / 'art')!r})\n"
        f"outs = r.run({{r.input_info[0]['name']: np.load({str(tmp_path / 'x.npy')!r})}})\n"
        f"np.save({str(tmp_path / 'out.npy')!r}, outs[-1])\n"
    )
    runtime_only(code)
    np.testing.assert_allclose(np.load(tmp_path / "out.npy"), ort_run(proto, [x])[-1], rtol=RTOL, atol=ATOL)


def test_data_dependent_ops_stay_on_a_cpu_whole(models):
    """The ops whose sizes are known at run time only are refused every cut, and every planner
    leaves them on the host, even ``gpu`` (dlight cannot schedule TVM's NMS: "TIR is ill-formed");
    a plan file that moves one to the GPU is refused by name."""
    graph = OpGraph(frontend.load(models["nms"][0]).mod)
    nms = [op_id for op_id, op in graph.ops.items() if "non_max_suppression" in op.kind]
    assert len(nms) == 1 and nms[0] in graph.cpu_only
    assert all(not graph.ops[op_id].split_dims for op_id in graph.cpu_only)
    assert not graph.cpu_only & {op_id for op_id, op in graph.ops.items() if op.kind == "conv2d"}
    devices = parse_devices("cpu,gpu")
    for strategy in ("gpu", "equal", "eop"):
        plan = make_plan(graph, devices, strategy)
        assert all(plan.decision(op_id) == OnDevice("cpu") for op_id in graph.cpu_only), strategy
    moved = Plan(devices, {nms[0]: OnDevice("gpu")})
    with pytest.raises(PlanError, match="runs on a CPU only"):
        moved.validate(graph)


def test_a_dimension_a_match_cast_names_stays_defined(tmp_path):
    """``y = R.match_cast(R.nonzero(x > 0), R.Tensor((1, n)))`` and a reshape to ``R.shape([n])``
    that names ``n`` itself: the plan's rewrite keeps the ``match_cast`` (emitted as a plain binding,
    ``n`` was defined nowhere and the build failed), and the result is numpy's."""
    from tvm import relax, tirx

    bb, n = relax.BlockBuilder(), tirx.Var("n", "int64")
    x = relax.Var("x", relax.TensorType((16,), "float32"))
    with bb.function("main", [x], attrs={"num_input": 1}):
        with bb.dataflow():
            mask = bb.emit(relax.op.greater(x, relax.const(0.0, "float32")))
            found = bb.match_cast(relax.op.nonzero(mask), relax.TensorType((1, n), "int64"))
            out = bb.emit_output(relax.op.reshape(relax.op.astype(found, "float32"), relax.ShapeExpr([n])))
        bb.emit_func_output(out)
    values = np.random.default_rng(2).standard_normal(16).astype(np.float32)
    model = frontend.load(bb.get(), inputs={"x": values})
    for strategy in ("cpu", "equal"):
        _, (got,) = run_split(model, tmp_path / strategy, [values], strategy=strategy)
        np.testing.assert_array_equal(got, np.nonzero(values > 0)[0].astype(np.float32))


def test_profiling_leaves_data_dependent_ops_out(models):
    """``profile`` samples a detector's other ops and leaves its NMS out (a sample's time would be
    its drawn data's), and measures no in-model factor of it (its kernels' arguments have no sizes
    until it runs: it crashed on both, "list index out of range", "int() argument ... 'Var'")."""
    from tvm_partition.build.executable import BuildError
    from tvm_partition.profiling.context import build_context
    from tvm_partition.profiling.samples import samples_of

    model = frontend.load(models["nms"][0])
    graph = OpGraph(model.mod)
    sampled = {s.op_id for s in samples_of(graph, ["cpu"])}
    assert sampled and not sampled & graph.cpu_only
    assert {op_id for op_id, op in graph.ops.items() if op.kind == "conv2d"} <= sampled
    cpu = parse_devices("cpu")[0]
    with pytest.raises(BuildError, match="depend on the data"):
        build_context(model, cpu, None, "unused.so", None, host=cpu)


def _nms_only(path, boxes, scores, most: int, iou: float, threshold: float):
    """An ONNX model of one ``NonMaxSuppression`` of these boxes and scores (inputs)."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    graph = helper.make_graph(
        [helper.make_node("NonMaxSuppression", ["boxes", "scores", "most", "iou", "threshold"], ["selected"])], "nms",
        [helper.make_tensor_value_info("boxes", TensorProto.FLOAT, list(boxes.shape)),
         helper.make_tensor_value_info("scores", TensorProto.FLOAT, list(scores.shape))],
        [helper.make_tensor_value_info("selected", TensorProto.INT64, ["n", 3])],
        [numpy_helper.from_array(np.array([most], np.int64), "most"),
         numpy_helper.from_array(np.array([iou], np.float32), "iou"),
         numpy_helper.from_array(np.array([threshold], np.float32), "threshold")])
    proto = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    onnx.save(proto, str(path))
    return proto


@pytest.mark.parametrize("case", ["ties", "no threshold", "bound over the boxes", "bound 0"])
def test_the_nms_kernel_keeps_what_onnxruntime_keeps(case, tmp_path):
    """ir/nms.py's kernel against onnxruntime on what a detector's tail rarely shows: scores that
    tie (a later box after an earlier one), no score threshold (every box a candidate, the order
    by insertion over all of them), a bound above the boxes, a bound of 0; 2 images, corners in
    either order."""
    rng = np.random.default_rng(11)
    boxes = rng.uniform(0, 1, (2, 48, 4)).astype(np.float32)
    scores = rng.uniform(0, 1, (2, 3, 48)).astype(np.float32)
    most, iou, threshold = {"ties": (6, 0.3, 0.2), "no threshold": (8, 0.5, 0.0),
                            "bound over the boxes": (100, 0.6, 0.1), "bound 0": (0, 0.5, 0.1)}[case]
    if case == "ties":
        scores = np.round(scores * 4) / 4  # five values: many ties
    proto = _nms_only(tmp_path / "nms.onnx", boxes, scores, most, iou, threshold)
    _, outs = run_split(frontend.load(str(tmp_path / "nms.onnx")), tmp_path, [boxes, scores], strategy="cpu")
    (ref,) = ort_run(proto, [boxes, scores])
    np.testing.assert_array_equal(outs[0], ref)
