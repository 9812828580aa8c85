"""Zero ``Pad`` nodes before convolutions, folded into the convolutions' own padding.

TensorFlow's ``SAME`` padding reaches ONNX through its converters (and Hugging Face's ports of
TensorFlow models: MobileNet-V1, EfficientNet) as a ``Pad`` of the height and width before each
``Conv`` of padding 0, often asymmetric (a stride-2 3x3 on 224 pixels: 0 before, 1 after).
TVM's importer writes the ``Pad`` as a kernel of its own (a ``call_tir`` of TOPI's pad), which
copies the whole input once more before the convolution's own copy of it: Hugging Face's
MobileNet-V1 ran 8 such kernels, 370 us of its 8.0 ms (``run --kernels``, 2 threads,
intel-r-xeon-r-processor-emeraldrapids-2c, 2026-12-07). onnxruntime fuses them into the
convolution alike (its ``PadFusion`` graph optimization). A convolution pads with zeros, so a
constant ``Pad`` of zeros on the spatial axes only, read by convolutions alone (input 0, explicit
``pads`` or ``auto_pad`` ``VALID``), is the same as those convolutions padded by as much more (ONNX ``Pad``: ``pads`` lists
the begins of every axis, then the ends; ``Conv``: ``[h_begin, w_begin, h_end, w_end]``).

Run after :func:`.onnx_fold.fold_constants`: the pads an exporter computes from shapes (TF's
``SAME`` through tf2onnx: ``Shape``, ``Slice``, ``Concat`` ...) are constants by then.

A ``Conv`` of ``auto_pad`` ``SAME_UPPER`` or ``SAME_LOWER`` (PyTorch's ``padding="same"``: Hugging
Face's EfficientNet writes 268 of them, its 1x1s included) TVM's importer converts as a pad kernel
before the convolution (``autopad``: ``bb.emit_te(topi.nn.pad, ...)``), a ``call_tir`` that no split
rule reads, fused into the kernel before it: EfficientNet's convolutions and squeeze-excitation
means could not be split (8% of its FLOPs), and each pad copied its input once more, a 1x1's by
zero. :func:`same_pads_explicit` writes the ``pads`` the specification derives from the input's
static height and width instead (the total ``max(0, (ceil(in / stride) - 1) * stride + (kernel -
1) * dilation + 1 - in)``, its odd element at the end for ``SAME_UPPER``, the beginning for
``SAME_LOWER``), which the importer reads as the convolution's own padding.

A ``Pad`` of zero widths everywhere (MobileViT-v2's dynamo export writes three before its unfolding
``Gather``\ s) is its input: TVM's importer wrote a pad kernel of it all the same, fused after the
convolution before it, which then had no axis to split (3.3% of MobileViT-v2's FLOPs).
:func:`empty_pads_as_identity` writes it as ``Identity``.
"""

from __future__ import annotations

from .onnx_graph import (Lookup, attrs, default_opset, drop_unread_initializers, input_name, readers, replace_attributes,
                         same_pads, static_shapes, subgraph_reads)

#: ``auto_pad`` values :func:`.onnx_graph.same_pads` writes out.
_SAME = frozenset({b"SAME_UPPER", "SAME_UPPER", b"SAME_LOWER", "SAME_LOWER"})


def pads_into_convs(proto) -> int:
    """Fold, in place, every foldable ``Pad`` of ``proto``'s main graph into the convolutions that
    read it (module docstring); returns how many were folded."""
    graph = proto.graph
    lookup, reads, opset = Lookup.of(graph), readers(graph), default_opset(proto)
    kept = {o.name for o in graph.output} | subgraph_reads(graph)
    folded = []
    for pad in graph.node:
        if pad.op_type != "Pad" or pad.domain not in ("", "ai.onnx") or pad.output[0] in kept:
            continue
        widths = _spatial_zero_pads(pad, lookup, opset)
        users = reads.get(pad.output[0], [])
        if widths is None or not users or not all(_explicit_conv(node, k) for node, k in users):
            continue
        for conv, _ in users:
            own = list(attrs(conv).get("pads", [0, 0, 0, 0]))  # VALID: none
            replace_attributes(conv, ("auto_pad",), pads=[p + w for p, w in zip(own, widths)])
            conv.input[0] = pad.input[0]
        folded.append(pad)
    for pad in folded:
        graph.node.remove(pad)
    # their widths and value, unread now: TVM's importer would keep each initializer a weight
    drop_unread_initializers(graph, {name for pad in folded for name in pad.input[1:] if name})
    return len(folded)


