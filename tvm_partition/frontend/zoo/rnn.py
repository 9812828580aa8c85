"""Stacked LSTM and GRU, unrolled over time (zoo names ``lstm`` and ``gru``).

Settings follow the EOP paper, Table 3: input size 80, hidden size 64, 2 layers, sequence
length 100, batch 16.  ``layers``, ``seq_len`` and ``batch`` can be overridden.

* Input ``x``: ``[batch, seq_len, 80]`` float32 (batch first).
* Output: the **final hidden state of the last layer**, ``[batch, 64]``.
* Initial states are zero (as PyTorch's default); step 0 therefore skips the recurrent matmul
  (``h0 @ W_hh == 0``) and uses ``b_hh`` alone.

Gate equations are PyTorch's (``torch.nn.LSTM`` gate order i, f, g, o; ``torch.nn.GRU`` gate
order r, z, n), with the same per-layer weights but stored transposed, i.e. for layer ``l``::

    w_ih [in, G*hidden], w_hh [hidden, G*hidden], b_ih [G*hidden], b_hh [G*hidden]

(``G`` = 4 for LSTM, 3 for GRU; ``w_ih`` here is PyTorch's ``weight_ih_l{l}.T``).  The main
parameters are, layer by layer, ``layers.{l}.w_ih, layers.{l}.w_hh, layers.{l}.b_ih,
layers.{l}.b_hh``.

Graph shape (per layer and time step; the time loop is unrolled in Python):

* ``x_t = reshape(strided_slice(x, axis=1, t:t+1), [batch, 80])`` -- one slice per step.
  Deeper layers consume the previous layer's per-step hidden states directly.
* input projection: **one** ``matmul`` with all ``G*hidden`` gate columns (+ ``add b_ih``),
  recurrent projection: one ``matmul`` (+ ``add b_hh``); the gates are then cut out with
  ``strided_slice`` on axis 1.  One wide matmul per step is faster than one per gate (fewer,
  larger kernels), and keeping the input projection per step (instead of one matmul over the
  whole sequence) lets layer ``l+1`` start step ``t`` as soon as layer ``l`` produced it.

Relax ops in ``main``: ``strided_slice``, ``reshape``, ``matmul``, ``add``, ``multiply``,
``sigmoid``, ``tanh`` (GRU also ``subtract``).

Weights are N(0, gain^2/fan_in) (fan_in = rows of the matrix; gain 2 for LSTM, 1.5 for GRU),
biases N(0, 0.02^2); with x ~ N(0, 1) the gate pre-activations have O(1) spread in every layer,
so the gates neither saturate nor vanish and the hidden states stay O(0.1..1).
"""

from __future__ import annotations

import numpy as np
from tvm.relax.frontend import nn

from . import ZooModel, bias, export_model, slice_axis, weight

INPUT_SIZE = 80
HIDDEN = 64
DEFAULTS = {"batch": 16, "seq_len": 100, "layers": 2}
# Weight std = gain / sqrt(fan_in).  Chosen so the hidden-state spread stays roughly constant
# from layer to layer (gain 1 lets it shrink by ~2x per stacked layer).
LSTM_GAIN = 2.0
GRU_GAIN = 1.5


class _RNNLayer(nn.Module):
    """Weights of one layer: ``gates`` blocks of ``hidden`` columns each."""

    def __init__(self, input_size: int, hidden: int, gates: int, gain: float):
        self.hidden = hidden
        self.w_ih = weight([input_size, gates * hidden], fan_in=input_size, gain=gain)
        self.w_hh = weight([hidden, gates * hidden], fan_in=hidden, gain=gain)
        self.b_ih = bias(gates * hidden)
        self.b_hh = bias(gates * hidden)

    def _gate(self, z: nn.Tensor, k: int, name: str) -> nn.Tensor:
        """Columns of gate block ``k`` of a ``[batch, G*hidden]`` tensor."""
        return slice_axis(z, 1, k * self.hidden, (k + 1) * self.hidden, name=name)

    def _projections(self, x_t: nn.Tensor, h: nn.Tensor | None) -> tuple[nn.Tensor, nn.Tensor]:
        """``x_t @ w_ih + b_ih`` and ``h @ w_hh + b_hh`` (just ``b_hh`` while ``h`` is zero)."""
        gi = nn.op.add(nn.op.matmul(x_t, self.w_ih), self.b_ih)
        gh = self.b_hh if h is None else nn.op.add(nn.op.matmul(h, self.w_hh), self.b_hh)
        return gi, gh


