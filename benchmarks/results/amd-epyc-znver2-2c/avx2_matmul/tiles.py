"""The matmul template's kernels of some models, each timed alone with other tiles than the chosen
one: the script behind BENCHMARKS.md "Matmuls on AVX2" (kept beside its rows as the record of what ran).

    python tiles.py MODEL "[dict(rows=4, blocks=3), dict(rows=5), ...]" --rounds 3

Each dict replaces fields of the kernel's ``templates.matmul._MatmulPlan``; a variant whose rows or
vectors do not divide the kernel's prints ``-``. Printed: the chosen plan, its time and GFLOP/s, then
each variant's median time over the chosen one's (alternating rounds, ``conv_kernels.alternated``).
"""
import dataclasses, sys, os
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", ".."))  # benchmarks/
from matmul_tiles import matmuls, flops
from conv_kernels import alternated, arguments
from tvm_partition.build import templates

args, target = arguments("x", sys.argv[1:2] + sys.argv[3:], {})
variants = eval(sys.argv[2])  # list of dicts
for label, name, kmod, plan in matmuls(args.models, target):
    extents = [int(v.dom.extent) for v in templates.common._root_blocks(kmod)[0].iter_vars]
    rows = extents[plan.row_axis % (len(extents) - 2)]
    plans = [plan]
    for v in variants:
        p = dataclasses.replace(plan, **v)
        if rows % p.rows or extents[-2] % (p.blocks * p.lanes):
            p = None
        plans.append(p)
    funcs = []
    for p in plans:
        try:
            funcs.append(templates.matmul._schedule_matmul(kmod, target, p) if p else None)
        except Exception as e:
            print("fail", p, e); funcs.append(None)
    medians = iter(alternated([f for f in funcs if f is not None], target, args.rounds)[0])
    base, *rest = [next(medians) if f is not None else None for f in funcs]
    cells = [f"{t / base:.2f}" if t else "-" for t in rest]
    print(f"{name[:40]} {extents} plan={plan.rows}x{plan.blocks}{'C' if plan.columns_outer else ''} ch={plan.chunk} {base:.0f}us {flops(kmod)/base/1e3:.0f}GF | " + " ".join(cells), flush=True)
