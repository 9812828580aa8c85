"""Helpers shared by the rewrites of ONNX graphs done before TVM's importer reads them
(:mod:`.onnx_fold`, :mod:`.onnx_loop`, :mod:`.onnx_branches`, :mod:`.onnx_decompose`, :mod:`.onnx_spec`, :mod:`.onnx_rnn`,
:mod:`.onnx_functions`): a node's subgraphs, the opset, every tensor's static shape and type once
the inputs are bound (ONNX's own shape inference), a graph's initializers and producers read once,
and an emitter of new nodes (copies of a body or a branch too) under names of their own."""

from __future__ import annotations

import dataclasses
import math

import numpy as np


def subgraphs(node) -> list:
    """The graphs ``node`` holds (a ``Loop``'s body, an ``If``'s branches), none for most nodes."""
    from onnx import AttributeProto

    out = []
    for attr in node.attribute:
        if attr.type == AttributeProto.GRAPH:
            out.append(attr.g)
        elif attr.type == AttributeProto.GRAPHS:
            out.extend(attr.graphs)
    return out


def subgraph_reads(graph) -> set[str]:
    """Every name a node of a subgraph (an ``If``'s or ``Loop``'s body) reads, at any depth: an
    outer constant read only there is still needed."""
    names = set()
    for node in graph.node:
        for sub in subgraphs(node):
            names |= {n for inner in sub.node for n in inner.input} | subgraph_reads(sub)
    return names


def attrs(node) -> dict:
    """``node``'s attributes by name, as Python values."""
    from onnx import helper

    return {a.name: helper.get_attribute_value(a) for a in node.attribute}


def rewrite_nodes(proto, writers: dict, hint: str, *context) -> int:
    """Replace, in place, each node of ``proto``'s main graph (default domain) whose operator
    ``writers`` holds by what ``writers[op](node, emit, *context)`` emitted where it returns True
    (a node it leaves, returning False, stays). Returns how many were replaced."""
    graph, opset, nodes, count = proto.graph, default_opset(proto), [], 0
    for node in graph.node:
        if node.op_type in writers and node.domain in ("", "ai.onnx"):
            emit = Emitter(graph, f"{node.name or node.op_type}#{hint}{count}", opset)
            if writers[node.op_type](node, emit, *context):
                nodes.extend(emit.nodes)
                count += 1
                continue
        nodes.append(node)
    if count:
        del graph.node[:]
        graph.node.extend(nodes)
    return count


def rewrite_typed(proto, writers: dict, hint: str, input_shapes: dict[str, list[int]]) -> int:
    """:func:`rewrite_nodes` of ``writers``, each called with ``(node, emit, types, lookup)``: the
    tensors' :func:`static_types` once the inputs have ``input_shapes``, and the graph's
    :class:`Lookup`. The shape inference (a copy of the model) runs only where a node is to rewrite."""
    if not any(n.op_type in writers and n.domain in ("", "ai.onnx") for n in proto.graph.node):
        return 0
    return rewrite_nodes(proto, writers, hint, static_types(proto, input_shapes), Lookup.of(proto.graph))


def input_name(node, k: int) -> str:
    """The name of ``node``'s input ``k``; empty where it is omitted (an optional input)."""
    return node.input[k] if len(node.input) > k else ""


def default_opset(proto) -> int:
    """The version of the default ONNX domain ``proto`` imports (1 where it names none)."""
    return next((o.version for o in proto.opset_import if o.domain in ("", "ai.onnx")), 1)


def static_shapes(proto, shapes: dict[str, list[int]]) -> dict[str, list[int]]:
    """Every tensor's static shape that ONNX's shape inference finds once the inputs are bound."""
    import onnx

    inferred = onnx.shape_inference.infer_shapes(_bound(proto, shapes)).graph
    out = {i.name: list(i.dims) for i in inferred.initializer}
    for vi in list(inferred.input) + list(inferred.value_info) + list(inferred.output):
        dims = static_dims(vi.type)
        if dims:  # a scalar's empty dims look like an unknown shape's here: left out
            out[vi.name] = dims
    return out


