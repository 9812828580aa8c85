"""The direct-convolution template's kernels of some models (those the 1x1 template leaves to it),
each timed alone with other tiles than the chosen one: the script behind BENCHMARKS.md "1x1
convolutions on AVX2" (kept beside its rows as the record of what ran).

    python tiles.py MODEL "[dict(row=6, blocks=2), dict(row=4, blocks=3), ...]" --rounds 3

Each dict replaces fields of the kernel's ``templates.convolution._Plan``; a variant whose vectors do
not divide the output channels prints ``-`` (a row that does not divide the width makes its last tile
in a row shorter). Printed: the extents (n, f, y, x, rc, ry, rx), the chosen tile (``R`` rows first,
``C`` channel blocks first), its time and GFLOP/s, then each variant's median time over the chosen one's.
"""
import dataclasses, os, sys
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", ".."))  # benchmarks/
from conv_kernels import alternated, arguments, convolutions
from tvm_partition.build import templates
C = templates.convolution
args, target = arguments("x", sys.argv[1:2] + sys.argv[3:], {})
variants = eval(sys.argv[2])
only = None
for label, kmod, nest in convolutions(args.models, target):
    if C._pointwise_plan(kmod, target) is not None:
        continue
    plan = C._plan(kmod, target)
    if plan is None:
        continue
    oc, ow = nest.extents[1], nest.extents[3]
    plans = [plan]
    for v in variants:
        p = dataclasses.replace(plan, **v)
        if oc % (p.blocks * p.lanes) or p == plan:
            p = None
        plans.append(p)
    funcs = []
    for p in plans:
        try:
            funcs.append(C._schedule_conv(kmod, target, p) if p else None)
        except Exception as e:
            print("fail", e.__class__.__name__); funcs.append(None)
    medians = iter(alternated([f for f in funcs if f is not None], target, args.rounds)[0])
    base, *rest = [next(medians) if f is not None else None for f in funcs]
    cells = [f"{t / base:.2f}" if t else "-" for t in rest]
    gf = 2 * __import__('math').prod(nest.extents) / base / 1e3
    print(f"{label} {list(nest.extents)} {plan.row}x{plan.blocks}{'R' if plan.rows_outer else 'C'} {base:.0f}us {gf:.0f}GF | " + " ".join(cells), flush=True)
