"""Rewrites of an imported model into the inference form the CPU kernels are scheduled for.

All are Relax module passes that :func:`tvm_partition.frontend.normalize` runs on every model,
so the planners, the profiler and the build see the same ops.

* :func:`conv1d_as_conv2d`: a one-dimensional convolution (``NCW`` / ``OIW``: PyTorch's ``Conv1d``)
  becomes a two-dimensional one over a map of one row (``expand_dims`` of its input and weights,
  ``squeeze`` of its output: views, and the weights' at load time), so it takes the convolution
  templates, the grouped and depthwise one, the split rules and the rewrites below, none of which
  knows ``conv1d``. On TVM's default schedule a PyTorch TCN's dilated convolutions (64 channels,
  1,000 steps, kernel 3) ran 13.8 ms a call, the model 72.9 ms against onnxruntime's 2.1
  (``run --kernels``, amd-epyc-znver3-2c, 2026-11-30). A batch norm after it is decomposed, not
  folded (the ``squeeze`` stands between them).
* :func:`fold_batch_norms`: a batch norm of a convolution's output becomes the convolution's
  weights times ``gamma / sqrt(var + eps)`` per output channel and a bias ``beta - mean * that``
  (as onnxruntime folds it), both computed from the weights alone, so the build's
  ``LiftTransformParams`` runs them once at load time. Unfolded (``DecomposeOpsForInference``),
  every output of the convolution's kernel took a subtract, a divide, a multiply and an add in its
  epilogue; folded, one add: ResNet-50 0.95-0.97x, Inception-v2 0.92x, DenseNet-121 0.93x, each
  paired 5 rounds against the build before (amd-epyc-znver5-2c, 2026-11-26). TVM 0.27's own
  ``FoldBatchnormToConv2D`` folds nothing here: it wants the weights bound as constants, and a
  model's weights are parameters of ``main``.

* :func:`remove_dropout`: ``dropout(x)[0]`` is ``x`` at inference, but ONNX exports keep the op
  (the onnx package's AlexNet, SqueezeNet, VGG-19, Inception-v1) and TVM 0.27's
  ``DecomposeOpsForInference`` leaves it. Fused into its producer it made AlexNet's classifier
  matmuls a computation no record or template has (matmul, bias, ReLU, dropout), which ran TVM's
  default schedule: 255 and 114 ms of the model's 380 (``run --kernels``); without it 5.8 and 2.9
  ms, the model 24 ms (onnxruntime: 15.3; amd-epyc-znver5-2c, 2026-11-26).
* :func:`ungroup_convolutions`: a grouped convolution whose groups each have more than
  :data:`tvm_partition.build.templates.grouped.MAX_GROUP_CHANNELS` input channels (no grouped schedule
  applies: :mod:`tvm_partition.build.templates`) becomes one dense convolution per group on its
  slice of the input channels and of the weights, concatenated along the output channels (the
  weight slices depend on the weights alone: the build moves them to load time). Each runs the
  direct-convolution template: AlexNet's three grouped convolutions (2 groups of 48 and 192 input
  channels) took 8.8, 2.3 and 1.9 ms on replayed dense records, ungrouped 0.9, 0.4 and 0.3 ms; the
  model 24 -> 11.4 ms (0.74x onnxruntime's). ShuffleNet, whose grouped 1x1s of 34, 68 and 136
  input channels a group (4 groups) are taken apart, ran 0.97x (0.70-1.05x paired: their
  convolutions faster, the slices and concats added about as much). Since the direct template
  takes grouped convolutions of whole vectors a group too (AlexNet's), the models were built
  without this pass again: AlexNet 1.03x (0.97-1.06), ShuffleNet 1.17x (1.15-1.28), paired
  against the build with it (5 rounds of 10, 2 Zen 4 threads, 2026-12-01): it stays.
  Where a group's output channels are no whole number of :data:`CHANNEL_MULTIPLE` and reach the
  next multiple with at most :data:`MAX_GROUP_PADDED_SHARE` more, the convolution stays one
  grouped convolution instead, each group's weights padded with zero output channels to that
  multiple (at load time), and a reshape and a slice drop them after it: the direct-convolution
  template then takes it on whole vectors a group, one call where the groups were four
  half-width-vector calls and a concat (see the constant for the measurements).
* :func:`pad_output_channels`: a convolution whose output channels are not a whole number of
  :data:`CHANNEL_MULTIPLE` (the float32 lanes of an AVX-512 vector) computes zero channels up to
  the next multiple, where they add at most :data:`MAX_PADDED_SHARE` of its work, and a slice
  keeps the model's channels; the weights' padding depends on the weights alone (load time), and
  TVM's fusion takes the slice into the convolution's kernel. The direct-convolution template
  (:mod:`tvm_partition.build.templates`) vectorises the output channels on a whole vector where
  they are a multiple of its lanes, else on half vectors: SqueezeNet's 1000-channel classifier
  (512 input channels, 13 x 13) ran 807 us, padded to 1008 channels 527 us (``run --kernels``,
  amd-epyc-znver5-2c, 2026-11-26). On a CPU of 8-lane vectors the padding costs its share.
  Where two such vectors (32 channels) are within the same share, it pads to them: the template's
  tile of two vectors (``templates.convolution.LONG_1X1_REDUCTION``) needs them; SqueezeNet's classifier,
  1000 -> 1024, ran 0.82x on 13 x 2 against 13 x 1 (0.79-0.89x in three earlier runs; each alone,
  2 threads, intel-r-xeon-r-processor-emeraldrapids-2c, 2026-12-01).
  Channels that are no whole number of :data:`VECTOR_CHANNELS` (8: AVX2's lanes, half of AVX-512's)
  take no template at all, only a transferred record, so they are padded to the next multiple of 8
  where that adds at most :data:`MAX_UNVECTORISED_SHARE`: ESPCN's 32 -> 27 channel 3x3 convolution
  (64 x 64) ran 1,884 us on a record, padded to 32 channels 772 us, YOLO-like head's 96 -> 21 1x1
  (40 x 40) 337 and 152 us (``run --kernels``); the models paired 0.70x and 0.84x
  (amd-epyc-znver3-2c, 2026-11-30; BENCHMARKS.md, "Models written in PyTorch").
* :func:`pad_matmuls`: a matmul whose rows are no multiple of :data:`MATMUL_ROW_MULTIPLE`
  computes zero rows up to the next one (its left operand padded; at most
  :data:`MAX_PADDED_ROWS` more), one whose columns are no multiple of :data:`CHANNEL_MULTIPLE`
  zero columns (its right operand padded; at most :data:`MAX_PADDED_COLUMNS` more, or to a
  multiple of :data:`VECTOR_CHANNELS` at most :data:`MAX_NARROW_COLUMNS` more), and a slice
  keeps the model's, which TVM fuses into the matmul's kernel; a weight's padding runs at load
  time, a computed operand's in the kernel that computes it. The matmul template
  (:mod:`tvm_partition.build.templates`) takes register tiles of 4 rows and whole vectors of
  columns and nothing else, and a replayed record's tiles shrink to what divides the extents:
  ViT-B/16's 197 tokens (196 patches and the class token) ran its MLP matmuls on a replayed
  record, 168 and 110 ms a call (0.93 GFLOP each), the model 7.8x onnxruntime's time
  (torchvision export, 2 Zen 3 threads); its attention scores (12 x 197 x 64 by 64 x 197)
  9.6 ms a call at 197 columns, 0.72 at 208 (2 Zen 4 threads); the model 0.53x with the columns
  padded too (2026-11-30).
* :func:`clip_takes`: a ``take`` (a Gather, an embedding) of mode ``fast`` reads out of bounds
  where an index is (no check), and TOPI says so at every build: a C++ warning "Fast mode
  segfaults when there are out-of-bounds indices" for each such kernel, 18 lines in one
  ``bench --quick`` (BERT-tiny's embeddings). Mode ``clip`` clamps each index into range: no
  warning, and a bad token id reads the last row instead of memory past the table; a min and a
  max per index, nothing beside a row's copy.
* :func:`roots_for_powers`: ``x ** c`` for a constant ``c`` of whole quarters (LRN's ``0.75``, a
  variance's ``2``, ``0.5``) becomes products of ``x``, ``sqrt(x)`` and ``sqrt(sqrt(x))``: TVM
  lowers ``power`` to a call of libm's scalar ``powf`` per element, which no loop vectorises;
  ``sqrt`` is one vector instruction. ZFNet-512's two LRNs (``x / (1 + a * avg(x^2)) ** 0.75``)
  spent 2.8 and 0.55 ms of the model's 41 in their ``powf`` kernels (``run --kernels``,
  amd-epyc-znver4-2c, 2026-11-27). Run before the constants become weights
  (:func:`tvm_partition.frontend.lift_constants`): the exponent is read here.
"""

