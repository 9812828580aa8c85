import sys, numpy as np
sys.path.insert(0, "/work/main")
from onnxruntime.quantization import quantize_dynamic
from tvm_partition import frontend
from tvm_partition.runtime import ort
from tvm_partition.cli.compile import reference_outputs
quantize_dynamic("/tmp/dq/float.onnx", "/tmp/dq/dyn_rr.onnx", reduce_range=True)
for f in ("/tmp/dq/dyn.onnx", "/tmp/dq/dyn_rr.onnx"):
    m = frontend.load(f)
    ref = reference_outputs(m); theirs = ort.outputs(m, 2)
    print(f, "ref-ort mean", ort.mean_abs_err(ref, theirs), "max", ort.max_abs_err(ref, theirs)[0])
