import sys, statistics
sys.path.insert(0, "/work/main/benchmarks")
from conv_kernels import model_graph
from tvm_partition.build.align import kernel_of
from tvm_partition.build.tuning import time_kernel, tuning_target
from tvm_partition.devices import parse_devices, use_cpu_threads
from tvm_partition.build.templates import convolution
use_cpu_threads()
target = tuning_target(parse_devices("cpu")[0])
_, graph = model_graph(sys.argv[1])
for op in graph.ops.values():
    if "conv" not in op.fused_name: continue
    kmod = kernel_of(graph, op)
    plan = convolution._plan(kmod, target)
    f = convolution._schedule_conv(kmod, target, plan)
    t = statistics.median(time_kernel(f, target) for _ in range(3))
    print(op.fused_name, [str(p.shape) for p in kmod["main"].params][:2], plan, round(t, 1))