def static_types(proto, shapes: dict[str, list[int]]) -> dict[str, tuple[int, tuple[int, ...]]]:
    """``{name: (ONNX element type, dims)}`` of every tensor whose shape ONNX's shape inference
    finds static once the inputs are bound, scalars included (:func:`static_shapes` leaves them out)."""
    import onnx

    graph = onnx.shape_inference.infer_shapes(_bound(proto, shapes)).graph
    out = {i.name: (i.data_type, tuple(i.dims)) for i in graph.initializer}
    for vi in list(graph.input) + list(graph.value_info) + list(graph.output):
        t = vi.type.tensor_type
        if vi.type.HasField("tensor_type") and t.HasField("shape") and all(d.HasField("dim_value") for d in t.shape.dim):
            out[vi.name] = (t.elem_type, tuple(d.dim_value for d in t.shape.dim))
    return out


def _bound(proto, shapes: dict[str, list[int]]):
    """A copy of ``proto`` whose graph inputs have the static ``shapes``."""
    import onnx

    bound = onnx.ModelProto()
    bound.CopyFrom(proto)
    for gi in bound.graph.input:
        if gi.name in shapes:
            dims = gi.type.tensor_type.shape.dim
            del dims[:]
            for d in shapes[gi.name]:
                dims.add().dim_value = int(d)
    return bound


def static_dims(type_proto) -> list[int] | None:
    """The dims of a tensor ``TypeProto`` whose shape is known and every dim a number; else None."""
    if not type_proto.HasField("tensor_type") or not type_proto.tensor_type.HasField("shape"):
        return None
    dims = type_proto.tensor_type.shape.dim
    return [d.dim_value for d in dims] if all(d.HasField("dim_value") for d in dims) else None


@dataclasses.dataclass(frozen=True)
class Lookup:
    """A graph's initializers and the node producing each tensor, by name, read once (a rewrite
    asks about many names: a scan of the graph for each was quadratic in a written-out loop)."""

    inits: dict
    producers: dict

    @classmethod
    def of(cls, graph) -> "Lookup":
        return cls({i.name: i for i in graph.initializer}, {o: n for n in graph.node for o in n.output})

    def array(self, name: str) -> np.ndarray | None:
        """The value of ``name`` where it is an initializer or a ``Constant`` node's ``value``; else None."""
        from onnx import numpy_helper

        init = self.inits.get(name)
        if init is not None:
            return numpy_helper.to_array(init)
        const = self.producers.get(name)
        if const is not None and const.op_type == "Constant" and const.attribute and const.attribute[0].name == "value":
            return numpy_helper.to_array(const.attribute[0].t)
        return None

    def constant_dims(self, name: str) -> list[int] | None:
        """The shape of ``name`` where :meth:`array` has a value for it, read without converting it
        (an embedding table of millions of elements); else None."""
        init = self.inits.get(name)
        if init is not None:
            return list(init.dims)
        const = self.producers.get(name)
        if const is not None and const.op_type == "Constant" and const.attribute and const.attribute[0].name == "value":
            return list(const.attribute[0].t.dims)
        return None

    def constant(self, name: str):
        """``name``'s value where it is a constant, ``None`` where it is omitted (the empty name);
        ``False`` where it is computed at run time."""
        if not name:
            return None
        value = self.array(name)
        return False if value is None else value


