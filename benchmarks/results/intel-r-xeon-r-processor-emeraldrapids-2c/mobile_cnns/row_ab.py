"""Scratch (provenance): every kernel the grouped row template takes (templates.grouped._group_plan)
in the models given, timed alone on the template before this change (its write-back and epilogue
scalar loops, the padding a parallel stage over the whole input; ``git show 6d8647a:
tvm_partition/build/templates/grouped.py`` saved as OLD.py, its relative import made absolute) and
after, 5 rounds.

    TVM_NUM_THREADS=2 python benchmarks/results/intel-r-xeon-r-processor-emeraldrapids-2c/mobile_cnns/row_ab.py OLD.py MODEL.onnx ...
"""
import importlib.util, os, sys
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), *[".."] * 3))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), *[".."] * 4))
from conv_kernels import alternated, convolutions
from tvm_partition.build.templates import grouped
from tvm_partition.build.tuning import tuning_target
from tvm_partition.devices import parse_devices, use_cpu_threads

spec = importlib.util.spec_from_file_location("grouped_old", sys.argv[1])
old = sys.modules["grouped_old"] = importlib.util.module_from_spec(spec)
spec.loader.exec_module(old)
use_cpu_threads()
target = tuning_target(parse_devices("cpu")[0])
print("| model | extents | before us | after us | after / before |")
print("| --- | --- | ---: | ---: | ---: |")
for label, kmod, nest in convolutions(sys.argv[2:], target, grouped=True):
    plan = grouped._group_plan(kmod, target)
    if plan is not None:
        (a, b), ratio = alternated([old._schedule_group(kmod, plan), grouped._schedule_group(kmod, plan)], target, 5)
        print(f"| {label} | {'x'.join(map(str, nest.extents))} | {a:.1f} | {b:.1f} | {ratio:.2f} |", flush=True)
