"""The matmul template's loop order and register tile: what it chooses against the 4-row tile with
the rows outer (what it chose before :func:`~tvm_partition.build.templates.matmul._columns_outer` and
:data:`~tvm_partition.build.templates.matmul.WIDE_MATMUL_ROWS`), and the order alone, on every distinct
matmul kernel of some models where they differ, each kernel alone on this machine's thread pool.

    python benchmarks/matmul_tiles.py MODEL [MODEL ...] [--rounds 3] [--target-cpu MCPU] [--chunks]

Each kernel is scheduled the three ways and timed in alternating rounds (``tuning.time_kernel``:
packed weights, the runner's threads); the table gives each plan's tile (rows x vectors of
columns, ``C`` where the columns are outer), the medians, the ratios to the first and the chosen
plan's GFLOP/s (BENCHMARKS.md, "Matmuls whose weights outweigh their rows"). Matrix-vector
products (one row) and matmuls of computed operands are left out (neither changes). MODEL: zoo
names or .onnx paths, ``PATH.onnx:seq_len=128`` (or ``image_size=224``) for an export's free
dimensions; ``--target-cpu``: plan and compile for another CPU's ``-mcpu``, timed here.

``--chunks`` times the chosen plan against what transfer rules 48 chose instead (7 or 13 rows
where they divide the rows, else 4, the reduction whole), where they differ: the 8-row tiles and
reduction chunks of :data:`~tvm_partition.build.templates.matmul.COLUMNS_OUTER_ROWS` and
:data:`~tvm_partition.build.templates.matmul.MATMUL_CHUNK` (BENCHMARKS.md, "Hugging Face exports").
"""

from __future__ import annotations

import dataclasses
import math
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from conv_kernels import alternated, arguments, model_graph  # noqa: E402


def matmuls(models: list[str], target):
    """``(model label, op name, kernel IRModule, its templates.matmul._MatmulPlan)`` of every distinct matmul kernel
    of ``models`` that the template takes with packed weights and more than one row."""
    from tvm_partition.build import templates
    from tvm_partition.build.align import kernel_of
    from tvm_partition.build.transfer import blocks_of

    seen = set()
    for model in models:
        label, graph = model_graph(model)
        for op in graph.ops.values():
            if op.kind != "matmul":
                continue
            # an op with no legal split (a padding in its epilogue) is still a kernel: sampled whole
            kmod = templates.common._epilogue_operands_inlined(  # noqa: SLF001 - as templated()
                kernel_of(graph, op, *(() if op.split_dims else (0,))))
            plan = templates.matmul._matmul_plan(kmod, target)  # noqa: SLF001 - the template's own view
            if plan is None or plan.rows == 1 or not plan.packed:
                continue
            blocks = blocks_of(kmod)  # the same kernel in two models, or twice in one, is timed once
            if blocks not in seen:
                seen.add(blocks)
                yield label, op.fused_name, kmod, plan


def flops(kmod) -> float:
    from tvm_partition.build import templates

    mm = templates.common._root_blocks(kmod)[0]  # noqa: SLF001
    return 2 * math.prod(int(v.dom.extent) for v in mm.iter_vars)


def rules_48(plan, rows: int):
    """The plan transfer rules 48 gave a matmul of ``rows`` rows that :func:`_matmul_plan` now plans
    as ``plan``: its rows 7 or 13 where they divide the rows, else 4, on two vectors; no chunks."""
    from tvm_partition.build import templates

    wide = [r for r in templates.matmul.WIDE_MATMUL_ROWS if rows % r == 0]
    old = (wide[0] if wide else templates.matmul.MATMUL_ROWS) if plan.rows == templates.matmul.COLUMNS_OUTER_ROWS else plan.rows
    return dataclasses.replace(plan, rows=old, chunk=0)


def chunks(args, target) -> int:
    """``--chunks``: the chosen plan against :func:`rules_48`'s, where they differ."""
    from tvm_partition.build import templates

    print("| model | kernel | extents | rules 48 | us | now | us | ratio | GFLOP/s |")
    print("| --- | --- | --- | --- | ---: | --- | ---: | ---: | ---: |")
    for label, name, kmod, plan in matmuls(args.models, target):
        extents = [int(v.dom.extent) for v in templates.common._root_blocks(kmod)[0].iter_vars]  # noqa: SLF001
        before = rules_48(plan, extents[plan.row_axis % (len(extents) - 2)])
        if before == plan:
            continue
        funcs = [templates.matmul._schedule_matmul(kmod, target, p) for p in (before, plan)]  # noqa: SLF001
        (old, new), ratio = alternated(funcs, target, args.rounds)
        now = f"{plan.rows} x {plan.blocks}" + (f", chunks of {plan.chunk}" if plan.chunk else "")
        print(f"| {label} | `{name[:36]}` | {extents} | {before.rows} x {before.blocks} | {old:.0f} | {now} | "
              f"{new:.0f} | {ratio:.2f} | {flops(kmod) / new / 1e3:.0f} |", flush=True)
    return 0


def main(argv=None) -> int:
    args, target = arguments(__doc__, argv, {"--chunks": "time the chosen plan against transfer rules 48's"})
    from tvm_partition.build import templates

    if args.chunks:
        return chunks(args, target)

    print(f"vector lanes, registers: {templates.common.vector_lanes(target)}; wide rows: "
          f"{templates.matmul.WIDE_MATMUL_ROWS if templates.common._full_width_fma(target) else '-'}")  # noqa: SLF001
    print("| model | kernel | extents | before | us | order only | us | ratio | chosen | us | ratio | GFLOP/s |")
    print("| --- | --- | --- | --- | ---: | --- | ---: | ---: | --- | ---: | ---: | ---: |")

    def tile(plan) -> str:
        return f"{plan.rows} x {plan.blocks}{' C' if plan.columns_outer else ''}"

    for label, name, kmod, plan in matmuls(args.models, target):
        # rules 41's before, and its order alone: the reduction whole (chunks came with rules 49, columns outer only)
        before = dataclasses.replace(plan, rows=templates.matmul.MATMUL_ROWS, columns_outer=False, chunk=0)
        order = dataclasses.replace(before, columns_outer=plan.columns_outer)
        if plan == before:
            continue
        funcs = [templates.matmul._schedule_matmul(kmod, target, p) for p in (before, order, plan)]  # noqa: SLF001
        (old, mid, new), ratio = alternated(funcs, target, args.rounds)
        extents = [int(v.dom.extent) for v in templates.common._root_blocks(kmod)[0].iter_vars]  # noqa: SLF001
        print(f"| {label} | `{name[:40]}` | {extents} | {tile(before)} | {old:.1f} | {tile(order)} | {mid:.1f} | "
              f"{mid / old:.2f} | {tile(plan)} | {new:.1f} | {ratio:.2f} | {flops(kmod) / new / 1e3:.0f} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
