"""Provenance of BENCHMARKS.md's "Matmul chunks in models" (2026-12-06): ``python ffn_model.py OUT.onnx L``
writes L layers of ``relu(x @ w1 + b1) @ w2 + b2`` (x: 64 x 768, w1: 768 x 3072, w2: 3072 x 768; seeded).
ffn8: L = 8 (151 MB of weights), ffn1: L = 1."""
import numpy as np, onnx, sys
from onnx import helper as h, TensorProto as T, numpy_helper as nh
L, M, D, F = int(sys.argv[2]), 64, 768, 3072
rng = np.random.default_rng(0)
nodes, inits = [], []
cur = "x"
for l in range(L):
    for nm, shape in ((f"w1_{l}", (D, F)), (f"b1_{l}", (F,)), (f"w2_{l}", (F, D)), (f"b2_{l}", (D,))):
        inits.append(nh.from_array((rng.standard_normal(shape) * 0.03).astype(np.float32), nm))
    nodes += [h.make_node("MatMul", [cur, f"w1_{l}"], [f"m1_{l}"]), h.make_node("Add", [f"m1_{l}", f"b1_{l}"], [f"a1_{l}"]),
              h.make_node("Relu", [f"a1_{l}"], [f"r_{l}"]),
              h.make_node("MatMul", [f"r_{l}", f"w2_{l}"], [f"m2_{l}"]), h.make_node("Add", [f"m2_{l}", f"b2_{l}"], [f"y_{l}"])]
    cur = f"y_{l}"
g = h.make_graph(nodes, "ffn", [h.make_tensor_value_info("x", T.FLOAT, [M, D])], [h.make_tensor_value_info(cur, T.FLOAT, [M, D])], inits)
m = h.make_model(g, opset_imports=[h.make_opsetid("", 17)]); m.ir_version = 8
onnx.save(m, sys.argv[1])
