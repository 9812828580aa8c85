"""Convolutions of one input that are summed, as one convolution of their summed windows.

A convolution is linear in its weights: ``conv(x, A) + conv(x, B) = conv(x, A + B)`` wherever both
read the same input in as many groups with the same stride and dilation and write the same
output, each window placed in a window that covers both (zero taps where one is smaller). A batch
norm of the input itself (inference form: ``x * s + t`` per channel) is such a convolution too, of
the identity scaled by ``s`` at the window's centre (in a grouped convolution, output channel ``o``
reads input channel ``o`` as the ``o % (C / groups)``-th of its group). This is the structural
re-parameterization of RepVGG (Ding et al., CVPR 2021, section 3.3: a 3x3, a 1x1 and an identity
branch, each with its batch norm, merged into one 3x3 for inference), of ACNet (Ding et al., ICCV
2019: 3x3 + 1x3 + 3x1) and of MobileOne's depthwise blocks, which models exported in their
training form keep: Hugging Face's TextNet (the FAST text detector's
backbone) sums, in each of its 10 blocks, a 3x3, a 3x1 and a 1x3 convolution of one input (their
batch norms folded by the exporter), and in 6 of them a batch norm of that input.

Why: the direct-convolution template runs each branch as its own kernel, each writing its NCHW
output through a transposition of its register tile (:mod:`tvm_partition.build.templates.convolution`),
and the sum reads them back: TextNet-T's three 112 x 112 kernels of its first block took 4.5, 1.9
and 1.6 ms (``run --kernels``), the model 27.5 ms against onnxruntime's 19.5 (2 threads,
intel-r-xeon-r-processor-emeraldrapids-2c, 2026-12-07). Merged, each block is one 3x3: 9 taps for
the 15 of its three windows, one write-back, no sums. The merged weights are Relax ops on the
weights alone, which the build lifts into ``main_transform_params`` (load time), as
:func:`.inference.fold_batch_norms` does.

Run after :func:`.inference.fold_batch_norms` (a branch's own batch norm is then its bias) and
before ``DecomposeOpsForInference`` (an input's batch norm is still one op).
"""

from __future__ import annotations

import dataclasses

import tvm
from tvm import relax

from ..ir.relax_utils import Constant, calls_op, rewrite_functions
from ..ir.split_rules import static_shape
from .inference import _BATCH_NORM, _uses, batch_norm_affine, conv2d_like, nchw_conv

_ADD = tvm.ir.Op.get("relax.add")


@dataclasses.dataclass(frozen=True)
class _Branch:
    """One term of a sum: ``conv(data, weight) + bias``, or, ``conv`` None, a batch norm of the input
    itself, ``weight`` its per-channel scale; its window where its padding places it."""

    data: relax.Expr
    conv: relax.Call | None
    weight: relax.Expr
    bias: relax.Expr | None
    window: tuple[int, int]  # kernel height, width
    pads: tuple[int, int, int, int]  # top, left, bottom, right


def merge_conv_sums(inputs: int):
    """A module pass: every ``add`` of two convolutions of one input (NCHW / OIHW, static shapes, as
    many groups, the same strides and dilation 1, the same output shape; each with or without a
    per-channel bias, each used by that sum alone), or of one such convolution of stride 1 and a
    batch norm of its input over its channels, as one convolution of the two windows summed in one
    covering both. ``main``'s first ``inputs`` parameters are its data: a convolution merged reads
    weights that the others (the weights) and constants alone decide, so that the sum of windows is
    computed at load time."""

    @tvm.transform.module_pass(opt_level=0, name="MergeConvSums")
    def merge(mod: tvm.IRModule, _ctx) -> tvm.IRModule:
        return rewrite_functions(mod, lambda mod, func: _Merged(mod, func, inputs))

    return merge


