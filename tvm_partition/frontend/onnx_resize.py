"""``Resize`` and ``Upsample`` as the specification and onnxruntime mean them, where TVM's importer
reads them otherwise: one map per resized axis, a ``Gather`` or a ``MatMul`` by constants.

TVM 0.27's importer has one ``Resize`` converter (``_impl_v18``, taken for every opset) that turns
the scales into output sizes and resizes the last two or three axes by those sizes. Found by ONNX's
own test cases (``benchmarks/onnx_node_cases.py``) and onnxruntime, it

* refuses every ``Resize`` of opsets 10 (inputs ``X, scales``: the scales read as the ROI) and every
  ``Upsample`` of opset 9 (scales an input), the two forms older exporters and the ONNX model
  zoo's detectors (YOLOv3, SSD, RetinaNet) write;
* computes the coordinates from ``out / in`` where the standard uses the scale given: a downsample by
  0.6 of 2 x 4 pixels (1 x 2 out) or by 0.8 of 4 x 4 came out wrong without a word (by up to 1.17);
* ignores ``antialias`` (``torch.nn.functional.interpolate(..., antialias=True)``): wrong without a
  word; ignores ``axes`` and ``keep_aspect_ratio_policy`` (refused) and a resize of the batch or
  channel axis (ignored); has no ``half_pixel_symmetric``; divides by zero for ``align_corners``
  to one pixel; and asserts on tensors of rank 1 or 2.

Resize is separable (ONNX's reference implementation resizes one axis after the other): along each
resized axis the output is ``M @ x + c``, ``M`` an ``out x in`` matrix of the interpolation's
weights and ``c`` the extrapolation value where ``tf_crop_and_resize`` samples outside the ROI.
Both are the operator itself applied by ONNX's reference implementation (``onnx.reference``) to the
unit vectors of that axis and to zeros, so every mode, coordinate transformation, cubic coefficient,
``exclude_outside`` and antialias filter means here what it means there, but for one place where
the reference parts from onnxruntime: ``align_corners`` and ``tf_crop_and_resize`` by a scale that
is not ``out / in``, where the reference divides by the scaled length less one (``0.6 * 4 - 1``)
and onnxruntime, PyTorch (``interpolate(..., align_corners=True)``, whose exports write it) and TVM
by the output's (``2 - 1``); ONNX's maintainers call the reference's way intended and the
converters' to match (onnx/onnx#2462). This follows onnxruntime, the model's source and the
baseline a user checks against: those two are probed by the output's length, and two ONNX cases,
``test_resize_downsample_scales_{linear,cubic}_align_corners``, differ from their reference outputs
(equal to onnxruntime's).

The map is sparse (a row of linear reads 2 elements, of cubic 4): it is written as one ``Gather``
of constant indices a tap, each times its weights, summed (a ``nearest`` map, each row a unit
vector, is one ``Gather``, for any element type), which TVM fuses into one kernel; a map whose rows
read more than :data:`MAX_TAPS` (an antialiased shrink by a large factor) is a ``MatMul`` along the
axis (the last axis ``x @ M^T``, the one before it ``M @ x``, any other transposed there and
back). Then an ``Add`` of ``c``. Opset 10's ``Resize`` and ``Upsample`` are read
as onnxruntime reads them (the reference has no opset-10 form): ``asymmetric`` coordinates,
``nearest`` rounding down when enlarging and up when shrinking (its "simple" mode; checked on
scales 0.3 to 3 against onnxruntime 1.23).

A node TVM converts as the standard means (opset 11 on, rank 3 to 5, only the spatial axes resized,
each by exactly ``out / in``, no antialias, no axes) is left to it, and its one kernel. A ``keep_aspect_ratio_policy`` whose rounded sizes
leave the axes at unequal scales is refused in one line. Needs the input's shape static and the
scales or sizes (and ROI) constant, which :mod:`.onnx_fold` makes them where a graph computes them
from shapes.
"""

from __future__ import annotations

import numpy as np

from .onnx_graph import Emitter, Lookup, attrs, input_name, rewrite_typed

