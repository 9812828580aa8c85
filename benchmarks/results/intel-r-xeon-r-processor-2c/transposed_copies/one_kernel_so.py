"""Build one depthwise kernel of MODEL (index IDX among grouped convs) with the template, export, loop it."""
import os, sys, time
sys.path.insert(0, "/work/main/benchmarks")
import numpy as np, tvm
from conv_kernels import convolutions
from tvm_partition.build import templates
from tvm_partition.build.tuning import tuning_target
from tvm_partition.devices import parse_devices, codegen_target
from tvm_partition.cost_models.timing import random_tensor
target = tuning_target(parse_devices("cpu")[0])
idx = int(os.environ.get("IDX", 2))
for i, (label, kmod, nest) in enumerate(convolutions(os.environ["MODEL"].split(","), target, grouped=True)):
    if i == idx: break
print(label, nest.extents)
f = templates.schedule(kmod, target)
if os.environ.get("SHOW"): print(f.script())
mod = templates.without_packing(tvm.IRModule({"main": f.with_attr("global_symbol", "main")}))
func = mod["main"]
t = tvm.target.Target(codegen_target(dict(tvm.target.Target(target).export())))
lib = tvm.compile(mod, target=t)
lib.export_library("/tmp/z/dw.so")
lib = lib.jit() if hasattr(lib, "jit") else lib
dev = tvm.cpu(); rng = np.random.default_rng(0)
import json; json.dump([[[int(x) for x in b.shape], str(b.dtype)] for b in func.params], open("/tmp/z/dw.json","w"))
args = [random_tensor([int(x) for x in b.shape], str(b.dtype), dev, rng) for b in func.params]
ev = lib.time_evaluator("main", dev, number=1, repeat=5, min_repeat_ms=50)
print("us", np.median(ev(*args).results) * 1e6)
n = int(os.environ.get("LOOP", 0))
t0 = time.time()
for _ in range(n): lib["main"](*args)
if n: print("loop us", (time.time() - t0) / n * 1e6)
