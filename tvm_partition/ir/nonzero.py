"""``R.nonzero`` legalized to kernels a runtime-only TVM runs.

TVM 0.27 legalizes ``R.nonzero`` (ONNX ``NonZero``: the indices of a tensor's non-zero elements, as
many columns as it finds) to ``R.call_pure_packed("relax.run.nonzero", x)``, a function registered
in ``libtvm_compiler.so`` only: an artifact that calls it fails wherever only the runtime is loaded
(an edge server, a deploy bundle, ``bench``'s timing processes: "Cannot find ffi::Function
relax.run.nonzero in either Relax VM kernel library, or in TVM runtime ffi::Function registry").
Here, as TVM legalizes the other ops of data-dependent size (``all_class_non_max_suppression``: its
count, ``R.tensor_to_shape``, ``R.match_cast``, then the rows), in three steps:

1. one kernel computes each element's place among the non-zero ones (an exclusive prefix sum of
   ``x != 0``, ``topi.cumsum``) and, from it, the output's shape ``[ndim, count]``;
2. ``R.tensor_to_shape`` and ``R.match_cast`` make the count a symbolic dimension (``vm.builtin``
   functions of the runtime library);
3. a second kernel writes each non-zero element's indices in its column (a serial loop: the
   elements are few where a model asks which are non-zero, a mask of boxes or scores).

A tensor of symbolic shape keeps TVM's legalization. :func:`nonzero_as_kernels` runs before every
``LegalizeOps`` of ours (:func:`tvm_partition.ir.legalize.legalize_ops`).
"""

from __future__ import annotations

import math

import tvm
from tvm import relax, te, topi
from tvm.script.ir_builder import IRBuilder
from tvm.script.ir_builder import tirx as T

from .relax_utils import copy_module, static_tensor, unravel


def _is_set(value, dtype: str):
    """``value != 0`` (a bool is itself: LLVM refuses a float comparison of an ``i1``)."""
    return value if dtype == "bool" else value != tvm.tirx.const(0, dtype)


def _shape_and_places(x):
    """``(shape [ndim, count], each element's place among the non-zero ones)``."""
    n = math.prod(int(d) for d in x.shape)
    flat = topi.reshape(x, (n,))
    mask = te.compute((n,), lambda i: _is_set(flat[i], x.dtype).astype("int64"), name="nonzero_mask")
    places = topi.cumsum(mask, axis=0, dtype="int64", exclusive=True)
    count = places[n - 1] + mask[n - 1]
    shape = te.compute((2,), lambda j: tvm.tirx.if_then_else(j == 0, tvm.tirx.const(len(x.shape), "int64"), count),
                       name="nonzero_shape")
    return shape, places


def _indices(x, places, count):
    """The ``[ndim, count]`` indices of ``x``'s non-zero elements, in row-major order."""
    dims = [int(d) for d in x.shape]
    n = math.prod(dims)

    def body(ins, outs):
        data, place = ins
        with IRBuilder() as ib:
            out, x_, where = T.buffer_proxy(outs[0]), T.buffer_proxy(data), T.buffer_proxy(place)
            with T.serial(0, n) as i:
                index = unravel(tvm.tirx.Cast("int64", i), dims)
                with T.If(_is_set(x_[tuple(index)], data.dtype)):
                    with T.Then():
                        for d, at in enumerate(index):
                            out[d, where[i]] = at
        return ib.get()

    found = te.extern([(len(dims), count)], [x, places], body, dtype=["int64"], name="nonzero_found")
    # copied once (a few int64s): an extern alone makes a PrimFunc without a root block, which
    # the schedules' lookups (templates, transfer, tuning) take every kernel to have
    return te.compute(found.shape, lambda *i: found(*i), name="nonzero_indices")


_NONZERO = tvm.ir.Op.get("relax.nonzero")


def _is_nonzero(expr) -> bool:
    return (isinstance(expr, relax.Call) and isinstance(expr.op, tvm.ir.Op) and expr.op.same_as(_NONZERO)
            and static_tensor(expr.args[0].ty))


@relax.expr_functor.mutator
class _Kernels(relax.PyExprMutator):
    def visit_call_(self, call):
        call = super().visit_call_(call)
        return legalize_nonzero(self.builder_, call) if _is_nonzero(call) else call


@tvm.transform.module_pass(opt_level=0, name="NonzeroAsKernels")
def nonzero_as_kernels(mod: tvm.IRModule, _ctx) -> tvm.IRModule:
    """Every ``R.nonzero`` of a tensor of static shape legalized as the module docstring says.
    Before ``LegalizeOps``, which calls no custom legalization of an op whose result's shape is not
    known ("shapes are known if required": ``R.nonzero``'s is ``R.Tensor(ndim=2)``) and takes its
    ``FCallPacked``, ``relax.run.nonzero``."""
    found = [gv for gv, f in mod.functions_items() if isinstance(f, relax.Function) and _calls_nonzero(f)]
    if not found:
        return mod
    mutator = _Kernels(mod)
    out = copy_module(mod)
    for gv in found:
        out[gv] = mutator.visit_expr(mod[gv])
    names = {gv.name_hint for gv in mod.get_global_vars()}
    for gv, f in mutator.builder_.get().functions_items():  # the kernels call_te added
        if gv.name_hint not in names:
            out[gv] = f
    return out


def _calls_nonzero(func) -> bool:
    found = []
    relax.analysis.post_order_visit(func.body, lambda e: found.append(e) if _is_nonzero(e) else None)
    return bool(found)


def legalize_nonzero(bb: relax.BlockBuilder, call: relax.Call) -> relax.Expr:
    """``R.nonzero(x)`` (``x`` of static shape) as the three steps of the module docstring."""
    x = call.args[0]
    shape_and_places = bb.emit(bb.call_te(_shape_and_places, x, primfunc_name_hint="nonzero_shape"))
    shape = bb.emit(relax.op.tensor_to_shape(bb.emit(relax.TupleGetItem(shape_and_places, 0))))
    count = tvm.tirx.Var("nonzero_count", "int64")
    bb.match_cast(shape, relax.ShapeType([len(x.ty.shape.values), count]))
    places = bb.emit(relax.TupleGetItem(shape_and_places, 1))
    return bb.call_te(_indices, x, places, count, primfunc_name_hint="nonzero_indices")
