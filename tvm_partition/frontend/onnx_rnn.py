"""ONNX ``LSTM``, ``GRU`` and ``RNN`` nodes unrolled over time into ops TVM's importer knows.

TVM 0.27's Relax ONNX importer has no converter for the recurrent ops (``OpNotImplemented: ...
GRU``), so a recurrent model exported from PyTorch (``nn.LSTM``, ``nn.GRU``, ``nn.RNN``) could not
be loaded at all. Each such node is replaced here, in the ONNX graph before TVM reads it, by the
equations of the ONNX operator specification (``LSTM``, ``GRU``, ``RNN``, opsets 7-22) written out
step by step, for the sequence length the model's bound input shapes give:

* the input's product with ``W`` for all steps at once (one ``MatMul`` of seq x batch rows, as
  cuDNN and onnxruntime do), cut into the steps by one ``Split``;
* per step the recurrent product (one ``MatMul`` over all gates, none at step 0 where the initial
  state is zero: PyTorch's default, exported as an ``Expand`` of a zero constant), the gates cut
  out by ``Slice`` and added to the step's piece of the input product gate by gate, so that TVM
  fuses the slices, the activations and the state update into the step's element-wise kernel(s)
  (the structure of the zoo's GRU, :mod:`tvm_partition.frontend.zoo.rnn`, after EOP's Table 3);
* ``Y`` (every step's state), where the model uses it, joined by a balanced tree of ``Concat``.

Measured on PyTorch's two-layer ``nn.LSTM`` / ``nn.GRU`` (input 80, hidden 64, batch 16) at
sequence 100, ``cpu`` builds in one process in alternating blocks (2 Zen 3 threads): against one
product per step and a slice of the input per step, with ``Y`` one ``Concat``, the LSTM ran 0.76x
and the GRU 0.47x; a slice of the input product per step instead of the ``Split`` made every step's
gate kernel a kernel of its own (the GRU's build took 183 s, 26 s with the ``Split``).

What the specification allows and this does not unroll is refused with one line naming the node:
activations other than Sigmoid, Tanh, Relu, Softsign and Softplus (or with parameters), ``clip``,
``input_forget``, and per-sequence lengths that differ from the sequence length. The oracle is
onnxruntime's own implementation of the three operators (``tests/test_onnx_rnn.py``).
"""

from __future__ import annotations

import numpy as np

from .onnx_graph import Emitter, Lookup, attrs, default_opset, static_shapes

#: The recurrent operators unrolled here and their gates (ONNX's order), default activations.
GATES = {"LSTM": "iofc", "GRU": "zrh", "RNN": "i"}
DEFAULT_ACTIVATIONS = {"LSTM": ("Sigmoid", "Tanh", "Tanh"), "GRU": ("Sigmoid", "Tanh"), "RNN": ("Tanh",)}
#: Activations without parameters that are ONNX operators of the same name.
ACTIVATIONS = {"sigmoid": "Sigmoid", "tanh": "Tanh", "relu": "Relu", "softsign": "Softsign", "softplus": "Softplus"}


class RecurrentError(ValueError):
    """A recurrent node this module cannot unroll; the message names it and why."""


def unroll_recurrent(proto, shapes: dict[str, list[int]]) -> int:
    """Replace every ``LSTM``, ``GRU`` and ``RNN`` node of ``proto``'s main graph (in place) by its
    steps; ``shapes``: the static shapes of the graph's inputs. Returns how many were replaced."""
    if not any(n.op_type in GATES and n.domain in ("", "ai.onnx") for n in proto.graph.node):
        return 0
    known = static_shapes(proto, shapes)
    consumed = {i for n in proto.graph.node for i in n.input} | {o.name for o in proto.graph.output}
    # read once for every node replaced (the tensors it looks up are the graph's own)
    graph = Lookup.of(proto.graph)
    opset = default_opset(proto)
    nodes, count = [], 0
    for index, node in enumerate(proto.graph.node):
        if node.op_type not in GATES or node.domain not in ("", "ai.onnx"):
            nodes.append(node)
            continue
        # ONNX does not require node names to be unique: the node's index makes the new names so
        emit = Emitter(proto.graph, f"{node.name or node.op_type}#{index}", opset)
        _Cell(node, emit, known, consumed, graph).unroll()
        nodes.extend(emit.nodes)
        count += 1
    del proto.graph.node[:]
    proto.graph.node.extend(nodes)
    return count


