import sys, numpy as np
sys.path.insert(0, "/work/main")
import onnxruntime as rt
from tvm_partition import frontend
from tvm_partition.runtime import ort
from tvm_partition.cli.compile import reference_outputs
m = frontend.load("/tmp/dq/dyn.onnx")
ref = reference_outputs(m)
feeds = ort.feeds(m)
for opt in (True, False):
  for prec in (None, "1"):
    o = rt.SessionOptions(); o.intra_op_num_threads = 2
    o.graph_optimization_level = rt.GraphOptimizationLevel.ORT_ENABLE_ALL if opt else rt.GraphOptimizationLevel.ORT_DISABLE_ALL
    if prec: o.add_session_config_entry("session.x64quantprecision", prec)
    s = rt.InferenceSession("/tmp/dq/dyn.onnx", o, providers=["CPUExecutionProvider"])
    out = [np.asarray(x) for x in s.run(None, feeds)]
    print("opt", opt, "prec", prec, "mean", ort.mean_abs_err(out, ref), "max", ort.max_abs_err(out, ref)[0])
