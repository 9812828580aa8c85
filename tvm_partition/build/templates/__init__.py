"""Hand-written CPU schedules: direct convolutions and matmuls (weights packed once at load time),
softmax, layer norm, pooling, reductions and element-wise kernels (parallel).

Each template is a module of this package, its plan a frozen dataclass that a pure function reads off
the kernel (None where it does not apply) and its schedule a function of that plan; this module
tries them in order (:func:`templated`) and labels what it chose:

- :mod:`.convolution`: direct convolutions (vectors of output channels) and 1x1 convolutions (vectors of pixels);
- :mod:`.grouped`: grouped convolutions along their rows, depthwise ones along their channels;
- :mod:`.matmul`: matmuls with constant weights (packed), batched matmuls of computed operands;
  the integer ones are :mod:`tvm_partition.build.vnni`'s and :mod:`tvm_partition.build.amx`'s;
- :mod:`.reductions`: softmax, layer norm, reductions over the innermost axes, statistics of rows
  (instance and group norms, decomposed layer and RMS norms);
- :mod:`.pooling`: max and average pooling;
- :mod:`.elementwise`: element-wise kernels, concatenations among them;
- :mod:`.prefetch`: a chunked matmul's next chunk of packed weights, and a convolution's next block
  of output channels' weights, prefetched (statements a schedule cannot place);
- :mod:`.common`: what they share (vectors and registers of a target, a kernel's blocks, schedule steps).
"""

from __future__ import annotations

import tvm

from .. import amx, vnni
from . import common, convolution, elementwise, grouped, matmul, pooling, reductions


#: Labels of the kernels scheduled here (the manifest and ``--explain`` show them beside tuned,
#: transferred and default).
CONV_LABEL = "template (direct convolution, packed weights)"
ELEMENTWISE_LABEL = "template (element-wise, parallel and vectorised)"
#: An element-wise kernel too small for a parallel loop, its blocks inlined (:data:`.elementwise.MIN_ELEMENTS`).
INLINED_LABEL = "template (element-wise, inlined, serial)"
TRANSPOSE_LABEL = "template (transpose between NCHW and NHWC, tiles transposed in registers)"
GROUP_LABEL = "template (grouped convolution, vectorised along the rows)"
DEPTHWISE_LABEL = "template (depthwise convolution, vectorised along the channels)"
SOFTMAX_LABEL = "template (softmax, rows in parallel, vectorised reductions)"
LAYER_NORM_LABEL = "template (layer norm, rows in parallel, vectorised reductions)"
POOL_LABEL = "template (pooling, channels in parallel, padding per row)"
MATMUL_LABEL = "template (matmul, packed weights)"
BATCHED_MATMUL_LABEL = "template (matmul, operands read in place)"
#: :mod:`.vnni`'s: a uint8 x int8 product summed by ``vpdpbusd``
INTEGER_MATMUL_LABEL = "template (uint8 x int8 matmul, VNNI, packed weights)"
#: :mod:`.amx`'s: the same product summed in AMX tiles by ``tdpbusd``, where the CPU has them
INTEGER_TILES_LABEL = "template (uint8 x int8 matmul, AMX tiles, packed weights)"
#: The matmul template's labels: a record tuned here for the kernel can outrank it (see
#: :class:`tvm_partition.build.tuning.Schedules`), as for no other template
MATMUL_LABELS = (MATMUL_LABEL, BATCHED_MATMUL_LABEL)
POINTWISE_LABEL = "template (1x1 convolution, vectorised along the pixels)"
#: A matmul no record schedules (:func:`fallback`): the matmul template, any reduction and rows
FALLBACK_MATMUL_LABEL = "template (matmul, where no record applies)"
#: ... and a layer norm or a softmax under :data:`.common.MIN_MOVED_ELEMENTS` outputs
FALLBACK_LAYER_NORM_LABEL = "template (layer norm, where no record applies)"
FALLBACK_SOFTMAX_LABEL = "template (softmax, where no record applies)"
REDUCE_LABEL = "template (reduction over the innermost axes, vectorised partial results)"
#: :func:`.reductions._stats_plan`'s: instance and group norms as TVM's ONNX frontend writes them
STATS_LABEL = "template (statistics of rows and their use, rows in parallel, vectorised reductions)"
#: ... on rows under :data:`.reductions.STATS_MIN_ROW`, where no record applies
FALLBACK_STATS_LABEL = "template (statistics of rows, where no record applies)"


