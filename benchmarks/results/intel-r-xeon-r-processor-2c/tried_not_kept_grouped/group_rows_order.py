"""Grouped convolutions alone: channel blocks first (as built) vs groups, then rows, then the group's channel blocks."""
import sys, statistics, dataclasses
from unittest import mock
sys.path.insert(0, "/work/main/benchmarks")
from tvm_partition.frontend import inference
from conv_kernels import model_graph
from tvm_partition.build.align import kernel_of
from tvm_partition.build.tuning import time_kernel, tuning_target
from tvm_partition.devices import parse_devices, use_cpu_threads
from tvm_partition.build.templates import convolution, common
use_cpu_threads()
target = tuning_target(parse_devices("cpu")[0])
import tvm

def group_rows(kmod, target, plan, groups):
    func = kmod["main"].with_attr("layout_free_buffers", [plan.weight])
    sch, conv = common._opened(func, plan.block, plan.epilogue)
    padded = plan.padded and not convolution._copied(kmod)
    if plan.padded and not padded:
        sch.compute_inline(sch.get_sblock("pad_temp"))
    n, f, y, x, rc, ry, rx = sch.get_loops(conv)
    g, f_o, f_b, f_i = sch.split(f, [groups, None, plan.blocks, plan.lanes])
    x_o, x_i = sch.split(x, [None, plan.row])
    sch.reorder(n, g, y, f_o, x_o, rc, ry, rx, x_i, f_b, f_i)
    acc = sch.cache_write(conv, 0, common.TILE_SCOPE)
    sch.transform_layout(conv, ("write", 0), lambda a, b, c, d: (a, c, d, b))
    epilogue = convolution._epilogue_inlined(sch, acc, plan.epilogue)
    common._per_tile(sch, acc, x_o, epilogue)
    convolution._write_back_by_channels(sch, acc, epilogue, plan.lanes, plan.row)
    tasks = sch.fuse(n, g, y, f_o)
    if plan.parallel:
        sch.parallel(tasks)
    sch.vectorize(f_i); sch.unroll(f_b); sch.unroll(x_i)
    convolution._reduction_and_padding(sch, conv, rc, padded and plan.parallel)
    return common._packed(sch, target)

rounds = int(sys.argv[1])
for path in sys.argv[2:]:
    with mock.patch.object(inference, "MAX_UNGROUPED_GROUPS", 1):
        _, graph = model_graph(path)
    for op in graph.ops.values():
        if "conv" not in op.fused_name: continue
        kmod = kernel_of(graph, op)
        plan = convolution._plan(kmod, target)
        if plan is None or plan.block != convolution._GROUP:
            print(op.fused_name, "no grouped plan", plan); continue
        conv = common._nest(kmod, target, (convolution._CONV, convolution._GROUP)).block
        w = conv.reads[1].source.shape if False else None
        ext = common._nest(kmod, target, (convolution._CONV, convolution._GROUP)).extents
        oc, per = ext[1], ext[4]
        groups = oc * per // int(conv.reads[0].source.shape[1])
        groups = int(conv.reads[0].source.shape[1]) // per
        funcs = [convolution._schedule_conv(kmod, target, plan), group_rows(kmod, target, plan, groups)]
        t = [[], []]
        for r in range(rounds):
            for i in ((0, 1) if r % 2 == 0 else (1, 0)):
                t[i].append(time_kernel(funcs[i], target))
        a, b = (statistics.median(x) for x in t)
        print(f"{path.split('/')[-1]:10} oc={oc} size={ext[2]}x{ext[3]} per={per} groups={groups} row={plan.row} blocks={plan.blocks} "
              f"blocks-first {a:8.1f} group-rows {b:8.1f} ratio {b/a:.2f}", flush=True)
