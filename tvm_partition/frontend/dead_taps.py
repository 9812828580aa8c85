"""Taps of a dilated convolution that read only padding, dropped, and bands of outputs that read
few of them.

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

At dilation 12 every tap is live for some output, yet each output reads the map through 1-4 of
the 9 (18% of the products): the kernel still ran 8.3 ms of the model's 22.3 (``run --kernels``,
2 threads, intel-r-xeon-r-processor-emeraldrapids-2c, 2026-12-01), where onnxruntime's
convolution skips the products of padding. A dilated convolution whose outputs, grouped into
bands that read the same taps along each axis (:func:`tap_bands`), compute at most
:data:`BANDED_SHARE` of its products becomes one convolution per band of rows x columns, over the
slice of the map that band reads through its taps (no padding left), joined back with
``concat``: that one 9 bands' convolutions of 1x1, 1x2, 2x1 and 2x2 windows on 2-10 pixels a
side, the model 0.77x (paired, 9 rounds). Undilated windows keep their form: their bands are a
one-pixel border, and on the maps small enough for the border to count (2 x 2) their weights,
read once a band, outweigh the products.
"""

from __future__ import annotations

import tvm
from tvm import relax

from ..ir.relax_utils import rewrite_functions
from ..ir.split_rules import static_shape
from .inference import conv2d_like, nchw_conv

#: A dilated window whose live products are at most this share of all its products is cut into
#: bands of outputs that read the same taps (:func:`tap_bands`), each its own convolution. Not
#: tuned: the one case measured (DeepLabV3's ASPP at 224 x 224) is at 0.18, where its 9 bands read
#: 25 taps' weights (the centre tap's in every band) to the whole window's 9.
BANDED_SHARE = 0.5
#: At most this many bands' convolutions (rows x columns of bands) for one: a 3-tap window's
#: three bands a side.
MAX_BANDED_REGIONS = 9


def _reading(o: int, size: int, taps: int, stride: int, dilation: int, pad_before: int) -> list[int]:
    """The taps through which output position ``o`` of one axis reads the input (not padding)."""
    return [t for t in range(taps) if 0 <= o * stride + t * dilation - pad_before < size]


def live_taps(size: int, out: int, taps: int, stride: int, dilation: int, pad_before: int) -> tuple[int, int]:
    """The first and last tap of one axis of a window that read the input (not padding) for some
    output position; ``(0, -1)`` if none does."""
    live = sorted({t for o in range(out) for t in _reading(o, size, taps, stride, dilation, pad_before)})
    return (live[0], live[-1]) if live else (0, -1)


def _trimmed_pads(size, out, stride, dilation, pad_before, first, last) -> tuple[int, int] | None:
    """The padding before and after an axis whose window keeps taps ``first..last``: the same
    outputs, or None where that needs a negative padding."""
    before = pad_before - first * dilation
    after = (out - 1) * stride + (last - first) * dilation + 1 - size - before
    return (before, after) if before >= 0 and after >= 0 else None


def tap_bands(size: int, out: int, taps: int, stride: int, dilation: int,
              pad_before: int) -> list[tuple[int, int, int, int]] | None:
    """Runs ``(o0, o1, first, last)`` of output positions ``o0 <= o < o1`` along one axis that read
    the input through the same taps ``first..last`` (contiguous: a position's input index rises
    with the tap); None if some output reads only padding."""
    bands: list[list[int]] = []
    for o in range(out):
        live = _reading(o, size, taps, stride, dilation, pad_before)
        if not live:
            return None
        if bands and bands[-1][2:] == [live[0], live[-1]]:
            bands[-1][1] = o + 1
        else:
            bands.append([o, o + 1, live[0], live[-1]])
    return [tuple(b) for b in bands]


def kept_share(bands: list[tuple[int, int, int, int]], out: int, taps: int) -> float:
    """The share of an axis's products (outputs x taps) its bands compute."""
    return sum((o1 - o0) * (last - first + 1) for o0, o1, first, last in bands) / (out * taps)