def applies(kmod: tvm.IRModule, target) -> bool:
    """Whether :func:`schedule` schedules this kernel (then no tuning record of it is used)."""
    return schedule(kmod, target) is not None


def label(kmod: tvm.IRModule, target) -> str | None:
    """The label of the template :func:`schedule` gives ``kmod``, None where none applies."""
    done = templated(kmod, target)
    return None if done is None else done[1]


def inner_tiles(kmod: tvm.IRModule, target) -> dict[int, int]:
    """``{spatial axis: innermost tile}`` of the schedule (as
    :func:`tvm_partition.build.transfer.innermost_tiles`): a convolution's output channels (axis 1)
    in whole vectors (its row tile fits any width: a divisor of it, or a tail tile), a 1x1's in
    tile's channels and its output rows (axis 2) in its tile's rows; a matmul's rows in
    its tile's (:data:`.matmul.MATMUL_ROWS`, :data:`.matmul.WIDE_MATMUL_ROWS`, its one row, or on :func:`fallback` a
    divisor of them) and its columns in whole tiles of vectors; none for an element-wise kernel
    (any cut keeps its loops: the outer ones parallel, the innermost LLVM's).
    Read of the kernel :func:`templated` schedules (its epilogue's operands inlined)."""
    kmod = common._epilogue_operands_inlined(kmod)
    pointwise = convolution._pointwise_plan(kmod, target)
    if pointwise is not None:
        return {1: pointwise.channels, 2: pointwise.rows}
    plan = convolution._plan(kmod, target)
    if plan is not None:
        return {1: plan.lanes * plan.blocks}
    depthwise = grouped._depthwise_plan(kmod, target)
    if depthwise is not None:
        return {1: depthwise.lanes}
    rank = len(kmod["main"].params[-1].shape)  # the output's (kernel_module form: outputs last)
    if matmul._integer_matmul_plan(kmod, target) is not None:  # AMX's tiles where they fit, else VNNI's (which they divide)
        return {rank - 2: amx.ROWS if matmul._in_tiles(kmod, target) else vnni.ROWS, rank - 1: vnni.VECTORS * vnni.LANES}
    mm = matmul._matmul_plan(kmod, target) or matmul._matmul_plan(kmod, target, fallback=True)
    if mm is None:
        return {}
    return {mm.row_axis % (rank - 1): mm.rows, rank - 1: mm.lanes * mm.blocks}


def fallback(kmod: tvm.IRModule, target) -> tuple[tvm.tirx.PrimFunc, str] | None:
    """``(scheduled kernel, its label)`` of a template for a kernel it leaves to records, for a build
    to run where no record schedules it: the matmul template whatever the rows and reduction
    (:func:`.matmul._matmul_plan` with ``fallback``), the layer norm and softmax templates below their floor
    of :data:`.common.MIN_MOVED_ELEMENTS`, the row statistics' below :data:`.reductions.STATS_MIN_ROW`;
    None where even so none applies.

    Why: where no record transfers, such a matmul ran TVM's default schedule. MaxViT-T's attention
    (its einsums as batched matmuls, :mod:`tvm_partition.frontend.einsum`: 49-token windows, a
    reduction of 32 or 49) took 3.8 ms a call for ``softmax @ v`` of 128 heads' windows, 105 us on
    tiles of 7 rows x 2 vectors, and ``q @ k^T`` (with its bias) 474 -> 274 us (each alone, 3
    rounds, 2 Zen 4 threads, 2026-12-01). Where a record transfers it keeps it: ViT-B/16's
    ``q @ k^T`` (a reduction of 64) ran 361 us replayed, 551 on the template
    (:data:`.matmul.MIN_BATCHED_REDUCTION`). Likewise the layer norms and softmaxes of the same model and of
    Swin-T under the floor: layer norms of 50,176 and 37,632 outputs 81 -> 6.4 and 70 -> 6.9 us,
    softmaxes of rows of 49 (no whole vector: scalar reductions) 91 -> 25 and 136 -> 37 us (each
    alone, 5 rounds); MaxViT-T 0.96x paired, Swin-T 0.99x (within noise)."""
    kmod = common._epilogue_operands_inlined(kmod)  # as templated(): the kernel a template would see
    if (plan := matmul._matmul_plan(kmod, target, fallback=True)) is not None:
        func, label = matmul._schedule_matmul(kmod, target, plan), FALLBACK_MATMUL_LABEL
    elif (norm := reductions._layer_norm_plan(kmod, target, fallback=True)) is not None:
        func, label = reductions._schedule_layer_norm(kmod, *norm), FALLBACK_LAYER_NORM_LABEL
    elif (lanes := reductions._softmax_lanes(kmod, target, fallback=True)) is not None:
        func, label = reductions._schedule_softmax(kmod, lanes), FALLBACK_SOFTMAX_LABEL
    elif (stats := reductions._stats_plan(kmod, target, fallback=True)) is not None:
        func, label = reductions._schedule_stats(kmod, stats), FALLBACK_STATS_LABEL
    else:
        return None
    return None if func is None else (func, label)


