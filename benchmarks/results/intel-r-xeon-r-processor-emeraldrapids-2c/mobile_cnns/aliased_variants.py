"""Scratch (provenance): every distinct 1x1 convolution kernel of the models given, timed alone with
the build's schedule and with the aliased-plane rules of templates.convolution undone apart: the
input's (`_aliased`: the 1x1 template refused, the 7 x 2 tile refused) and the output's
(`_aliased_output`: one vector of channels), 3 rounds, this machine's thread pool (run before
ALIASED_INPUT_IGNORED, which now undoes the first on this VM).

    TVM_NUM_THREADS=2 python benchmarks/results/intel-r-xeon-r-processor-emeraldrapids-2c/mobile_cnns/aliased_variants.py MODEL.onnx ...
"""
import os, sys
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), *[".."] * 3))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), *[".."] * 4))
from conv_kernels import alternated, convolutions, patched
from tvm_partition.build.tuning import open_schedules, tuning_target
from tvm_partition.devices import database_dir, parse_devices, use_cpu_threads

use_cpu_threads()
target = tuning_target(parse_devices("cpu")[0])
no = lambda *a: False
variants = {"build": {}, "no input alias": {"_aliased": no}, "no output alias": {"_aliased_output": no},
            "neither": {"_aliased": no, "_aliased_output": no}}
print("| model | extents | " + " | ".join(variants) + " |")
for label, kmod, nest in convolutions(sys.argv[1:], target):
    if nest.extents[-2:] != (1, 1):
        continue
    funcs = []
    for patch in variants.values():
        with patched(**patch):
            funcs.append(open_schedules(database_dir(None)).schedule(kmod, target)[0] or kmod["main"])
    med, _ = alternated(funcs, target, 3)
    print(f"| {label} | {'x'.join(map(str, nest.extents))} | " + " | ".join(f"{m:.1f}" for m in med) + " |", flush=True)
