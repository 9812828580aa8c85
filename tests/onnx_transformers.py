"""Transformer blocks as ONNX graphs, written with ``onnx.helper`` the way exporters emit them.

Nobody here wrote these models in TVM: they are the operator sequences PyTorch's exporter
(opset 13, before ``LayerNormalization`` and ``Gelu`` existed as ONNX ops) produces for
HuggingFace-style blocks, so the ONNX importer, the split rules and every planner meet them as a
user's model:

* ``bert_layer``: a post-LN encoder layer (BERT): Q/K/V ``MatMul`` + ``Add``, ``Reshape`` to heads,
  ``Transpose``, scaled ``MatMul`` scores, an additive attention mask, ``Softmax``, context,
  output projection, residual, LayerNorm written out (``ReduceMean``, ``Sub``, ``Pow``, ``Sqrt``,
  ``Div``, ``Mul``, ``Add``), an erf GELU feed-forward, residual, LayerNorm.
* ``gpt_block``: a pre-LN decoder block (GPT-2): one fused QKV ``MatMul`` cut by ``Split``, a causal
  mask applied with ``Where``, and the tanh GELU approximation.

Weights are seeded; each builder saves the model and returns the proto and a seeded input.
"""

from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


class _Graph:
    def __init__(self, seed: int):
        self.rng = np.random.default_rng(seed)
        self.nodes, self.inits, self.n = [], [], 0

    def name(self, hint: str) -> str:
        self.n += 1
        return f"{hint}_{self.n}"

    def const(self, value, hint="c") -> str:
        name = self.name(hint)
        self.inits.append(numpy_helper.from_array(np.asarray(value), name))
        return name

    def weight(self, shape, scale, hint="w") -> str:
        return self.const(self.rng.standard_normal(shape).astype(np.float32) * scale, hint)

    def op(self, kind, inputs, n_out=1, **attrs):
        outs = [self.name(kind.lower()) for _ in range(n_out)]
        self.nodes.append(helper.make_node(kind, list(inputs), outs, **attrs))
        return outs[0] if n_out == 1 else outs

    def linear(self, x, d_in, d_out) -> str:
        return self.op("Add", [self.op("MatMul", [x, self.weight((d_in, d_out), d_in ** -0.5)]),
                               self.weight((d_out,), 0.02, "b")])

    def layer_norm(self, x, d) -> str:
        """As exporters before opset 17 write it: mean, centred, variance, normalised, scaled."""
        mean = self.op("ReduceMean", [x], axes=[-1], keepdims=1)
        centred = self.op("Sub", [x, mean])
        var = self.op("ReduceMean", [self.op("Pow", [centred, self.const(np.float32(2.0))])], axes=[-1], keepdims=1)
        std = self.op("Sqrt", [self.op("Add", [var, self.const(np.float32(1e-5))])])
        gamma = self.const((1.0 + 0.1 * self.rng.standard_normal(d)).astype(np.float32), "gamma")
        return self.op("Add", [self.op("Mul", [self.op("Div", [centred, std]), gamma]), self.weight((d,), 0.02, "beta")])

    def gelu_erf(self, x) -> str:
        inner = self.op("Erf", [self.op("Div", [x, self.const(np.float32(np.sqrt(2.0)))])])
        return self.op("Mul", [self.op("Mul", [x, self.op("Add", [inner, self.const(np.float32(1.0))])]),
                               self.const(np.float32(0.5))])

    def gelu_tanh(self, x) -> str:
        cube = self.op("Mul", [self.op("Pow", [x, self.const(np.float32(3.0))]), self.const(np.float32(0.044715))])
        t = self.op("Tanh", [self.op("Mul", [self.op("Add", [x, cube]), self.const(np.float32(np.sqrt(2 / np.pi)))])])
        return self.op("Mul", [self.op("Mul", [x, self.const(np.float32(0.5))]),
                               self.op("Add", [t, self.const(np.float32(1.0))])])

    def heads(self, x, batch, seq, n_heads, d_head, perm) -> str:
        return self.op("Transpose", [self.op("Reshape", [x, self.const(np.array([batch, seq, n_heads, d_head]))])],
                       perm=perm)

    def attention(self, q, k, v, batch, seq, n_heads, d_head, mask) -> str:
        """Scores, the mask (``mask(scores) -> masked``), softmax, context back to [batch, seq, d]."""
        qh = self.heads(q, batch, seq, n_heads, d_head, [0, 2, 1, 3])
        kt = self.heads(k, batch, seq, n_heads, d_head, [0, 2, 3, 1])
        vh = self.heads(v, batch, seq, n_heads, d_head, [0, 2, 1, 3])
        scores = self.op("Div", [self.op("MatMul", [qh, kt]), self.const(np.float32(np.sqrt(d_head)))])
        probs = self.op("Softmax", [mask(scores)], axis=-1)
        ctx = self.op("Transpose", [self.op("MatMul", [probs, vh])], perm=[0, 2, 1, 3])
        return self.op("Reshape", [ctx, self.const(np.array([batch, seq, n_heads * d_head]))])

    def save(self, path, name, inputs, output, shape) -> onnx.ModelProto:
        graph = helper.make_graph(self.nodes, name, inputs,
                                  [helper.make_tensor_value_info(output, TensorProto.FLOAT, shape)],
                                  initializer=self.inits)
        proto = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
        proto.ir_version = 8
        onnx.checker.check_model(proto)
        onnx.save(proto, str(path))
        return proto