def schedule(kmod: tvm.IRModule, target) -> tvm.tirx.PrimFunc | None:
    """``kmod``'s ``main`` (a :func:`tvm_partition.build.tuning.kernel_module`) with the template
    that applies to it, None where none does."""
    done = templated(kmod, target)
    return None if done is None else done[0]


def templated(kmod: tvm.IRModule, target) -> tuple[tvm.tirx.PrimFunc, str] | None:
    """``(scheduled kernel, its label)`` of the template that applies to ``kmod``, in one pass
    (a build asks for both for every kernel); None where none applies."""
    kmod = common._epilogue_operands_inlined(kmod)
    if (pointwise := convolution._pointwise_plan(kmod, target)) is not None:
        func, name = convolution._schedule_pointwise(kmod, target, pointwise), POINTWISE_LABEL
    elif (plan := convolution._plan(kmod, target)) is not None:
        func, name = convolution._schedule_conv(kmod, target, plan), CONV_LABEL
    elif (integer := matmul._integer_matmul_plan(kmod, target)) is not None:
        if matmul._in_tiles(kmod, target):
            func, name = amx.schedule(kmod, integer), INTEGER_TILES_LABEL
        else:
            func, name = vnni.schedule(kmod, integer), INTEGER_MATMUL_LABEL
    elif (mm := matmul._matmul_plan(kmod, target)) is not None:
        func, name = matmul._schedule_matmul(kmod, target, mm), MATMUL_LABEL if mm.packed else BATCHED_MATMUL_LABEL
    elif (depthwise := grouped._depthwise_plan(kmod, target)) is not None:
        func, name = grouped._schedule_depthwise(kmod, target, depthwise), DEPTHWISE_LABEL
    elif (group := grouped._group_plan(kmod, target)) is not None:
        func, name = grouped._schedule_group(kmod, group), GROUP_LABEL
    elif (lanes := reductions._softmax_lanes(kmod, target)) is not None:
        func, name = reductions._schedule_softmax(kmod, lanes), SOFTMAX_LABEL
    elif (tailed := reductions._tailed_softmax_epilogue(kmod, target)) is not None:
        func, name = reductions._schedule_tailed_softmax(kmod, tailed), SOFTMAX_LABEL
    elif (norm := reductions._layer_norm_plan(kmod, target)) is not None:
        func, name = reductions._schedule_layer_norm(kmod, *norm), LAYER_NORM_LABEL
    elif (pool := pooling._pool_nest(kmod, target)) is not None:
        func, name = pooling._schedule_pool(kmod, target, pool), POOL_LABEL
    elif (reduce := reductions._reduce_plan(kmod, target)) is not None:
        func, name = reductions._schedule_reduce(kmod, reduce), REDUCE_LABEL
    elif (stats := reductions._stats_plan(kmod, target)) is not None:
        func, name = reductions._schedule_stats(kmod, stats), STATS_LABEL
    else:
        outputs, parallel = elementwise._elementwise_outputs(kmod, target)
        if parallel and (moved := elementwise._transposition(kmod, target)) is not None:
            func, name = elementwise._schedule_transposition(kmod, moved), TRANSPOSE_LABEL
        else:
            func = elementwise._schedule_elementwise(kmod, target, outputs, parallel) if outputs else None
            name = ELEMENTWISE_LABEL if parallel else INLINED_LABEL
    return None if func is None else (func, name)


def without_packing(mod: tvm.IRModule) -> tvm.IRModule:
    """``mod`` with every kernel as a build runs it: weights already packed (the packing block
    removed, the weight parameter in the packed layout), for timing kernels alone as MetaSchedule's
    builder does; kernels without packing unchanged."""
    from tvm.s_tir.transform import RemoveWeightLayoutRewriteBlock

    return RemoveWeightLayoutRewriteBlock(skip_tensor_rewrite=True)(mod)
