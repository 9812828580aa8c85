"""ONNX ``NonMaxSuppression`` (``R.vision.all_class_non_max_suppression``) legalized to a kernel
that keeps each class's candidates before it orders them, one class a task.

TVM 0.27's legalization (``topi.vision.all_class_non_max_suppression``) sorts every class's
scores (``topi.argsort``: ``tvm.contrib.sort.argsort``, one thread) before it drops those under
the score threshold, then walks the classes one after another, forking the thread pool once per
kept box. On ``benchmarks/detectors.py``'s 320-px detector (80 classes of 400 boxes, 32 a class
over the threshold) the kernel took 2,564 us of a 4,016 us run, its sort alone 1,446, where
onnxruntime's whole ``NonMaxSuppression`` took 623 (2 threads, intel-r-xeon-r-processor-rocketlake-2c,
2026-12-05; BENCHMARKS.md, "Detectors"). onnxruntime keeps the candidates first and orders only
those; so does this kernel, each (batch, class) a task of a parallel loop:

1. the candidates (score strictly over the threshold) are inserted one by one in a list ordered by
   score, highest first, a later box after an earlier one of the same score (onnxruntime's order);
2. each candidate in that order is kept where its IoU with every box kept so far is at most the
   IoU threshold, until ``max_output_boxes_per_class`` are kept (the boxes' corners in either
   order: their minima and maxima, as onnxruntime and TOPI read them);
3. one task then writes the kept ``(batch, class, box)`` rows, class after class, and their count.

On that detector: 239 us, the same 1,226 rows as onnxruntime's, the model 1,908 us against
onnxruntime's 1,922 (``bench``, one run of 9; TOPI's took it to 4,357).

The rows are then cut to the count as TVM's own legalization does (``R.dynamic_strided_slice``,
which ``LegalizeOps`` legalizes in turn). Sorting by insertion costs the square of the candidates
a class: where no threshold drops any (400 of 400), each class orders 400 (about 80,000 moves), of
the order of the suppression's own work there (each candidate against up to
``max_output_boxes_per_class`` kept boxes). A bound that is not a constant, symbolic shapes, or the
``tensorflow`` output format keep TVM's legalization.
"""

from __future__ import annotations

import tvm
from tvm import relax, te
from tvm.script.ir_builder import IRBuilder
from tvm.script.ir_builder import tirx as T

from .relax_utils import Constant, static_tensor

_NMS = "relax.vision.all_class_non_max_suppression"


def _scalar(buf):
    """The one value of a threshold tensor (shape ``()`` or ``(1,)``)."""
    return buf[()] if len(buf.shape) == 0 else buf[0]


def _iou(boxes, b, i, j):
    """IoU of boxes ``i`` and ``j`` of batch ``b`` (corners in either order)."""
    def corners(k):
        y1, x1, y2, x2 = (boxes[b, k, c] for c in range(4))
        return tvm.tirx.min(y1, y2), tvm.tirx.min(x1, x2), tvm.tirx.max(y1, y2), tvm.tirx.max(x1, x2)

    ay1, ax1, ay2, ax2 = corners(i)
    by1, bx1, by2, bx2 = corners(j)
    zero = tvm.tirx.const(0.0, "float32")
    h = tvm.tirx.max(zero, tvm.tirx.min(ay2, by2) - tvm.tirx.max(ay1, by1))
    w = tvm.tirx.max(zero, tvm.tirx.min(ax2, bx2) - tvm.tirx.max(ax1, bx1))
    inter = h * w
    union = (ay2 - ay1) * (ax2 - ax1) + (by2 - by1) * (bx2 - bx1) - inter
    return tvm.tirx.Select(union > zero, inter / union, zero)