from __future__ import annotations

import tvm
from tvm import relax

from ..ir.relax_utils import Constant, calls_op, matmul_row_axis, rewrite_functions
from ..ir.split_rules import static_shape

#: Input channels a group needs for :func:`ungroup_convolutions` to take its convolution apart:
#: one more than ``tvm_partition.build.templates.grouped.MAX_GROUP_CHANNELS`` (a test keeps them in step).
MIN_UNGROUPED_CHANNELS = 33
#: Groups :func:`ungroup_convolutions` takes apart at most: measured with 2 (AlexNet) and 4
#: (ShuffleNet); each group adds two slices and a convolution to launch, and a ResNeXt- or
#: RegNet-like convolution of 32 groups was never measured.
MAX_UNGROUPED_GROUPS = 4
#: :func:`ungroup_convolutions` keeps a convolution whose groups' output channels fall short of a
#: multiple of :data:`CHANNEL_MULTIPLE` by at most this share of them one grouped convolution, each
#: group padded to that multiple, rather than one convolution per group. ShuffleNet's grouped 1x1s
#: (4 groups; 68 -> 68 channels a group padded to 80 at 14 x 14, 136 -> 144 at 7 x 7), each alone
#: as a one-convolution ONNX model (``benchmarks/grouped_convs.py``), paired 7 rounds against one
#: convolution per group (68 -> 72 and 136 channels: half-width vectors, four calls and a concat):
#: 0.70x and 0.52x (131 -> 91 us, 126 -> 66; 0.61x and 0.61x in a first run); the 34-channel groups
#: at 28 x 28 padded to 48 (41% more) 0.98x, to 40 (8-lane vectors) 1.16x, so 34 stays apart (the
#: 1x1 template takes its groups' pixels in whole vectors). ShuffleNet paired 0.77x (0.54-1.02; 0.72x
#: and 0.75x in earlier runs), as AVX2 code 0.89x (2 threads, intel-r-xeon-r-processor-emeraldrapids-2c,
#: 2026-12-01; BENCHMARKS.md, "Grouped convolutions padded to whole vectors a group").
MAX_GROUP_PADDED_SHARE = 1 / 4