def _geometry(call) -> tuple | None:
    """``(data shape, weight shape, output shape, strides, dilation, padding)`` of an NCHW
    convolution of static shapes (padding: top, left, bottom, right), else None."""
    conv, out = nchw_conv(call), static_shape(call)
    if conv is None or out is None:
        return None
    a = call.attrs
    return (conv[1], conv[2], out, [int(v) for v in a.strides], [int(v) for v in a.dilation],
            [int(v) for v in a.padding])


@relax.expr_functor.mutator
class _Trimmed(relax.PyExprMutator):
    def visit_call_(self, call):
        call = super().visit_call_(call)
        return self._banded(self._trimmed(call))

    def _trimmed(self, call):
        geometry = _geometry(call)
        if geometry is None:
            return call
        xs, ws, out, strides, dilation, pads = geometry
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
        w = self.builder_.emit(relax.op.strided_slice(call.args[1], [2, 3], [r0, c0], [r1 + 1, c1 + 1]))
        # a window of one tap along an axis reads no dilation there: 1 lets a 1x1 take its template
        return conv2d_like(call, call.args[0], w, int(call.attrs.groups), padding=new_pads,
                           dilation=[1 if first == last else d for (first, last), d in zip(kept, dilation)])

    def _banded(self, call):
        """A dilated convolution whose outputs read the map through few of its taps, cut into bands
        (:func:`tap_bands`) of rows x columns, each band's convolution over the slice of the map its
        taps read, unpadded, joined back; else ``call``."""
        geometry = _geometry(call)
        if geometry is None:
            return call
        xs, ws, out, strides, dilation, pads = geometry
        if max(dilation) == 1:
            return call
        bands = [tap_bands(xs[2 + axis], out[2 + axis], ws[2 + axis], strides[axis], dilation[axis], pads[axis])
                 for axis in (0, 1)]
        if None in bands or len(bands[0]) * len(bands[1]) > MAX_BANDED_REGIONS or (
                kept_share(bands[0], out[2], ws[2]) * kept_share(bands[1], out[3], ws[3]) > BANDED_SHARE):
            return call
        rows = []
        for y_band in bands[0]:
            row = [self.builder_.emit(self._region(call, (y_band, x_band), strides, dilation, pads))
                   for x_band in bands[1]]
            rows.append(row[0] if len(row) == 1 else self.builder_.emit(relax.op.concat(row, axis=3)))
        return rows[0] if len(rows) == 1 else relax.op.concat(rows, axis=2)

    def _region(self, call, bands, strides, dilation, pads):
        """The convolution of one band of rows x one of columns: taps ``first..last`` of each axis
        over the input that outputs ``o0..o1 - 1`` read through them, which is all map."""
        begin, end, taps, dilated = [], [], [], []
        for (o0, o1, first, last), s, d, p in zip(bands, strides, dilation, pads):
            begin.append(o0 * s + first * d - p)
            end.append((o1 - 1) * s + last * d - p + 1)
            taps.append((first, last + 1))
            dilated.append(1 if first == last else d)
        x = self.builder_.emit(relax.op.strided_slice(call.args[0], [2, 3], begin, end))
        w = self.builder_.emit(relax.op.strided_slice(call.args[1], [2, 3], [t[0] for t in taps], [t[1] for t in taps]))
        return conv2d_like(call, x, w, int(call.attrs.groups), padding=[0, 0, 0, 0], dilation=dilated)


@tvm.transform.module_pass(opt_level=0, name="DropDeadTaps")
def drop_dead_taps(mod: tvm.IRModule, _ctx) -> tvm.IRModule:
    """Every NCHW convolution of static shapes without the rows and columns of its window that
    read only padding, and every dilated one whose outputs read few of its taps in bands (module
    docstring)."""
    return rewrite_functions(mod, lambda mod, _func: _Trimmed(mod))
