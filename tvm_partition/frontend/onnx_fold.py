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
value; ``Constant`` nodes nothing reads any more are dropped. Only small tensors are folded
(:data:`MAX_ELEMENTS`, inputs and outputs): what the importer needs as constants is index and
shape arithmetic, while a computation on weights (a transposed weight matrix) is folded by TVM's
own passes in compiled code, where the reference evaluator is numpy and Python loops (its
``Conv``). Random ops are never folded, and a node the evaluator cannot run is left to TVM.
"""

from __future__ import annotations

import numpy as np

#: Largest input or output (elements) of a node folded here: pads, shapes, indices and attention
#: masks up to 256 x 256, not weights.
MAX_ELEMENTS = 65_536

#: Ops whose value is not a function of their inputs.
_RANDOM = frozenset({"RandomNormal", "RandomUniform", "RandomNormalLike", "RandomUniformLike",
                     "Multinomial", "Bernoulli"})


def fold_constants(proto) -> int:
    """Fold the small constant computations of ``proto``'s main graph in place (module docstring);
    return how many nodes were folded."""
    from onnx import AttributeProto, helper, numpy_helper

    graph = proto.graph
    opset = next((o.version for o in proto.opset_import if o.domain in ("", "ai.onnx")), None)
    if opset is None:
        return 0
    values = {init.name: init for init in graph.initializer}  # name -> TensorProto (not decoded yet)
    arrays: dict[str, np.ndarray] = {}

    def value(name: str) -> np.ndarray:
        if name not in arrays:
            arrays[name] = numpy_helper.to_array(values[name])
        return arrays[name]

    folded, nodes = 0, []
    for node in graph.node:
        if node.op_type == "Constant" and node.domain in ("", "ai.onnx"):
            out = _evaluate(node, {}, opset)
            if out is not None:
                arrays[node.output[0]] = out[0]
                values[node.output[0]] = None
            nodes.append(node)
            continue
        inputs = [n for n in node.input if n]
        if (not inputs or node.domain not in ("", "ai.onnx") or node.op_type in _RANDOM
                or any(a.type in (AttributeProto.GRAPH, AttributeProto.GRAPHS) for a in node.attribute)
                or any(n not in values for n in inputs)
                or any(_elements(values[n], arrays.get(n)) > MAX_ELEMENTS for n in inputs)):
            nodes.append(node)
            continue
        outs = _evaluate(node, {n: value(n) for n in inputs}, opset)
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
        read = _read_names(graph) | {o.name for o in graph.output}
        read |= {n for node in nodes for n in node.input}
        del graph.node[:]
        graph.node.extend(n for n in nodes if n.op_type != "Constant" or any(o in read for o in n.output))
    return folded


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
