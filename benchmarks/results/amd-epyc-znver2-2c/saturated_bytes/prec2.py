import sys, numpy as np
sys.path.insert(0, "/work/main")
import onnxruntime as rt
from tvm_partition import frontend
from tvm_partition.runtime import ort
from tvm_partition.cli.compile import reference_outputs
m = frontend.load("/tmp/dq/dyn.onnx")
ref = reference_outputs(m)
feeds = ort.feeds(m)
outs = {}
for lvl in ("ORT_ENABLE_BASIC", "ORT_ENABLE_EXTENDED", "ORT_ENABLE_ALL"):
    o = rt.SessionOptions(); o.intra_op_num_threads = 2
    o.graph_optimization_level = getattr(rt.GraphOptimizationLevel, lvl)
    o.add_session_config_entry("session.x64quantprecision", "1")
    s = rt.InferenceSession("/tmp/dq/dyn.onnx", o, providers=["CPUExecutionProvider"])
    outs[lvl] = out = [np.asarray(x) for x in s.run(None, feeds)]
    print(lvl, "mean", ort.mean_abs_err(out, ref), "max", ort.max_abs_err(out, ref)[0])
print("basic vs all", ort.mean_abs_err(outs["ORT_ENABLE_BASIC"], outs["ORT_ENABLE_ALL"]))