#: :func:`pad_output_channels` pads a convolution's output channels to a multiple of this: the
#: float32 lanes of the widest vector the templates use (AVX-512; a multiple of AVX2's 8 too).
CHANNEL_MULTIPLE = 16
#: ... where the zero channels add at most this share of its output channels (1000 -> 1024, two
#: such vectors: 2.4%; 24 -> 32, ShuffleNet's, would add a third and is left alone).
MAX_PADDED_SHARE = 1 / 32
#: Output channels that are no multiple of this (an AVX2 vector's float32 lanes, half an AVX-512
#: vector's: the narrowest the direct-convolution template takes on either) are padded to the next
#: multiple of it...
VECTOR_CHANNELS = 8
#: ... where that adds at most this share (27 -> 32: 19%, 21 -> 24: 14%; an RGB output's 3 -> 8,
#: 167%, never measured, is left alone).
MAX_UNVECTORISED_SHARE = 1 / 2

#: :func:`pad_matmuls` pads a matmul's rows to a multiple of this: the register tile of
#: ``tvm_partition.build.templates.matmul.MATMUL_ROWS`` rows, which the matmul template needs (a test keeps
#: them in step)...
MATMUL_ROW_MULTIPLE = 4
#: ... where that adds at most this share of them, by a rank-2 right operand (the template's; others
#: at most :data:`MAX_PADDED_SHARE`: Swin-T's attention scores alone, a replayed record, ran 244 us
#: at 49 rows, 363 at 52): ConvNeXt-T's last stage, 7 x 7 pixels of 768
#: channels (49 rows, :mod:`tvm_partition.frontend.matmul_rows`), computes 52 (6% more) on 4-row tiles
#: rather than replay a record tuned at other shapes (4.4 ms a call, 52 GFLOP/s; 2 Zen 4 threads,
#: 2026-11-30); 7 -> 8 rows would add 14%.
MAX_PADDED_ROWS = 1 / 8
#: :func:`pad_matmuls` pads a matmul's columns to a multiple of :data:`CHANNEL_MULTIPLE` where that
#: adds at most this share of them: ViT-B/16's attention scores (12 x 197 x 64 by 64 x 197, both
#: computed) ran 9.6 ms a call on a replayed record at 197 columns, 1.24 at 200 (a multiple of 8),
#: 0.72 at 208 (of 16: 5.6% more work; amd-epyc-znver4-2c, 2026-11-30).
MAX_PADDED_COLUMNS = 1 / 8
#: ... or else to a multiple of :data:`VECTOR_CHANNELS` where that adds at most this share: Swin-T's
#: windows of 49 tokens made its attention scores (64 windows x 3 heads, 49 x 32 by 32 x 49, plus
#: the relative position bias) replay a record onto a 49-lane vector, 3.6 ms a call; at 56 columns
#: 0.28 (alone, ``benchmarks/template_ab.py``, amd-epyc-znver4-2c, 2026-11-30).
MAX_NARROW_COLUMNS = 1 / 4

