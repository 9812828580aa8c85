"""PropagateVDevice: keep every kernel on the virtual device of its inputs after LegalizeOps.

TVM 0.27's ``LegalizeOps`` drops the vdevice from the output type of some operators (conv2d,
relu, ... through ``emit_te``) while keeping it for others (matmul). A kernel whose output has
no vdevice is then compiled for, and allocated on, the default device even though its inputs
live on another one ("Mismatched device_id" at run time). This pass gives such a ``call_tir``
the vdevice its tensor arguments share; ``RealizeVDevice`` does not do this for ``call_tir``.
"""

from __future__ import annotations

import tvm
from tvm import relax

from ..ir.relax_utils import rebuilt, substitute

_CALL_TIR = tvm.ir.Op.get("relax.call_tir")


def _with_vdevice(ty, vdev):
    if isinstance(ty, relax.TupleType):
        return relax.TupleType([_with_vdevice(f, vdev) for f in ty.fields])
    if isinstance(ty, relax.TensorType) and ty.vdevice is None:
        return relax.TensorType(ty.shape, ty.dtype, vdevice=vdev)
    return ty


def _arg_vdevice(args):
    for a in args.fields if isinstance(args, relax.Tuple) else [args]:
        vdev = getattr(a.ty, "vdevice", None)
        if vdev is not None:
            return vdev
    return None


@tvm.transform.module_pass(opt_level=0, name="PropagateVDevice")
class PropagateVDevice:
    def __init__(self, func_name: str = "main"):
        self.func_name = func_name

    def transform_module(self, mod: tvm.IRModule, _ctx) -> tvm.IRModule:
        def rewrite(v, leaf):
            if not (isinstance(v, relax.Call) and v.op.same_as(_CALL_TIR)):
                return substitute(v, leaf)
            args = substitute(v.args[1], leaf)
            vdev = _arg_vdevice(args)
            ty_args = [_with_vdevice(t, vdev) for t in v.ty_args] if vdev is not None else v.ty_args
            return relax.Call(v.op, [v.args[0], args, *v.args[2:]], v.attrs, ty_args)

        return rebuilt(mod, self.func_name, rewrite=rewrite)
