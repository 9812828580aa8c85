"""onnxruntime's quantized operators written in the form TVM's importer converts: each quantized
operand dequantized, the float operator, its result quantized again.

onnxruntime's quantizer writes a model in one of two forms ("Quantize ONNX models", onnxruntime's
documentation): QDQ, ``DequantizeLinear -> op -> QuantizeLinear`` around float operators, and
QOperator, the same arithmetic as quantized operators: ``QLinearConv`` and ``QLinearMatMul`` of the
standard, and in its own ``com.microsoft`` domain ``QGemm``, ``QLinearAdd``, ``QLinearMul``,
``QLinearConcat``, the pools, ``QLinearSigmoid``, ... onnxruntime's own graph optimizer turns the
first form into the second (its QDQ transformer); this module turns the second into the first.
Dynamic quantization (``quantize_dynamic``) writes ``DynamicQuantizeLinear``, ``MatMulInteger`` and,
for convolutions, ``ConvInteger``. TVM 0.27 converts ``QuantizeLinear``, ``DequantizeLinear``,
``DynamicQuantizeLinear`` and ``MatMulInteger`` and none of the others: such a model was refused
("OpNotImplemented: The following operators are not supported for frontend ONNX: QGemm,
QLinearConv", a CNN and an MLP quantized by onnxruntime 1.32 in its QOperator form, 2026-12-05).
Its ``MatMulInteger`` is a product of int32s, which ran slower than the float one (no vector
instruction multiplies int32s as fast): DistilBERT quantized dynamically 101 ms a run against 47 for
the float model (``bench``, rocketlake-2c, 2026-12-05); written here as ``ConvInteger`` is, a float
product of the integers.

Each operator's definition is that of its schema (onnxruntime's contrib schemas for
``com.microsoft``): ``QLinearAdd``'s ``C = (A_scale * (A - A_zp) + B_scale * (B - B_zp)) / C_scale +
C_zp``, a ``QGemm``'s int32 bias ``C`` of scale ``alpha * a_scale * b_scale``, a ``QLinearConv``'s of
``x_scale * w_scale``. Operands that are weights (the tensor, its scale and zero point constants)
are dequantized here, once, into float weights; only activations keep a ``DequantizeLinear``.

The float arithmetic is not onnxruntime's integer one: onnxruntime accumulates a convolution's
products of integers exactly and rounds once when it requantizes, the float form rounds each sum.
Results differ where a value lands within that rounding of a quantization step's midpoint: an output
one step apart, rarely (tests: the CNN and MLP above against onnxruntime). The float convolution or
product of integers of ``ConvInteger`` and ``MatMulInteger`` is exact while its partial sums stay
below 2**24 (a float32's integers).
"""

from __future__ import annotations

import dataclasses

import numpy as np

from .onnx_graph import Emitter, Lookup, attrs, default_opset, drop_unread_initializers, subgraph_reads, subgraphs

MS = "com.microsoft"
DQ, Q = ("", "DequantizeLinear"), ("", "QuantizeLinear")
FLOAT, INT32 = 1, 6  # onnx.TensorProto's element types


class QuantError(ValueError):
    """A quantized operator in a form this module does not write out (said in one line)."""


@dataclasses.dataclass(frozen=True)
class _Form:
    """A quantized operator as a float one: ``operands``, the positions of its quantized inputs
    (each followed by its scale and zero point); ``axes``, the ``DequantizeLinear`` axis of each
    (that of a per-channel scale; None: per tensor only); ``out``, the position of the output's scale
    (its zero point after it; None: a float output); ``plain``, inputs taken as they are."""

    op: str
    operands: tuple[int, ...]
    out: int | None
    axes: tuple[int | None, ...] = ()
    plain: tuple[int, ...] = ()