def _activations(kind: str, attrs: dict, dirs: int, where: str) -> list[tuple[str, ...]]:
    """The activation ops of each direction (``activations``, else the operator's defaults)."""
    default = DEFAULT_ACTIVATIONS[kind]
    names = [a.decode() for a in attrs.get("activations", [])] or list(default * dirs)
    if len(names) != len(default) * dirs or any(n.lower() not in ACTIVATIONS for n in names):
        raise RecurrentError(f"{where}: activations {names} are not supported (only "
                             f"{', '.join(sorted(set(ACTIVATIONS.values())))}, {len(default)} a direction)")
    n = len(default)
    return [tuple(ACTIVATIONS[a.lower()] for a in names[d * n:(d + 1) * n]) for d in range(dirs)]


class _Cell:
    """One recurrent node: its inputs and attributes read and checked, then unrolled."""

    def __init__(self, node, emit: Emitter, shapes: dict[str, list[int]], consumed: set[str], graph: Lookup):
        self.emit, self.kind, self.graph, self._reset = emit, node.op_type, graph, None
        given = attrs(node)
        where = f"{self.kind} node {node.name or node.output[0]!r}"
        self.layout = int(given.get("layout", 0))
        self.direction = given.get("direction", b"forward").decode()
        if self.direction not in ("forward", "reverse", "bidirectional"):
            raise RecurrentError(f"{where}: direction {self.direction!r} is not one of ONNX's")
        dirs = 2 if self.direction == "bidirectional" else 1
        for name in ("clip", "activation_alpha", "activation_beta"):
            if name in given:
                raise RecurrentError(f"{where}: attribute {name} is not supported")
        if int(given.get("input_forget", 0)):
            raise RecurrentError(f"{where}: input_forget=1 is not supported")
        self.activations = _activations(self.kind, given, dirs, where)
        self.linear_before_reset = bool(given.get("linear_before_reset", 0))
        self.hidden = int(given["hidden_size"]) if "hidden_size" in given else None
        ins = list(node.input) + [""] * (8 - len(node.input))
        self.x, self.w, self.r, self.b, lens, self.h0, self.c0, self.p = ins[:8]
        if self.kind != "LSTM":
            self.c0 = self.p = ""
        x_shape = shapes.get(self.x)
        if x_shape is None or len(x_shape) != 3:
            raise RecurrentError(f"{where}: the shape of its input {self.x!r} is not static once the inputs are bound")
        self.seq, self.batch, self.input_size = (x_shape[1], x_shape[0], x_shape[2]) if self.layout else x_shape
        self.dirs = dirs
        w_shape = shapes.get(self.w)
        if self.hidden is None:
            if w_shape is None:
                raise RecurrentError(f"{where}: no hidden_size and no static shape of W")
            self.hidden = w_shape[1] // len(GATES[self.kind])
        if lens:
            seq_lens = self.graph.array(lens)
            if seq_lens is None or np.any(seq_lens != self.seq):
                raise RecurrentError(f"{where}: sequence_lens other than the whole sequence ({self.seq}) are not supported")
        self.wanted = [o if o and o in consumed else "" for o in list(node.output) + [""] * (3 - len(node.output))]

    # ------------------------------------------------------------------ weights of one direction
    def _matrix(self, name: str, d: int, hint: str) -> str:
        """Direction ``d`` of W or R (``[gates*hidden, cols]``), transposed: ``[cols, gates*hidden]``."""
        array = self.graph.array(name)
        if array is not None:
            return self.emit.weight(array[d].T, hint)
        part = self.emit.slice(name, 0, d, d + 1)
        rows = len(GATES[self.kind]) * self.hidden
        return self.emit.op("Transpose", [self.emit.reshape(part, [rows, -1])], perm=[1, 0])

    def _vector(self, name: str, d: int, lo: int, hi: int, hint: str) -> str | None:
        """Columns ``lo:hi`` of direction ``d`` of a ``[dirs, n]`` input (B or P); None without it."""
        if not name:
            return None
        array = self.graph.array(name)
        if array is not None:
            return self.emit.weight(array[d, lo:hi], hint)
        return self.emit.reshape(self.emit.slice(self.emit.slice(name, 0, d, d + 1), 1, lo, hi), [hi - lo])

    def _zero(self, name: str) -> bool:
        """Whether ``name`` is all zeros: a constant, or PyTorch's ``Expand`` of one (its default
        initial state) or ``ConstantOfShape`` of zero."""
        from onnx import numpy_helper

        array = self.graph.array(name)
        if array is not None:
            return not np.any(array)
        producer = self.graph.producers.get(name)
        if producer is None:
            return False
        if producer.op_type == "Expand":
            return self._zero(producer.input[0])
        if producer.op_type == "ConstantOfShape":
            value = next((a.t for a in producer.attribute if a.name == "value"), None)
            return value is None or not np.any(numpy_helper.to_array(value))
        return False

    def _state(self, name: str, d: int) -> str | None:
        """Direction ``d`` of an initial state, ``[batch, hidden]``; None where it is zero."""
        if not name or self._zero(name):
            return None
        return self.emit.reshape(self.emit.slice(name, 1 if self.layout else 0, d, d + 1), [self.batch, self.hidden])

    # ------------------------------------------------------------------ the steps
    def unroll(self) -> None:
        e, gates = self.emit, len(GATES[self.kind])
        time_axis = 1 if self.layout else 0
        rows = e.reshape(self.x, [self.seq * self.batch, self.input_size])
        per_dir = []
        for d in range(self.dirs):
            reverse = self.direction == "reverse" or d == 1
            w, r = self._matrix(self.w, d, "w_t"), self._matrix(self.r, d, "r_t")
            wb = self._vector(self.b, d, 0, gates * self.hidden, "wb")
            rb = self._vector(self.b, d, gates * self.hidden, 2 * gates * self.hidden, "rb")
            h, c = self._state(self.h0, d), self._state(self.c0, d)
            self.peep = [self._vector(self.p, d, k * self.hidden, (k + 1) * self.hidden, "p") for k in range(3)]
            # the input's product for every step at once (one matmul of seq x batch rows), cut
            # into the steps by one Split: each step's gates then read their piece, and the gate
            # kernels of all steps are one kernel (a slice per step made each step's its own)
            proj = self._plus(e.op("MatMul", [rows, w]), wb)
            proj = e.reshape(proj, [self.batch, self.seq, -1] if self.layout else [self.seq, self.batch, -1])
            pieces = e.split(proj, time_axis, self.seq) if self.seq > 1 else [proj]
            hs = [None] * self.seq
            for t in (reversed(range(self.seq)) if reverse else range(self.seq)):
                gi = e.reshape(pieces[t], [self.batch, gates * self.hidden])
                h, c = getattr(self, f"_{self.kind.lower()}_step")(d, gi, h, c, r, rb)
                hs[t] = h
            per_dir.append((hs, h, c))
        self._outputs(per_dir)

    def _gate(self, x: str, k: int, hidden_axis: int = 1) -> str:
        return self.emit.slice(x, hidden_axis, k * self.hidden, (k + 1) * self.hidden)

    def _recurrent(self, h: str | None, r: str, rb: str | None) -> str | None:
        """``h R^T + Rb`` (``Rb`` alone, a vector, where ``h`` is zero; None without either)."""
        if h is None:
            return rb
        gh = self.emit.op("MatMul", [h, r])
        return self.emit.op("Add", [gh, rb]) if rb else gh

    def _plus(self, a: str, b: str | None) -> str:
        return a if b is None else self.emit.op("Add", [a, b])

    def _gh_gate(self, gh: str | None, h: str | None, k: int) -> str | None:
        return None if gh is None else self._gate(gh, k, 0 if h is None else 1)

    def _rnn_step(self, d, gi, h, c, r, rb):
        (f,) = self.activations[d]
        return self.emit.op(f, [self._plus(gi, self._recurrent(h, r, rb))]), None

    def _lstm_step(self, d, gi, h, c, r, rb):
        e, (f, g, act_h) = self.emit, self.activations[d]
        gh = self._recurrent(h, r, rb)
        pre = [self._plus(self._gate(gi, k), self._gh_gate(gh, h, k)) for k in range(4)]  # i, o, f, c

        def peephole(x, k, state):  # P (.) C, where there are peepholes and C is not zero
            p = self.peep[k]
            return x if p is None or state is None else e.op("Add", [x, e.op("Mul", [p, state])])

        i = e.op(f, [peephole(pre[0], 0, c)])
        forget = e.op(f, [peephole(pre[2], 2, c)])
        ic = e.op("Mul", [i, e.op(g, [pre[3]])])
        c = ic if c is None else e.op("Add", [e.op("Mul", [forget, c]), ic])
        o = e.op(f, [peephole(pre[1], 1, c)])
        return e.op("Mul", [o, e.op(act_h, [c])]), c

    def _gru_step(self, d, gi, h, c, r_all, rb):
        e, (f, g) = self.emit, self.activations[d]
        if self.linear_before_reset or h is None:
            gh = self._recurrent(h, r_all, rb)  # all three gates of h R^T + Rb at once
            z = e.op(f, [self._plus(self._gate(gi, 0), self._gh_gate(gh, h, 0))])
            r = e.op(f, [self._plus(self._gate(gi, 1), self._gh_gate(gh, h, 1))])
            hh = self._gh_gate(gh, h, 2)  # h R_h^T + Rb_h; at h = 0 either form is Rb_h alone
            if hh is not None and self.linear_before_reset:
                hh = e.op("Mul", [r, hh])
        else:  # (r * h) R_h^T: the z and r columns first, then the reset state's product
            (r_zr, rb_zr), (r_h, rb_h) = self._reset_weights(r_all, rb)
            zr = self._plus(e.op("MatMul", [h, r_zr]), rb_zr)
            z = e.op(f, [e.op("Add", [self._gate(gi, 0), self._gate(zr, 0)])])
            r = e.op(f, [e.op("Add", [self._gate(gi, 1), self._gate(zr, 1)])])
            hh = self._plus(e.op("MatMul", [e.op("Mul", [r, h]), r_h]), rb_h)
        n = e.op(g, [self._plus(self._gate(gi, 2), hh)])
        # h' = (1 - z) n + z h  ==  n + z (h - n)   (h = 0: n - z n)
        if h is None:
            return e.op("Sub", [n, e.op("Mul", [z, n])]), None
        return e.op("Add", [n, e.op("Mul", [z, e.op("Sub", [h, n])])]), None

    def _reset_weights(self, r_all: str, rb: str | None) -> tuple:
        """``((R_zr, Rb_zr), (R_h, Rb_h))``: the columns of ``R^T`` and ``Rb`` of the z and r gates
        and of the h gate, cut once a direction (GRU with ``linear_before_reset=0``)."""
        if self._reset is None or self._reset[0] != (r_all, rb):
            e, hid = self.emit, self.hidden
            cols = [(e.slice(r_all, 1, lo, hi), e.slice(rb, 0, lo, hi) if rb else None)
                    for lo, hi in ((0, 2 * hid), (2 * hid, 3 * hid))]
            self._reset = ((r_all, rb), cols)
        return self._reset[1]

    # ------------------------------------------------------------------ Y, Y_h, Y_c
    def _outputs(self, per_dir) -> None:
        e, (y, y_h, y_c) = self.emit, self.wanted
        b, hid = self.batch, self.hidden
        if y:
            shape, t_axis, d_axis = ([b, 1, 1, hid], 1, 2) if self.layout else ([1, 1, b, hid], 0, 1)
            e.concat([e.concat([e.reshape(h, shape) for h in hs], t_axis) for hs, _, _ in per_dir], d_axis, out=y)
        shape, axis = ([b, 1, hid], 1) if self.layout else ([1, b, hid], 0)
        for out, index in ((y_h, 1), (y_c, 2)):
            if out:
                e.concat([e.reshape(state[index], shape) for state in per_dir], axis, out=out)