#: Largest matrix of one axis written (elements): 4 M weights, a 2048-pixel axis from 2048.
MAX_AXIS_ELEMENTS = 1 << 22
#: Most elements a row of an axis's map may read to be written as that many ``Gather``\ s, each
#: weighted, summed (linear reads 2, cubic 4, an antialiased shrink more); a map of wider rows is a
#: ``MatMul``. The taps fuse into one kernel of ``taps`` reads an output where the ``MatMul`` reads
#: the whole axis: 256 channels of 128 x 128 to 77 x 77 is 12 M multiply-adds against 1 G.
MAX_TAPS = 8


class ResizeError(ValueError):
    """A ``Resize`` this module cannot write and TVM's importer would read against the standard."""


def resize(proto, input_shapes: dict[str, list[int]]) -> int:
    """Rewrite, in place, the ``Resize`` and ``Upsample`` nodes of ``proto``'s main graph that TVM's
    importer misreads (module docstring). Returns how many; raises :class:`ResizeError`."""
    return rewrite_typed(proto, {"Resize": _write, "Upsample": _write}, "resize", input_shapes)


def _write(node, emit: Emitter, types: dict, lookup: Lookup) -> bool:
    """One node as one map per resized axis; False (the node kept) where TVM's importer reads it
    right, or its input's shape or its scales are not static, or an axis is too long to probe."""
    from onnx import helper

    x = node.input[0]
    if x not in types or not types[x][1]:
        return False
    dtype = np.dtype(helper.tensor_dtype_to_np_dtype(types[x][0]))
    shape = [int(d) for d in types[x][1]]
    axes = _axes(node, emit.opset, shape, lookup)
    if axes is None or _tvm_reads_it(node, emit.opset, shape, axes):
        return False
    if any(spec is not None and shape[a] * spec[1] > MAX_AXIS_ELEMENTS for a, spec in enumerate(axes)):
        return False  # the probe alone would be as large
    try:
        maps = [(a, *_probe(node, emit.opset, shape[a], spec)) for a, spec in enumerate(axes) if spec is not None]
    except (ValueError, RuntimeError):  # a mode the reference lacks (opset 11's tf_half_pixel_for_nn)
        return False  # TVM's importer then reads it (and names what it cannot)
    if not all(_gathers(m, c) or dtype.kind == "f" for _, m, c in maps):
        return False  # TVM's importer then reads it (and names what it cannot)
    value = x
    for a, matrix, shift in maps:
        value = _along(emit, value, a, len(shape), dtype, matrix, shift)
    emit.op("Identity", [value], node.output[0])
    return True


# --- what each axis does ------------------------------------------------------------------------

def _axes(node, opset: int, shape: list[int], lookup: Lookup) -> list | None:
    """Per axis, ``None`` where it is left as it is, else ``(scale, out, roi)``: the scale as given
    (``np.float32``) or ``None`` where the sizes state the output, the output length, and the ROI's
    ``(start, end)`` or ``None``. ``None`` overall where an input is not constant."""
    rank = len(shape)
    a = attrs(node)
    if node.op_type == "Upsample" or opset < 11:
        scales = lookup.array(node.input[1]) if len(node.input) > 1 else a.get("scales")
        if scales is None:
            return None
        scales = np.asarray(scales, np.float32)
        return [None if s == 1 else (s, int(np.floor(np.float64(s) * n)), None) for s, n in zip(scales, shape)]
    roi, scales, sizes = (lookup.constant(input_name(node, k)) for k in (1, 2, 3))
    if roi is False or scales is False or sizes is False:
        return None
    if (scales is None or not scales.size) and sizes is None:
        return None
    along = [int(d) % rank for d in a.get("axes", range(rank))]
    full_roi = None
    if roi is not None and roi.size and a.get("coordinate_transformation_mode", b"half_pixel") == b"tf_crop_and_resize":
        full_roi = [(0.0, 1.0)] * rank
        for i, d in enumerate(along):
            full_roi[d] = (float(roi[i]), float(roi[len(along) + i]))
    out: list = [None] * rank
    if scales is not None and scales.size:
        for s, d in zip(np.asarray(scales, np.float32), along):
            out[d] = (s, int(np.floor(np.float64(s) * shape[d])), None)
    else:
        for n, d in _keep_aspect(node, shape, along, sizes):
            out[d] = (None, n, None)
    for d in range(rank):
        crop = full_roi is not None and full_roi[d] != (0.0, 1.0)
        if out[d] is not None and not crop and out[d][1] == shape[d] and out[d][0] in (None, 1):
            out[d] = None  # identity
        elif crop:
            s, n, _ = out[d] or (None, shape[d], None)
            out[d] = (s, n, full_roi[d])
    return out


