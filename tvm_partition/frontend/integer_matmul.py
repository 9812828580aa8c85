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

from ..ir.graph import BYTE_TILES
from ..ir.relax_utils import Constant, calls_op, copy_module, rebuilt
from ..ir.split_rules import static_shape
from .inference import pad_widths
from .model import Model

_MATMUL = tvm.ir.Op.get("relax.matmul")
_DEQUANTIZE = tvm.ir.Op.get("relax.dequantize")
_PAD = tvm.ir.Op.get("relax.nn.pad")


#: :func:`integer_matmuls` pads an activation's rows on to a multiple of the kernel's tile where
#: that adds at most this share of them: AMX's tiles of 32 rows (:mod:`tvm_partition.build.amx`)
#: sum 2.1x quicker than VNNI's of 4 (858 against 400 GMAC/s), so ViT's 197 tokens run as 224 (13.7%
#: more rows) rather than 200 on VNNI.
MAX_TILE_PADDING = 1 / 4


def integer_matmuls(model: Model, tile: tuple[int, int, int] | None = None) -> Model:
    """``model`` with every float matmul of a dequantized uint8 activation (scale 1, one zero point;
    its rows perhaps padded) by a rank-2 weight holding int8 values as the integer product of the
    module docstring; the weights only it read dropped. ``tile``: (rows, columns, reduction) of the
    tiles every device sums them in (AMX's), its rows padded on to a multiple of the tile's where
    that adds at most :data:`MAX_TILE_PADDING` of them, sliced off after it, and the module says so
    (:data:`tvm_partition.ir.graph.BYTE_TILES`: the OpGraph prices them). ``model`` itself where
    there is none."""
    row_multiple = tile[0] if tile else 1
    main = model.mod["main"]
    num_input = len(main.params) - len(model.params)
    inputs, weights = list(main.params)[:num_input], list(main.params)[num_input:]
    values = dict(zip(weights, model.params))
    mod = copy_module(model.mod)
    mutator = _Integers(model.mod, values, row_multiple)
    mod["main"] = mutator.visit_expr(main)
    if not mutator.rewritten:
        return model
    mod = relax.transform.DeadCodeElimination(["main"])(mod)  # the dequantizes the products read
    read = set(relax.analysis.free_vars(mod["main"].body))
    kept = [w for w in weights if w in read]
    mod = rebuilt(mod, params=inputs + kept)
    mod, extra = _lifted(mod)
    if tile:
        mod = mod.with_attr(BYTE_TILES, list(tile))
    return dataclasses.replace(model, mod=mod, params=[values[w] for w in kept] + extra)


def _lifted(mod: tvm.IRModule):
    from . import lift_constants  # the package's: it imports this module

    return lift_constants(mod)


@relax.expr_functor.mutator
class _Integers(relax.PyExprMutator):
    def __init__(self, mod, values: dict, row_multiple: int):
        super().__init__(mod)
        self.values = values
        self.row_multiple = row_multiple
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
        dq = self._bound(x)
        if dq is not None and calls_op(dq, _PAD):  # rows padded to whole tiles (inference.pad_matmuls)
            dq = self._bound(dq.args[0])
        weight = self._value(w)
        if dq is None or not calls_op(dq, _DEQUANTIZE) or not _int8_valued(weight):
            return call
        q, scale, zp = dq.args
        scales = self._value(scale)
        if q.ty.dtype != "uint8" or scales is None or not np.all(scales == 1) or zp.ty.dtype != "uint8" \
                or static_shape(zp) is None or math.prod(static_shape(zp)) != 1 or call.ty.dtype != "float32":
            return call
        shape, padded_shape = static_shape(q), static_shape(x)
        if shape is None or padded_shape is None or len(shape) < 2:
            return call
        self.rewritten += 1
        w8 = weight.astype(np.int8)
        colsum = w8.astype(np.int32).sum(axis=0)
        scalar = zp if len(zp.ty.shape) == 0 else relax.op.reshape(zp, [])
        shift = relax.op.multiply(relax.op.astype(scalar, "int32"), relax.const(colsum))
        axis, rows, padded = len(shape) - 2, shape[-2], padded_shape[-2]
        tiled = _tile_rows(rows, padded, self.row_multiple)
        if tiled != rows:  # the padding's rows are sliced off after the product: any value does
            q = self.builder_.emit(relax.op.nn.pad(q, pad_widths(len(shape), axis, tiled - rows)))
        product = self.builder_.emit(relax.op.matmul(q, relax.const(w8), out_dtype="int32"))
        out = relax.op.astype(relax.op.subtract(product, self.builder_.emit(shift)), "float32")
        if tiled == padded:
            return out
        return relax.op.strided_slice(self.builder_.emit(out), [axis], [0], [padded])


def _tile_rows(rows: int, padded: int, multiple: int) -> int:
    """The rows a product of ``rows`` (``padded`` in its float form) computes: the next multiple
    of ``multiple`` where ``padded`` is none and it adds at most :data:`MAX_TILE_PADDING`."""
    extra = -rows % multiple
    return rows + extra if padded % multiple and extra <= MAX_TILE_PADDING * rows else padded


def _int8_valued(weight: np.ndarray | None) -> bool:
    """Whether ``weight`` is a float matrix of integers each within int8's range."""
    return (weight is not None and weight.ndim == 2 and weight.dtype == np.float32 and weight.size > 0
            and float(weight.min()) >= -128 and float(weight.max()) <= 127 and bool(np.all(weight == np.round(weight))))