_DROPOUT = tvm.ir.Op.get("relax.nn.dropout")
_MATMUL = tvm.ir.Op.get("relax.matmul")
_CONV1D = tvm.ir.Op.get("relax.nn.conv1d")
_CONV2D = tvm.ir.Op.get("relax.nn.conv2d")
_BATCH_NORM = tvm.ir.Op.get("relax.nn.batch_norm")


def _bound_call(mutator: relax.PyExprMutator, expr, op) -> relax.Call | None:
    """``expr`` if it is a call of ``op``, or the call of ``op`` that variable ``expr`` is bound to in
    what ``mutator`` emitted; else None."""
    value = mutator.lookup_binding(expr) if isinstance(expr, relax.Var) else expr
    return value if isinstance(value, relax.Call) and calls_op(value, op) else None


def conv2d_like(conv: relax.Call, data, weight, groups: int, padding=None, dilation=None):
    """A convolution with ``conv``'s strides, padding, dilation and layouts on ``data`` and ``weight``
    (its ``padding`` and ``dilation`` where given)."""
    a = conv.attrs
    return relax.op.nn.conv2d(data, weight, strides=a.strides, padding=a.padding if padding is None else padding,
                              dilation=a.dilation if dilation is None else dilation, groups=groups,
                              data_layout="NCHW", kernel_layout="OIHW", out_layout=a.out_layout, out_dtype=a.out_dtype)


