"""BERT encoders (zoo names ``bert`` and ``bert-tiny``).

Settings follow the EOP paper, Table 3 (BERT, batch 16):

=============  ======  ======  =====  =====  =======  =====
name           layers  hidden  heads  ffn    seq_len  batch
=============  ======  ======  =====  =====  =======  =====
``bert``       12      768     12     3072   128      16
``bert-tiny``  2       128     2      512    128      16
=============  ======  ======  =====  =====  =======  =====

``layers``, ``seq_len`` (at most 512, the position table size) and ``batch`` can be
overridden.  Vocabulary 30522 (bert-base-uncased).

* Input ``input_ids``: ``[batch, seq_len]`` int64 token ids in ``[0, 30522)``.
* Output: the last hidden state ``[batch, seq_len, hidden]`` (no pooler / head).

Structure (post-LayerNorm BERT, as in the original / HuggingFace ``BertModel``):

* embeddings: ``take(word_embeddings, reshape(input_ids, [-1]), axis=0)`` reshaped to
  ``[batch, seq_len, hidden]`` plus the first ``seq_len`` rows of the position table (a
  ``strided_slice`` of it), then LayerNorm.  Token-type (segment) embeddings are omitted: with
  all segment ids 0 they are one constant vector, i.e. already absorbed in the position table.
  There is no attention mask (all tokens are valid).
* encoder layer: separate Q/K/V projections (``matmul`` + ``add``), heads by
  ``reshape [b, s, heads, d]`` + ``permute_dims`` (K straight to ``[b, heads, d, s]``),
  ``scores = matmul(q, k) * 1/sqrt(d)`` (a scalar constant), ``softmax`` over the last axis,
  ``matmul(probs, v)``, heads merged by ``permute_dims`` + ``reshape``, output projection,
  residual ``add`` + LayerNorm; FFN ``matmul`` -> ``gelu`` (erf form) -> ``matmul``, residual
  ``add`` + LayerNorm.  LayerNorm eps is 1e-12.  Attention is written out explicitly (no fused
  scaled-dot-product-attention op).

Linear weights are stored ``[in, out]`` so every projection is one ``matmul`` + one ``add``
(no weight transposes in the graph).

Relax ops in ``main``: ``reshape``, ``take``, ``strided_slice``, ``add``, ``nn.layer_norm``,
``matmul``, ``permute_dims``, ``multiply``, ``nn.softmax``, ``nn.gelu``.

Weights: projections N(0, 1/fan_in) (softmax inputs get O(1) spread, so attention is neither
uniform nor one-hot), embeddings N(0, 0.02^2) (BERT's initializer range), biases
N(0, 0.02^2), LayerNorm gamma 1 + N(0, 0.05^2) and beta N(0, 0.02^2).
"""

from __future__ import annotations

import math

import numpy as np
from tvm.relax.frontend import nn

from . import Dense, ZooModel, bias, export_model, param, slice_axis

VOCAB = 30522
MAX_POSITION = 512
LN_EPS = 1e-12

BERT_BASE = {"batch": 16, "seq_len": 128, "layers": 12, "hidden": 768, "heads": 12, "ffn": 3072}
BERT_TINY = {"batch": 16, "seq_len": 128, "layers": 2, "hidden": 128, "heads": 2, "ffn": 512}


class _LayerNorm(nn.Module):
    def __init__(self, hidden: int):
        self.hidden = hidden
        self.weight = param([hidden], mean=1.0, std=0.05)
        self.bias = bias(hidden)

    def forward(self, x: nn.Tensor) -> nn.Tensor:
        return nn.op.layer_norm(x, self.hidden, self.weight, self.bias, eps=LN_EPS)


class _Embeddings(nn.Module):
    def __init__(self, hidden: int, vocab: int = VOCAB, max_position: int = MAX_POSITION):
        self.hidden = hidden
        self.word_embeddings = param([vocab, hidden], std=0.02)
        self.position_embeddings = param([max_position, hidden], std=0.02)
        self.layer_norm = _LayerNorm(hidden)

    def forward(self, input_ids: nn.Tensor) -> nn.Tensor:
        batch, seq_len = (int(d) for d in input_ids.shape)
        flat = nn.op.reshape(input_ids, [batch * seq_len])
        words = nn.op.take(self.word_embeddings, flat, axis=0)
        words = nn.op.reshape(words, [batch, seq_len, self.hidden])
        positions = slice_axis(self.position_embeddings, 0, 0, seq_len, name="positions")
        return self.layer_norm(nn.op.add(words, positions))


