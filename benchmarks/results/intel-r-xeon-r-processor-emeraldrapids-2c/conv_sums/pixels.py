"""Scratch, kept as the record of what ran: tiles of vectors of pixels (the 1x1 template's
schedule generalised to any window, its padding a stage of its own) against the direct template.

    python pixels.py "[(64, 64, (3, 1), (1, 0), 112, 112), ...]" "[dict(channels=8, xvec=3), ...]" ROUNDS
"""
import math, os, sys
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "..", "..", "tests"))
sys.path.insert(0, os.path.join(HERE, "..", "..", ".."))  # benchmarks/

from conv_kernels import alternated
from tiles import C, kern, target  # this folder's
from tvm_partition.build import templates
common = templates.common


def pix(kmod, channels, xvec, rows_outer=True, inner=True, lanes=16):
    nest = common._nest(kmod, target, (C._CONV,))
    weight = common._weight(kmod, nest.block)
    func = kmod["main"].with_attr("layout_free_buffers", [weight])
    sch, conv = common._opened(func, C._CONV, nest.epilogue)
    n, f, y, x, rc, ry, rx = sch.get_loops(conv)
    f_o, f_i = sch.split(f, [None, channels])
    x_o, x_i = sch.split(x, [None, xvec * lanes])
    outer = (y, x_o, f_o) if rows_outer else (f_o, y, x_o)
    sch.reorder(n, *outer, rc, ry, rx, f_i, x_i)
    acc = sch.cache_write(conv, 0, common.TILE_SCOPE)
    common._per_tile(sch, acc, outer[-1], nest.epilogue)
    sch.parallel(sch.fuse(n, *outer))
    sch.unroll(f_i)
    vectors, lane = C._pixel_vectors(sch, x_i, lanes)
    if inner:
        sch.reorder(vectors, f_i, lane)
    for block in [acc] + ([sch.get_sblock(nest.epilogue[-1])] if nest.epilogue else []):
        loops = sch.get_loops(block)[1:]
        for loop in loops[:-1]:
            sch.unroll(loop)
        C._pixel_vectors(sch, loops[-1], lanes)
    sch.decompose_reduction(conv, rc)
    if nest.padded:
        loops = sch.get_loops(sch.get_sblock("pad_temp"))
        sch.parallel(sch.fuse(loops[0], loops[1]))
    return common._packed(sch, target)

cases = eval(sys.argv[1]); variants = eval(sys.argv[2])
funcs = []
for c in cases:
    k = kern(*c)
    plan = C._plan(k, target)
    nest = common._nest(k, target, (C._CONV,))
    fl = 2 * math.prod(nest.extents)
    funcs.append((f"{c} direct {plan.row}x{plan.blocks}", C._schedule_conv(k, target, plan), fl))
    for v in variants:
        try:
            funcs.append((f"{c} pix {v}", pix(k, **v), fl))
        except Exception as e:
            print("fail", v, type(e).__name__, str(e)[:300])
meds, _ = alternated([f for _, f, _ in funcs], target, int(sys.argv[3]) if len(sys.argv) > 3 else 3)
for (c, _, fl), t in zip(funcs, meds):
    print(f"{c}: {t:.0f} us {fl/t/1e3:.0f} GF/s")
