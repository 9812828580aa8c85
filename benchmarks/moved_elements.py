"""Kernels that only move data (BERT's attention transposes, a concat), timed alone with the
element-wise template serial and parallel, at batches 1-16 of BERT-tiny's 128 x 128 rows:

    python benchmarks/moved_elements.py [--rounds 3]

It is what sets ``tvm_partition.build.templates.common.MIN_MOVED_ELEMENTS``, the size from which such a
kernel gets a parallel loop (BENCHMARKS.md, "No copies between two CPUs"): the median of
``--rounds`` rounds per kernel, on this machine's thread pool.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

BATCHES = (1, 2, 4, 8, 16)


def kernel(kind: str, b: int):
    """BERT-tiny's heads split off (``transpose``), joined back (``transpose_back``), or two halves
    of its rows joined (``concat``), at batch ``b``: 16,384 x ``b`` output elements."""
    import tvm
    from tvm import te, topi

    if kind == "transpose":
        x = te.placeholder((b, 128, 128), name="x")
        args = [x, topi.transpose(topi.reshape(x, (b, 128, 2, 64)), (0, 2, 1, 3))]
    elif kind == "transpose_back":
        x = te.placeholder((b, 2, 128, 64), name="x")
        args = [x, topi.reshape(topi.transpose(x, (0, 2, 1, 3)), (b, 128, 128))]
    else:
        a, c = te.placeholder((b, 64, 128), name="a"), te.placeholder((b, 64, 128), name="c")
        args = [a, c, topi.concatenate([a, c], axis=1)]
    return tvm.IRModule({"main": te.create_prim_func(args)})


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=3, help="rounds over every kernel (default 3)")
    args = ap.parse_args(argv)

    import tvm

    from tvm_partition.build import templates
    from tvm_partition.build.tuning import time_kernel
    from tvm_partition.devices import cpu_target

    target = tvm.target.Target(cpu_target())
    kinds = ("transpose", "transpose_back", "concat")
    times: dict = {}
    for _ in range(args.rounds):
        for kind in kinds:
            for b in BATCHES:
                mod = kernel(kind, b)
                outputs = tuple(blk.name_hint for blk in templates.common._root_blocks(mod))[-1:]
                for parallel in (False, True):
                    func = templates.elementwise._schedule_elementwise(mod, target, outputs, parallel)
                    times.setdefault((kind, b, parallel), []).append(time_kernel(func, target, min_repeat_ms=30))
    print("| kernel | output elements | serial us | parallel us | parallel / serial |")
    print("| --- | ---: | ---: | ---: | ---: |")
    for kind in kinds:
        for b in BATCHES:
            s, p = (statistics.median(times[(kind, b, par)]) for par in (False, True))
            print(f"| {kind} | {b * 16384:,} | {s:.1f} | {p:.1f} | {p / s:.2f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