@relax.expr_functor.mutator
class _Merged(relax.PyExprMutator):
    def __init__(self, mod, func, inputs: int):
        super().__init__(mod)
        self.uses = _uses(func)
        self.weights = set(func.params[inputs:])  # with their values known at load time
        self.known: dict = {}  # expr -> whether only weights and constants decide it

    def visit_call_(self, call):
        call = super().visit_call_(call)
        if not calls_op(call, _ADD):
            return call
        a, b = (self._branch(arg) for arg in call.args)
        if a is None or b is None or not a.data.same_as(b.data):
            return call
        if a.conv is None:
            a, b = b, a
        if a.conv is None or not (_compatible(a.conv, b.conv) if b.conv is not None else _same_map(a.conv)):
            return call
        pads = covering((a.window, a.pads), (b.window, b.pads))  # a batch norm's 1x1 at 0: its own pixel
        return call if pads is None else self._merged(a, b, pads)

    def _single(self, var) -> bool:
        """Whether ``var`` is used once in the function (a variable this pass made is)."""
        return self.uses.get(var, 1) == 1

    def _branch(self, expr) -> _Branch | None:
        """``expr`` as a :class:`_Branch`: a convolution, a convolution plus a bias of shape
        ``(1, C, 1, 1)``, or a batch norm's first output over axis 1; None for anything else."""
        if not isinstance(expr, relax.Var) or not self._single(expr):
            return None
        value = self.lookup_binding(expr)
        if isinstance(value, relax.TupleGetItem):
            return self._batch_norm(value)
        return self._convolution(value) if isinstance(value, relax.Call) else None

    def _convolution(self, value: relax.Call) -> _Branch | None:
        """``value`` as a convolution's branch, with its bias where it adds one."""
        bias = None
        if calls_op(value, _ADD):
            for conv_var, bias in (value.args, value.args[::-1]):
                shape = static_shape(bias)
                if isinstance(conv_var, relax.Var) and self._single(conv_var) and shape is not None \
                        and len(shape) == 4 and shape[0] == shape[2] == shape[3] == 1:
                    conv = self.lookup_binding(conv_var)
                    if nchw_conv(conv) is not None:
                        value = conv
                        break
            else:
                return None
        found = nchw_conv(value)
        if found is None or any(int(d) != 1 for d in value.attrs.dilation) \
                or not self._weights_only(value.args[1]) \
                or static_shape(value) is None or (bias is not None and static_shape(bias)[1] != static_shape(value)[1]):
            return None
        _, _, shape = found
        pads = tuple(int(p) for p in value.attrs.padding)  # top, left, bottom, right
        return _Branch(value.args[0], value, value.args[1], bias, (shape[2], shape[3]), pads)

    def _batch_norm(self, item: relax.TupleGetItem) -> _Branch | None:
        """A batch norm of ``x`` over its channels (one op) as a branch: scale ``gamma / sqrt(var + eps)``
        as its weight, ``beta - mean * scale`` as its bias."""
        tup = item.tuple_value  # its other outputs (the running statistics) are bound too, unused
        if item.index != 0 or not isinstance(tup, relax.Var):
            return None
        bn = self.lookup_binding(tup)
        if not (isinstance(bn, relax.Call) and calls_op(bn, _BATCH_NORM)) or int(bn.attrs.axis) != 1:
            return None
        shape = static_shape(bn.args[0])
        if shape is None or len(shape) != 4:
            return None
        scale, bias = batch_norm_affine(bn, shape[1], self.builder_.emit)
        return _Branch(bn.args[0], None, scale, bias, (1, 1), (0, 0, 0, 0))

    def _weights_only(self, expr) -> bool:
        if isinstance(expr, Constant) or expr in self.weights:
            return True
        if not isinstance(expr, (relax.Var, relax.Call, relax.Tuple)):
            return isinstance(expr, relax.ShapeExpr)  # a static shape; anything else: not known
        if expr not in self.known:
            value = self.lookup_binding(expr) if isinstance(expr, relax.Var) else expr
            parts = value.args if isinstance(value, relax.Call) else value.fields if isinstance(value, relax.Tuple) else None
            self.known[expr] = parts is not None and all(self._weights_only(a) for a in parts)
        return self.known[expr]

    def _merged(self, a: _Branch, b: _Branch, pads: tuple[int, int, int, int]) -> relax.Expr:
        emit = self.builder_.emit
        groups = int(a.conv.attrs.groups)
        weights = [emit(relax.op.nn.pad(w, [0, 0, 0, 0, pads[0] - p[0], pads[2] - p[2], pads[1] - p[1], pads[3] - p[3]]))
                   if pads != p else w for w, p in ((a.weight, a.pads), (self._weight(b, groups), b.pads))]
        out = emit(conv2d_like(a.conv, a.data, emit(relax.op.add(*weights)), groups=groups, padding=list(pads)))
        biases = [bias for bias in (a.bias, b.bias) if bias is not None]
        if not biases:
            return out
        return relax.op.add(out, emit(relax.op.add(*biases)) if len(biases) == 2 else biases[0])

    def _weight(self, branch: _Branch, groups: int) -> relax.Expr:
        """``branch``'s weights in OIHW for a convolution of ``groups``: a batch norm's as its scale on
        the diagonal of a 1x1 window (output channel ``o`` reads input channel ``o``, the ``o % (C /
        groups)``-th of its group)."""
        if branch.conv is not None:
            return branch.weight
        c = static_shape(branch.data)[1]
        diagonal = relax.op.eye(c // groups, dtype=branch.data.ty.dtype)
        if groups > 1:
            diagonal = relax.op.tile(diagonal, [groups, 1])
        diagonal = relax.op.multiply(diagonal, relax.op.reshape(branch.weight, [c, 1]))
        return self.builder_.emit(relax.op.reshape(diagonal, [c, c // groups, 1, 1]))


def _compatible(a: relax.Call, b: relax.Call) -> bool:
    """Whether two convolutions of one input write the same output at the same strides, in as many
    groups."""
    return [int(s) for s in a.attrs.strides] == [int(s) for s in b.attrs.strides] \
        and int(a.attrs.groups) == int(b.attrs.groups) \
        and static_shape(a) == static_shape(b) and a.attrs.out_dtype == b.attrs.out_dtype


def covering(*windows: tuple[tuple[int, int], tuple[int, int, int, int]]) -> tuple[int, int, int, int] | None:
    """The padding (top, left, bottom, right) of a window covering ``windows`` (each ``((height,
    width), (top, left, bottom, right))``: a window and its padding) where each padding places each,
    or None where they would not leave the merged window one padding after them (their outputs
    agree only by rounding at a stride: not merged). Its size: the padding before plus the furthest
    last tap, plus one."""
    pads = []
    for axis in (0, 1):
        before = max(p[axis] for _, p in windows)
        last = max(w[axis] - 1 - p[axis] for w, p in windows)  # from an output's first unpadded pixel
        after = {p[axis + 2] + (last + before + 1 - w[axis]) - (before - p[axis]) for w, p in windows}
        if len(after) != 1:
            return None
        pads.append((before, after.pop()))
    return pads[0][0], pads[1][0], pads[0][1], pads[1][1]


def _same_map(conv: relax.Call) -> bool:
    """Whether a convolution writes a map of its input's shape at stride 1 (a batch norm of its input
    can join it)."""
    return all(int(s) == 1 for s in conv.attrs.strides) and static_shape(conv) == static_shape(conv.args[0])