FORMS = {
    ("", "QLinearConv"): _Form("Conv", (0, 3), 6, axes=(None, 0)),
    ("", "QLinearMatMul"): _Form("MatMul", (0, 3), 6, axes=(-2, -1)),
    (MS, "QGemm"): _Form("Gemm", (0, 3), 7),  # B's axis: by transB (_gemm_axes)
    (MS, "QLinearAdd"): _Form("Add", (0, 3), 6),
    (MS, "QLinearMul"): _Form("Mul", (0, 3), 6),
    (MS, "QLinearWhere"): _Form("Where", (1, 4), 7, plain=(0,)),
    (MS, "QLinearSigmoid"): _Form("Sigmoid", (0,), 3),
    (MS, "QLinearLeakyRelu"): _Form("LeakyRelu", (0,), 3),
    (MS, "QLinearSoftmax"): _Form("Softmax", (0,), 3),
    (MS, "QLinearGlobalAveragePool"): _Form("GlobalAveragePool", (0,), 3),
    (MS, "QLinearAveragePool"): _Form("AveragePool", (0,), 3),
    (MS, "QLinearReduceMean"): _Form("ReduceMean", (0,), 3),
}
#: The integer operators of dynamic quantization: their float operator, and the axes of a vector of
#: zero points of each operand (ONNX's schemas: a convolution's weights per output channel; a
#: product's ``a`` per row, ``b`` per column).
INTEGER_OPS = {("", "ConvInteger"): ("Conv", (None, 0)), ("", "MatMulInteger"): ("MatMul", (-2, -1))}
#: Every quantized operator :func:`_rewrite` writes in float form.
KNOWN = frozenset(FORMS) | set(INTEGER_OPS) | {(MS, "QLinearConcat")}
#: The int32 bias input of these, and which operands' scales (times ``alpha``) are its scale.
BIAS = {("", "QLinearConv"): 8, (MS, "QGemm"): 6}


def quantized_as_float(proto) -> int:
    """Rewrite in place every quantized operator of ``proto`` (subgraphs included) this module
    knows (:data:`FORMS`, ``QLinearConcat``, :data:`INTEGER_OPS`) in float form, and each data movement
    between a dequantize and a quantize of one grid on the integers (:func:`_moves_on_integers`).
    Returns how many nodes it rewrote."""
    opset = default_opset(proto)
    count, graphs = 0, [proto.graph]
    while graphs:
        graph = graphs.pop()
        count += _moves_on_integers(graph) + _rewrite(graph, opset)
        graphs.extend(g for node in graph.node for g in subgraphs(node))
    return count


#: Operators that move or pick values without computing new ones: between a ``DequantizeLinear``
#: and a ``QuantizeLinear`` of one scale and zero point they give the integers they were given.
MOVES = frozenset({"Reshape", "Transpose", "Squeeze", "Unsqueeze", "Flatten", "Slice", "MaxPool", "Identity"})


def _moves_on_integers(graph) -> int:
    """Each ``DequantizeLinear -> MOVE -> QuantizeLinear`` of one per-tensor scale and zero point
    (and nothing else reading what the last two read) as the move of the integers; a dequantize left
    unread removed. Returns how many. Why: the QDQ form quantizes around every reshape and transpose
    (ShuffleNet's channel shuffles: 48 of them), which onnxruntime's graph optimizer drops; each pair
    was a dequantize and a quantize fused into the shuffle's kernel, 1.3 ms of ShuffleNet's 7.4 a run
    (`run --kernels`, rocketlake-2c, 2026-12-05). The values are the same: dequantized values lie on
    the grid the quantize rounds to."""
    lookup, nodes = Lookup.of(graph), list(graph.node)
    readers = _readers(nodes)
    outputs = {o.name for o in graph.output} | subgraph_reads(graph)
    moved: dict[int, tuple[str, str]] = {}
    for i, node in enumerate(nodes):
        if _key(node) != ("", node.op_type) or node.op_type not in MOVES or node.output[0] in outputs:
            continue
        dq, after = lookup.producers.get(node.input[0]), readers.get(node.output[0], [])
        if dq is None or _key(dq) != DQ or len(after) != 1 or _key(nodes[after[0]]) != Q:
            continue
        if _same_grid(lookup, dq, nodes[after[0]]):
            moved[i] = (dq.input[0], nodes[after[0]].output[0])
    if not moved:
        return 0
    dropped = {readers[nodes[i].output[0]][0] for i in moved}
    for i, (source, out) in moved.items():
        nodes[i].input[0], nodes[i].output[0] = source, out
    kept = [n for i, n in enumerate(nodes) if i not in dropped]
    read = {name for n in kept for name in n.input} | outputs
    kept = [n for n in kept if _key(n) != DQ or n.output[0] in read]
    del graph.node[:]
    graph.node.extend(kept)
    return len(moved)