@relax.expr_functor.mutator
class _Conv1dAs2d(relax.PyExprMutator):
    def visit_call_(self, call):
        call = super().visit_call_(call)
        if not calls_op(call, _CONV1D):
            return call
        a = call.attrs
        if a.data_layout != "NCW" or a.kernel_layout != "OIW" or a.out_layout not in ("", "NCW"):
            return call
        x, w = (self.builder_.emit(relax.op.expand_dims(v, 2)) for v in call.args)
        out = self.builder_.emit(relax.op.nn.conv2d(
            x, w, strides=[1, int(a.strides[0])], padding=[0, int(a.padding[0]), 0, int(a.padding[1])],
            dilation=[1, int(a.dilation[0])], groups=int(a.groups), data_layout="NCHW", kernel_layout="OIHW",
            out_dtype=a.out_dtype))
        return relax.op.squeeze(out, [2])


@relax.expr_functor.mutator
class _WithoutDropout(relax.PyExprMutator):
    def visit_tuple_getitem_(self, op):
        op = super().visit_tuple_getitem_(op)
        dropout = _bound_call(self, op.tuple_value, _DROPOUT)
        return dropout.args[0] if op.index == 0 and dropout is not None else op


def nchw_conv(call) -> tuple | None:
    """``(groups, data shape, weight shape)`` of an NCHW / OIHW convolution of static shapes, else None."""
    if not calls_op(call, _CONV2D):
        return None
    a = call.attrs
    xs, ws = static_shape(call.args[0]), static_shape(call.args[1])
    if a.data_layout != "NCHW" or a.kernel_layout != "OIHW" or xs is None or ws is None:
        return None
    return int(a.groups), xs, ws


@relax.expr_functor.mutator
class _Ungrouped(relax.PyExprMutator):
    def visit_call_(self, call):
        call = super().visit_call_(call)
        conv = nchw_conv(call)
        if conv is None or conv[0] < 2:
            return call
        groups, xs, ws = conv
        cin, cout = xs[1] // groups, ws[0] // groups
        if cin < MIN_UNGROUPED_CHANNELS or groups > MAX_UNGROUPED_GROUPS:
            return call
        x, w = call.args
        pad = _padding(cout, CHANNEL_MULTIPLE, MAX_GROUP_PADDED_SHARE)
        if pad:
            return self._padded_groups(call, groups, cout, pad)
        parts = []
        for g in range(groups):
            xg = self.builder_.emit(relax.op.strided_slice(x, [1], [g * cin], [(g + 1) * cin]))
            wg = self.builder_.emit(relax.op.strided_slice(w, [0], [g * cout], [(g + 1) * cout]))
            parts.append(self.builder_.emit(conv2d_like(call, xg, wg, groups=1)))
        return relax.op.concat(parts, axis=1)

    def _padded_groups(self, call, groups: int, cout: int, pad: int):
        """``call`` as one grouped convolution of ``cout + pad`` output channels a group (zero
        weights for the ``pad``), the model's ``cout`` a group kept by a slice of its output."""
        x, w = call.args
        emit = self.builder_.emit
        ws = static_shape(w)
        by_group = emit(relax.op.reshape(w, [groups, cout, *ws[1:]]))
        padded = emit(relax.op.nn.pad(by_group, pad_widths(len(ws) + 1, 1, pad)))
        out = emit(conv2d_like(call, x, emit(relax.op.reshape(padded, [groups * (cout + pad), *ws[1:]])), groups))
        n, _, h, wd = static_shape(out)
        kept = emit(relax.op.strided_slice(emit(relax.op.reshape(out, [n, groups, cout + pad, h, wd])), [2], [0], [cout]))
        return relax.op.reshape(kept, [n, groups * cout, h, wd])


