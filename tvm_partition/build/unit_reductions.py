"""Reductions over one element, written as maps before dlight schedules a GPU kernel.

TVM 0.27 fact (found by the GPU proof's seventh run, an H200, 2026-12-04): dlight's ``Fallback``
rule miscompiles a reduction whose every reduction axis has extent 1 when an epilogue follows it.
``normalize_prim_func`` drops the unit axes, so the reduction block looks spatial; ``try_inline``
then reverse-inlines the epilogue into it, init included: a depthwise convolution of one tap
(MobileNetV2 at 32 px: a 3x3 window on a 1x1 map, its padding taps cut away), bias and ReLU6
became ``init: y = clip(bias)``, ``update: y = clip(y + x * w + bias)``, i.e. ``clip(clip(bias) + x
* w + bias)`` instead of ``clip(x * w + bias)``. MobileNetV2's five GPU checks read 0.023-0.039
off the unpartitioned model (tolerance 1e-4); the CPU builds (templates, TVM's llvm pipeline) were
right. No other dlight rule schedules such a kernel (they want a reduction of more than one
element), so it is rewritten before any rule sees it: the block stores ``init op value`` (``0 +
x * w``) with no init and its unit reduction axes made spatial, which is what it computes.

``Fallback`` is also what every other kernel of one-element reductions takes: a mean over a 1 x 1
map (harmless there by luck: its epilogue, a division by 1, maps the init's 0 to 0), a max pool of
a 1 x 1 window, a matmul of one column by one row.
"""

from __future__ import annotations

import tvm
import tvm_ffi
from tvm import s_tir, tirx

from .templates.reductions import is_one
from .transfer import root_children

# TVM 0.27's classes of a buffer element's load (``tirx.BufferLoad`` is a constructor function
# returning one) and of an expression
_Load, _Expr = tvm.ir.TensorLoad, tvm.ir.expr.Expr


def as_maps(func: tirx.PrimFunc) -> tirx.PrimFunc:
    """``func`` with each block that reduces over one element only (every reduction axis of
    extent 1, an init, a body ``y[i] = y[i] op value``) storing ``init op value`` instead; other
    blocks, and ``func`` where it has none, unchanged."""
    sch = s_tir.Schedule(tvm.IRModule({"main": func}))
    changed = False
    for rv in sblocks(sch):
        block = sch.get(rv)
        new = _as_map(block)
        if new is not None:
            sch.state.replace(sch.get_sref(rv), new, {block: new})
            changed = True
    return sch.mod["main"] if changed else func


def init_reads_buffers(func: tirx.PrimFunc) -> list[str]:
    """Names of the blocks of ``func`` whose init reads a buffer: a reduction's init stores its
    identity, so such a block is the miscompilation :func:`as_maps` prevents (an epilogue inlined
    into the init). The build refuses a scheduled GPU kernel where this names a block and the
    kernel before scheduling had none (``gpu_schedules.gpu_rule``)."""
    sch = s_tir.Schedule(tvm.IRModule({"main": func}))
    return [sch.get(rv).name_hint for rv in sblocks(sch) if _reads(sch.get(rv).init)]


def sblocks(sch) -> list:
    """Every block of ``sch``'s ``main`` below its root, parents before children (none where it
    has no root block: :func:`~tvm_partition.build.transfer.root_children`)."""
    found = []

    def walk(children):
        for child in children:
            found.append(child)
            walk(sch.get_child_blocks(child))

    walk(root_children(sch))
    return found


def _as_map(block):
    """The one-element reduction ``block`` as a map, or None where it is not one."""
    reduce_axes = [iv for iv in block.iter_vars if iv.iter_type == tirx.IterVar.CommReduce]
    if block.init is None or not reduce_axes or not all(is_one(iv.dom.extent) for iv in reduce_axes):
        return None
    body, init = block.body, block.init
    if not (isinstance(body, tirx.BufferStore) and isinstance(init, tirx.BufferStore)):
        return None
    value = body.value
    operands = [getattr(value, "a", None), getattr(value, "b", None)]
    if not all(isinstance(o, _Expr) for o in operands):
        return None
    mine = [_loads(o, body) for o in operands]
    if mine.count(True) != 1:
        return None
    a, b = (init.value, operands[1]) if mine[0] else (operands[0], init.value)
    iter_vars = [tirx.IterVar(iv.dom, iv.var, tirx.IterVar.DataPar) if iv.iter_type == tirx.IterVar.CommReduce
                 else iv for iv in block.iter_vars]
    store = tirx.BufferStore(body.buffer, type(value)(a, b), body.indices)
    return s_tir.SBlock(iter_vars, block.reads, block.writes, block.name_hint, store, None,
                        block.alloc_buffers, block.match_buffers, block.annotations)


def _loads(expr, store) -> bool:
    """Whether ``expr`` is the load of the element ``store`` writes."""
    return (isinstance(expr, _Load) and expr.source.same_as(store.buffer)
            and len(expr.indices) == len(store.indices)
            and all(tvm_ffi.structural_equal(x, y) for x, y in zip(expr.indices, store.indices)))


def _reads(stmt) -> bool:
    """Whether ``stmt`` (an init: a store) loads from any buffer."""
    return isinstance(stmt, tirx.BufferStore) and _has_load(stmt.value)


def _has_load(expr) -> bool:
    # TVM 0.27's Python has no TIR expression visitor (no stmt_functor): the fields of its
    # arithmetic, select, cast, let and call nodes
    if isinstance(expr, _Load):
        return True
    kids = [getattr(expr, f, None) for f in ("a", "b", "value", "body", "condition", "true_value", "false_value")]
    kids += list(getattr(expr, "args", None) or [])
    return any(isinstance(k, _Expr) and _has_load(k) for k in kids)
