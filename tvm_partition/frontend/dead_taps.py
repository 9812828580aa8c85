"""Taps of a dilated convolution that read only padding, dropped.

DeepLabV3's atrous spatial pyramid (torchvision's ``deeplabv3_mobilenet_v3_large`` at 224 x 224)
convolves a 14 x 14 map of 960 channels with 3x3 windows of dilation 12, 24 and 36, padded by as
much: at dilation 24 and 36 every tap but the centre reads padding for every output pixel, so the
convolution is a 1x1 one, and at 12 two rows and columns of taps read the input for two output
rows only. The direct-convolution template still runs all nine taps over the padded map: the
three kernels took 6.0, 10.9 and 14.9 ms of the model's 40.6 (``run --kernels --repeat 10``, 2 Zen 4
threads, 2026-12-01), where onnxruntime ran the whole model in 10.

:func:`drop_dead_taps` keeps, of an ``NCHW`` / ``OIHW`` convolution's window, the rows and
columns of taps that read the input for at least one output pixel (the weights sliced: load
time) and shrinks the padding by what the dropped taps covered, so each output is the same sum
without the products of zeros. A convolution whose trimmed window would need a negative padding
(its output would change shape) keeps its window.
"""

from __future__ import annotations

import tvm
from tvm import relax

from ..ir.relax_utils import rewrite_functions
from ..ir.split_rules import static_shape
from .inference import nchw_conv


def live_taps(size: int, out: int, taps: int, stride: int, dilation: int, pad_before: int) -> tuple[int, int]:
    """The first and last tap of one axis of a window that read the input (not padding) for some
    output position; ``(0, -1)`` if none does."""
    live = [t for t in range(taps)
            if any(0 <= y * stride + t * dilation - pad_before < size for y in range(out))]
    return (live[0], live[-1]) if live else (0, -1)


def _trimmed_pads(size, out, stride, dilation, pad_before, first, last) -> tuple[int, int] | None:
    """The padding before and after an axis whose window keeps taps ``first..last``: the same
    outputs, or None where that needs a negative padding."""
    before = pad_before - first * dilation
    after = (out - 1) * stride + (last - first) * dilation + 1 - size - before
    return (before, after) if before >= 0 and after >= 0 else None


@relax.expr_functor.mutator
class _Trimmed(relax.PyExprMutator):
    def visit_call_(self, call):
        call = super().visit_call_(call)
        conv, out = nchw_conv(call), static_shape(call)
        if conv is None or out is None:
            return call
        groups, xs, ws = conv
        a = call.attrs
        strides, dilation = [int(v) for v in a.strides], [int(v) for v in a.dilation]
        pads = [int(v) for v in a.padding]  # top, left, bottom, right
        kept, new_pads = [], [0, 0, 0, 0]
        for axis in (0, 1):
            first, last = live_taps(xs[2 + axis], out[2 + axis], ws[2 + axis], strides[axis], dilation[axis], pads[axis])
            if last < first:
                return call  # every tap reads padding: left to what it is (never met)
            trimmed = _trimmed_pads(xs[2 + axis], out[2 + axis], strides[axis], dilation[axis], pads[axis], first, last)
            if trimmed is None:
                return call
            kept.append((first, last))
            new_pads[axis], new_pads[2 + axis] = trimmed
        if all(first == 0 and last == ws[2 + axis] - 1 for axis, (first, last) in enumerate(kept)):
            return call
        (r0, r1), (c0, c1) = kept
        # a window of one tap along an axis reads no dilation there: 1 lets a 1x1 take its template
        dilation = [1 if first == last else d for (first, last), d in zip(kept, dilation)]
        w = self.builder_.emit(relax.op.strided_slice(call.args[1], [2, 3], [r0, c0], [r1 + 1, c1 + 1]))
        return relax.op.nn.conv2d(call.args[0], w, strides=strides, padding=new_pads, dilation=dilation,
                                  groups=groups, data_layout="NCHW", kernel_layout="OIHW",
                                  out_layout=a.out_layout, out_dtype=a.out_dtype)


@tvm.transform.module_pass(opt_level=0, name="DropDeadTaps")
def drop_dead_taps(mod: tvm.IRModule, _ctx) -> tvm.IRModule:
    """Every NCHW convolution of static shapes without the rows and columns of its window that
    read only padding (module docstring)."""
    return rewrite_functions(mod, lambda mod, _func: _Trimmed(mod))
