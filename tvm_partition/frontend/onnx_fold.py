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
are bound (ONNX's shape inference of each node as the pass reaches it, :class:`_Shapes`: this tool
builds static shapes only), which is what makes the trip count of PyTorch's loops a constant
(:mod:`.onnx_loop`) and Swin-T's window padding constant pads. ``Constant`` nodes nothing reads any
more are dropped; those in the standard's other forms (``value_float``, ``value_ints``, ...) are
written with a ``value`` tensor, the one form TVM's importer reads. Only small tensors are folded
(:data:`MAX_ELEMENTS`, inputs and outputs): what the importer needs as constants is index and
shape arithmetic, while a computation on weights (a transposed weight matrix) is folded by TVM's
own passes in compiled code, where the reference evaluator is numpy and Python loops (its
``Conv``). Random ops are never folded, and a node the evaluator cannot run is left to TVM.
"""

from __future__ import annotations

import numpy as np

from .onnx_graph import default_opset, static_dims, subgraph_reads

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
    values = {init.name: init for init in graph.initializer}  # name -> TensorProto (not decoded yet)
    arrays: dict[str, np.ndarray] = {}
    shapes = _Shapes(proto, input_shapes, values, arrays) \
        if input_shapes is not None and any(n.op_type in _SHAPES for n in graph.node) else None

    def value(name: str) -> np.ndarray:
        if name not in arrays:
            arrays[name] = numpy_helper.to_array(values[name])
        return arrays[name]

    folded, rewritten, nodes = 0, 0, []
    for node in graph.node:
        if node.op_type == "Constant" and node.domain in ("", "ai.onnx"):
            attr = node.attribute[0] if len(node.attribute) == 1 else None
            if attr is not None and attr.name == "value":
                values[node.output[0]] = attr.t  # decoded only where a fold reads it (it may be a weight)
            else:  # value_float, value_ints, ...: small, and written as a tensor, the one form TVM's
                # importer reads ("no value in Constant": ONNX's own Swish and window functions,
                # :mod:`.onnx_functions`, hold such constants)
                out = _evaluate(node, {}, opset)
                if out is not None:
                    arrays[node.output[0]], values[node.output[0]] = out[0], None
                    node = helper.make_node("Constant", [], [node.output[0]], name=node.name,
                                            value=numpy_helper.from_array(out[0], node.output[0]))
                    rewritten += 1
            nodes.append(node)
            continue
        inputs = [n for n in node.input if n]
        shaped = node.op_type in _SHAPES and node.domain in ("", "ai.onnx") and shapes is not None and inputs
        dims = shapes.dims(inputs[0]) if shaped else None
        if dims is not None:
            outs = [_shape_of(node, dims)]
        elif _foldable(node, inputs, values, arrays):
            outs = _evaluate(node, {n: value(n) for n in inputs}, opset)
        else:
            outs = None
        if outs is None or any(o.size > MAX_ELEMENTS or o.dtype == object for o in outs):
            if shapes is not None:
                shapes.infer(node)
            nodes.append(node)
            continue
        for name, out in zip(node.output, outs):
            if name:
                arrays[name], values[name] = out, None
                nodes.append(helper.make_node("Constant", [], [name], name=f"{node.name or node.op_type}#folded",
                                              value=numpy_helper.from_array(out, name)))
        folded += 1
    if folded or rewritten:
        read = subgraph_reads(graph) | {o.name for o in graph.output} | set(keep)
        read |= {n for node in nodes for n in node.input}
        del graph.node[:]
        graph.node.extend(n for n in nodes if n.op_type != "Constant" or any(o in read for o in n.output))
    return folded


class _Shapes:
    """The static type of every tensor met so far in one pass over a graph in its order, each node's
    outputs inferred by ONNX's shape inference for that node alone (``infer_node_outputs``) from its
    inputs' types and the values of its small constant inputs, those the pass folded included.

    Why not ONNX's shape inference of the whole model once: it gives no static shape past a
    ``Reshape`` whose target shape is computed, and the pass folds that computation only after.
    torchvision's Swin-T (TorchScript export) pads each window by ``Mod``s of the shape of its
    block's input, behind the shifted windows' reshapes of the block before: inferred once, 14 of
    its 15 ``Pad``s kept computed pads, which TVM's importer refuses (``Dynamic pads are not
    supported yet``); inferred as the pass goes, none did. It also copies no weight (the whole-model
    inference copied the model)."""

    def __init__(self, proto, input_shapes: dict, values: dict, arrays: dict):
        from onnx import helper

        self.values, self.arrays = values, arrays
        self.opset_imports = list(proto.opset_import)
        self.opsets = {("" if o.domain == "ai.onnx" else o.domain): o.version for o in proto.opset_import}
        self.types = {init.name: helper.make_tensor_type_proto(init.data_type, list(init.dims))
                      for init in proto.graph.initializer}
        for gi in proto.graph.input:
            if gi.name in input_shapes:
                self.types[gi.name] = helper.make_tensor_type_proto(gi.type.tensor_type.elem_type,
                                                                    [int(d) for d in input_shapes[gi.name]])

    def type_of(self, name: str):
        """``name``'s TypeProto where known: a typed tensor's, or a constant's."""
        from onnx import helper

        if name in self.types:
            return self.types[name]
        if name in self.arrays:
            array = self.arrays[name]
            return helper.make_tensor_type_proto(helper.np_dtype_to_tensor_dtype(array.dtype), list(array.shape))
        if self.values.get(name) is not None:
            return helper.make_tensor_type_proto(self.values[name].data_type, list(self.values[name].dims))
        return None

    def dims(self, name: str) -> list[int] | None:
        """``name``'s dims where they are all known."""
        t = self.type_of(name)
        return None if t is None else static_dims(t)

    def infer(self, node) -> None:
        """Record the types of ``node``'s outputs, where ONNX infers them from what is known."""
        import onnx
        from onnx import numpy_helper

        inputs = [n for n in node.input if n]
        types = {n: self.type_of(n) for n in inputs}
        if any(t is None for t in types.values()):
            return
        data = {}
        for n in inputs:
            if n in self.arrays and self.arrays[n].size <= MAX_ELEMENTS:
                data[n] = numpy_helper.from_array(self.arrays[n], n)
            elif self.values.get(n) is not None and _elements(self.values[n], None) <= MAX_ELEMENTS:
                data[n] = self.values[n]
        try:
            domain = "" if node.domain == "ai.onnx" else node.domain
            schema = onnx.defs.get_schema(node.op_type, self.opsets[domain], domain)
            outs = onnx.shape_inference.infer_node_outputs(schema, node, types, data, opset_imports=self.opset_imports)
        except Exception:  # an op ONNX has no schema or inference for: its outputs stay unknown
            return
        self.types.update(outs)


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
