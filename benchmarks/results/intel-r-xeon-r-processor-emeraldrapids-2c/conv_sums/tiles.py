"""Scratch, kept as the record of what ran for BENCHMARKS.md "Convolutions of one input summed":
single convolutions built from Relax (TVM's nn.Conv2D), the direct template's plan against other
``_Plan`` fields, each alone in alternating rounds.

    python tiles.py "[(64, 64, (3, 1), (1, 0), 112, 112), ...]" "[dict(row=7, blocks=4), ...]" ROUNDS
"""
import dataclasses, math, os, sys
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "..", "..", "tests"))
sys.path.insert(0, os.path.join(HERE, "..", "..", ".."))  # benchmarks/

from tvm.relax.frontend import nn
from helpers import nn_model
from conv_kernels import alternated
from tvm_partition.ir.graph import OpGraph
from tvm_partition.build.align import kernel_of
from tvm_partition.build import templates
from tvm_partition.build.tuning import tuning_target
from tvm_partition.devices import parse_devices
C = templates.convolution
target = tuning_target(parse_devices("cpu")[0])
def kern(cin, cout, k, pad, h, w, stride=1):
    m = nn_model(nn.Conv2D(cin, cout, list(k) if isinstance(k, tuple) else k, stride=stride, padding=list(pad) if isinstance(pad, tuple) else pad), [1, cin, h, w])
    g = OpGraph(m.mod)
    op = next(o for o in g.ops.values() if o.kind == "conv2d")
    return kernel_of(g, op)


def main():
    cases = eval(sys.argv[1])
    variants = eval(sys.argv[2]) if len(sys.argv) > 2 else []
    funcs = []
    for c in cases:
        k = kern(*c)
        plan = C._plan(k, target)
        nest = templates.common._nest(k, target, (C._CONV,))
        fl = 2 * math.prod(nest.extents)
        funcs.append((c, C._schedule_conv(k, target, plan), fl, plan))
        for v in variants:
            p = dataclasses.replace(plan, **v)
            funcs.append((f"{c} {v}", C._schedule_conv(k, target, p), fl, p))
    meds, _ = alternated([f for _, f, _, _ in funcs], target, int(sys.argv[3]) if len(sys.argv) > 3 else 5)
    for (c, _, fl, p), t in zip(funcs, meds):
        print(f"{c}: {p.row}x{p.blocks}{'R' if p.rows_outer else 'C'} {t:.0f} us {fl/t/1e3:.0f} GF/s")


if __name__ == "__main__":
    main()