def same_pads(auto_pad: str, spatial, kernel, strides, dilations) -> list[int]:
    """The explicit ``pads`` (every spatial axis's begin, then its end) that ``auto_pad``
    ``SAME_UPPER`` or ``SAME_LOWER`` means for an input of ``spatial`` extents: the padding
    ``ceil(in / stride)`` outputs need in all, halved, its odd element at the end for ``SAME_UPPER``
    and at the beginning for ``SAME_LOWER`` (ONNX's ``Conv`` and pools)."""
    total = [max(0, (math.ceil(n / s) - 1) * s + (k - 1) * d + 1 - n) for n, k, s, d in zip(spatial, kernel, strides, dilations)]
    begins = [t // 2 if auto_pad == "SAME_UPPER" else t - t // 2 for t in total]
    return begins + [t - b for t, b in zip(total, begins)]


def replace_attributes(node, drop: tuple[str, ...], **values) -> None:
    """``node``'s attributes named in ``drop`` removed and ``values`` set (in place)."""
    from onnx import helper

    kept = [a for a in node.attribute if a.name not in drop and a.name not in values]
    del node.attribute[:]
    node.attribute.extend(kept + [helper.make_attribute(k, v) for k, v in values.items()])


def drop_unread_initializers(graph, names) -> None:
    """The initializers of ``names`` that no node of ``graph`` (nor a subgraph's) reads and no output
    is, removed in place: TVM's importer makes every initializer a weight of ``main``."""
    read = set(readers(graph)) | {o.name for o in graph.output} | subgraph_reads(graph)
    for init in [i for i in graph.initializer if i.name in names and i.name not in read]:
        graph.initializer.remove(init)


def readers(graph) -> dict[str, list]:
    """``{tensor: [(node, input position), ...]}``: the nodes of ``graph`` reading each tensor (not
    its subgraphs')."""
    reads: dict[str, list] = {}
    for node in graph.node:
        for k, name in enumerate(node.input):
            reads.setdefault(name, []).append((node, k))
    return reads


#: Nodes between a constant table and a ``Gather`` of it that keep its rows (a QDQ model's
#: dequantized embedding, too large for :mod:`.onnx_fold` to evaluate).
KEEPS_ROWS = frozenset({"DequantizeLinear", "Cast", "Identity"})


def index_bounds(graph) -> dict[str, int]:
    """The graph inputs read only as the indices of ``Gather``s of constant tables (token ids into
    an embedding), ``{name: rows of the smallest such table}``, in a graph whose small constant
    computations are folded (a ``Shape`` of a bound input). Why:
    seeded inputs of 0 and 1 (:func:`tvm_partition.inputs.random_input`) made a BERT's tokens
    two rows of its embedding, and a check on them weak: onnxruntime's two runs of a quantized
    DistilBERT agreed on them exactly, where on tokens over the vocabulary they differ as ours do."""
    lookup, reads_of, bounds = Lookup.of(graph), readers(graph), {}
    for graph_input in graph.input:
        reads = reads_of.get(graph_input.name, [])
        rows = [_table_rows(lookup, node) for node, k in reads if node.op_type == "Gather" and k == 1]
        if rows and all(r is not None for r in rows) and len(rows) == len(reads):
            bounds[graph_input.name] = min(rows)
    return bounds


def _table_rows(lookup: Lookup, gather) -> int | None:
    """How many rows a ``Gather`` picks from along its axis, where its table is a constant (through
    :data:`KEEPS_ROWS`); None otherwise."""
    name = gather.input[0]
    while name not in lookup.inits and getattr(lookup.producers.get(name), "op_type", "") in KEEPS_ROWS:
        name = lookup.producers[name].input[0]
    dims, axis = lookup.constant_dims(name), attrs(gather).get("axis", 0)
    return dims[axis] if dims and -len(dims) <= axis < len(dims) and dims[axis] > 0 else None


class Emitter:
    """New nodes (in order) and initializers of one replaced node, under names it owns."""

    def __init__(self, graph, prefix: str, opset: int):
        self.graph, self.prefix, self.opset, self.nodes, self.n = graph, prefix, opset, [], 0

    def name(self, hint: str) -> str:
        self.n += 1
        return f"{self.prefix}/{hint}_{self.n}"

    def op(self, op_type: str, inputs: list[str], out: str | None = None, **attrs) -> str:
        from onnx import helper

        out = out or self.name(op_type.lower())
        self.nodes.append(helper.make_node(op_type, inputs, [out], name=self.name(op_type), **attrs))
        return out

    def copies(self, nodes, rename: dict, hint: str) -> None:
        """Emit copies of ``nodes`` (a loop's body, a branch) under names of their own: each read
        renamed by ``rename`` (in the graphs a node holds too), each output given a new name,
        which ``rename`` then holds for the nodes after it."""
        from onnx import NodeProto

        for inner in nodes:
            copy = NodeProto()
            copy.CopyFrom(inner)
            copy.name = self.name(inner.name or inner.op_type)
            del copy.input[:]
            copy.input.extend(rename.get(x, x) for x in inner.input)
            _rename_reads(copy, rename)
            del copy.output[:]
            for y in inner.output:
                rename[y] = self.name(hint) if y else ""
                copy.output.append(rename[y])
            self.nodes.append(copy)

    def weight(self, array: np.ndarray, hint: str) -> str:
        """An initializer (TVM's importer makes it a weight of ``main``)."""
        from onnx import numpy_helper

        name = self.name(hint)
        self.graph.initializer.append(numpy_helper.from_array(np.ascontiguousarray(array), name))
        return name

    def constant(self, array: np.ndarray, hint: str = "c") -> str:
        """A ``Constant`` node of ``array`` (a constant, not a weight of ``main``)."""
        from onnx import numpy_helper

        return self.op("Constant", [], value=numpy_helper.from_array(np.asarray(array), self.name(hint)))

    def ints(self, values) -> str:
        """An int64 ``Constant`` node (indices and shapes stay constants, not weights)."""
        return self.constant(np.asarray(values, np.int64), "i")

    def slice(self, x: str, axis: int, lo: int, hi: int) -> str:
        if self.opset < 10:
            return self.op("Slice", [x], starts=[lo], ends=[hi], axes=[axis])
        return self.op("Slice", [x, self.ints([lo]), self.ints([hi]), self.ints([axis])])

    def split(self, x: str, axis: int, n: int) -> list[str]:
        """``x`` cut into ``n`` pieces of one along ``axis`` by one ``Split`` node."""
        from onnx import helper

        outs = [self.name("piece") for _ in range(n)]
        if self.opset < 13:
            node = helper.make_node("Split", [x], outs, name=self.name("Split"), axis=axis, split=[1] * n)
        else:
            node = helper.make_node("Split", [x, self.ints([1] * n)], outs, name=self.name("Split"), axis=axis)
        self.nodes.append(node)
        return outs

    def reshape(self, x: str, shape: list[int], out: str | None = None) -> str:
        return self.op("Reshape", [x, self.ints(shape)], out)

    def concat(self, xs: list[str], axis: int, out: str | None = None) -> str:
        """``xs`` joined along ``axis`` as a balanced tree of pairwise ``Concat`` nodes: TVM's
        concat of n tensors computes each element through a chain of n conditions, and fuses the
        join with what produced its inputs; the 100 steps of an LSTM's ``Y`` joined at once ran
        2.0 ms a run, as a tree 0.42 ms (2 Zen 3 threads, ``run --kernels``)."""
        if len(xs) == 1:
            return xs[0] if out is None else self.op("Identity", xs, out)
        if len(xs) > 2:
            half = len(xs) // 2
            xs = [self.concat(xs[:half], axis), self.concat(xs[half:], axis)]
        return self.op("Concat", xs, out, axis=axis)


def _rename_reads(node, rename: dict) -> None:
    """Inside the graphs ``node`` holds (a nested branch, a loop's body), the outer names they read,
    renamed as a copy of their surroundings renamed them."""
    for sub in subgraphs(node):
        for inner in sub.node:
            reads = [rename.get(x, x) for x in inner.input]
            del inner.input[:]
            inner.input.extend(reads)
            _rename_reads(inner, rename)
