"""Direct-template convolutions of models: with the next block's prefetches against without them
(PREFETCH_BYTES set to infinity: no split of the reduction, no prefetch), weights cold (flushed before
each run) and warm, alternating rounds (ROUNDS, default 5). PREFETCH_BYTES=0 in the environment: every
direct-template convolution, whatever its weights.

    python prefetch_ab.py MODEL.onnx [MODEL.onnx ...]
"""
import os, sys, statistics
ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), *[".."] * 4))
sys.path.insert(0, ROOT); sys.path.insert(0, os.path.join(ROOT, "benchmarks"))
from conv_kernels import model_graph
from tvm_partition.build.align import kernel_of
from tvm_partition.build.transfer import blocks_of
from tvm_partition.build.tuning import tuning_target, time_kernel
from tvm_partition.build.templates import convolution, common
from tvm_partition.devices import parse_devices, use_cpu_threads
use_cpu_threads()
target = tuning_target(parse_devices("cpu")[0])
rounds = int(os.environ.get("ROUNDS", 5))
convolution.PREFETCH_BYTES = int(os.environ.get("PREFETCH_BYTES", convolution.PREFETCH_BYTES))
seen = set()
for spec in sys.argv[1:]:
    _, graph = model_graph(spec)
    for op in graph.ops.values():
        if op.kind != "conv2d": continue
        try:
            kmod = common._epilogue_operands_inlined(kernel_of(graph, op, None if op.split_dims else 0))
        except Exception:
            continue
        bl = blocks_of(kmod)
        if bl in seen: continue
        seen.add(bl)
        if convolution._pointwise_plan(kmod, target) is not None: continue
        plan = convolution._plan(kmod, target)
        if plan is None: continue
        with_pf = convolution._schedule_conv(kmod, target, plan)
        if "prefetch" not in with_pf.script(): continue
        keep, convolution.PREFETCH_BYTES = convolution.PREFETCH_BYTES, float("inf")
        without = convolution._schedule_conv(kmod, target, plan)
        convolution.PREFETCH_BYTES = keep
        res = {}
        for cold in (True, False):
            t = [[], []]
            for r in range(rounds):
                order = [0, 1] if r % 2 == 0 else [1, 0]
                for i in order:
                    t[i].append(time_kernel([without, with_pf][i], target, repeat=15 if cold else 5, cold=cold))
            ratios = sorted(b / a for a, b in zip(*t))
            res[cold] = (statistics.median(t[0]), statistics.median(t[1]), statistics.median(ratios), ratios[0], ratios[-1])
        shapes = " ".join("x".join(str(int(d)) for d in s) for s in op.input_shapes[:2])
        print(f"{os.path.basename(spec)[:12]:12} {shapes:34} {plan.row}x{plan.blocks} cl{int(plan.channels_last)} "
              f"cold {res[True][0]:.0f}->{res[True][1]:.0f} {res[True][2]:.2f}x ({res[True][3]:.2f}-{res[True][4]:.2f}) "
              f"warm {res[False][0]:.0f}->{res[False][1]:.0f} {res[False][2]:.2f}x ({res[False][3]:.2f}-{res[False][4]:.2f})", flush=True)
