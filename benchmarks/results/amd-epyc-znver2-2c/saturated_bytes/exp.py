import sys, numpy as np
sys.path.insert(0, "/work/main/tests"); sys.path.insert(0, "/work/main")
from test_onnx_quant import _gelu_stack
from onnxruntime.quantization import quantize_dynamic
from tvm_partition import frontend
from tvm_partition.runtime import ort
_gelu_stack("/tmp/dq/float.onnx", layers=int(sys.argv[1]), width=128, rows=64)
quantize_dynamic("/tmp/dq/float.onnx", "/tmp/dq/dyn.onnx")
m = frontend.load("/tmp/dq/dyn.onnx")
ref = ort.outputs(m, 2)
unopt = ort.outputs(m, 2, optimized=False)
print("unopt spread", ort.mean_abs_err(unopt, ref))
feeds = ort.feeds(m)
sess = ort.session("/tmp/dq/dyn.onnx", 2)
rng = np.random.default_rng(0)
for ulps in (1, 2, 4):
    for trial in range(2):
        nf = {}
        for k, v in feeds.items():
            if np.issubdtype(v.dtype, np.floating):
                signs = rng.choice([-1, 1], size=v.shape)
                w = v.copy()
                for _ in range(ulps):
                    w = np.nextafter(w, signs * np.inf).astype(v.dtype)
                nf[k] = w
            else:
                nf[k] = v
        out = [np.asarray(o) for o in sess.run(None, nf)]
        print("input nudge", ulps, trial, ort.mean_abs_err(out, ref), ort.max_abs_err(out, ref)[0])
np.savez("/tmp/dq/ref.npz", *ref)
