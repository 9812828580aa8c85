"""KeepJoinsApart: the concats that join a split op's parts stay kernels of their own.

:class:`tvm_partition.passes.ApplyPlan` emits a split op as: inputs of all parts, GPU part, CPU
part, then, where a consumer needs the whole tensor, a copy of the other device's part and a
concat (EOP Sec. 3.1: the GPU part runs while the VM runs the CPU part). TVM's ``FuseOps`` puts
an injective concat into the group of its producer: the CPU part and the concat became one
kernel, which needs the copied GPU part, so the CPU part ran after the copy, which waits for the
GPU part: no overlap (the last LSTM / GRU step of an ``equal`` plan on ``cpu,gpu``, seen in the
compiled VM program: ``tests/test_vm_order.py``). Marking those concats' PrimFuncs opaque
(``op_pattern`` 8, kOpaque) keeps them out of every fused group, as the simulator prices them.

A join is a ``concatenate`` kernel (LegalizeOps' name for ``R.concat``) with an operand copied
from another device (``R.to_vdevice``): every join has one, since a split's parts are on
different devices. (A variable name given by ApplyPlan does not survive: the join that is
``main``'s result is renamed ``gv``.) A concat of the model with an operand copied from another
device is made opaque too: where TVM's fusion would have joined it to elementwise producers, that
op runs as two kernels.
"""

from __future__ import annotations

import tvm
from tvm import relax

from ..ir.relax_utils import like_block

#: ``OpPatternKind::kOpaque``: FuseOps fuses nothing into or out of such a PrimFunc.
OPAQUE = 8

_CALL_TIR = tvm.ir.Op.get("relax.call_tir")
_TO_VDEVICE = tvm.ir.Op.get("relax.to_vdevice")


def _operands(call) -> list:
    args = call.args[1]
    return list(args.fields) if isinstance(args, relax.Tuple) else [args]


def _is_join(binding, copied: set) -> bool:
    v = binding.value
    return (isinstance(v, relax.Call) and v.op.same_as(_CALL_TIR) and "concatenate" in v.args[0].name_hint
            and any(x in copied for x in _operands(v)))


def _rebind(block, call_of):
    """``block`` with every binding's value replaced by ``call_of(binding)``."""
    bindings = [relax.VarBinding(b.var, call_of(b)) if isinstance(b, relax.VarBinding) else b for b in block.bindings]
    return like_block(block, bindings)


@tvm.transform.module_pass(opt_level=0, name="KeepJoinsApart")
def keep_joins_apart(mod: tvm.IRModule, _ctx) -> tvm.IRModule:
    """Run after ``AnnotateTIROpPattern`` (which sets every PrimFunc's pattern) and before
    ``FuseOps``. Each joined PrimFunc gets an opaque copy (``<name>_join``), so a model concat
    that LegalizeOps gave the same PrimFunc keeps fusing as in TVM's own flow."""
    bb = relax.BlockBuilder(mod)
    opaque: dict = {}

    def call_of(binding):
        if not _is_join(binding, copied):
            return binding.value
        call = binding.value
        gv = call.args[0]
        if gv not in opaque:
            prim = mod[gv].with_attr("op_pattern", OPAQUE).without_attr("global_symbol")
            opaque[gv] = bb.add_func(prim, f"{gv.name_hint}_join")
        return relax.Call(call.op, [opaque[gv], *call.args[1:]], call.attrs, call.ty_args)

    for gv, func in mod.functions_items():
        if isinstance(func, relax.Function) and isinstance(func.body, relax.SeqExpr):
            copied = {b.var for block in func.body.blocks for b in block.bindings
                      if isinstance(b.value, relax.Call) and b.value.op.same_as(_TO_VDEVICE)}
            body = relax.SeqExpr([_rebind(b, call_of) for b in func.body.blocks], func.body.body)
            bb.update_func(gv, relax.Function(func.params, body, func.ret_ty, func.is_pure, func.attrs))
    out = bb.get()
    return tvm.IRModule(dict(out.functions), attrs=mod.attrs, global_infos=mod.global_infos)
