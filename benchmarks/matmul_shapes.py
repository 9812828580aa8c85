"""The matmul template's register tiles on matmuls of given shapes: the tile it chooses against
4, 6, 8 and 12 rows x 2 and 4 vectors of columns, rows or columns outer, each kernel alone.

    python benchmarks/matmul_shapes.py 16x64x256 128x768x768 [--rounds 3] [--target-cpu MCPU]

Each ``MxKxN`` is ``x[M, K] @ w[K, N] + b`` (``w`` and ``b`` weights), written as an ONNX model and
loaded as any model is; every tile that divides it is timed alone in alternating rounds
(``tuning.time_kernel``: packed weights, the runner's threads) and printed as its time over the
chosen one's. Why: :mod:`benchmarks.matmul_tiles` times the kernels of models, and a rule of the
template (``templates.matmul.COLUMNS_OUTER_MIN_REDUCTION``) was read off shapes no model here had in a row
(BENCHMARKS.md, "Matmul tiles of 8 rows only over long reductions").
"""

from __future__ import annotations

import dataclasses
import itertools
import os
import statistics
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from conv_kernels import arguments  # noqa: E402


def matmul_model(m: int, k: int, n: int, folder: str) -> str:
    """Path of an ONNX model of ``x[m, k] @ w[k, n] + b``, seeded weights."""
    import numpy as np
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(0)
    weights = [numpy_helper.from_array(rng.standard_normal(s).astype("float32"), name)
               for name, s in (("w", (k, n)), ("b", (n,)))]
    graph = helper.make_graph([helper.make_node("MatMul", ["x", "w"], ["y"]), helper.make_node("Add", ["y", "b"], ["z"])],
                              "matmul", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [m, k])],
                              [helper.make_tensor_value_info("z", TensorProto.FLOAT, [m, n])], weights)
    path = os.path.join(folder, f"matmul_{m}x{k}x{n}.onnx")
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)
    return path


def tiles(plan, rows: int, columns: int) -> dict:
    """``{name: plan}``: the chosen plan and every tile of 4, 6, 8 or 12 rows x 2 or 4 vectors, rows
    (``R``) or columns (``C``) outer, that divides the matmul, without reduction chunks."""
    out = {"chosen": plan}
    for r, b, outer in itertools.product((4, 6, 8, 12), (2, 4), (False, True)):
        if rows % r == 0 and columns % (b * plan.lanes) == 0:
            out[f"{r}x{b}{'C' if outer else 'R'}"] = dataclasses.replace(plan, rows=r, blocks=b, columns_outer=outer, chunk=0)
    return out


def main(argv=None) -> int:
    args, target = arguments(__doc__, argv)
    from tvm_partition import frontend
    from tvm_partition.build import templates
    from tvm_partition.build.align import kernel_of
    from tvm_partition.build.tuning import time_kernel
    from tvm_partition.ir.graph import OpGraph

    with tempfile.TemporaryDirectory() as folder:
        for spec in args.models:
            m, k, n = (int(x) for x in spec.split("x"))
            graph = OpGraph(frontend.load(matmul_model(m, k, n, folder)).mod)
            op = next(o for o in graph.ops.values() if "matmul" in o.fused_name)
            kmod = templates.common._epilogue_operands_inlined(kernel_of(graph, op))  # noqa: SLF001
            plan = templates.matmul._matmul_plan(kmod, target)  # noqa: SLF001
            if plan is None:
                print(f"{spec}: the template does not apply")
                continue
            funcs = {name: templates.matmul._schedule_matmul(kmod, target, p)  # noqa: SLF001
                     for name, p in tiles(plan, m, n).items()}
            times = {name: [] for name in funcs}
            for r in range(args.rounds):
                for name, func in (list(funcs.items()) if r % 2 == 0 else list(funcs.items())[::-1]):
                    times[name].append(time_kernel(func, target))
            med = {name: statistics.median(t) for name, t in times.items()}
            chosen = f"{plan.rows}x{plan.blocks}{'C' if plan.columns_outer else 'R'}" + \
                (f", chunks of {plan.chunk}" if plan.chunk else "")
            others = sorted((t / med["chosen"], name) for name, t in med.items() if name != "chosen")
            print(f"{spec:14} chosen {chosen} {med['chosen']:8.1f} us | "
                  + " ".join(f"{name} {ratio:.2f}" for ratio, name in others), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
