"""Scratch: onnxruntime on one Conv node of each shape (2 threads), median of 30 runs."""
import sys, time, statistics, numpy as np, onnxruntime as ort
from onnx import helper, TensorProto, numpy_helper
def model(cin, cout, k, pad, h, w, stride=1):
    kh, kw = k if isinstance(k, tuple) else (k, k)
    ph, pw = pad if isinstance(pad, tuple) else (pad, pad)
    W = numpy_helper.from_array(np.random.rand(cout, cin, kh, kw).astype(np.float32) - 0.5, "W")
    B = numpy_helper.from_array(np.random.rand(cout).astype(np.float32), "B")
    node = helper.make_node("Conv", ["x", "W", "B"], ["y"], pads=[ph, pw, ph, pw], strides=[stride, stride])
    g = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, cin, h, w])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], [W, B])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]).SerializeToString()
for c in eval(sys.argv[1]):
    so = ort.SessionOptions(); so.intra_op_num_threads = 2
    s = ort.InferenceSession(model(*c), so, providers=["CPUExecutionProvider"])
    x = np.random.rand(1, c[0], c[4], c[5]).astype(np.float32)
    for _ in range(5): s.run(None, {"x": x})
    ts = []
    for _ in range(30):
        t = time.perf_counter(); s.run(None, {"x": x}); ts.append(time.perf_counter() - t)
    kh, kw = c[2] if isinstance(c[2], tuple) else (c[2], c[2])
    out = s.run(None, {"x": x})[0].shape
    fl = 2 * c[1] * c[0] * kh * kw * out[2] * out[3]
    m = statistics.median(ts) * 1e6
    print(f"ORT {c}: {m:.0f} us {fl / m / 1e3:.0f} GF/s")