def empty_pads_as_identity(proto) -> int:
    """Rewrite, in place, every ``Pad`` of ``proto``'s main graph whose widths are constant zeros as
    ``Identity`` of its input; returns how many."""
    lookup, opset, count = Lookup.of(proto.graph), default_opset(proto), 0
    for pad in proto.graph.node:
        if pad.op_type != "Pad" or pad.domain not in ("", "ai.onnx"):
            continue
        widths = _widths(pad, lookup, opset)
        if widths is None or widths is False or any(int(w) for w in widths):
            continue
        del pad.input[1:]
        del pad.attribute[:]
        pad.op_type = "Identity"
        count += 1
    return count


def same_pads_explicit(proto, input_shapes: dict[str, list[int]]) -> int:
    """Rewrite, in place, every 2-D ``Conv`` of ``proto``'s main graph whose ``auto_pad`` is
    ``SAME_UPPER`` or ``SAME_LOWER`` and whose input and weights have static shapes with the
    explicit ``pads`` it means (module docstring); returns how many."""
    convs = [n for n in proto.graph.node if n.op_type == "Conv" and n.domain in ("", "ai.onnx")
             and attrs(n).get("auto_pad") in _SAME]
    if not convs:
        return 0  # the shape inference below copies the model
    shapes = static_shapes(proto, input_shapes)
    count = 0
    for conv in convs:
        x, w = shapes.get(conv.input[0]), shapes.get(conv.input[1])
        if x is None or w is None or len(x) != 4 or len(w) != 4:
            continue
        a = attrs(conv)
        auto = a["auto_pad"].decode() if isinstance(a["auto_pad"], bytes) else a["auto_pad"]
        pads = same_pads(auto, x[2:], w[2:], a.get("strides", [1, 1]), a.get("dilations", [1, 1]))
        replace_attributes(conv, ("auto_pad",), pads=pads)
        count += 1
    return count


def _spatial_zero_pads(pad, lookup: Lookup, opset: int) -> list[int] | None:
    """``[h_begin, w_begin, h_end, w_end]`` of a constant-mode ``Pad`` of zeros of a 4-D tensor that
    pads its height and width only, by constant non-negative amounts; None for any other."""
    a = attrs(pad)
    if a.get("mode", b"constant") not in (b"constant", "constant"):
        return None
    pads = _widths(pad, lookup, opset)
    if opset < 11:
        value = a.get("value", 0.0)
    else:
        if input_name(pad, 3):  # axes (opset 18): rare, not read
            return None
        value = lookup.constant(input_name(pad, 2))
        value = 0.0 if value is None else value
    if pads is None or pads is False or value is False or len(pads) != 8:
        return None
    pads = [int(p) for p in pads]
    values = [float(v) for v in (value.reshape(-1) if hasattr(value, "reshape") else [value])]
    if any(v != 0.0 for v in values) or min(pads) < 0 or any(pads[i] for i in (0, 1, 4, 5)):
        return None
    return [pads[2], pads[3], pads[6], pads[7]]


def _widths(pad, lookup: Lookup, opset: int):
    """A ``Pad``'s widths: its attribute before opset 11, its input after (:meth:`Lookup.constant`:
    None where it has none, False where it is computed at run time)."""
    return attrs(pad).get("pads") if opset < 11 else lookup.constant(input_name(pad, 1))


def _explicit_conv(node, k: int) -> bool:
    """Whether ``node`` is a ``Conv`` reading the tensor as its input ``k`` = 0 with explicit padding
    or none (``VALID``: Hugging Face's EfficientNet pads before its strided depthwise ones so)."""
    return node.op_type == "Conv" and node.domain in ("", "ai.onnx") and k == 0 \
        and attrs(node).get("auto_pad", b"NOTSET") in (b"NOTSET", "NOTSET", b"VALID", "VALID")
