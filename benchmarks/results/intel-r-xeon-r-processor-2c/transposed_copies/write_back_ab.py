"""Depthwise channel template with the copy tensorized (transposed), against the template, each alone."""
import os, sys
sys.path.insert(0, "/work/main/benchmarks")
import tvm
from conv_kernels import convolutions, cold_and_warm, cold_and_warm_line
from tvm_partition.build import templates
from tvm_partition.build.templates import grouped, common, convolution, transposed
from tvm_partition.build.tuning import tuning_target
from tvm_partition.devices import parse_devices
target = tuning_target(parse_devices("cpu")[0])

import backintr
def sched(kmod, target, plan):
    func = kmod["main"].with_attr("layout_free_buffers", [plan.weight])
    sch, conv = common._opened(func, convolution._GROUP, plan.epilogue)
    lanes = plan.lanes
    if not plan.padded:
        sch.cache_read(conv, 0, "global")
    data = sch.get_producers(conv)[0]
    n, f, y, x, rc, ry, rx = sch.get_loops(conv)
    f_o, f_i = sch.split(f, [None, lanes])
    x_o, x_i = sch.split(x, [None, plan.row])
    sch.reorder(n, f_o, y, x_o, rc, ry, rx, x_i, f_i)
    acc = sch.cache_write(conv, 0, "local")
    sch.transform_layout(conv, ("write", 0), lambda a, b, c, d: (a, c, d, b))
    epilogue = convolution._epilogue_inlined(sch, acc, plan.epilogue)
    common._per_tile(sch, acc, x_o, epilogue)
    tile = sch.cache_read(acc, 0, "local")
    sch.transform_layout(tile, ("write", 0), lambda a, b, c, d: (a, d, b, c))
    *_, px, ch = sch.get_loops(tile)
    sch.tensorize(px, backintr.intrinsic(lanes, plan.row, bool(os.environ.get("MASKED"))))
    *_, ch, px = sch.get_loops(acc)
    sch.unroll(ch)
    sch.vectorize(px)
    tasks = sch.fuse(n, f_o)
    sch.parallel(tasks)
    sch.vectorize(f_i)
    for loop in (x_i, rx, ry):
        sch.unroll(loop)
    sch.decompose_reduction(conv, rc)
    sch.transform_layout(data, ("write", 0), lambda a, b, c, d: (a, b // lanes, c, d, b % lanes))
    sch.compute_at(data, tasks, preserve_unit_loops=True)
    channel, row, column = sch.get_loops(data)[-3:]
    sch.reorder(row, column, channel)
    grouped._copied_transposed(sch, data, row, lanes)
    return common._packed(sch, target)

for label, kmod, nest in convolutions(os.environ["MODEL"].split(","), target, grouped=True):
    plan = grouped._depthwise_plan(kmod, target)
    if plan is None: continue
    f = templates.schedule(kmod, target)
    g = sched(kmod, target, plan)
    if os.environ.get("SHOW"): print(g.script()[-5000:]); break
    n, oc, oh, ow, rc, ry, rx = nest.extents
    print(f"{label} {oc} {oh}x{ow} {ry}x{rx} pad={plan.padded}", cold_and_warm_line(cold_and_warm(f, g, target, int(os.environ.get("ROUNDS", 3)))), flush=True)