@relax.expr_functor.mutator
class _Padded(relax.PyExprMutator):
    def visit_call_(self, call):
        call = super().visit_call_(call)
        conv = nchw_conv(call)
        if conv is None or conv[0] != 1:
            return call
        cout = conv[2][0]
        pad = 0 if cout % CHANNEL_MULTIPLE == 0 else _padding(cout, 2 * CHANNEL_MULTIPLE, MAX_PADDED_SHARE) \
            or _padding(cout, CHANNEL_MULTIPLE, MAX_PADDED_SHARE) or _padding(cout, VECTOR_CHANNELS, MAX_UNVECTORISED_SHARE)
        if pad == 0:
            return call
        x, w = call.args
        padded = self.builder_.emit(relax.op.nn.pad(w, pad_widths(4, 0, pad)))
        out = self.builder_.emit(conv2d_like(call, x, padded, groups=1))
        return relax.op.strided_slice(out, [1], [0], [cout])


def _padding(extent: int, multiple: int, share: float) -> int:
    """Elements that take ``extent`` to the next multiple of ``multiple``; 0 where that adds more
    than ``share`` of it."""
    pad = -extent % multiple
    return pad if pad <= share * extent else 0


@relax.expr_functor.mutator
class _PaddedMatmul(relax.PyExprMutator):
    def visit_call_(self, call):
        call = super().visit_call_(call)
        if not calls_op(call, _MATMUL):
            return call
        x, w = call.args
        xs, ws, out = static_shape(x), static_shape(w), static_shape(call)
        if xs is None or ws is None or out is None or len(xs) < 2 or len(ws) < 2:
            return call
        axis = matmul_row_axis(xs, len(ws) == 2)
        rows, cols = xs[axis], ws[-1]
        share = MAX_PADDED_ROWS if len(ws) == 2 else MAX_PADDED_SHARE  # by a weight: to take the template
        pad_rows = _padding(rows, MATMUL_ROW_MULTIPLE, share) if rows > 1 else 0
        pad_cols = _padding(cols, CHANNEL_MULTIPLE, MAX_PADDED_COLUMNS) or _padding(cols, VECTOR_CHANNELS, MAX_NARROW_COLUMNS)
        if not (pad_rows or pad_cols):
            return call
        if pad_rows:
            x = self.builder_.emit(relax.op.nn.pad(x, pad_widths(len(xs), axis, pad_rows)))
        if pad_cols:
            w = self.builder_.emit(relax.op.nn.pad(w, pad_widths(len(ws), len(ws) - 1, pad_cols)))
        padded = self.builder_.emit(relax.op.matmul(x, w, out_dtype=call.attrs.out_dtype))
        axes = [axis + len(out) - len(xs), len(out) - 1]
        return relax.op.strided_slice(padded, axes, [0, 0], [rows, cols])


def pad_widths(rank: int, axis: int, pad: int) -> list[int]:
    """``relax.op.nn.pad``'s widths that add ``pad`` elements at the end of ``axis``."""
    widths = [0] * (2 * rank)
    widths[2 * axis + 1] = pad
    return widths


def _uses(func: relax.Function) -> dict:
    """``{var: number of uses}`` in ``func``."""
    counts: dict = {}

    def visit(expr):
        if isinstance(expr, relax.Var):
            counts[expr] = counts.get(expr, 0) + 1

    relax.analysis.post_order_visit(func.body, visit)
    return counts


@relax.expr_functor.mutator
class _Folded(relax.PyExprMutator):
    """``batch_norm(conv2d(x, W))[0]`` -> ``conv2d(x, W * s) + (beta - mean * s)``, with
    ``s = gamma / sqrt(var + eps)`` per output channel, where the convolution's output is used by
    the batch norm alone."""

    def __init__(self, mod, func):
        super().__init__(mod)
        self.uses = _uses(func)

    def visit_tuple_getitem_(self, op):
        op = super().visit_tuple_getitem_(op)
        bn = _bound_call(self, op.tuple_value, _BATCH_NORM)
        if op.index != 0 or bn is None or int(bn.attrs.axis) != 1:
            return op
        data = bn.args[0]
        conv = _bound_call(self, data, _CONV2D)
        found = nchw_conv(conv) if conv is not None and self.uses.get(data, 0) == 1 else None
        if found is None:
            return op
        groups, _, shape = found
        c = shape[0]
        emit = self.builder_.emit
        scale, bias = batch_norm_affine(bn, c, emit)
        weight = emit(relax.op.multiply(conv.args[1], relax.op.reshape(scale, [c, 1, 1, 1])))
        out = emit(conv2d_like(conv, conv.args[0], weight, groups=groups))
        return relax.op.add(out, bias)


