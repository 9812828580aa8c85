import sys, os, statistics
sys.path.insert(0, "/work/main/benchmarks")
from conv_kernels import model_graph
from tvm_partition.build.align import kernel_of
from tvm_partition.build.tuning import open_schedules, time_kernel, tuning_target
from tvm_partition.devices import database_dir, parse_devices, use_cpu_threads
from tvm_partition.build.templates import common, convolution
import tvm
import numpy as np
use_cpu_threads()
target = tuning_target(parse_devices("cpu")[0])
orig_opened, orig_inl, orig_wb = common._opened, convolution._epilogue_inlined, convolution._write_back_by_channels

def _shape(sch, name):
    return [int(s) for s in sch.get(sch.get_sblock(name)).writes[0].source.shape]

def new_opened(func, block, epilogue):
    sch = tvm.s_tir.Schedule(tvm.IRModule({"main": func}))
    out = _shape(sch, block)
    keep = len(epilogue) - 1
    if len(epilogue) >= 2 and _shape(sch, epilogue[-1]) != out and _shape(sch, epilogue[-2]) == out:
        keep = len(epilogue) - 2
    for name in epilogue[:keep]:
        sch.compute_inline(sch.get_sblock(name))
    return sch, sch.get_sblock(block)

def new_inl(sch, acc, epilogue):
    if not epilogue: return epilogue
    shape = list(sch.get(acc).writes[0].source.shape)
    last = sch.get_sblock(epilogue[-1])
    if list(sch.get(last).writes[0].source.shape) != shape:
        if len(epilogue) >= 2:
            gate = sch.get_sblock(epilogue[-2])
            if list(sch.get(gate).writes[0].source.shape) == shape and len(sch.get(gate).reads) and True:
                try:
                    sch.reverse_compute_inline(gate)
                except Exception as e:
                    print("no reverse inline", e)
        return epilogue[-1:]
    sch.reverse_compute_inline(last)
    return ()

_, graph = model_graph(sys.argv[1])
seen = set()
for op in graph.ops.values():
    if sys.argv[2] not in op.fused_name: continue
    kmod = kernel_of(graph, op)
    if op.fused_name in seen: continue
    seen.add(op.fused_name)
    funcs = []
    for variant in (0, 1):
        common._opened = orig_opened if variant == 0 else new_opened
        convolution._epilogue_inlined = orig_inl if variant == 0 else new_inl
        built = open_schedules(database_dir(None))
        func, label = built.schedule(kmod, target)
        funcs.append(func or kmod["main"])
    common._opened, convolution._epilogue_inlined = orig_opened, orig_inl
    if len(sys.argv) > 3: print(funcs[1].script()[-3000:])
    # numerics
    from tvm_partition.build import templates
    outs = []
    for f in funcs:
        mod = templates.without_packing(tvm.IRModule({"main": f.with_attr("global_symbol", "main")}))
        if not outs:
            rng = np.random.default_rng(0)
            args = [rng.standard_normal([int(x) for x in b.shape]).astype("float32") for b in mod["main"].params]
        lib = tvm.compile(mod, target=target)
        a = [tvm.runtime.tensor(x) for x in args]
        lib["main"](*a)
        outs.append(a[-1].numpy())
    err = np.abs(outs[0]-outs[1]).max()
    t = [[], []]
    for r in range(5):
        for i in ((0, 1) if r % 2 == 0 else (1, 0)):
            t[i].append(time_kernel(funcs[i], target))
    print(op.fused_name, label, "err", err, "us", [round(statistics.median(x), 1) for x in t], flush=True)
