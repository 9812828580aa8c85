"""Scratch (provenance): every distinct stride-1 depthwise convolution kernel of the models given, at
least templates.grouped.MIN_GROUP_WIDTH wide, timed alone: the build's schedule (the channel
template where it has MIN_DEPTHWISE_BLOCKS vectors of channels) against the row template
(templates.grouped._schedule_group, after its epilogue was vectorised), 3 rounds.

    TVM_NUM_THREADS=2 python benchmarks/results/intel-r-xeon-r-processor-emeraldrapids-2c/mobile_cnns/depthwise_variants.py MODEL.onnx ...
"""
import os, sys
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), *[".."] * 3))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), *[".."] * 4))
from conv_kernels import alternated, convolutions
from tvm_partition.build.templates import common, grouped
from tvm_partition.build.tuning import open_schedules, tuning_target
from tvm_partition.devices import database_dir, parse_devices, use_cpu_threads

use_cpu_threads()
target = tuning_target(parse_devices("cpu")[0])
print("| model | extents | build (template) | row template | row / build |")
print("| --- | --- | ---: | ---: | ---: |")
for label, kmod, nest in convolutions(sys.argv[1:], target, grouped=True):
    _, _, oh, ow, group_channels, _, _ = nest.extents
    if group_channels != 1 or common._column_stride(nest.block) != 1 or ow < grouped.MIN_GROUP_WIDTH:
        continue
    lanes, _ = common.vector_lanes(target)
    plan = grouped._GroupPlan(nest.epilogue, common._row(ow, lanes), next(r for r in grouped.GROUP_ROWS if oh % r == 0),
                              nest.padded)
    built, name = open_schedules(database_dir(None)).schedule(kmod, target)
    (a, b), ratio = alternated([built, grouped._schedule_group(kmod, plan)], target, 3)
    print(f"| {label} | {'x'.join(map(str, nest.extents))} | {a:.1f} ({name.split(' ')[0]}) | {b:.1f} | {ratio:.2f} |", flush=True)