def _keep_aspect(node, shape: list[int], along: list[int], sizes) -> list[tuple[int, int]]:
    """``(output length, axis)`` of each resized axis, where ``keep_aspect_ratio_policy`` has the
    sizes scaled by one ratio and rounded; :class:`ResizeError` where the rounding leaves the axes at
    unequal scales (a scale no ``sizes`` states)."""
    sizes = [int(v) for v in sizes]
    policy = attrs(node).get("keep_aspect_ratio_policy", b"stretch").decode()
    if policy == "stretch":
        return list(zip(sizes, along))
    ratios = [v / shape[d] for v, d in zip(sizes, along)]
    scale = min(ratios) if policy == "not_larger" else max(ratios)
    outs = [int(scale * shape[d] + 0.5) for d in along]
    if any(n / shape[d] != scale for n, d in zip(outs, along)):
        raise ResizeError(f"Resize {node.name or node.output[0]!r}: keep_aspect_ratio_policy {policy} rounds "
                          f"the sizes {outs} from the scale {scale:g}, which leaves the axes at unequal scales; "
                          "not supported (give the sizes with the default policy, stretch)")
    return list(zip(outs, along))


#: Coordinate transformations that onnxruntime, PyTorch and TVM compute from the output's length
#: where the reference takes the scaled length (module docstring): probed by the sizes.
_BY_LENGTH = (b"align_corners", b"tf_crop_and_resize")


def _tvm_reads_it(node, opset: int, shape: list[int], axes: list) -> bool:
    """Whether TVM's importer converts ``node`` as the standard means (module docstring)."""
    a = attrs(node)
    mode = a.get("mode", b"nearest")
    coordinates = a.get("coordinate_transformation_mode", b"half_pixel")
    if (node.op_type != "Resize" or opset < 11 or not 3 <= len(shape) <= 5 or axes[0] is not None
            or axes[1] is not None or "axes" in a or (a.get("antialias", 0) and mode != b"nearest")
            or coordinates == b"half_pixel_symmetric"
            or a.get("keep_aspect_ratio_policy", b"stretch") != b"stretch"):
        return False
    for n, spec in zip(shape, axes):
        if spec is None:
            continue
        scale, out, _ = spec
        if scale is not None and np.float64(scale) * n != out and coordinates not in _BY_LENGTH:
            return False  # TVM's coordinates use out / in, the standard's the scale
        if coordinates == b"align_corners" and out == 1:
            return False  # TVM divides by out - 1
    return True


# --- one axis's map, from the reference implementation -----------------------------------------

