"""WriteJoinsInPlace: the parts of a split write straight into the joined tensor, no concat.

:class:`tvm_partition.passes.ApplyPlan` joins a split op's parts with ``concat`` where a consumer
needs the whole tensor. On ``cpu,cpu`` both parts are host memory, and where each part is one
block of the whole (every axis before the cut has extent 1, as in a batch-1 RNN's gate matmul cut
along its columns, or a tensor cut along its first axis), the part can be written there directly:
its output becomes a view of the whole tensor (``R.memory.view`` then ``ensure_zero_offset``, which
moves the data pointer where the offset is a multiple of TVM's 64-byte allocation alignment:
:data:`tvm_partition.ir.split_rules.VIEW_ALIGNMENT`), and the concat kernel and the parts' own
allocations go. Why: the RNNs' split-op rows of ``bench --quick --split-ops 2`` ran their 10-20 us
gate matmuls 1.07-1.45x the whole op, the concat and two more allocations per split
(``run --kernels``, amd-epyc-znver3-2c, 2026-11-28: the GRU's matmul 9.7 us whole, 12.9 split).

It runs in the link pipeline after ``CallTIRRewrite`` (where a kernel call names its output
tensor, allocated by ``builtin.alloc_tensor``) and :func:`~tvm_partition.passes.elide_host_copies`,
before ``StaticPlanBlockMemory`` (:func:`tvm_partition.build.executable.vm_pipeline`). A concat is
rewritten only where all of this holds, else left as it is:

* the kernel is a plain ``concatenate`` (LegalizeOps' PrimFunc of ``R.concat``; a join is its
  opaque copy, :mod:`tvm_partition.passes.joins`), its output allocated on a CPU virtual device;
* each input is the output tensor of one kernel call, allocated on a CPU virtual device, read by
  nothing but the concat (through plain aliases): the memory planner knows no view, so a reader of
  a part after the whole tensor's last use could read memory handed to another tensor;
* each input is one aligned block of the output (:func:`~tvm_partition.ir.split_rules.view_offset`).

The allocation of the whole moves before the first part's; every CPU virtual device of a process
is ``cpu(0)`` (:attr:`tvm_partition.devices.DeviceSpec.device_id`), so a part on the second CPU
may write a buffer of the first. A model's own concats of kernel outputs meet the same rule and
are rewritten the same way.
"""

from __future__ import annotations

import tvm
from tvm import relax

from ..ir.relax_utils import copy_module, like_block, remove_uncalled, view_bindings
from ..ir.split_rules import Region, static_shape, view_offset

_ALLOC_TENSOR = tvm.ir.Op.get("relax.builtin.alloc_tensor")


def _int(expr) -> int | None:
    """An integer argument's value (an ``IntImm``, or a Relax value wrapping one), else None."""
    value = expr if isinstance(expr, tvm.tirx.IntImm) else getattr(expr, "value", None)
    return int(value) if isinstance(value, tvm.tirx.IntImm) else None


def _is_alloc(value) -> bool:
    return isinstance(value, relax.Call) and value.op.same_as(_ALLOC_TENSOR)


def _concat_axis(shapes: list, out: tuple) -> int | None:
    """The axis ``shapes`` are joined along into ``out``: the one they differ from it in, summing to it."""
    if any(len(s) != len(out) for s in shapes):
        return None
    axes = [a for a in range(len(out)) if any(s[a] != out[a] for s in shapes)]
    if len(axes) != 1 or sum(s[axes[0]] for s in shapes) != out[axes[0]]:
        return None
    return axes[0]


