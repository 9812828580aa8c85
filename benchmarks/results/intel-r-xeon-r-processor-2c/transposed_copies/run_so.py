import json, time, sys, numpy as np, tvm
lib = tvm.runtime.load_module(sys.argv[1] if len(sys.argv) > 1 else "/tmp/z/dw.so")
dev = tvm.cpu()
args = [tvm.runtime.tensor(np.asarray(np.random.rand(*s), dtype=d), dev) for s, d in json.load(open("/tmp/z/dw.json"))]
f = lib["main"]
for _ in range(100): f(*args)
n = int(sys.argv[2]) if len(sys.argv) > 2 else 5000
t0 = time.time()
for _ in range(n): f(*args)
print("us", (time.time() - t0) / n * 1e6)