def _probe(node, opset: int, n: int, spec) -> tuple[np.ndarray, np.ndarray]:
    """``(M, c)`` of one axis of length ``n`` (module docstring): the node's attributes on a
    ``Resize`` of ``n + 1`` rows (the unit vectors and zeros) along the second axis, by ONNX's
    reference implementation."""
    import onnx
    from onnx import helper, numpy_helper
    from onnx.reference import ReferenceEvaluator

    scale, out, roi = spec
    a = {k: v for k, v in attrs(node).items() if k not in ("axes", "keep_aspect_ratio_policy", "scales")}
    if node.op_type == "Upsample" or opset < 11:  # as onnxruntime reads them (module docstring)
        a = {"mode": a.get("mode", b"nearest").decode(), "coordinate_transformation_mode": "asymmetric",
             "nearest_mode": "floor" if scale >= 1 else "ceil"}
    inits = []
    if roi is not None:
        inits.append(numpy_helper.from_array(np.array([0.0, roi[0], 1.0, roi[1]], np.float32), "roi"))
    if scale is not None and a.get("coordinate_transformation_mode") not in _BY_LENGTH:
        inits.append(numpy_helper.from_array(np.array([1.0, scale], np.float32), "scales"))
        names = ["x", "roi" if roi is not None else "", "scales"]
    else:
        inits.append(numpy_helper.from_array(np.array([n + 1, out], np.int64), "sizes"))
        names = ["x", "roi" if roi is not None else "", "", "sizes"]
    one = helper.make_node("Resize", names, ["y"], **a)
    graph = helper.make_graph([one], "axis", [helper.make_tensor_value_info("x", onnx.TensorProto.DOUBLE, None)],
                              [helper.make_tensor_value_info("y", onnx.TensorProto.DOUBLE, None)], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 19)])
    probe = np.vstack([np.eye(n), np.zeros((1, n))])
    (y,) = ReferenceEvaluator(model).run(None, {"x": probe})
    if y.shape != (n + 1, out):
        raise ResizeError(f"Resize {node.name or node.output[0]!r}: an axis of {n} resized to {out} came out "
                          f"{y.shape[1]} long in ONNX's reference implementation")
    return (y[:n] - y[n]).T, y[n]  # the map is affine: each unit vector's response less the zeros'


def _taps(matrix: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(columns, weights)``, each ``out x taps``: the elements each row of ``matrix`` reads and
    their weights, in column order, a row of fewer padded with weight 0."""
    nonzero = matrix != 0
    taps = max(int(nonzero.sum(axis=1).max()), 1)
    columns = np.argsort(~nonzero, axis=1, kind="stable")[:, :taps]
    return columns, np.take_along_axis(matrix, columns, axis=1)


def _gathers(matrix: np.ndarray, shift: np.ndarray) -> bool:
    """Whether each row of the map picks one element as it is (nearest, or a whole scale)."""
    columns, weights = _taps(matrix)
    return not shift.any() and columns.shape[1] == 1 and bool((weights == 1).all())


def _along(emit: Emitter, x: str, axis: int, rank: int, dtype, matrix: np.ndarray, shift: np.ndarray) -> str:
    """``x`` mapped along ``axis`` by ``matrix`` (``out x in``) and ``shift``: a weighted sum of one
    ``Gather`` a tap where rows read at most :data:`MAX_TAPS` elements, else a ``MatMul``; then an
    ``Add`` of the shift."""
    columns, weights = _taps(matrix)
    along = [-1] + [1] * (rank - 1 - axis)  # a vector along ``axis``, broadcast over the axes after it
    if columns.shape[1] <= MAX_TAPS:
        y = None
        for j in range(columns.shape[1]):
            tap = emit.op("Gather", [x, emit.ints(columns[:, j])], axis=axis)
            if not (weights[:, j] == 1).all():
                tap = emit.op("Mul", [tap, emit.weight(weights[:, j].astype(dtype).reshape(along), "resize_taps")])
            y = tap if y is None else emit.op("Add", [y, tap])
    elif axis == rank - 1:
        y = emit.op("MatMul", [x, emit.weight(matrix.T.astype(dtype), "resize_weights")])
    elif axis == rank - 2:
        y = emit.op("MatMul", [emit.weight(matrix.astype(dtype), "resize_weights"), x])
    else:
        perm = [d for d in range(rank) if d != axis] + [axis]
        moved = emit.op("Transpose", [x], perm=perm)
        mapped = emit.op("MatMul", [moved, emit.weight(matrix.T.astype(dtype), "resize_weights")])
        y = emit.op("Transpose", [mapped], perm=[perm.index(d) for d in range(rank)])
    if shift.any():
        y = emit.op("Add", [y, emit.weight(shift.astype(dtype).reshape(along), "resize_extrapolation")])
    return y
