"""Index and shape arithmetic on constants, evaluated before TVM's ONNX importer reads the graph.

PyTorch's TorchScript exporter writes ``F.pad(x, (2, 0))`` (opset 11 and later) as a chain that
builds the pads from constants at run time: ``ConstantOfShape -> Concat -> Reshape -> Slice ->
Transpose -> Reshape -> Cast -> Pad``. TVM 0.27's importer takes a ``Pad``'s pads only as a
``relax.Constant`` and refuses the chain's result (``ValueError: Dynamic pads are not supported
yet``); the same holds for the inputs other converters read as constants. So a temporal
convolution net with causal padding did not load (found on a PyTorch TCN, 2026-11-29; the dynamo
exporter folds the chain itself).

Every node of the default ONNX domain whose inputs are all constants (initializers, ``Constant``
nodes, nodes folded before it) is evaluated by ``onnx.reference.ReferenceEvaluator`` (the ONNX
package's own implementation of the specification) and replaced by a ``Constant`` node holding its
value; so is every ``Shape`` and ``Size`` of a tensor whose shape is static once the inputs' shapes
are bound (ONNX's shape inference: this tool builds static shapes only), which is what makes the
trip count of PyTorch's loops a constant (:mod:`.onnx_loop`). ``Constant`` nodes nothing reads any
more are dropped. Only small tensors are folded
(:data:`MAX_ELEMENTS`, inputs and outputs): what the importer needs as constants is index and
shape arithmetic, while a computation on weights (a transposed weight matrix) is folded by TVM's
own passes in compiled code, where the reference evaluator is numpy and Python loops (its
``Conv``). Random ops are never folded, and a node the evaluator cannot run is left to TVM.
"""

from __future__ import annotations

import numpy as np

from .onnx_graph import default_opset, static_shapes

#: Largest input or output (elements) of a node folded here: pads, shapes, indices and attention
#: masks up to 256 x 256, not weights.
MAX_ELEMENTS = 65_536

#: Ops whose value is their input's shape, not its values.
_SHAPES = frozenset({"Shape", "Size"})
#: Ops whose value is not a function of their inputs.
_RANDOM = frozenset({"RandomNormal", "RandomUniform", "RandomNormalLike", "RandomUniformLike",
                     "Multinomial", "Bernoulli"})


def fold_constants(proto, input_shapes: dict[str, list[int]] | None = None, keep=frozenset()) -> int:
    """Fold the small constant computations of ``proto``'s main graph in place (module docstring);
    ``input_shapes``: the graph inputs' static shapes (without them no ``Shape`` is folded);
    ``keep``: names to keep a ``Constant`` of though nothing reads them. Returns how many nodes
    were folded."""
    from onnx import helper, numpy_helper

    graph = proto.graph
    opset = default_opset(proto)
    shapes = {}
    if input_shapes is not None and any(n.op_type in _SHAPES for n in graph.node):
        shapes = static_shapes(proto, input_shapes)
    values = {init.name: init for init in graph.initializer}  # name -> TensorProto (not decoded yet)
    arrays: dict[str, np.ndarray] = {}

    def value(name: str) -> np.ndarray:
        if name not in arrays:
            arrays[name] = numpy_helper.to_array(values[name])
        return arrays[name]

    folded, nodes = 0, []
    for node in graph.node:
        if node.op_type == "Constant" and node.domain in ("", "ai.onnx"):
            attr = node.attribute[0] if len(node.attribute) == 1 else None
            if attr is not None and attr.name == "value":
                values[node.output[0]] = attr.t  # decoded only where a fold reads it (it may be a weight)
            else:  # value_float, value_ints, ...: small
                out = _evaluate(node, {}, opset)
                if out is not None:
                    arrays[node.output[0]], values[node.output[0]] = out[0], None
            nodes.append(node)
            continue
        inputs = [n for n in node.input if n]
        if node.op_type in _SHAPES and node.domain in ("", "ai.onnx") and inputs and inputs[0] in shapes:
            outs = [_shape_of(node, shapes[inputs[0]])]
        elif _foldable(node, inputs, values, arrays):
            outs = _evaluate(node, {n: value(n) for n in inputs}, opset)
        else:
            outs = None
        if outs is None or any(o.size > MAX_ELEMENTS or o.dtype == object for o in outs):
            nodes.append(node)
            continue
        for name, out in zip(node.output, outs):
            if name:
                arrays[name], values[name] = out, None
                nodes.append(helper.make_node("Constant", [], [name], name=f"{node.name or node.op_type}#folded",
                                              value=numpy_helper.from_array(out, name)))
        folded += 1
    if folded:
        read = _read_names(graph) | {o.name for o in graph.output} | set(keep)
        read |= {n for node in nodes for n in node.input}
        del graph.node[:]
        graph.node.extend(n for n in nodes if n.op_type != "Constant" or any(o in read for o in n.output))
    return folded


def _foldable(node, inputs: list[str], values: dict, arrays: dict) -> bool:
    """Whether ``node`` is a deterministic op of the default domain, without a subgraph, all of
    whose inputs are constants of at most :data:`MAX_ELEMENTS`."""
    from onnx import AttributeProto

    return (bool(inputs) and node.domain in ("", "ai.onnx") and node.op_type not in _RANDOM
            and not any(a.type in (AttributeProto.GRAPH, AttributeProto.GRAPHS) for a in node.attribute)
            and all(n in values and _elements(values[n], arrays.get(n)) <= MAX_ELEMENTS for n in inputs))


def _shape_of(node, dims: list[int]) -> np.ndarray:
    """A ``Shape`` node's value (its ``start`` / ``end``, opset 15, slice the dims as Python does:
    negatives from the end, clamped) or a ``Size`` node's, for a tensor of static ``dims``."""
    if node.op_type == "Size":
        return np.array(int(np.prod(dims)), np.int64)
    attrs = {a.name: a.i for a in node.attribute}
    return np.array(dims[attrs.get("start", 0):attrs.get("end", len(dims))], np.int64)


def _elements(tensor, array) -> int:
    """Elements of a constant: from its array where decoded, else from the TensorProto's dims."""
    if array is not None:
        return int(array.size)
    return int(np.prod(tensor.dims)) if tensor is not None else 0


def _evaluate(node, feeds: dict, opset: int) -> list[np.ndarray] | None:
    """``node``'s outputs on ``feeds`` by the ONNX reference implementation; None where it cannot
    run them (an op or a type it does not implement): folding is for the importer's sake, never a
    reason to fail a model TVM may import as it is."""
    from onnx.reference import ReferenceEvaluator

    try:
        outs = ReferenceEvaluator(node, opsets={"": opset}).run(None, feeds)
    except Exception:  # the reference raises many types for what it does not implement
        return None
    return [np.asarray(o) for o in outs]


def _read_names(graph) -> set[str]:
    """Every name a node of a subgraph (an ``If``'s or ``Loop``'s body) reads, at any depth: an
    outer constant read only there is still needed."""
    from onnx import AttributeProto

    names = set()
    for node in graph.node:
        for attr in node.attribute:
            subgraphs = [attr.g] if attr.type == AttributeProto.GRAPH else \
                list(attr.graphs) if attr.type == AttributeProto.GRAPHS else []
            for sub in subgraphs:
                names |= {n for inner in sub.node for n in inner.input} | _read_names(sub)
    return names
