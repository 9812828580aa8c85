"""Matmuls by a weight over a map of rows (``[1, 14, 14, 384] @ [384, 1536]``) as one matrix of rows.

A channels-last MLP (ConvNeXt's and Swin-T's, a PyTorch ``nn.Linear`` on ``[N, H, W, C]``) multiplies
a weight into every pixel of a map. TVM's ``matmul`` keeps the map's axes, so the row axis the
matmul template tiles (:func:`tvm_partition.ir.relax_utils.matmul_row_axis`) is the map's width: 14 or 7,
no whole number of 4-row tiles, and padding it (:func:`tvm_partition.frontend.inference.pad_matmuls`)
would add 14-43%. The template tiling the fused pixel index instead ran 1.4-3x slower (its
accumulators indexed by a division of it stayed in memory; each alone, Swin-T's kernels,
amd-epyc-znver4-2c, 2026-11-30), and these kernels replayed records tuned at other shapes:
ConvNeXt-T's four MLP matmuls (stages 3 and 4) took 67% of the model's time.

:func:`flatten_matmul_rows` makes such a matmul one of ``[pixels, C]`` between two reshapes (views
of the same memory), and moves the reshape back to the map below the element-wise ops after it
(bias, GELU, a residual add: each computes the same elements in either shape), so that TVM's fusion
makes a kernel of one two-dimensional matmul and its epilogue, which the template takes. Only where
the map's width is no whole number of tiles: a ``[1, 197, 768]`` sequence keeps its shape.
"""

from __future__ import annotations

import math

import tvm
from tvm import relax

from ..ir.relax_utils import calls_op, matmul_row_axis, rewrite_functions
from ..ir.split_rules import static_shape
from .inference import MATMUL_ROW_MULTIPLE

_MATMUL = tvm.ir.Op.get("relax.matmul")
#: Element-wise operators a reshape back to the map moves below (each computes the same elements in
#: either shape); the binary ones where every other operand is a scalar, a vector over the last
#: axis, or a tensor of the map's shape (reshaped the same way: a view).
ELEMENTWISE = frozenset(tvm.ir.Op.get(f"relax.{name}") for name in (
    "add", "subtract", "multiply", "divide", "maximum", "minimum", "power", "erf", "tanh", "sigmoid", "exp",
    "sqrt", "negative", "clip", "nn.relu", "nn.gelu", "nn.gelu_tanh", "nn.silu"))


def _flattenable(xs: tuple[int, ...], ws: tuple[int, ...]) -> bool:
    """Whether a matmul of ``xs`` by a rank-2 ``ws`` has rows over several axes of which the one the
    template would tile holds no whole number of tiles."""
    if len(ws) != 2 or len(xs) < 3:
        return False
    rows = xs[matmul_row_axis(xs, True)]
    return rows > 1 and rows % MATMUL_ROW_MULTIPLE != 0 and math.prod(xs[:-1]) > rows


@relax.expr_functor.mutator
class _Flattened(relax.PyExprMutator):
    def __init__(self, mod):
        super().__init__(mod)
        self.views: list[relax.Call] = []  # the reshapes back to the map this pass emitted

    def visit_call_(self, call):
        call = super().visit_call_(call)
        if calls_op(call, _MATMUL):
            return self._flattened(call)
        if isinstance(call.op, tvm.ir.Op) and call.op in ELEMENTWISE:
            return self._sunk(call)
        return call

    def _view(self, value: relax.Expr, shape) -> relax.Call:
        view = relax.op.reshape(value, shape)
        self.views.append(view)
        return view

    def _source(self, expr) -> relax.Expr | None:
        """What ``expr`` views if it is bound to one of this pass's reshapes back to a map."""
        value = self.lookup_binding(expr) if isinstance(expr, relax.Var) else None
        return value.args[0] if value is not None and any(value.same_as(v) for v in self.views) else None

    def _flattened(self, call):
        x, w = call.args
        xs, ws, out = static_shape(x), static_shape(w), static_shape(call)
        if xs is None or ws is None or out is None or not _flattenable(xs, ws):
            return call
        rows = [math.prod(xs[:-1]), xs[-1]]
        source = self._source(x)  # the last matmul's rows, viewed as a map: taken as they are
        flat = source if source is not None and list(static_shape(source)) == rows else self.builder_.emit(relax.op.reshape(x, rows))
        return self._view(self.builder_.emit(relax.op.matmul(flat, w, out_dtype=call.attrs.out_dtype)), out)

    def _sunk(self, call):
        shape = static_shape(call)
        sources = [self._source(a) for a in call.args]
        viewed = next((s for s in sources if s is not None), None)
        if shape is None or viewed is None:
            return call
        flat = static_shape(viewed)
        args = []
        for arg, source in zip(call.args, sources):
            arg_shape = static_shape(arg)
            if source is not None and static_shape(source) == flat and arg_shape == shape:
                args.append(source)
            elif arg_shape == shape:  # a tensor of the map's shape: viewed as rows the same way
                args.append(self.builder_.emit(relax.op.reshape(arg, flat)))
            elif arg_shape is not None and all(d == 1 for d in arg_shape[:-1]) and (not arg_shape or arg_shape[-1] in (1, shape[-1])):
                args.append(arg if len(arg_shape) <= 1 else self.builder_.emit(relax.op.reshape(arg, [arg_shape[-1]])))
            else:
                return call
        value = self.builder_.emit(relax.Call(call.op, args, call.attrs, call.ty_args))
        return self._view(value, shape)


@tvm.transform.module_pass(opt_level=0, name="FlattenMatmulRows")
def flatten_matmul_rows(mod: tvm.IRModule, _ctx) -> tvm.IRModule:
    """Every matmul by a rank-2 right operand whose rows run over several axes, the template's of
    which holds no whole number of 4-row tiles, as a matmul of one matrix of rows, reshaped back to
    the map after the element-wise ops that follow it."""
    return rewrite_functions(mod, lambda mod, _func: _Flattened(mod))