def _same_grid(lookup: Lookup, dq, q) -> bool:
    """Whether ``dq`` and ``q`` take one per-tensor scale and one zero point, constants (given both:
    without one, ``QuantizeLinear`` writes uint8 whatever ``dq`` read)."""
    if len(dq.input) < 3 or len(q.input) < 3 or not dq.input[2] or not q.input[2]:
        return False
    pairs = [(lookup.array(a), lookup.array(b)) for a, b in zip(dq.input[1:3], q.input[1:3])]
    return all(a is not None and b is not None and a.size == 1 and a.dtype == b.dtype and np.array_equal(a, b)
               for a, b in pairs)


def _key(node) -> tuple[str, str]:
    return ("" if node.domain in ("", "ai.onnx") else node.domain, node.op_type)


def _rewrite(graph, opset: int) -> int:
    if not any(_key(n) in KNOWN for n in graph.node):
        return 0
    lookup, nodes, count, replaced = Lookup.of(graph), [], 0, set()
    floats = _read_as_floats(graph)
    for node in graph.node:
        key = _key(node)
        if node.op_type == "Cast" and node.input[0] in floats:  # an integer op's, float already
            identity = type(node)()
            identity.CopyFrom(node)
            identity.op_type = "Identity"
            del identity.attribute[:]
            nodes.append(identity)
            continue
        if key not in KNOWN or key == ("", "MatMulInteger") and not _zero_points_known(lookup, node):
            nodes.append(node)
            continue
        em = Emitter(graph, f"{node.output[0]}/float", opset)
        if key in INTEGER_OPS:
            _integer_op(em, lookup, node, node.output[0] in floats)
        elif key == (MS, "QLinearConcat"):
            _concat(em, lookup, node)
        else:
            _operator(em, lookup, node, FORMS[key], BIAS.get(key))
        nodes.extend(em.nodes)
        replaced.update(node.input)
        count += 1
    del graph.node[:]
    graph.node.extend(nodes)
    drop_unread_initializers(graph, replaced)  # the quantized weights, now dequantized
    return count


def _operator(em: Emitter, lookup: Lookup, node, form: _Form, bias: int | None) -> None:
    ins = list(node.input) + [""] * 10
    given = attrs(node)
    axes = _gemm_axes(given) if form.op == "Gemm" else form.axes or (None,) * len(form.operands)
    inputs = {i: ins[i] for i in form.plain}
    for i, axis in zip(form.operands, axes):
        inputs[i] = dequantized(em, lookup, ins[i], ins[i + 1], ins[i + 2], axis)
    scales = [ins[i + 1] for i in form.operands]
    if bias is not None and ins[bias]:
        inputs[bias] = _bias(em, lookup, ins[bias], scales, given.get("alpha", 1.0))
    float_inputs = [inputs[i] for i in sorted(inputs)]
    quantized = form.out is not None and ins[form.out]
    out = em.name("float") if quantized else node.output[0]
    _float_op(em, form.op, float_inputs, out, given)
    if quantized:
        zp = [ins[form.out + 1]] if ins[form.out + 1] else []
        em.op("QuantizeLinear", [out, ins[form.out]] + zp, node.output[0])


def _float_op(em: Emitter, op: str, inputs: list[str], out: str, attrs: dict) -> None:
    """The float operator of a quantized one's attributes (those of quantization dropped)."""
    if attrs.pop("channels_last", 0):
        raise QuantError(f"{op} of channels_last=1 (a quantized pool over NHWC) is not written out")
    if op == "Softmax":
        _softmax(em, inputs[0], out, attrs.pop("opset", 13), attrs.get("axis", -1))
        return
    if op == "ReduceMean" and em.opset >= 18 and "axes" in attrs:
        inputs = inputs + [em.ints(attrs.pop("axes"))]
    em.op(op, inputs, out, **attrs)


