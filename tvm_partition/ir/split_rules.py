"""Split legality: how one Relax operator is computed on a slice of its output.

A *region* ``Region(axis, lo, hi)`` is the slice ``[lo, hi)`` of one axis of a tensor. Given the
region of an op's output that one device must produce, a rule says which region of every
tensor operand that device needs (``None`` = the whole operand, e.g. the weight of a batch
split) and, where the op's attributes depend on the region, how to rebuild the call (conv2d
padding at a cut, a reshape's target shape). A request the op cannot honour raises
:class:`IllegalSplit` with the reason (softmax along its reduced axis, layer norm along a
normalised axis, ...).

The dimensions follow EOP (Sec. 2.3): *batch* (axis 0 of batch-parallel ops), *HW* (spatial H/W
of conv2d and pooling, with halo rows and the padding re-derived at every cut) and *HW1W2*
(M or N of a matmul). Output features/channels of dense/matmul/conv2d slice the weight, so no
device receives the whole weight it does not need.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Callable

import tvm
from tvm import relax

from ..errors import TvmPartitionError


class IllegalSplit(TvmPartitionError, ValueError):
    """The op cannot be computed on the requested slice; ``str(e)`` says why."""


class MisalignedCut(IllegalSplit):
    """The cut falls inside a unit the op cannot divide (a group of a grouped convolution, a row
    of a merged reshape axis): cuts at multiples of ``granule`` are legal."""

    def __init__(self, message: str, granule: int):
        super().__init__(message)
        self.granule = granule


@dataclasses.dataclass(frozen=True)
class Region:
    """``[lo, hi)`` along ``axis`` of a tensor."""

    axis: int
    lo: int
    hi: int

    @property
    def size(self) -> int:
        return self.hi - self.lo

    def covers(self, other: "Region") -> bool:
        """Whether ``other`` lies within this region (the same axis)."""
        return self.axis == other.axis and self.lo <= other.lo and other.hi <= self.hi


#: TVM's ``kAllocAlignment`` (bytes): ``vm.builtin.ensure_zero_offset`` turns a view at a multiple
#: of it into a tensor by moving the data pointer (CPU and CUDA), at any other offset it copies;
#: and every allocation, so every kernel argument, starts at a multiple of it.
VIEW_ALIGNMENT = 64


def view_offset(shape, dtype: str, region: Region) -> int | None:
    """The byte offset of ``region`` of a tensor of ``shape`` and ``dtype`` where the region is one
    block of memory (every axis before the cut has extent 1) starting at a multiple of
    :data:`VIEW_ALIGNMENT`: a view of the tensor (``R.memory.view``), which launches no kernel.
    None where it must be sliced. Why: FuseOps fuses no slice into a matmul or a convolution
    reading it, so each slice was a kernel copying its rows: BERT-tiny's output matmul split at
    its sequence axis ran 4 slice kernels, 194 us of 1.58 ms (``run --kernels``,
    amd-epyc-znver4-2c, 2026-11-27; BENCHMARKS.md, "Rows of a tensor as views")."""
    bits = tvm.runtime.DataType(dtype).bits
    if bits % 8 or math.prod(shape[: region.axis]) != 1:
        return None
    offset = region.lo * math.prod(shape[region.axis + 1:]) * (bits // 8)
    return offset if offset % VIEW_ALIGNMENT == 0 else None


Rebuild = Callable[[list], relax.Expr]


@dataclasses.dataclass
class RuleResult:
    operand_regions: list  # Region | None per tensor operand
    rebuild: Rebuild | None = None  # None: same op and attrs on the new operands
    granule: int = 1  # region boundaries must be multiples of this


# ----------------------------------------------------------------------------- helpers
def shape_of(expr) -> tuple[int, ...]:
    """Static shape of a tensor-typed expr; dynamic shapes are refused."""
    ty = expr.ty
    if not isinstance(ty, relax.TensorType) or ty.shape is None:
        raise IllegalSplit(f"{_short(expr)} has no static tensor shape")
    try:
        return tuple(int(v) for v in ty.shape.values)
    except (TypeError, ValueError, AttributeError):
        raise IllegalSplit(f"{_short(expr)} has a dynamic shape {ty.shape}") from None


def static_shape(expr) -> tuple[int, ...] | None:
    """:func:`shape_of` ``expr``, or None where it has no static tensor shape."""
    try:
        return shape_of(expr)
    except IllegalSplit:
        return None


def _short(expr) -> str:
    name = getattr(expr, "name", None)
    return f"'{name}'" if name else type(expr).__name__


def is_tensor(expr) -> bool:
    return isinstance(getattr(expr, "ty", None), relax.TensorType)


def tensor_operands(call: relax.Call) -> list:
    """Tensor operands of a call, tuples flattened, in argument order."""
    out = []
    for a in call.args:
        if isinstance(a, relax.Tuple):
            out.extend(f for f in a.fields if is_tensor(f))
        elif is_tensor(a):
            out.append(a)
    return out


def substitute_operands(call: relax.Call, new_operands: list) -> relax.Call:
    """The same call with its tensor operands replaced, in :func:`tensor_operands` order."""
    it = iter(new_operands)
    args = []
    for a in call.args:
        if isinstance(a, relax.Tuple):
            args.append(relax.Tuple([next(it) if is_tensor(f) else f for f in a.fields]))
        elif is_tensor(a):
            args.append(next(it))
        else:
            args.append(a)
    return relax.Call(call.op, args, call.attrs, call.ty_args)


def _norm_axis(axis: int, ndim: int) -> int:
    return axis + ndim if axis < 0 else axis


def _ints(v) -> list[int]:
    return [int(x) for x in v] if v is not None else []


def _broadcast_region(operand_shape, out_ndim, region: Region):
    """Region of a right-aligned broadcast operand (None where it is broadcast along the axis)."""
    ax = region.axis - (out_ndim - len(operand_shape))
    if ax < 0 or operand_shape[ax] == 1:
        return None
    return Region(ax, region.lo, region.hi)


# ----------------------------------------------------------------------------- rules
RULES: dict[str, Callable] = {}


def rule(*names):
    def deco(fn):
        for n in names:
            RULES["relax." + n] = fn
        return fn

    return deco


ELEMENTWISE = (
    "abs acos asin atan ceil clip cos cosh erf exp floor log negative round rsqrt sigmoid sign sin sinh "
    "sqrt square tan tanh astype nn.relu nn.gelu nn.gelu_tanh nn.silu nn.leakyrelu nn.softplus "
    "nn.dropout isnan isinf isfinite logical_not bitwise_not trunc"
).split()
BROADCAST = (
    "add subtract multiply divide floor_divide power maximum minimum mod floor_mod equal not_equal less "
    "less_equal greater greater_equal logical_and logical_or bitwise_and bitwise_or where"
).split()


@rule(*ELEMENTWISE, *BROADCAST)
def _elementwise(call, out_shape, region):
    return RuleResult([_broadcast_region(shape_of(o), len(out_shape), region) for o in tensor_operands(call)])


@rule("nn.prelu")
def _prelu(call, out_shape, region):
    # the slope is one value per index of ``axis``, not broadcast from the right: a cut along that
    # axis slices it (a 1x8x16x16 PReLU split on its channels kept all 8 slopes, which TOPI refused)
    x, slope = tensor_operands(call)
    axis = _norm_axis(int(call.attrs.axis), len(out_shape))
    along = region.axis == axis and shape_of(slope)[0] != 1
    return RuleResult([region, Region(0, region.lo, region.hi) if along else None])


@rule("matmul")
def _matmul(call, out_shape, region):
    a, b = tensor_operands(call)
    sa, sb = shape_of(a), shape_of(b)
    if len(sa) < 2 or len(sb) < 2:
        raise IllegalSplit("matmul with a 1-D operand is not split")
    n = len(out_shape)
    if region.axis == n - 1:  # N: slice the right operand's columns (the weight of a dense layer)
        return RuleResult([None, Region(len(sb) - 1, region.lo, region.hi)])
    if region.axis == n - 2:  # M: slice the left operand's rows
        return RuleResult([Region(len(sa) - 2, region.lo, region.hi), None])
    return RuleResult([_broadcast_region(sa[:-2], n - 2, region), _broadcast_region(sb[:-2], n - 2, region)])


def _halo(region: Region, extent: int, kernel: int, stride: int, dilation: int, pad_lo: int):
    """Input rows a window op needs for output rows [lo, hi), and the padding at the cut."""
    start = region.lo * stride - pad_lo
    end = (region.hi - 1) * stride - pad_lo + (kernel - 1) * dilation + 1
    in_lo, in_hi = max(0, start), min(extent, end)
    return in_lo, in_hi, in_lo - start, end - in_hi


def _window_region(call, data_shape, region, kernel, strides, dilation, padding, what, out_extent):
    """Shared H/W logic of conv2d and pool2d in NCHW: returns (data region, new padding).

    Refused where the padding is wider than the window reaches (a 1x1 convolution padded by 2):
    the first or last output rows then read padding alone, and a part made of them has no input
    row to slice (it came out with the wrong number of rows: hypothesis, conv2d k=1 pad=2)."""
    k = region.axis - 2
    reach = (kernel[k] - 1) * dilation[k] + 1
    if reach <= padding[k] or (out_extent - 1) * strides[k] - padding[k] >= data_shape[region.axis]:
        raise IllegalSplit(f"{what}: its padding is wider than its window, so edge rows read padding alone")
    in_lo, in_hi, p_lo, p_hi = _halo(region, data_shape[region.axis], kernel[k], strides[k], dilation[k], padding[k])
    new_pad = list(padding)
    new_pad[k], new_pad[k + 2] = p_lo, p_hi
    return Region(region.axis, in_lo, in_hi), new_pad


@rule("nn.conv2d")
def _conv2d(call, out_shape, region):
    at = call.attrs
    if at.data_layout != "NCHW" or at.kernel_layout != "OIHW" or (at.out_layout or "NCHW") != "NCHW":
        if region.axis != 0:
            raise IllegalSplit(f"conv2d in layout {at.data_layout}/{at.kernel_layout}: only the batch axis is split")
    data, weight = tensor_operands(call)
    ds, ws = shape_of(data), shape_of(weight)
    groups = int(at.groups)
    if region.axis == 0:
        return RuleResult([region, None])
    if region.axis == 1:  # output channels: slice the weight (and the data channels of grouped convs)
        if groups == 1:
            return RuleResult([None, Region(0, region.lo, region.hi)])
        out_per_group, in_per_group = ws[0] // groups, ds[1] // groups
        if region.lo % out_per_group or region.hi % out_per_group:
            raise MisalignedCut(f"grouped conv2d: channel cut must be a multiple of {out_per_group}", out_per_group)
        g_lo, g_hi = region.lo // out_per_group, region.hi // out_per_group
        new_groups = g_hi - g_lo

        def rebuild(ops, at=at, new_groups=new_groups):
            return _conv2d_call(ops, at, groups=new_groups)

        return RuleResult(
            [Region(1, g_lo * in_per_group, g_hi * in_per_group), Region(0, region.lo, region.hi)],
            rebuild,
            granule=out_per_group,
        )
    # spatial H (axis 2) or W (axis 3): halo rows, padding re-derived at the cut
    data_region, new_pad = _window_region(
        call, ds, region, ws[2:], _ints(at.strides), _ints(at.dilation), _ints(at.padding), "conv2d",
        out_shape[region.axis],
    )

    def rebuild(ops, at=at, new_pad=new_pad):
        return _conv2d_call(ops, at, padding=new_pad)

    return RuleResult([data_region, None], rebuild)


def _conv2d_call(ops, at, **override):
    kw = dict(
        strides=_ints(at.strides), padding=_ints(at.padding), dilation=_ints(at.dilation), groups=int(at.groups),
        data_layout=at.data_layout, kernel_layout=at.kernel_layout, out_layout=at.out_layout,
        out_dtype=at.out_dtype,
    )
    kw.update(override)
    return relax.op.nn.conv2d(ops[0], ops[1], **kw)


@rule("nn.max_pool2d", "nn.avg_pool2d")
def _pool2d(call, out_shape, region):
    at = call.attrs
    if at.layout != "NCHW" and region.axis != 0:
        raise IllegalSplit(f"pool2d in layout {at.layout}: only the batch axis is split")
    if region.axis in (0, 1):
        return RuleResult([region])
    if at.ceil_mode:
        raise IllegalSplit("pool2d with ceil_mode is not split along H/W")
    (data,) = tensor_operands(call)
    data_region, new_pad = _window_region(
        call, shape_of(data), region, _ints(at.pool_size), _ints(at.strides), _ints(at.dilation),
        _ints(at.padding), "pool2d", out_shape[region.axis],
    )
    fn = relax.op.nn.max_pool2d if call.op.name == "relax.nn.max_pool2d" else relax.op.nn.avg_pool2d

    def rebuild(ops, at=at, new_pad=new_pad, fn=fn):
        return fn(ops[0], pool_size=_ints(at.pool_size), strides=_ints(at.strides), padding=new_pad,
                  dilation=_ints(at.dilation), ceil_mode=bool(at.ceil_mode),
                  count_include_pad=bool(at.count_include_pad), layout=at.layout, out_layout=at.out_layout)

    return RuleResult([data_region], rebuild)


@rule("nn.adaptive_avg_pool2d")
def _adaptive_pool(call, out_shape, region):
    if call.attrs.layout != "NCHW" or region.axis not in (0, 1):
        raise IllegalSplit("adaptive pooling is split only along batch and channels")
    return RuleResult([region])


@rule("sum", "mean", "max", "min", "prod", "variance", "std")
def _reduce(call, out_shape, region):
    (data,) = tensor_operands(call)
    ndim = len(shape_of(data))
    axes = _ints(call.attrs.axis) if call.attrs.axis is not None else list(range(ndim))
    axes = {_norm_axis(a, ndim) for a in axes}
    if call.attrs.keepdims:
        in_axis = region.axis
    else:
        kept = [i for i in range(ndim) if i not in axes]
        in_axis = kept[region.axis]
    if in_axis in axes:
        raise IllegalSplit(f"{call.op.name[6:]} reduces along axis {in_axis}")
    return RuleResult([Region(in_axis, region.lo, region.hi)])


@rule("nn.softmax", "nn.log_softmax")
def _softmax(call, out_shape, region):
    if _norm_axis(int(call.attrs.axis), len(out_shape)) == region.axis:
        raise IllegalSplit(f"{call.op.name[6:]} normalises along axis {region.axis}")
    return RuleResult([region])


@rule("nn.layer_norm", "nn.rms_norm")
def _layer_norm(call, out_shape, region):
    axes = {_norm_axis(a, len(out_shape)) for a in _ints(call.attrs.axes)}
    if region.axis in axes:
        raise IllegalSplit(f"{call.op.name[6:]} normalises along axis {region.axis}")
    ops = tensor_operands(call)
    return RuleResult([region] + [None] * (len(ops) - 1))


@rule("permute_dims")
def _permute(call, out_shape, region):
    axes = _ints(call.attrs.axes) or list(reversed(range(len(out_shape))))
    return RuleResult([Region(axes[region.axis], region.lo, region.hi)])


def _reshape_region(in_shape, out_shape, region):
    """Region of the reshape input that yields ``region`` of its output, and the granule."""
    a = region.axis
    prefix = math.prod(out_shape[:a])
    for b in range(len(in_shape)):
        if math.prod(in_shape[:b]) != prefix or in_shape[b] == 1 and out_shape[a] != 1:
            continue
        if in_shape[b] == out_shape[a]:
            return Region(b, region.lo, region.hi), 1
        # input axis b merges output axes a, a+1, ..., : rows scale by the merged inner size
        for j in range(a + 1, len(out_shape) + 1):
            inner = math.prod(out_shape[a + 1 : j])
            if in_shape[b] == out_shape[a] * inner:
                return Region(b, region.lo * inner, region.hi * inner), 1
        # output axis a merges input axes b, b+1, ...: only whole input rows
        for j in range(b + 1, len(in_shape) + 1):
            inner = math.prod(in_shape[b + 1 : j])
            if out_shape[a] == in_shape[b] * inner and inner > 1:
                if region.lo % inner or region.hi % inner:
                    raise MisalignedCut(f"reshape: cut must be a multiple of {inner}", inner)
                return Region(b, region.lo // inner, region.hi // inner), inner
    raise IllegalSplit(f"reshape {list(in_shape)} -> {list(out_shape)} mixes axis {a} with the axes before it")


@rule("reshape")
def _reshape(call, out_shape, region):
    (data,) = tensor_operands(call)
    in_region, granule = _reshape_region(shape_of(data), out_shape, region)
    new_shape = list(out_shape)
    new_shape[region.axis] = region.size

    def rebuild(ops, new_shape=new_shape):
        return relax.op.reshape(ops[0], new_shape)

    return RuleResult([in_region], rebuild, granule)


@rule("expand_dims", "squeeze")
def _expand_squeeze(call, out_shape, region):
    (data,) = tensor_operands(call)
    in_region, granule = _reshape_region(shape_of(data), out_shape, region)
    return RuleResult([in_region], None, granule)


@rule("broadcast_to")
def _broadcast_to(call, out_shape, region):
    (data,) = tensor_operands(call)
    new_shape = list(out_shape)
    new_shape[region.axis] = region.size

    def rebuild(ops, new_shape=new_shape):
        return relax.op.broadcast_to(ops[0], new_shape)

    return RuleResult([_broadcast_region(shape_of(data), len(out_shape), region)], rebuild)


@rule("concat")
def _concat(call, out_shape, region):
    ops = tensor_operands(call)
    axis = _norm_axis(int(call.attrs.axis), len(out_shape))
    if axis == region.axis:
        raise IllegalSplit(f"concat joins along axis {axis}")
    return RuleResult([region] * len(ops))


#: Elements past a prefix slice's end that the part ending it computes too (:func:`_strided_slice`):
#: fewer than a 16-lane vector, the most :mod:`tvm_partition.frontend.inference` pads an axis by.
MAX_PADDED_TAIL = 16


def slice_args(call) -> tuple[list[int], list[int], list[int], list[int]]:
    """``(axes, begins, ends, strides)`` of a ``strided_slice`` call, its axes counted from the
    front; :class:`IllegalSplit` where they are not constants."""
    ndim = len(shape_of(tensor_operands(call)[0]))
    try:
        axes = [_norm_axis(int(f.value), ndim) for f in call.args[1].fields]
        begins = [int(f.value) for f in call.args[2].fields]
        ends = [int(f.value) for f in call.args[3].fields]
        strides = [int(f.value) for f in call.args[4].fields] if len(call.args) > 4 else [1] * len(axes)
    except (AttributeError, TypeError, ValueError):
        raise IllegalSplit("strided_slice with non-constant axes") from None
    return axes, begins, ends, strides


def sliced_block(call) -> Region | None:
    """The block of its input a ``strided_slice`` call copies, where it is one: a Region of the
    one axis it cuts, with stride 1; None where it cuts several axes or none, or strides."""
    shape, out = shape_of(tensor_operands(call)[0]), shape_of(call)
    axes, begins, _, strides = slice_args(call)
    cut = [a for a in range(len(shape)) if shape[a] != out[a]]
    if len(cut) != 1 or any(s != 1 for s in strides):
        return None
    a = cut[0]
    start = 0
    if a in axes:
        b = begins[axes.index(a)]
        start = b + shape[a] if b < 0 else b
    return Region(a, start, start + out[a])


@rule("strided_slice")
def _strided_slice(call, out_shape, region):
    """Cut along an axis it does not slice, or along one it slices with stride 1 (a padded matmul's or
    convolution's zero rows sliced off, :mod:`tvm_partition.frontend.inference`): the part reads the
    same region shifted by the slice's start and keeps its first ``region.size`` elements."""
    shape = shape_of(tensor_operands(call)[0])
    axes, begins, ends, strides = slice_args(call)
    if region.axis not in axes:
        return RuleResult([region])
    i = axes.index(region.axis)
    if strides[i] != 1:
        raise IllegalSplit(f"strided_slice strides axis {region.axis}")
    start = begins[i] + shape[region.axis] if begins[i] < 0 else begins[i]
    # the part that ends the slice computes the rest of a padded axis too, dropped after: its rows
    # stay whole register tiles (a padded matmul's 52 rows cut 24 | 25 compute 24 | 28); a slice
    # that drops more than padding (a model's own x[:, :100] of 1,000) is read as it is
    tail = shape[region.axis] - (start + region.hi)
    end = shape[region.axis] if region.hi == out_shape[region.axis] and start == 0 and tail < MAX_PADDED_TAIL else start + region.hi

    def rebuild(ops, i=i, size=region.size):
        whole = list(ends)
        whole[i] = size
        return relax.op.strided_slice(ops[0], axes, [0 if j == i else b for j, b in enumerate(begins)], whole,
                                      strides, assume_inbound=True)

    return RuleResult([Region(region.axis, start + region.lo, end)], rebuild)


@rule("split")
def _split(call, out_shape, region):
    """R.split returns a tuple; every part is cut along ``region`` (out_shape: the first part's)."""
    if _norm_axis(int(call.attrs.axis), len(out_shape)) == region.axis:
        raise IllegalSplit(f"split cuts along axis {region.axis}")
    return RuleResult([region])


@rule("nn.pad")
def _pad(call, out_shape, region):
    """A cut along an unpadded axis slices the input alike; along a padded one (a constant pad: the
    rows and columns :func:`tvm_partition.frontend.inference.pad_matmuls` adds to whole tiles) each
    part reads the input rows its output rows hold and pads the rest, at cuts that leave no part of
    padding alone (:func:`_pad_granule`). Why: fused with the kernel before it, a pad without a rule
    left the op no axis to split: DeiT-B's and CLIP's layer norms, matmuls and softmaxes into their
    rows padded 198 -> 200 and 50 -> 52 (32% of their FLOPs), wav2vec 2.0's (12%), ConvNeXt's,
    Swin's and FocalNet's (5-8%)."""
    (data,) = tensor_operands(call)
    extent = shape_of(data)[region.axis]
    widths = _ints(call.attrs.pad_width)
    before, after = widths[2 * region.axis], widths[2 * region.axis + 1]
    if not (before or after):
        return RuleResult([region])
    if call.attrs.pad_mode != "constant":
        raise IllegalSplit(f"pad in {call.attrs.pad_mode} mode reads other rows than it writes")
    granule = _pad_granule(extent, before, after)
    lo, hi = max(0, region.lo - before), min(extent, region.hi - before)
    if lo >= hi:
        raise MisalignedCut(f"pad: cuts at multiples of {granule} leave no part of padding alone", granule)
    new = list(widths)
    new[2 * region.axis], new[2 * region.axis + 1] = lo + before - region.lo, region.hi - before - hi

    def rebuild(ops, at=call.attrs, new=new):
        return relax.op.nn.pad(ops[0], new, at.pad_mode, float(at.pad_value))

    return RuleResult([Region(region.axis, lo, hi)], rebuild, granule)


def _pad_granule(extent: int, before: int, after: int) -> int:
    """The least granule whose cuts inside an axis padded ``before`` and ``after`` around
    ``extent`` elements all fall between its first and last input element: every part then reads
    one at least. Refused where no cut does."""
    total = before + extent + after
    for granule in range(1, total):
        if all(before < cut < before + extent for cut in range(granule, total, granule)):
            return granule
    raise IllegalSplit(f"pad: no cut of its {total} elements leaves each part an input element")


@rule("take")
def _take(call, out_shape, region):
    data, idx = tensor_operands(call)
    ds, ids = shape_of(data), shape_of(idx)
    axis = _norm_axis(int(call.attrs.axis) if call.attrs.axis is not None else 0, len(ds))
    a = region.axis
    if a < axis:
        return RuleResult([Region(a, region.lo, region.hi), None])
    if a < axis + len(ids):
        return RuleResult([None, Region(a - axis, region.lo, region.hi)])
    return RuleResult([Region(a - len(ids) + 1, region.lo, region.hi), None])


# ----------------------------------------------------------------------------- entry point
def split_call(call: relax.Call, out_shape, region: Region | None) -> RuleResult:
    """Operand regions for computing ``region`` of ``call``'s output (``None``: the whole output)."""
    ops = tensor_operands(call)
    if region is None:
        return RuleResult([None] * len(ops))
    name = call.op.name if isinstance(call.op, tvm.ir.Op) else str(call.op)
    fn = RULES.get(name)
    if fn is None:
        raise IllegalSplit(f"{name.removeprefix('relax.')} has no split rule")
    if not 0 <= region.axis < len(out_shape):
        raise IllegalSplit(f"axis {region.axis} is out of range for a {len(out_shape)}-D output")
    return fn(call, out_shape, region)
