import os
import numpy as np, tvm, time
from tvm import tirx, te
from tvm.tirx import IntImm
C, H, W, L = 128, 56, int(os.environ.get("W", 56)), 16
K = 8 if W % 16 else 16
import os
K = int(os.environ.get("K", K))

def network(vecs, L, k):
    """vecs: L PrimExprs of L lanes (rows); returns (lets, outs) where outs[c] = column c (L lanes)."""
    lets = []
    r = list(vecs)
    t = L // 2
    n = 0
    while t:
        for i in range(L):
            if i & t: continue
            j = i + t
            lo = [l if not l & t else L + l - t for l in range(L)]
            hi = [l + t if not l & t else L + l for l in range(L)]
            a, b = r[i], r[j]
            vlo = tirx.Var(f"t{n}", f"float32x{L}"); n += 1
            vhi = tirx.Var(f"t{n}", f"float32x{L}"); n += 1
            lets.append((vlo, tirx.Shuffle([a, b], [IntImm("int32", x) for x in lo])))
            lets.append((vhi, tirx.Shuffle([a, b], [IntImm("int32", x) for x in hi])))
            r[i], r[j] = vlo, vhi
        t //= 2
    return lets, r[:k]

A = tirx.decl_buffer((C, H, W), "float32", "A")
B = tirx.decl_buffer((C // L, H, W, L), "float32", "B")
co, row, xo = tirx.Var("co", "int32"), tirx.Var("row", "int32"), tirx.Var("xo", "int32")
loads = []
lets0 = []
for ch in range(L):
    v = tirx.Var(f"l{ch}", f"float32x{K}")
    lets0.append((v, tirx.BufferLoad(A, [co * L + ch, row, tirx.Ramp(xo * K, 1, K)])))
    widened = v if K == L else tirx.Shuffle([v, v], [IntImm("int32", i if i < K else 0) for i in range(L)])
    loads.append(widened)
lets, outs = network(loads, L, K)
stores = tirx.SeqStmt([tirx.BufferStore(B, o, [co, row, xo * K + j, tirx.Ramp(0, 1, L)]) for j, o in enumerate(outs)])
body = tirx.SeqStmt([tirx.Bind(v, e) for v, e in lets0 + lets] + [stores])
body = tirx.For(xo, 0, W // K, tirx.ForKind.SERIAL, body)
body = tirx.For(row, 0, H, tirx.ForKind.SERIAL, body)
body = tirx.For(co, 0, C // L, tirx.ForKind.PARALLEL, body)
f = tirx.PrimFunc([A, B], body).with_attr("global_symbol", "main").with_attr("tirx.noalias", True)

# baseline: vectorised along channels (gather)
Ai = te.placeholder((C, H, W), name="A")
Bo = te.compute((C // L, H, W, L), lambda a, b, c, d: Ai[a * L + d, b, c], name="B")
g = te.create_prim_func([Ai, Bo])
from tvm import s_tir
sch = s_tir.Schedule(g)
blk = sch.get_sblock("B")
a, b, c, d = sch.get_loops(blk)
sch.parallel(a); sch.vectorize(d)
g = sch.mod["main"]
from tvm_partition.devices import codegen_target, parse_devices
from tvm_partition.build.tuning import tuning_target
t = tvm.target.Target(codegen_target(dict(tvm.target.Target(tuning_target(parse_devices("cpu")[0])).export())))
dev = tvm.cpu()
a_np = np.random.rand(C, H, W).astype("float32")
ref = a_np.reshape(C // L, L, H, W).transpose(0, 2, 3, 1)
for name, fn in (("gather", g), ("shuffle", f)):
    ex = tvm.compile(tvm.IRModule({"main": fn}), target=t); lib = ex.jit()
    x = tvm.runtime.tensor(a_np, dev); y = tvm.runtime.tensor(np.zeros(ref.shape, "float32"), dev)
    lib["main"](x, y)
    print(name, "ok" if np.array_equal(y.numpy(), ref) else "WRONG",
          "%.1f us" % (np.median(lib.time_evaluator("main", dev, number=50, repeat=7)(x, y).results) * 1e6))
    if name == "shuffle":
        ex.export_library("/tmp/z/tp.so")
if os.environ.get("PRINT"):
    print(f.script()[:3000])