class _Rewrite:
    """The bindings of one block, and the concats among them that can be written in place."""

    def __init__(self, bindings: list, kernels: dict, on_cpu, uses: dict):
        self.b = bindings
        self.kernels = kernels
        self.on_cpu = on_cpu  # alloc_tensor call -> its device is a CPU virtual device
        self.uses = uses  # var -> how many expressions read it in the function
        self.index = {b.var: i for i, b in enumerate(bindings)}
        self.alias_of = {b.var: b.value for b in bindings if isinstance(b.value, relax.Var)}
        self.writers: dict = {}  # alloc var -> indices of kernel calls taking it
        for i, b in enumerate(bindings):
            if self._kernel_call(b.value):
                for a in b.value.args:
                    if isinstance(a, relax.Var):
                        self.writers.setdefault(a, []).append(i)

    def _kernel_call(self, value) -> bool:
        return isinstance(value, relax.Call) and isinstance(value.op, tvm.ir.GlobalVar) and value.op in self.kernels

    def _root(self, var):
        """The variable ``var`` aliases, where each alias on the way is read once (by the next)."""
        while var in self.alias_of:
            if self.uses.get(var, 0) != 1:
                return None
            var = self.alias_of[var]
        return var

    def _alloc(self, var):
        i = self.index.get(var)
        return i if i is not None and _is_alloc(self.b[i].value) and self.on_cpu(self.b[i].value) else None

    def plan(self, i: int):
        """``(output alloc index, [(part alloc index, shape, byte offset)])`` for concat binding ``i``, or None."""
        call = self.b[i].value
        if not self._kernel_call(call) or not self.kernels[call.op].startswith("concatenate"):
            return None
        *inputs, out = call.args
        j_out = self._alloc(out) if isinstance(out, relax.Var) and self.writers.get(out) == [i] else None
        out_shape = static_shape(out) if j_out is not None else None
        if out_shape is None or len(inputs) < 2 or any(not isinstance(x, relax.Var) for x in inputs):
            return None
        shapes = [static_shape(x) for x in inputs]
        axis = None if None in shapes else _concat_axis(shapes, out_shape)
        if axis is None:
            return None
        parts, lo = [], 0
        for x, shape in zip(inputs, shapes):
            root = self._root(x)
            j = self._alloc(root) if root is not None else None
            # read twice: by its one writer (no concat: joins of joins are left alone), then by this
            # concat or the first alias on the way to it
            writers = [w for w in self.writers.get(root, []) if w != i]
            if (j is None or self.uses.get(root, 0) != 2 or len(writers) != 1 or not j < writers[0] < i
                    or self.kernels[self.b[writers[0]].value.op].startswith("concatenate")):
                return None
            offset = view_offset(out_shape, out.ty.dtype, Region(axis, lo, lo + shape[axis]))
            if offset is None:
                return None
            parts.append((j, shape, offset))
            lo += shape[axis]
        return j_out, parts


def _uses(func: relax.Function) -> dict:
    counts: dict = {}

    def visit(e):
        if isinstance(e, relax.Var):
            counts[e] = counts.get(e, 0) + 1

    for block in func.body.blocks:
        for b in block.bindings:
            relax.analysis.post_order_visit(b.value, visit)
    relax.analysis.post_order_visit(func.body.body, visit)
    return counts


def _rewrite_block(block, kernels: dict, on_cpu, uses: dict):
    """``block`` with its concats written in place, and the concat kernels it no longer calls."""
    r = _Rewrite(list(block.bindings), kernels, on_cpu, uses)
    plans = {i: p for i in range(len(r.b)) if (p := r.plan(i)) is not None}
    if not plans:
        return block, []
    bb = relax.BlockBuilder()
    bb._begin_binding_block()  # a scope to normalize the new calls in (their types inferred)
    moved = {min(j for j, _, _ in parts): j_out for j_out, parts in plans.values()}
    dropped = set(plans) | {j_out for j_out, _ in plans.values()}
    views = {j: (r.b[j_out].var, shape, offset) for j_out, parts in plans.values() for j, shape, offset in parts}
    out = []
    for i, b in enumerate(r.b):
        if i in moved:
            out.append(r.b[moved[i]])
        if i in dropped:
            continue
        if i in views:
            out += view_bindings(bb, b.var, *views[i])
            continue
        out.append(b)
    bb._end_block()
    removed = [r.b[i].value.op for i in plans]
    return like_block(block, out), removed


@tvm.transform.module_pass(opt_level=0, name="WriteJoinsInPlace")
def write_joins_in_place(mod: tvm.IRModule, _ctx) -> tvm.IRModule:
    """Every Relax function of ``mod`` with the concats the module docstring's rule allows written
    in place; a concat kernel no longer called is removed."""
    vdevices = list(mod.global_infos.get("vdevice", [])) if mod.global_infos else []
    kernels = {gv: gv.name_hint for gv, f in mod.functions_items() if isinstance(f, tvm.tirx.PrimFunc)}

    def on_cpu(alloc) -> bool:
        index, scope = _int(alloc.args[2]), alloc.args[3]
        if index is None or getattr(scope, "value", None) != "global":
            return False
        return not vdevices or (index < len(vdevices) and vdevices[index].target.kind.name == "llvm")

    out, removed = None, []
    for gv, func in mod.functions_items():
        if not isinstance(func, relax.Function) or not isinstance(func.body, relax.SeqExpr):
            continue
        uses = _uses(func)
        blocks, changed = [], False
        for block in func.body.blocks:
            new, gone = _rewrite_block(block, kernels, on_cpu, uses)
            blocks.append(new)
            changed |= bool(gone)
            removed += gone
        if changed:
            out = out or copy_module(mod)
            out[gv] = relax.Function(func.params, relax.SeqExpr(blocks, func.body.body), func.ret_ty, func.is_pure,
                                     func.attrs)
    if out is None:
        return mod
    remove_uncalled(out, removed)
    return out
