"""The matmul template's loop order and register tile: what it chooses against the 4-row tile with
the rows outer (what it chose before :func:`~tvm_partition.build.templates._columns_outer` and
:data:`~tvm_partition.build.templates.WIDE_MATMUL_ROWS`), and the order alone, on every distinct
matmul kernel of some models where they differ, each kernel alone on this machine's thread pool.

    python benchmarks/matmul_tiles.py MODEL [MODEL ...] [--rounds 3] [--target-cpu MCPU]

Each kernel is scheduled the three ways and timed in alternating rounds (``tuning.time_kernel``:
packed weights, the runner's threads); the table gives each plan's tile (rows x vectors of
columns, ``C`` where the columns are outer), the medians, the ratios to the first and the chosen
plan's GFLOP/s (BENCHMARKS.md, "Matmuls whose weights outweigh their rows"). Matrix-vector
products (one row) and matmuls of computed operands are left out (neither changes). MODEL: zoo
names or .onnx paths; ``--target-cpu``: plan and compile for another CPU's ``-mcpu``, timed here.
"""

from __future__ import annotations

import dataclasses
import math
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from conv_kernels import alternated, arguments  # noqa: E402


def matmuls(models: list[str], target):
    """``(model label, op name, kernel IRModule, its templates._MatmulPlan)`` of every distinct matmul kernel
    of ``models`` that the template takes with packed weights and more than one row."""
    from tvm_partition import frontend
    from tvm_partition.build import templates
    from tvm_partition.build.align import kernel_of
    from tvm_partition.build.transfer import blocks_of
    from tvm_partition.ir.graph import OpGraph

    seen = set()
    for model in models:
        graph = OpGraph(frontend.load(model, seed=0).mod)
        label = os.path.basename(model).removesuffix(".onnx")
        for op in graph.ops.values():
            if op.kind != "matmul" or not op.split_dims:
                continue
            kmod = templates._epilogue_operands_inlined(kernel_of(graph, op))  # noqa: SLF001 - as templated()
            plan = templates._matmul_plan(kmod, target)  # noqa: SLF001 - the template's own view
            if plan is None or plan.rows == 1 or not plan.packed:
                continue
            blocks = blocks_of(kmod)  # the same kernel in two models, or twice in one, is timed once
            if blocks not in seen:
                seen.add(blocks)
                yield label, op.fused_name, kmod, plan


def flops(kmod) -> float:
    from tvm_partition.build import templates

    mm = templates._root_blocks(kmod)[0]  # noqa: SLF001
    return 2 * math.prod(int(v.dom.extent) for v in mm.iter_vars)


def main(argv=None) -> int:
    args, target = arguments(__doc__, argv)
    from tvm_partition.build import templates

    print(f"vector lanes, registers: {templates.vector_lanes(target)}; wide rows: "
          f"{templates.WIDE_MATMUL_ROWS if templates._full_width_fma(target) else '-'}")  # noqa: SLF001
    print("| model | kernel | extents | before | us | order only | us | ratio | chosen | us | ratio | GFLOP/s |")
    print("| --- | --- | --- | --- | ---: | --- | ---: | ---: | --- | ---: | ---: | ---: |")

    def tile(plan) -> str:
        return f"{plan.rows} x {plan.blocks}{' C' if plan.columns_outer else ''}"

    for label, name, kmod, plan in matmuls(args.models, target):
        before = dataclasses.replace(plan, rows=templates.MATMUL_ROWS, columns_outer=False)
        order = dataclasses.replace(before, columns_outer=plan.columns_outer)
        if plan == before:
            continue
        funcs = [templates._schedule_matmul(kmod, target, p) for p in (before, order, plan)]  # noqa: SLF001
        (old, mid, new), ratio = alternated(funcs, target, args.rounds)
        extents = [int(v.dom.extent) for v in templates._root_blocks(kmod)[0].iter_vars]  # noqa: SLF001
        print(f"| {label} | `{name[:40]}` | {extents} | {tile(before)} | {old:.1f} | {tile(order)} | {mid:.1f} | "
              f"{mid / old:.2f} | {tile(plan)} | {new:.1f} | {ratio:.2f} | {flops(kmod) / new / 1e3:.0f} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