class _LSTMLayer(_RNNLayer):
    def __init__(self, input_size: int, hidden: int):
        super().__init__(input_size, hidden, gates=4, gain=LSTM_GAIN)

    def forward(self, steps: list[nn.Tensor]) -> list[nn.Tensor]:
        h = c = None
        outputs = []
        for x_t in steps:
            gi, gh = self._projections(x_t, h)
            z = nn.op.add(gi, gh)
            i = nn.op.sigmoid(self._gate(z, 0, "gate_i"))
            f = nn.op.sigmoid(self._gate(z, 1, "gate_f"))
            g = nn.op.tanh(self._gate(z, 2, "gate_g"))
            o = nn.op.sigmoid(self._gate(z, 3, "gate_o"))
            ig = nn.op.multiply(i, g)
            c = ig if c is None else nn.op.add(nn.op.multiply(f, c), ig)
            h = nn.op.multiply(o, nn.op.tanh(c))
            outputs.append(h)
        return outputs


class _GRULayer(_RNNLayer):
    def __init__(self, input_size: int, hidden: int):
        super().__init__(input_size, hidden, gates=3, gain=GRU_GAIN)

    def forward(self, steps: list[nn.Tensor]) -> list[nn.Tensor]:
        h = None
        outputs = []
        for x_t in steps:
            gi, gh = self._projections(x_t, h)
            # At step 0 gh is the [G*hidden] bias vector; slicing axis 0 == its only axis.
            axis = 0 if h is None else 1
            r = nn.op.sigmoid(
                nn.op.add(self._gate(gi, 0, "gi_r"), _cols(gh, axis, 0, self.hidden, "gh_r"))
            )
            z = nn.op.sigmoid(
                nn.op.add(self._gate(gi, 1, "gi_z"), _cols(gh, axis, 1, self.hidden, "gh_z"))
            )
            n = nn.op.tanh(
                nn.op.add(
                    self._gate(gi, 2, "gi_n"),
                    nn.op.multiply(r, _cols(gh, axis, 2, self.hidden, "gh_n")),
                )
            )
            # h' = (1 - z) * n + z * h  ==  n + z * (h - n)   (h = 0 at step 0: n - z * n)
            if h is None:
                h = nn.op.subtract(n, nn.op.multiply(z, n))
            else:
                h = nn.op.add(n, nn.op.multiply(z, nn.op.subtract(h, n)))
            outputs.append(h)
        return outputs


def _cols(t: nn.Tensor, axis: int, k: int, hidden: int, name: str) -> nn.Tensor:
    return slice_axis(t, axis, k * hidden, (k + 1) * hidden, name=name)


class StackedRNN(nn.Module):
    """``layers`` stacked LSTM/GRU layers over a batch-first sequence; returns final ``h``."""

    def __init__(self, cell: str, layers: int, input_size: int = INPUT_SIZE, hidden: int = HIDDEN):
        layer_cls = {"lstm": _LSTMLayer, "gru": _GRULayer}[cell]
        self.input_size = input_size
        self.layers = nn.ModuleList(
            [layer_cls(input_size if l == 0 else hidden, hidden) for l in range(layers)]
        )

    def forward(self, x: nn.Tensor) -> nn.Tensor:
        batch, seq_len, _ = (int(d) for d in x.shape)
        steps = [
            nn.op.reshape(slice_axis(x, 1, t, t + 1, name="x_t"), [batch, self.input_size])
            for t in range(seq_len)
        ]
        for layer in self.layers:
            steps = layer(steps)
        return steps[-1]


def _build(cell: str, name: str, seed: int, **overrides) -> ZooModel:
    config = {**DEFAULTS, **overrides, "input_size": INPUT_SIZE, "hidden": HIDDEN}
    shape = (config["batch"], config["seq_len"], INPUT_SIZE)
    return export_model(
        name,
        StackedRNN(cell, config["layers"]),
        {"x": (shape, "float32")},
        lambda rng: {"x": rng.standard_normal(shape, dtype=np.float32)},
        config,
        seed,
    )


def build_lstm(name: str = "lstm", *, seed: int = 0, **overrides) -> ZooModel:
    """LSTM (EOP Table 3): x ``[batch, seq_len, 80]`` -> final hidden state ``[batch, 64]``."""
    return _build("lstm", name, seed, **overrides)


def build_gru(name: str = "gru", *, seed: int = 0, **overrides) -> ZooModel:
    """GRU (EOP Table 3): x ``[batch, seq_len, 80]`` -> final hidden state ``[batch, 64]``."""
    return _build("gru", name, seed, **overrides)