def _suppress(boxes, scores, iou_threshold, score_threshold, most: int):
    """``(rows [batch * classes * most, 3] int64, their count [1] int64)``: the kept boxes."""
    batch, classes, n = (int(d) for d in scores.shape)
    rows = batch * classes * most

    def body(ins, outs):
        box_buf, score_buf, iou_buf, score_th_buf = ins
        out_buf, count_buf = outs
        with IRBuilder() as ib, T.seq_scope():
            bx, sc, iou_th, score_th = (T.buffer_proxy(x) for x in (box_buf, score_buf, iou_buf, score_th_buf))
            out, count = T.buffer_proxy(out_buf), T.buffer_proxy(count_buf)
            kept_buf = T.alloc_buffer((batch * classes, most), "int32", scope="global")
            found_buf = T.alloc_buffer((batch * classes,), "int32", scope="global")
            kept, found = T.buffer_proxy(kept_buf), T.buffer_proxy(found_buf)
            with T.parallel(0, batch * classes) as task:
                b, c = task // classes, task % classes
                order = T.buffer_proxy(T.alloc_buffer((n,), "int32", scope="local"))
                value = T.buffer_proxy(T.alloc_buffer((n,), "float32", scope="local"))
                size = T.buffer_proxy(T.alloc_buffer((1,), "int32", scope="local"))
                place = T.buffer_proxy(T.alloc_buffer((1,), "int32", scope="local"))
                size[0] = 0
                with T.serial(0, n) as k:
                    s = sc[b, c, k]
                    with T.If(s > _scalar(score_th)):
                        with T.Then():
                            place[0] = 0
                            with T.serial(0, size[0]) as j:  # after every candidate scored as high or higher
                                with T.If(value[j] >= s):
                                    with T.Then():
                                        place[0] = place[0] + 1
                            with T.serial(0, size[0] - place[0]) as j:  # the lower ones one place down
                                at = size[0] - 1 - j
                                order[at + 1] = order[at]
                                value[at + 1] = value[at]
                            order[place[0]] = tvm.tirx.Cast("int32", k)
                            value[place[0]] = s
                            size[0] = size[0] + 1
                found[task] = 0
                with T.serial(0, size[0]) as k:
                    with T.If(found[task] < most):
                        with T.Then():
                            place[0] = 1  # kept, until a kept box overlaps it too much
                            with T.serial(0, found[task]) as j:
                                with T.If(place[0] == 1):
                                    with T.Then():
                                        with T.If(_iou(bx, b, order[k], kept[task, j]) > _scalar(iou_th)):
                                            with T.Then():
                                                place[0] = 0
                            with T.If(place[0] == 1):
                                with T.Then():
                                    kept[task, found[task]] = order[k]
                                    found[task] = found[task] + 1
            total = T.buffer_proxy(T.alloc_buffer((1,), "int64", scope="local"))
            total[0] = tvm.tirx.const(0, "int64")
            with T.serial(0, batch * classes) as task:
                with T.serial(0, found[task]) as j:
                    at = total[0] + tvm.tirx.Cast("int64", j)
                    out[at, 0] = tvm.tirx.Cast("int64", task // classes)
                    out[at, 1] = tvm.tirx.Cast("int64", task % classes)
                    out[at, 2] = tvm.tirx.Cast("int64", kept[task, j])
                total[0] = total[0] + tvm.tirx.Cast("int64", found[task])
            count[0] = total[0]
        return ib.get()

    picked, count = te.extern([(rows, 3), (1,)], [boxes, scores, iou_threshold, score_threshold], body,
                              dtype=["int64", "int64"], name="nms_candidates_first")
    # copied once: a te.extern alone makes a PrimFunc without a root block (ir/nonzero.py)
    return (te.compute(picked.shape, lambda *i: picked(*i), name="nms_rows"),
            te.compute(count.shape, lambda *i: count(*i), name="nms_count"))


def legalize_nms(bb: relax.BlockBuilder, call: relax.Call) -> relax.Expr:
    """``R.vision.all_class_non_max_suppression`` as the module docstring says, where it applies."""
    boxes, scores, most, iou_threshold, score_threshold = call.args
    if not (static_tensor(boxes.ty) and static_tensor(scores.ty) and isinstance(most, Constant) and call.attrs.output_format == "onnx"
            and scores.ty.dtype == boxes.ty.dtype == "float32"):
        return tvm.ir.Op.get(_NMS).get_attr("FLegalize")(bb, call)
    limit = int(most.value.numpy().reshape(-1)[0])
    batch, classes, n = (int(d) for d in scores.ty.shape.values)
    limit = max(0, min(limit, n))
    found = bb.emit(bb.call_te(_suppress, boxes, scores, iou_threshold, score_threshold, limit,
                               primfunc_name_hint="non_max_suppression"))
    rows, count = bb.emit(relax.TupleGetItem(found, 0)), bb.emit(relax.TupleGetItem(found, 1))
    end = bb.emit(relax.op.concat([count, relax.const([3], "int64")], axis=0))
    kept = bb.emit(relax.op.dynamic_strided_slice(rows, relax.const([0, 0], "int64"), end, relax.const([1, 1], "int64")))
    return relax.Tuple([kept, count])
