"""Split points the kernels can carry (issue "tuned-quality CPU kernels", item 2).

A split's parts run the schedule of the whole op, tile sizes re-fitted to each part's extent
(:mod:`tvm_partition.build.transfer`). Where a part's extent is a multiple of the schedule's innermost
tile on the split axis the part keeps the whole op's vector and register tiles and runs at the
whole op's speed x its fraction; at other extents the tiles shrink to a divisor of the extent, and
a prime extent leaves none: a BERT-tiny matmul split at N=61 of 128 ran 11x slower than at N=64
(transferred schedules, build machine, 2026-11-23). Padding the part to the next multiple also
recovers the speed (DESIGN.md), at the price of computing rows that are dropped; cutting at a
multiple costs nothing, so that is what this module does: it raises every op's split granule
(``OpGraph.granules``, which :meth:`Split.parts <tvm_partition.plan.Split.parts>` rounds every
boundary to, in the planners, the simulator and ApplyPlan alike) to the innermost tile of the
schedule that kernel gets on each device. Planners then search and propose only such cuts, and
:func:`tvm_partition.cli.compile.plan_and_simulate` writes each split's ratios as the exact fractions
of its parts, so a plan applied later (by ApplyPlan on a fresh graph) cuts at the same points.
"""

from __future__ import annotations

import math

from ..profiling.samples import lower_sample, sample_module
from ..ir.graph import op_signature
from ..ir.split_rules import IllegalSplit

#: Granules are capped at this (the widest CPU vector's fp32 lanes, AVX-512): a larger innermost
#: tile (64) is re-fitted to the largest power of two that divides the part (:func:`transfer.fit_tile`).
MAX_GRANULE = 16
#: An axis keeps at least this many granules: coarser cuts would leave EOP's ratio search
#: (0.01 steps) almost nothing to choose from.
MIN_UNITS = 4


def kernel_of(graph, op, dim: int | None = None, size: int | None = None):
    """The compute kernel (``tuning.kernel_module`` form, its heaviest) an op launches whole, or
    cut to ``size`` along ``dim``. Raises :class:`IllegalSplit` where the op cannot be cut so."""
    from .tuning import kernel_flops

    dim = min(op.split_dims) if dim is None else dim
    size = op.output_shapes[-1][dim] if size is None else size
    kernels = lower_sample(sample_module(graph, op, dim, size))
    return max((k for _, k in kernels), key=kernel_flops, default=None)


def align_splits(graph, devices, schedules) -> dict[str, dict[int, int]]:
    """Raise ``graph``'s split granules to the inner tiles of ``schedules`` on every device of
    ``devices`` (CPU targets: the GPU's dlight schedules have no tile to keep). Returns the
    granules it changed, ``{op id: {axis: granule}}``."""
    from .tuning import tuning_target

    targets = [tuning_target(d) for d in devices if d.kind == "cpu"]
    if schedules is None or not targets:
        return {}
    by_sig: dict[str, dict[int, int]] = {}
    changed: dict[str, dict[int, int]] = {}
    for op in graph.ops.values():
        if op.is_view or not op.split_dims or op.flops <= 0:
            continue
        sig = op_signature(op)
        if sig not in by_sig:
            by_sig[sig] = _tiles(graph, op, schedules, targets)
        for dim, tile in by_sig[sig].items():
            if dim not in op.split_dims:
                continue
            size = op.output_shapes[-1][dim]
            granule = math.lcm(op.granules.get(dim, 1), min(tile, MAX_GRANULE))
            if granule != op.granules.get(dim, 1) and size // granule >= MIN_UNITS:
                op.granules[dim] = granule
                changed.setdefault(op.id, {})[dim] = granule
    return changed


def _tiles(graph, op, schedules, targets) -> dict[int, int]:
    try:
        kmod = kernel_of(graph, op)
    except IllegalSplit:
        return {}
    if kmod is None:
        return {}
    out: dict[int, int] = {}
    for target in targets:
        for dim, tile in schedules.inner_tiles(kmod, target).items():
            out[dim] = math.lcm(out.get(dim, 1), tile)
    return out