def bert_layer(path, batch=2, seq=8, d=16, n_heads=2, d_ff=32, seed=0):
    """A post-LN BERT encoder layer with an additive mask input ([batch, 1, 1, seq], 0 or -10000)."""
    g = _Graph(seed)
    x, m = "hidden", "mask"
    dh = d // n_heads
    q, k, v = (g.linear(x, d, d) for _ in range(3))
    ctx = g.attention(q, k, v, batch, seq, n_heads, dh, lambda s: g.op("Add", [s, m]))
    h = g.layer_norm(g.op("Add", [g.linear(ctx, d, d), x]), d)
    ff = g.linear(g.gelu_erf(g.linear(h, d, d_ff)), d_ff, d)
    out = g.layer_norm(g.op("Add", [ff, h]), d)
    proto = g.save(path, "bert_layer", [helper.make_tensor_value_info(x, TensorProto.FLOAT, [batch, seq, d]),
                                        helper.make_tensor_value_info(m, TensorProto.FLOAT, [batch, 1, 1, seq])],
                   out, [batch, seq, d])
    rng = np.random.default_rng(seed + 100)
    keep = np.ones((batch, 1, 1, seq), np.float32)
    keep[-1, ..., seq - 2:] = 0  # the last sequence is padded by two tokens
    return proto, [rng.standard_normal((batch, seq, d)).astype(np.float32), (1 - keep) * -10000.0]


def gpt_block(path, batch=2, seq=8, d=16, n_heads=2, d_ff=64, seed=0):
    """A pre-LN GPT-2 decoder block: fused QKV cut by Split, a causal mask applied with Where."""
    g = _Graph(seed)
    x = "tokens"
    dh = d // n_heads
    qkv = g.linear(g.layer_norm(x, d), d, 3 * d)
    q, k, v = g.op("Split", [qkv], n_out=3, axis=-1)
    causal = g.const(np.tril(np.ones((seq, seq), bool)).reshape(1, 1, seq, seq), "causal")
    ctx = g.attention(q, k, v, batch, seq, n_heads, dh,
                      lambda s: g.op("Where", [causal, s, g.const(np.float32(-1e4))]))
    h = g.op("Add", [x, g.linear(ctx, d, d)])
    out = g.op("Add", [h, g.linear(g.gelu_tanh(g.linear(g.layer_norm(h, d), d, d_ff)), d_ff, d)])
    proto = g.save(path, "gpt_block", [helper.make_tensor_value_info(x, TensorProto.FLOAT, [batch, seq, d])],
                   out, [batch, seq, d])
    return proto, [np.random.default_rng(seed + 100).standard_normal((batch, seq, d)).astype(np.float32)]