def batch_norm_affine(bn: relax.Call, channels: int, emit) -> tuple[relax.Expr, relax.Expr]:
    """An inference batch norm ``bn`` over axis 1 as ``x * scale + bias``: ``scale = gamma /
    sqrt(var + eps)`` (``channels`` values), ``bias = beta - mean * scale`` shaped ``(1, C, 1, 1)``,
    each emitted by ``emit``; its epsilon in the statistics' precision."""
    gamma, beta, mean, var = bn.args[1:5]
    eps = relax.const(float(bn.attrs.epsilon), var.ty.dtype)
    scale = emit(relax.op.divide(gamma if bn.attrs.scale else relax.op.ones_like(var),
                                 relax.op.sqrt(relax.op.add(var, eps))))
    shift = relax.op.negative(relax.op.multiply(mean, scale))
    return scale, emit(relax.op.reshape(relax.op.add(beta, shift) if bn.attrs.center else shift, [1, channels, 1, 1]))


#: Exponents :func:`roots_for_powers` rewrites: whole quarters up to this magnitude.
MAX_ROOT_POWER = 4.0
_POWER = tvm.ir.Op.get("relax.power")


def quarter_power(x: relax.Expr, p: float) -> relax.Expr:
    """``x ** p`` for ``p`` a nonzero whole number of quarters, as products of ``x``, ``sqrt(x)``
    and ``sqrt(sqrt(x))`` (``1 / that`` for a negative ``p``)."""
    whole, quarters = divmod(round(abs(p) * 4), 4)
    factors = [x] * whole
    if quarters:
        root = relax.op.sqrt(x)
        factors += {1: [relax.op.sqrt(root)], 2: [root], 3: [root, relax.op.sqrt(root)]}[quarters]
    out = factors[0]
    for f in factors[1:]:
        out = relax.op.multiply(out, f)
    return relax.op.divide(relax.const(1.0, "float32"), out) if p < 0 else out


def _root_exponent(call: relax.Call) -> float | None:
    """The exponent of a float32 ``power`` :func:`quarter_power` writes out, else None."""
    x, c = call.args
    if not isinstance(c, Constant) or c.value.dtype != "float32" or x.ty.dtype != "float32":
        return None
    values = c.value.numpy()
    if values.size != 1 or values.ndim > len(x.ty.shape):  # a wider exponent broadcasts x to its rank
        return None
    values = values.reshape(-1)
    p = float(values[0])
    return p if p != 0 and abs(p) <= MAX_ROOT_POWER and (p * 4).is_integer() else None


@relax.expr_functor.mutator
class _Rooted(relax.PyExprMutator):
    def visit_call_(self, call):
        call = super().visit_call_(call)
        if not call.op.same_as(_POWER):
            return call
        p = _root_exponent(call)
        return call if p is None else quarter_power(call.args[0], p)


@tvm.transform.module_pass(opt_level=0, name="Conv1dAsConv2d")
def conv1d_as_conv2d(mod: tvm.IRModule, _ctx) -> tvm.IRModule:
    """Every ``NCW`` / ``OIW`` ``conv1d`` as a ``conv2d`` over one row (module docstring)."""
    return rewrite_functions(mod, lambda mod, _func: _Conv1dAs2d(mod))


@tvm.transform.module_pass(opt_level=0, name="RootsForPowers")
def roots_for_powers(mod: tvm.IRModule, _ctx) -> tvm.IRModule:
    """Every float32 ``power`` of a constant exponent of whole quarters (at most
    :data:`MAX_ROOT_POWER`) as products of roots (:func:`quarter_power`)."""
    return rewrite_functions(mod, lambda mod, _func: _Rooted(mod))