def _softmax(em: Emitter, x: str, out: str, version: int, axis: int) -> None:
    """Softmax of ONNX ``version``'s meaning in a model of ``em.opset``: before 13 the input is
    flattened into rows at ``axis`` (``Flatten``, a softmax over each row, and the shape back)."""
    if version >= 13 and em.opset < 13 and axis != -1:
        raise QuantError(f"QLinearSoftmax of opset {version} on axis {axis} in a model of opset {em.opset}")
    if version >= 13:
        em.op("Softmax", [x], out, axis=axis)
        return
    rows = em.op("Softmax", [em.op("Flatten", [x], axis=axis)], axis=1 if em.opset < 13 else -1)
    em.op("Reshape", [rows, em.op("Shape", [x])], out)


def _gemm_axes(attrs: dict) -> tuple[int | None, int]:
    """A ``QGemm``'s B is quantized per column, its columns its axis 1, or 0 where transposed."""
    return None, 0 if attrs.get("transB", 0) else 1


def _concat(em: Emitter, lookup: Lookup, node) -> None:
    """``QLinearConcat(Y_scale, Y_zp, x0, s0, zp0, x1, ...)``."""
    ins = list(node.input)
    parts = [dequantized(em, lookup, *ins[i:i + 3], None) for i in range(2, len(ins), 3)]
    given = attrs(node)
    joined = em.op("Concat", parts, axis=given["axis"])
    em.op("QuantizeLinear", [joined, ins[0]] + ([ins[1]] if ins[1] else []), node.output[0])


def _read_as_floats(graph) -> set[str]:
    """The outputs of :data:`INTEGER_OPS` every reader of which casts to float (``quantize_dynamic``
    scales each so): their float convolution or product is kept a float. Why: TVM's importer writes
    a cast from float to int32 as checks of finiteness and a wrap-around modulo, fused after it,
    and LLVM took 63 s to compile the two such kernels of a 16 x 16 CNN on their transferred
    schedules (2.2 s on TVM's default ones; the cast back to float is exact: integers)."""
    nodes = list(graph.node)
    readers = _readers(nodes)
    kept = {o.name for o in graph.output} | subgraph_reads(graph)
    return {node.output[0] for node in nodes if _key(node) in INTEGER_OPS and node.output[0] not in kept
            and readers.get(node.output[0]) and all(nodes[r].op_type == "Cast" and attrs(nodes[r]).get("to") == FLOAT
                                                     for r in readers[node.output[0]])}


def _readers(nodes: list) -> dict[str, list[int]]:
    """The positions in ``nodes`` of the nodes reading each name."""
    readers: dict[str, list[int]] = {}
    for i, node in enumerate(nodes):
        for name in node.input:
            readers.setdefault(name, []).append(i)
    return readers


def _integer_op(em: Emitter, lookup: Lookup, node, as_float: bool) -> None:
    """``ConvInteger(x, w, x_zp, w_zp)`` or ``MatMulInteger(a, b, a_zp, b_zp)``: the int32
    convolution or product of ``x - x_zp`` and ``w - w_zp``, as a float one, cast to int32 unless
    ``as_float`` (:func:`_read_as_floats`). A vector of zero points lies along the axis of
    :data:`INTEGER_OPS` (a convolution's output channels; a product's rows of ``a``, columns of
    ``b``); a zero point of more axes broadcasts as it is (a batched product's, constants only:
    :func:`_zero_points_known`)."""
    ins = list(node.input) + [""] * 4
    op, axes = INTEGER_OPS[_key(node)]
    x, w = (_shifted(em, lookup, ins[i], ins[i + 2], axis) for i, axis in zip((0, 1), axes))
    if as_float:
        em.op(op, [x, w], node.output[0], **attrs(node))
    else:
        em.op("Cast", [em.op(op, [x, w], **attrs(node))], node.output[0], to=INT32)