class _SelfAttention(nn.Module):
    def __init__(self, hidden: int, heads: int):
        if hidden % heads:
            raise ValueError(f"hidden {hidden} is not divisible by heads {heads}")
        self.hidden, self.heads, self.head_dim = hidden, heads, hidden // heads
        self.query = Dense(hidden, hidden)
        self.key = Dense(hidden, hidden)
        self.value = Dense(hidden, hidden)
        self.output = Dense(hidden, hidden)

    def forward(self, x: nn.Tensor) -> nn.Tensor:
        batch, seq_len, _ = (int(d) for d in x.shape)

        def heads(t: nn.Tensor, axes: list[int]) -> nn.Tensor:
            t = nn.op.reshape(t, [batch, seq_len, self.heads, self.head_dim])
            return nn.op.permute_dims(t, axes)

        q = heads(self.query(x), [0, 2, 1, 3])  # [b, h, s, d]
        k = heads(self.key(x), [0, 2, 3, 1])  # [b, h, d, s]
        v = heads(self.value(x), [0, 2, 1, 3])  # [b, h, s, d]
        scores = nn.op.matmul(q, k) * (1.0 / math.sqrt(self.head_dim))  # scalar const
        probs = nn.op.softmax(scores, axis=-1)
        ctx = nn.op.permute_dims(nn.op.matmul(probs, v), [0, 2, 1, 3])  # [b, s, h, d]
        ctx = nn.op.reshape(ctx, [batch, seq_len, self.hidden])
        return self.output(ctx)


class _EncoderLayer(nn.Module):
    def __init__(self, hidden: int, heads: int, ffn: int):
        self.attention = _SelfAttention(hidden, heads)
        self.attention_norm = _LayerNorm(hidden)
        self.intermediate = Dense(hidden, ffn)
        self.output = Dense(ffn, hidden)
        self.output_norm = _LayerNorm(hidden)

    def forward(self, x: nn.Tensor) -> nn.Tensor:
        x = self.attention_norm(nn.op.add(self.attention(x), x))
        y = self.output(nn.op.gelu(self.intermediate(x)))
        return self.output_norm(nn.op.add(y, x))


class BertEncoder(nn.Module):
    """Embeddings + ``layers`` encoder layers; returns the last hidden state."""

    def __init__(self, layers: int, hidden: int, heads: int, ffn: int):
        self.embeddings = _Embeddings(hidden)
        self.layers = nn.ModuleList([_EncoderLayer(hidden, heads, ffn) for _ in range(layers)])

    def forward(self, input_ids: nn.Tensor) -> nn.Tensor:
        x = self.embeddings(input_ids)
        for layer in self.layers:
            x = layer(x)
        return x


def _build(name: str, defaults: dict, seed: int, **overrides) -> ZooModel:
    config = {**defaults, **overrides, "vocab": VOCAB, "max_position": MAX_POSITION}
    if config["seq_len"] > MAX_POSITION:
        raise ValueError(f"seq_len must be at most {MAX_POSITION}, got {config['seq_len']}")
    shape = (config["batch"], config["seq_len"])
    model = BertEncoder(config["layers"], config["hidden"], config["heads"], config["ffn"])
    return export_model(
        name,
        model,
        {"input_ids": (shape, "int64")},
        lambda rng: {"input_ids": rng.integers(0, VOCAB, size=shape, dtype=np.int64)},
        config,
        seed,
    )


def build_bert(name: str = "bert", *, seed: int = 0, **overrides) -> ZooModel:
    """BERT-base: input_ids ``[batch, seq_len]`` -> ``[batch, seq_len, 768]``."""
    return _build(name, BERT_BASE, seed, **overrides)


def build_bert_tiny(name: str = "bert-tiny", *, seed: int = 0, **overrides) -> ZooModel:
    """BERT-tiny: input_ids ``[batch, seq_len]`` -> ``[batch, seq_len, 128]``."""
    return _build(name, BERT_TINY, seed, **overrides)
