"""The kernels TVM's ONNX importer writes for ``Clip`` as the Relax operators they are, so that the
convolution or matmul a ``Clip`` follows can be split.

Why: TVM 0.27's importer converts ``Clip`` with ``bb.emit_te(topi.maximum, x, low)`` and
``topi.minimum`` (its ``Clip`` converter, every opset): ``call_tir`` bindings of kernels it has
already written, which no split rule reads (:mod:`tvm_partition.ir.split_rules` knows Relax's
operators). ``FuseOps`` puts them in the kernel of the convolution before them, and that op had no
axis a plan could split ("call_tir has no split rule"): of Hugging Face's MobileNet-V1 and
MobileNet-V2, whose ReLU6 PyTorch exports as ``Clip(x, 0, 6)``, ``compile --strategy equal`` split
0 of 27 and 17 of 52 fused ops (all of V1's FLOPs and 62% of V2's in ops it could not split;
BENCHMARKS.md, "Clip as the operators it is"). Each such call
becomes ``relax.maximum`` / ``relax.minimum`` of the same operands, which legalize to the same
``topi.maximum`` / ``topi.minimum`` kernel: the same values. Written in ONNX as ``Max`` and
``Min`` instead, TVM's importer stacks the broadcast operands and reduces the stack (its
``MultiInputBase``): a copy and a reduction, no element-wise op.
"""

from __future__ import annotations

import tvm
import tvm_ffi
from tvm import relax

from ..ir.relax_utils import calls_op, rewrite_functions

_CALL_TIR = tvm.ir.Op.get("relax.call_tir")
#: The block ``topi.maximum`` / ``topi.minimum`` computes, and the Relax operator legalized to it.
_EXTREMA = {"T_maximum": relax.op.maximum, "T_minimum": relax.op.minimum}


@relax.expr_functor.mutator
class _Extrema(relax.PyExprMutator):
    def __init__(self, mod):
        super().__init__(mod)
        self.mod_ = mod

    def visit_call_(self, call):
        call = super().visit_call_(call)
        found = _extremum(self.mod_, call)
        if found is None:
            return call
        op, operands = found
        new = self.builder_.normalize(op(*operands))
        return new if tvm_ffi.structural_equal(new.ty, call.ty) else call


def _extremum(mod: tvm.IRModule, call: relax.Call) -> tuple | None:
    """``(operator of :data:`_EXTREMA`, its operands)`` where ``call`` is a ``call_tir`` of that
    operator's one-block kernel: of two operands (a bound given as an input, opset 11 on), or of one
    and a constant bound in the kernel (an attribute, before); else None."""
    if not calls_op(call, _CALL_TIR) or not isinstance(call.args[1], relax.Tuple):
        return None
    func, operands = mod[call.args[0]], list(call.args[1].fields)
    store = _store(func.body) if isinstance(func, tvm.tirx.PrimFunc) else None
    if store is None or store[0] not in _EXTREMA:
        return None
    name, value = store
    if len(operands) == 1:
        bound = next((v for v in (value.a, value.b) if isinstance(v, (tvm.tirx.FloatImm, tvm.tirx.IntImm))), None)
        if bound is None:
            return None
        operands.append(relax.const(bound.value, str(bound.ty)))  # TVM 0.27: a PrimExpr's dtype is its ``ty``
    return (_EXTREMA[name], operands) if len(operands) == 2 else None


def _store(stmt) -> tuple[str, tvm.tirx.PrimExpr] | None:
    """``(block name, value it stores)`` of a kernel body of one block (under its root block and
    loops) whose value is a ``max`` or ``min``; else None."""
    while isinstance(stmt, (tvm.s_tir.SBlockRealize, tvm.tirx.For)):
        if isinstance(stmt, tvm.tirx.For):
            stmt = stmt.body
        elif stmt.block.name_hint == "root":
            stmt = stmt.block.body
        else:
            body = stmt.block.body
            ok = isinstance(body, tvm.tirx.BufferStore) and isinstance(body.value, (tvm.tirx.Max, tvm.tirx.Min))
            return (stmt.block.name_hint, body.value) if ok else None
    return None


@tvm.transform.module_pass(opt_level=0, name="ExtremaAsOperators")
def extrema_as_operators(mod: tvm.IRModule, _ctx) -> tvm.IRModule:
    """Every ``call_tir`` of a ``topi.maximum`` / ``topi.minimum`` kernel (TVM's ``Clip``) as
    ``relax.maximum`` / ``relax.minimum`` of its operands (``DeadCodeElimination`` then drops the
    kernels)."""
    return rewrite_functions(mod, lambda mod, _func: _Extrema(mod))