_TAKE = tvm.ir.Op.get("relax.take")


@relax.expr_functor.mutator
class _ClippedTakes(relax.PyExprMutator):
    def visit_call_(self, call):
        call = super().visit_call_(call)
        if calls_op(call, _TAKE) and call.attrs.mode == "fast":
            axis = call.attrs.axis
            return relax.op.take(call.args[0], call.args[1], None if axis is None else int(axis), mode="clip")
        return call


@tvm.transform.module_pass(opt_level=0, name="ClipTakes")
def clip_takes(mod: tvm.IRModule, _ctx) -> tvm.IRModule:
    """Every ``take`` of mode ``fast`` (TVM's default, and what its ONNX importer emits for a
    Gather) as mode ``clip``."""
    return rewrite_functions(mod, lambda mod, _func: _ClippedTakes(mod))


@tvm.transform.module_pass(opt_level=0, name="RemoveDropout")
def remove_dropout(mod: tvm.IRModule, _ctx) -> tvm.IRModule:
    """Every dropout's output replaced by its input (one whose mask is used stays;
    ``DeadCodeElimination`` drops the others)."""
    return rewrite_functions(mod, lambda mod, _func: _WithoutDropout(mod))


@tvm.transform.module_pass(opt_level=0, name="FoldBatchNorms")
def fold_batch_norms(mod: tvm.IRModule, _ctx) -> tvm.IRModule:
    """Every batch norm of a convolution's output (the only use of it) folded into the
    convolution's weights and a bias; run before ``DecomposeOpsForInference``."""
    return rewrite_functions(mod, _Folded)


@tvm.transform.module_pass(opt_level=0, name="UngroupConvolutions")
def ungroup_convolutions(mod: tvm.IRModule, _ctx) -> tvm.IRModule:
    """Every NCHW grouped convolution of at most :data:`MAX_UNGROUPED_GROUPS` groups with at least
    :data:`MIN_UNGROUPED_CHANNELS` input channels a group as one convolution per group, concatenated,
    or, where its groups' output channels reach whole vectors with at most
    :data:`MAX_GROUP_PADDED_SHARE` more, as one grouped convolution of groups padded to them."""
    return rewrite_functions(mod, lambda mod, _func: _Ungrouped(mod))


@tvm.transform.module_pass(opt_level=0, name="PadMatmuls")
def pad_matmuls(mod: tvm.IRModule, _ctx) -> tvm.IRModule:
    """Every matmul of static shapes whose rows fall short of a multiple of
    :data:`MATMUL_ROW_MULTIPLE` by at most :data:`MAX_PADDED_ROWS` of them (:data:`MAX_PADDED_SHARE`
    where the right operand is not of rank 2) computes zero rows too
    (its left operand padded), and whose columns fall short of a multiple of
    :data:`CHANNEL_MULTIPLE` by at most :data:`MAX_PADDED_COLUMNS` zero columns (its right operand
    padded; or of :data:`VECTOR_CHANNELS` by at most :data:`MAX_NARROW_COLUMNS`), sliced off after it."""
    return rewrite_functions(mod, lambda mod, _func: _PaddedMatmul(mod))


@tvm.transform.module_pass(opt_level=0, name="PadOutputChannels")
def pad_output_channels(mod: tvm.IRModule, _ctx) -> tvm.IRModule:
    """Every NCHW convolution of one group whose output channels fall short of a multiple of
    :data:`CHANNEL_MULTIPLE` (of twice it, where that is within the share) by at most
    :data:`MAX_PADDED_SHARE` of them, or of a multiple of
    :data:`VECTOR_CHANNELS` by at most :data:`MAX_UNVECTORISED_SHARE`, computes the zero channels
    too, sliced off after it; run after :func:`fold_batch_norms` (it reads the convolution's own
    output)."""
    return rewrite_functions(mod, lambda mod, _func: _Padded(mod))
