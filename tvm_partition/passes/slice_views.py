"""SlicesAsViews: a slice kernel that copies one aligned block of its input becomes a view of it.

:class:`tvm_partition.passes.ApplyPlan` takes a split op's rows as views where they are one block
of memory (:func:`tvm_partition.ir.split_rules.view_offset`); the model's own slices stay kernels:
TVM's ``FuseOps`` fuses no slice into the matmul or convolution reading it, so each one that is
left alone copies its block. The grouped convolutions that
:func:`tvm_partition.frontend.inference.ungroup_convolutions` takes apart read their groups'
channels through such slices: ShuffleNet (onnx light, batch 1) launched 121 of them a run, about
410 of its 3,760 us (``run --kernels``, amd-epyc-znver4-2c, 2026-11-30).

This pass, in the link pipeline before memory planning
(:func:`tvm_partition.build.executable.vm_pipeline`), replaces a ``call_tir`` of a plain slice
kernel by ``R.memory.view`` + ``R.memory.ensure_zero_offset`` (no kernel, no copy) where:

* the kernel is LegalizeOps' PrimFunc of ``R.strided_slice`` and nothing else: one block whose
  store writes ``out[v0, ..., vn]`` from ``in[v0 + c0, ..., vn + cn]`` (unit strides), for a CPU
  target (views on a GPU were never run);
* it cuts one axis, and the block it copies is one aligned block of the input
  (:func:`~tvm_partition.ir.split_rules.view_offset`: every axis before the cut of extent 1, the
  offset a multiple of 64 B, which TVM's kernels assume of their buffers);
* it runs in ``main``, not at load time (:data:`LOAD_TIME`), and its input is computed there, not
  one of ``main``'s parameters: an RPC server passes
  ``main``'s arguments as bare ``DLTensor*``, of which ``runtime.TVMTensorCreateView`` makes no
  view (the reason :class:`~tvm_partition.passes.ApplyPlan` slices them too).

Memory planning (``StaticPlanBlockMemory``) knows no view: it never hands the storage of a
tensor read through a view to another tensor (checked: a view's source keeps its storage while a
later tensor of the same size gets a new one), so a view is safe, and costs its source's storage
for the rest of the run.
"""

from __future__ import annotations

import tvm
from tvm import relax

from ..ir.relax_utils import copy_module, like_block, remove_uncalled, view_bindings
from ..ir.split_rules import Region, static_shape, view_offset

_CALL_TIR = tvm.ir.Op.get("relax.call_tir")
#: The suffix ``LiftTransformParams`` gives the function it moves weight computations to: its
#: slices run once, at load time, and a view there would keep the whole weight alive beside its
#: parts (and make two weights one tensor: ``tests/test_passes.py``'s packed GRU weights).
LOAD_TIME = "_transform_params"


def _offset(index, var) -> int | None:
    """``c`` where ``index`` is ``var + c`` (or ``var``: 0), else None."""
    if index.same_as(var):
        return 0
    if isinstance(index, tvm.tirx.Add) and index.a.same_as(var) and isinstance(index.b, tvm.tirx.IntImm):
        return int(index.b.value)
    return None


def slice_offsets(func: tvm.tirx.PrimFunc) -> list[int] | None:
    """The start of the block ``func`` copies along each axis, where ``func`` is a plain slice (one
    block, ``out[v...] = in[v + c...]``); else None."""
    if len(func.params) != 2:
        return None
    try:
        sch = tvm.s_tir.Schedule(func)
        blocks = sch.get_child_blocks(sch.get_sblock("root"))
    except Exception:  # not a schedulable function of one root block (TVM raises its own errors)
        return None
    if len(blocks) != 1:
        return None
    block = sch.get(blocks[0])
    store = block.body
    if not isinstance(store, tvm.tirx.BufferStore) or not isinstance(store.value, tvm.ir.expr.TensorLoad):
        return None
    ivars = [iv.var for iv in block.iter_vars]
    load = store.value
    if (len(store.indices) != len(ivars) or len(load.indices) != len(ivars)
            or any(not i.same_as(v) for i, v in zip(store.indices, ivars))):
        return None
    offsets = [_offset(i, v) for i, v in zip(load.indices, ivars)]
    return None if None in offsets else offsets


def _region(offsets: list[int], in_shape: tuple, out_shape: tuple) -> Region | None:
    """The one axis cut, as a Region of the input; None where none or several are."""
    cut = [a for a, (o, i, n) in enumerate(zip(offsets, in_shape, out_shape)) if o or i != n]
    if len(cut) != 1 or any(offsets[a] for a in range(len(offsets)) if a != cut[0]):
        return None
    a = cut[0]
    return Region(a, offsets[a], offsets[a] + out_shape[a])


def _view(call, slices: dict, params: set):
    """``(source, shape, byte offset)`` where ``call`` slices a block the rule allows viewing, else None."""
    if not (isinstance(call, relax.Call) and call.op.same_as(_CALL_TIR) and call.args[0] in slices):
        return None
    args = call.args[1]
    args = list(args.fields) if isinstance(args, relax.Tuple) else [args]
    if len(call.args) > 2 or len(args) != 1 or not isinstance(args[0], relax.Var) or args[0] in params:
        return None
    x = args[0]
    in_shape, out_shape = static_shape(x), static_shape(call)
    if in_shape is None or out_shape is None or len(in_shape) != len(out_shape) or x.ty.dtype != call.ty.dtype:
        return None
    region = _region(slices[call.args[0]], in_shape, out_shape)
    offset = view_offset(in_shape, x.ty.dtype, region) if region is not None else None
    return None if offset is None else (x, out_shape, offset)


def _cpu_slices(mod: tvm.IRModule) -> dict:
    """``{GlobalVar: offsets}`` of the module's plain slice kernels for a CPU target."""
    out = {}
    for gv, func in mod.functions_items():
        target = func.attrs.get("target") if isinstance(func, tvm.tirx.PrimFunc) and func.attrs else None
        if target is None or target.kind.name != "llvm":
            continue
        offsets = slice_offsets(func)
        if offsets is not None:
            out[gv] = offsets
    return out


@tvm.transform.module_pass(opt_level=0, name="SlicesAsViews")
def slices_as_views(mod: tvm.IRModule, _ctx) -> tvm.IRModule:
    """Every Relax function of ``mod`` with the slices the module docstring's rule allows taken as
    views; a slice kernel no longer called is removed."""
    slices = _cpu_slices(mod)
    if not slices:
        return mod
    bb = relax.BlockBuilder()
    bb._begin_binding_block()  # a scope to normalize the new calls in (their types inferred)
    out = {}
    for gv, func in mod.functions_items():
        if (not isinstance(func, relax.Function) or not isinstance(func.body, relax.SeqExpr)
                or gv.name_hint.endswith(LOAD_TIME)):
            continue
        params = set(func.params)
        blocks, changed = [], False
        for block in func.body.blocks:
            bindings = []
            for b in block.bindings:
                found = _view(b.value, slices, params) if isinstance(b, relax.VarBinding) else None
                if found is None:
                    bindings.append(b)
                    continue
                bindings += view_bindings(bb, b.var, *found)
                changed = True
            blocks.append(like_block(block, bindings))
        if changed:
            out[gv] = relax.Function(func.params, relax.SeqExpr(blocks, func.body.body), func.ret_ty, func.is_pure,
                                     func.attrs)
    bb._end_block()
    if not out:
        return mod
    new = copy_module(mod)
    for gv, func in out.items():
        new[gv] = func
    remove_uncalled(new, list(slices))
    return new
