"""1x1 convolutions on AVX2 reading input planes of a multiple of 4 KiB (ALIASED_PLANE_BYTES): the
tile builds take since transfer rules 75 (AVX2_1X1_ROW's 6 pixels x 2 vectors) against the 8 pixels x
1 vector they took before, each kernel alone, alternating rounds (ROUNDS, default 3).

    TVM_NUM_THREADS=2 python tile_ab.py MODEL [MODEL ...]     # resnet50:128, MOBILEVIT.onnx
"""
import dataclasses, os, sys
ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), *[".."] * 4))
sys.path.insert(0, ROOT); sys.path.insert(0, os.path.join(ROOT, "benchmarks"))
from conv_kernels import alternated, convolutions, gflops
from tvm_partition.build.tuning import tuning_target
from tvm_partition.build.templates import convolution
from tvm_partition.devices import parse_devices, use_cpu_threads
use_cpu_threads()
target = tuning_target(parse_devices("cpu")[0])
rounds = int(os.environ.get("ROUNDS", 3))
for label, kmod, nest in convolutions(sys.argv[1:], target):
    if nest.extents[5:] != (1, 1) or not convolution._aliased(nest.block, target):
        continue
    if convolution._pointwise_plan(kmod, target) is not None:
        continue
    plan = convolution._plan(kmod, target)
    if plan is None or (plan.row, plan.blocks) != (convolution.AVX2_1X1_ROW, 2):
        continue
    before = dataclasses.replace(plan, row=8, blocks=1)
    funcs = [convolution._schedule_conv(kmod, target, before), convolution._schedule_conv(kmod, target, plan)]
    (old, new), ratio = alternated(funcs, target, rounds)
    print(f"{label} {nest.extents} ep{len(nest.epilogue)} 8x1 {old:.1f} us | {plan.row}x{plan.blocks} {new:.1f} us "
          f"| {ratio:.2f} | {gflops(nest, new):.0f} GF/s", flush=True)
