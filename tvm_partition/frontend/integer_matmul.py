"""Dynamically quantized matmuls as products of bytes summed in int32, for CPUs that sum them so.

onnxruntime's ``quantize_dynamic`` quantizes each activation to uint8 at run time
(``DynamicQuantizeLinear``) and multiplies it into int8 weights (``MatMulInteger``);
:mod:`.onnx_quant` writes that product as a float matmul of the integers (``dequantize(q, 1, zp) @
w``, the weight folded into float constants that hold integers), because TVM 0.27's own
``MatMulInteger`` multiplies int32s, slower than floats on x86 (DistilBERT 102 ms against 47 for the
float model). A CPU with AVX-512 VNNI sums four uint8 x int8 products into an int32 lane in one
instruction (``vpdpbusd``): on DistilBERT's matmul shapes a uint8 x int8 kernel ran 3.0-3.6x
quicker than our float one (``benchmarks/vnni_matmul.py``, rocketlake-2c, 2026-12-05), and it is
what onnxruntime runs (17.4 ms against our 51.7 on the whole model).

:func:`integer_matmuls` writes each such product back as integers: ``matmul(q, w8,
out_dtype="int32")`` of the uint8 activation and the weight as int8, minus the zero point times the
weight's column sums (``(q - zp) @ w = q @ w - zp * colsum(w)``, ONNX's ``MatMulInteger`` with a
per-tensor ``a_zero_point`` and none for ``b``), cast to float: exact where the float form rounded
each partial sum past 2**24. The template that sums it with ``vpdpbusd`` is
:mod:`tvm_partition.build.vnni`'s; the build takes this form only where every device is a CPU with
VNNI (:func:`tvm_partition.cli.compile.for_devices`, :func:`tvm_partition.build.vnni.sums_bytes`): a
GPU, or a CPU without it, keeps the float one. The weights are stored as int8 (a quarter of the float ones' bytes).
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import tvm
from tvm import relax

from ..ir.relax_utils import Constant, calls_op, copy_module, rebuilt
from ..ir.split_rules import static_shape
from .model import Model

_MATMUL = tvm.ir.Op.get("relax.matmul")
_DEQUANTIZE = tvm.ir.Op.get("relax.dequantize")
_PAD = tvm.ir.Op.get("relax.nn.pad")


def integer_matmuls(model: Model) -> Model:
    """``model`` with every float matmul of a dequantized uint8 activation (scale 1, one zero point;
    its rows perhaps padded) by a rank-2 weight holding int8 values as the integer product of the module docstring; the
    weights only it read dropped. ``model`` itself where there is none."""
    main = model.mod["main"]
    num_input = len(main.params) - len(model.params)
    inputs, weights = list(main.params)[:num_input], list(main.params)[num_input:]
    values = dict(zip(weights, model.params))
    mod = copy_module(model.mod)
    mutator = _Integers(model.mod, values)
    mod["main"] = mutator.visit_expr(main)
    if not mutator.rewritten:
        return model
    mod = relax.transform.DeadCodeElimination(["main"])(mod)  # the dequantizes the products read
    read = set(relax.analysis.free_vars(mod["main"].body))
    kept = [w for w in weights if w in read]
    mod = rebuilt(mod, params=inputs + kept)
    mod, extra = _lifted(mod)
    return dataclasses.replace(model, mod=mod, params=[values[w] for w in kept] + extra)


def _lifted(mod: tvm.IRModule):
    from . import lift_constants  # the package's: it imports this module

    return lift_constants(mod)


@relax.expr_functor.mutator
class _Integers(relax.PyExprMutator):
    def __init__(self, mod, values: dict):
        super().__init__(mod)
        self.values = values
        self.rewritten = 0

    def _value(self, expr) -> np.ndarray | None:
        if isinstance(expr, Constant):
            return expr.data.numpy()
        return self.values.get(expr)

    def _bound(self, expr) -> relax.Call | None:
        value = self.lookup_binding(expr) if isinstance(expr, relax.Var) else None
        return value if isinstance(value, relax.Call) else None

    def visit_call_(self, call):
        call = super().visit_call_(call)
        if not calls_op(call, _MATMUL) or len(call.args) != 2:
            return call
        x, w = call.args
        dq, pad = self._bound(x), None
        if dq is not None and calls_op(dq, _PAD):  # rows padded to whole tiles (inference.pad_matmuls)
            dq, pad = self._bound(dq.args[0]), dq
        weight = self._value(w)
        if dq is None or not calls_op(dq, _DEQUANTIZE) or not _int8_valued(weight):
            return call
        q, scale, zp = dq.args
        scales = self._value(scale)
        if q.ty.dtype != "uint8" or scales is None or not np.all(scales == 1) or zp.ty.dtype != "uint8" \
                or static_shape(zp) is None or math.prod(static_shape(zp)) != 1 or call.ty.dtype != "float32":
            return call
        self.rewritten += 1
        w8 = weight.astype(np.int8)
        colsum = w8.astype(np.int32).sum(axis=0)
        scalar = zp if len(zp.ty.shape) == 0 else relax.op.reshape(zp, [])
        shift = relax.op.multiply(relax.op.astype(scalar, "int32"), relax.const(colsum))
        if pad is not None:  # the padding's rows are sliced off after the product: any value does
            q = self.builder_.emit(relax.Call(pad.op, [q], pad.attrs, pad.ty_args))
        product = self.builder_.emit(relax.op.matmul(q, relax.const(w8), out_dtype="int32"))
        return relax.op.astype(relax.op.subtract(product, self.builder_.emit(shift)), "float32")


def _int8_valued(weight: np.ndarray | None) -> bool:
    """Whether ``weight`` is a float matrix of integers each within int8's range."""
    return (weight is not None and weight.ndim == 2 and weight.dtype == np.float32 and weight.size > 0
            and float(weight.min()) >= -128 and float(weight.max()) <= 127 and bool(np.all(weight == np.round(weight))))

