"""``Resize`` and ``Upsample`` where TVM's importer reads them against the standard, written as one
map per axis (``frontend.onnx_resize``).

Oracles: ONNX's own test cases of ``Resize`` and ``Upsample`` (the outputs of its reference
implementation), run through ``benchmarks/onnx_node_cases.py``'s own steps; onnxruntime for the
opset-10 forms (which the reference implementation has no form of) and for maps the cases do not
reach (a 3-D resize along a transposed axis, an extrapolated crop, integer pixels)."""

from __future__ import annotations

import os
import sys

import numpy as np
import onnx
import pytest
from onnx import helper, numpy_helper

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(REPO, "benchmarks"))

import onnx_node_cases  # noqa: E402

pytestmark = [pytest.mark.filterwarnings("ignore:Renaming name:UserWarning"),
              pytest.mark.filterwarnings("ignore::DeprecationWarning"),
              pytest.mark.filterwarnings("ignore::RuntimeWarning")]

# each of these was wrong without a word or refused by TVM 0.27's importer
NAMES = ("test_resize_downsample_scales_linear", "test_resize_downsample_scales_cubic",
         "test_resize_downsample_scales_linear_antialias", "test_resize_upsample_scales_linear_half_pixel_symmetric",
         "test_resize_upsample_sizes_nearest_axes_3_2",
         "test_resize_tf_crop_and_resize_axes_2_3", "test_resize_downsample_sizes_nearest_not_larger",
         "test_upsample_nearest")


@pytest.fixture(scope="module")
def found():
    return {c.name: c for c in onnx_node_cases.cases(None) if c.name in NAMES}


@pytest.mark.parametrize("name", NAMES)
def test_onnx_own_cases_the_importer_misread(name, found, tmp_path):
    """A downsample by a scale that is not ``out / in`` (linear, cubic), antialias, the
    ``half_pixel_symmetric`` coordinates, ``axes`` (reversed),
    a crop of two axes, a ``keep_aspect_ratio_policy``, and opset 9's ``Upsample``."""
    case = found[name]
    path, inputs = onnx_node_cases.saved(case, 8, str(tmp_path))
    got = onnx_node_cases.run_ours(path, inputs, "equal", str(tmp_path))
    assert onnx_node_cases.compare(got, list(case.data_sets[0][1]), rtol=1e-4, atol=1e-5) is None


def _resize(tmp_path, x: np.ndarray, scales, opset: int, op: str = "Resize", roi=None, **attributes):
    """A model of one ``op`` of constant ``scales`` (and ``roi``), saved; returns its path and proto."""
    elem = helper.np_dtype_to_tensor_dtype(x.dtype)
    inits = [numpy_helper.from_array(np.asarray(scales, np.float32), "scales")]
    if opset < 11:
        names = ["x", "scales"]
    else:
        names = ["x", "roi" if roi is not None else "", "scales"]
        if roi is not None:
            inits.append(numpy_helper.from_array(np.asarray(roi, np.float32), "roi"))
    graph = helper.make_graph([helper.make_node(op, names, ["y"], **attributes)], "one",
                              [helper.make_tensor_value_info("x", elem, list(x.shape))],
                              [helper.make_tensor_value_info("y", elem, None)], inits)
    proto = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    proto.ir_version = 8
    path = str(tmp_path / "one.onnx")
    onnx.save(proto, path)
    return path, proto


def _against_onnxruntime(tmp_path, x, path, proto, tolerance=1e-5):
    ort = pytest.importorskip("onnxruntime")
    (want,) = ort.InferenceSession(proto.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, {"x": x})
    got = onnx_node_cases.run_ours(path, [x], "cpu", str(tmp_path))
    np.testing.assert_allclose(got[0], want, rtol=tolerance, atol=tolerance)


@pytest.mark.parametrize("op,opset,scale", [("Resize", 10, 2.0), ("Resize", 10, 0.6), ("Upsample", 9, 2.0)])
@pytest.mark.parametrize("mode", ["nearest", "linear"])
def test_opset_10_and_upsample_as_onnxruntime_reads_them(op, opset, scale, mode, tmp_path):
    """Refused by TVM's importer (the scales read as the ROI); onnxruntime's asymmetric coordinates
    and its nearest pixel rounded up when shrinking (``Upsample`` only enlarges)."""
    x = np.random.default_rng(0).standard_normal((1, 2, 5, 7)).astype(np.float32)
    path, proto = _resize(tmp_path, x, [1, 1, scale, scale], opset, op, mode=mode)
    _against_onnxruntime(tmp_path, x, path, proto)


def test_integer_pixels_nearest_of_opset_10(tmp_path):
    """A uint8 image (no ``MatMul`` of integers): its nearest map is a ``Gather``."""
    x = np.random.default_rng(1).integers(0, 255, (1, 3, 4, 6), dtype=np.uint8)
    path, proto = _resize(tmp_path, x, [1, 1, 3, 0.5], 10, mode="nearest")
    _against_onnxruntime(tmp_path, x, path, proto, tolerance=0)


