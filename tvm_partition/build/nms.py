"""A non-maximum suppression with its classes in parallel, its suppression loop serial.

TVM 0.27 legalizes ``R.vision.all_class_non_max_suppression`` (ONNX ``NonMaxSuppression``) with
``topi.vision.all_class_non_max_suppression``, whose block ``all_class_nms`` walks the classes one
after another and, for each box it keeps, suppresses the boxes after it in a parallel loop: one
fork and join of the thread pool per kept box, of a few hundred comparisons each. On the 320-px
detector of ``benchmarks/detectors.py`` (400 boxes, 80 classes) the kernel took 2,564 us of a
4,016 us run (``run --kernels``, 2 threads, intel-r-xeon-r-processor-rocketlake-2c, 2026-12-05),
onnxruntime the whole model 1,814 us. Here the class loop is the parallel one and the suppression
loop serial: the classes are independent (each writes its own row of the scores, the kept
indices and the count, and allocates its own counter inside the loop), the boxes of one class
are not (a box suppressed by one kept box is skipped by the next).

The block is an opaque ``te.extern`` one (TIR written with TVM's IRBuilder): no schedule
primitive reaches its loops, so its body is rebuilt with the two loops' kinds swapped and put in
place through the schedule's state (``ScheduleState.replace``, as
:mod:`tvm_partition.build.unit_reductions` replaces blocks).
"""

from __future__ import annotations

import tvm
from tvm import s_tir, tirx

#: The block of TOPI's suppression loop.
BLOCK = "all_class_nms"
LABEL = "template (non-maximum suppression, classes in parallel)"


def classes_in_parallel(kmod: tvm.IRModule) -> tirx.PrimFunc | None:
    """``kmod``'s ``main`` with :data:`BLOCK`'s outer loop parallel and the parallel loops inside
    it serial; None where it has no such block (or its outer loop is no serial loop holding a
    parallel one)."""
    sch = s_tir.Schedule(kmod)
    try:
        rv = sch.get_sblock(BLOCK, func_name="main")
    except Exception:  # noqa: BLE001 - no block of that name: not TOPI's suppression
        return None
    block = sch.get(rv)
    outer = block.body
    if not (isinstance(outer, tirx.For) and outer.kind == tirx.ForKind.SERIAL and _has_parallel(outer.body)):
        return None
    body = tirx.For(outer.loop_var, outer.min, outer.extent, tirx.ForKind.PARALLEL, _serial(outer.body),
                    outer.thread_binding, outer.annotations)
    new = s_tir.SBlock(block.iter_vars, block.reads, block.writes, block.name_hint, body, block.init,
                       block.alloc_buffers, block.match_buffers, block.annotations)
    sch.state.replace(sch.get_sref(rv), new, {block: new})
    return sch.mod["main"].with_attr("tirx.is_scheduled", True)


def _children(stmt) -> list:
    if isinstance(stmt, tirx.SeqStmt):
        return list(stmt.seq)
    if isinstance(stmt, tirx.IfThenElse):
        return [s for s in (stmt.then_case, stmt.else_case) if s is not None]
    if isinstance(stmt, tirx.For):
        return [stmt.body]
    return []


def _has_parallel(stmt) -> bool:
    return (isinstance(stmt, tirx.For) and stmt.kind == tirx.ForKind.PARALLEL) or any(
        _has_parallel(c) for c in _children(stmt))


def _serial(stmt):
    """``stmt`` with every parallel loop serial (the statements TOPI's loop is made of: loops,
    conditions, sequences; others as they are)."""
    if isinstance(stmt, tirx.SeqStmt):
        return tirx.SeqStmt([_serial(s) for s in stmt.seq])
    if isinstance(stmt, tirx.IfThenElse):
        return tirx.IfThenElse(stmt.condition, _serial(stmt.then_case),
                               None if stmt.else_case is None else _serial(stmt.else_case))
    if isinstance(stmt, tirx.For):
        kind = tirx.ForKind.SERIAL if stmt.kind == tirx.ForKind.PARALLEL else stmt.kind
        return tirx.For(stmt.loop_var, stmt.min, stmt.extent, kind, _serial(stmt.body), stmt.thread_binding,
                        stmt.annotations)
    return stmt