def _shifted(em: Emitter, lookup: Lookup, x: str, zp: str, axis: int | None) -> str:
    """``x - zp`` in float: a weight where both are constants; a constant zero point as a float
    constant subtracted (a vector along ``axis``, counted from the end, else broadcast as it is: a
    ``DequantizeLinear`` takes neither a zero point of more axes nor, in TVM's converter, a vector
    along an axis of a rank it does not know); a computed one (:func:`_zero_points_known`) by a
    ``DequantizeLinear``."""
    one, value = np.array(1.0, np.float32), lookup.constant(zp)
    if value is False:  # a vector along ``axis``, but a DynamicQuantizeLinear's is a scalar
        scalar = getattr(lookup.producers.get(zp), "op_type", "") == "DynamicQuantizeLinear"
        return dequantized(em, lookup, x, one, zp, None if scalar else axis)
    vector = axis is not None and value is not None and value.ndim == 1 and value.size > 1
    if lookup.array(x) is not None or (vector and axis >= 0):
        return dequantized(em, lookup, x, one, zp, axis if vector else None)
    floats = em.op("Cast", [x], to=FLOAT)
    if value is None:
        return floats
    shifts = value.reshape(value.shape + (1,) * (-axis - 1)) if vector else value
    return em.op("Sub", [floats, em.weight(shifts.astype(np.float32), "zero_point")])


def _zero_points_known(lookup: Lookup, node) -> bool:
    """Whether a ``MatMulInteger``'s zero points are each omitted, a constant or a
    ``DynamicQuantizeLinear``'s (a scalar): one computed otherwise may be a row's of a batch, which
    a ``DequantizeLinear`` cannot take; TVM's importer converts that one."""
    zps = list(node.input[2:4])
    return all(lookup.constant(zp) is not False or getattr(lookup.producers.get(zp), "op_type", "") == "DynamicQuantizeLinear"
               for zp in zps)


def dequantized(em: Emitter, lookup: Lookup, x: str, scale: str | np.ndarray, zp: str, axis: int | None) -> str:
    """``x`` dequantized: a float weight where ``x``, its scale (a name, or its value) and zero
    point are constants, else a ``DequantizeLinear``."""
    known = scale if isinstance(scale, np.ndarray) else lookup.array(scale)
    values = [lookup.array(x), known, lookup.array(zp) if zp else None]
    if values[0] is not None and values[1] is not None and (not zp or values[2] is not None):
        return em.weight(dequantize(*values, axis), "dequantized")
    if isinstance(scale, np.ndarray):
        scale = em.weight(scale, "scale")
    inputs = [x, scale] + ([zp] if zp else [])
    return em.op("DequantizeLinear", inputs, **({"axis": axis} if axis is not None else {}))


def dequantize(x: np.ndarray, scale: np.ndarray, zp: np.ndarray | None, axis: int | None) -> np.ndarray:
    """ONNX's ``DequantizeLinear``: ``(x - zp) * scale``, a vector of scales along ``axis``."""
    shifted = x.astype(np.int64) - (0 if zp is None else _along(zp.astype(np.int64), x.ndim, axis))
    return shifted.astype(np.float32) * _along(scale.astype(np.float32), x.ndim, axis)


def _along(v: np.ndarray, ndim: int, axis: int | None) -> np.ndarray:
    """A per-axis vector shaped to broadcast along ``axis`` of an ``ndim``-dimensional tensor."""
    if v.size == 1 or axis is None:
        return v.reshape(()) if v.size == 1 else v
    shape = [1] * ndim
    shape[axis] = v.size
    return v.reshape(shape)


def _bias(em: Emitter, lookup: Lookup, bias: str, scales: list[str], alpha: float) -> str:
    """An int32 bias of scale ``alpha`` times the product of ``scales`` (zero point 0) as floats: the
    scales broadcast against its last axis, a per-channel scale along a convolution's or a Gemm's
    output channels."""
    values = [lookup.array(n) for n in [bias] + scales]
    if all(v is not None for v in values):
        scale = np.float32(alpha)
        for v in values[1:]:  # a scalar and a vector of scales: the vector
            scale = scale * v.astype(np.float32).reshape(-1)
        return em.weight((values[0].astype(np.float32) * scale).astype(np.float32), "bias")
    scale = em.op("Mul", scales)
    if alpha != 1.0:
        scale = em.op("Mul", [scale, em.weight(np.float32(alpha), "alpha")])
    return em.op("Mul", [em.op("Cast", [bias], to=FLOAT), scale])