def test_a_volume_resized_along_each_axis_in_taps(tmp_path):
    """A 3-D (rank 5) trilinear resize by scales that are not ``out / in``: each axis two weighted
    ``Gather``\ s, no ``MatMul``."""
    from tvm_partition.frontend.onnx_resize import resize

    x = np.random.default_rng(2).standard_normal((1, 2, 5, 4, 6)).astype(np.float32)
    path, proto = _resize(tmp_path, x, [1, 1, 0.7, 1.5, 0.8], 13, mode="linear")
    rewritten = onnx.load(path)
    resize(rewritten, {"x": list(x.shape)})
    assert [n.op_type for n in rewritten.graph.node].count("Gather") == 6
    assert "MatMul" not in {n.op_type for n in rewritten.graph.node}
    _against_onnxruntime(tmp_path, x, path, proto)


@pytest.mark.parametrize("shape,scales", [((1, 2, 20, 24), [1, 1, 0.2, 0.25]), ((1, 1, 30, 3, 4), [1, 1, 0.15, 1, 1])])
def test_an_antialiased_shrink_by_a_large_factor_is_a_matmul(shape, scales, tmp_path):
    """Rows wider than ``MAX_TAPS``: a ``MatMul`` along each of the last two axes, and along a
    volume's depth (moved last and back)."""
    from tvm_partition.frontend.onnx_resize import resize

    x = np.random.default_rng(5).standard_normal(shape).astype(np.float32)
    path, proto = _resize(tmp_path, x, scales, 18, mode="linear", antialias=1)
    rewritten = onnx.load(path)
    resize(rewritten, {"x": list(shape)})
    assert "MatMul" in {n.op_type for n in rewritten.graph.node}
    _against_onnxruntime(tmp_path, x, path, proto)


def test_a_crop_outside_the_image_takes_the_extrapolation_value(tmp_path):
    """``tf_crop_and_resize`` of two ``axes`` whose ROI leaves the image: the extrapolated pixels
    are the ``Add`` of the probe of zeros; by scales that are not ``out / in``, the coordinates from
    the output's length, as onnxruntime (``onnx_resize``'s docstring)."""
    x = np.random.default_rng(3).standard_normal((1, 1, 4, 5)).astype(np.float32)
    path, proto = _resize(tmp_path, x, [0.7, 1.3], 18, roi=[-0.4, 0.2, 0.9, 1.5], mode="linear", axes=[2, 3],
                          coordinate_transformation_mode="tf_crop_and_resize", extrapolation_value=7.5)
    _against_onnxruntime(tmp_path, x, path, proto)


@pytest.mark.parametrize("scales", [[0.6, 1.5], [0.3, 0.5]])
def test_align_corners_by_the_output_length_as_onnxruntime(scales, tmp_path):
    """By scales that are not ``out / in`` (ONNX's reference divides by the scaled length instead:
    ``onnx_resize``'s docstring), along ``axes``; and to one pixel, where TVM divided by zero."""
    x = np.random.default_rng(4).standard_normal((1, 2, 5, 7)).astype(np.float32)
    path, proto = _resize(tmp_path, x, scales, 18, mode="linear", axes=[2, 3],
                          coordinate_transformation_mode="align_corners")
    _against_onnxruntime(tmp_path, x, path, proto)


def test_what_the_importer_reads_right_is_left_to_it():
    """An enlargement by 2 (``out / in`` exactly) keeps TVM's one-pass kernel."""
    from tvm_partition.frontend.onnx_resize import resize

    x = np.zeros((1, 3, 8, 8), np.float32)
    for opset in (13, 19):
        _, proto = _resize_proto(x, [1, 1, 2, 2], opset, mode="linear")
        assert resize(proto, {"x": list(x.shape)}) == 0
        assert [n.op_type for n in proto.graph.node] == ["Resize"]
    _, proto = _resize_proto(x, [1, 1, 2, 2], 10, mode="linear")
    assert resize(proto, {"x": list(x.shape)}) == 1
    assert "Resize" not in [n.op_type for n in proto.graph.node]


def _resize_proto(x, scales, opset, **attributes):
    import tempfile
    from pathlib import Path

    with tempfile.TemporaryDirectory() as folder:
        return _resize(Path(folder), x, scales, opset, **attributes)


def test_a_policy_that_leaves_unequal_scales_is_refused_in_one_line(tmp_path):
    from tvm_partition import frontend

    case = next(c for c in onnx_node_cases.cases("test_resize_downsample_sizes_nearest_not_smaller"))
    path, _ = onnx_node_cases.saved(case, 8, str(tmp_path))
    with pytest.raises(frontend.ModelError, match="keep_aspect_ratio_policy not_smaller .* unequal scales"):
        frontend.load(path)


def test_a_mode_the_reference_lacks_is_left_to_the_importer():
    """Opset 11's ``tf_half_pixel_for_nn`` (dropped at 13; ONNX's reference implementation has no
    such mode): not rewritten, no error here (TVM's importer then reads it or names the mode)."""
    from tvm_partition.frontend.onnx_resize import resize

    x = np.zeros((1, 1, 4, 6), np.float32)
    _, proto = _resize_proto(x, [1, 1, 0.6, 0.6], 11, mode="nearest",
                             coordinate_transformation_mode="tf_half_pixel_for_nn")
    assert resize(proto, {"x": list(x.shape)}) == 0
