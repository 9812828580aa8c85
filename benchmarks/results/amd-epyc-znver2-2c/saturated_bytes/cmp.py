import sys, numpy as np
sys.path.insert(0, "/work/main")
from tvm_partition import frontend
from tvm_partition.runtime import ort
from tvm_partition.runtime.runner import Runner
from tvm_partition.cli.compile import reference_outputs
m = frontend.load(sys.argv[1])
ref = reference_outputs(m)
ours = Runner(sys.argv[2]).run(m.inputs)
theirs = ort.outputs(m, 2)
for a, b, n in ((ours, ref, "ours-ref"), (ours, theirs, "ours-ort"), (ref, theirs, "ref-ort")):
    tol = ort.tolerance(b)
    print(n, "mean", ort.mean_abs_err(a, b), "max", ort.max_abs_err(a, b)[0], "share", ort.flipped_share(a, b, tol))
