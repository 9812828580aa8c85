"""ONNX ``Loop`` nodes of a known trip count, and ``Scan`` nodes, written out iteration by
iteration, before TVM's importer reads the graph.

TVM 0.27's Relax ONNX importer has no converter for ``Loop`` or ``Scan`` (``OpNotImplemented``).
PyTorch's TorchScript exporter writes a ``Loop`` for ``nn.EmbeddingBag`` (a loop over the bags,
each a slice of the indices, a gather of their rows and a reduction; found on a bag-of-words text
classifier, 2026-11-29), as for any loop of a scripted function. (Its dynamo exporter writes a
while loop over a sequence with an ``If`` in its body: left to the importer, which refuses it.)
ONNX's ``LinearAttention`` (opset 27: linear and gated delta-rule attention, the recurrent layers
of hybrid language models) is a function whose body is a ``Scan`` over the sequence, as are older
converters' recurrences (ONNX's ``Scan`` cases of opset 9). Where a ``Loop`` runs a number of
iterations known once the inputs' shapes are bound (its trip count a constant after
:mod:`.onnx_fold`, its condition constant true), its body is copied once per iteration after the
ONNX specification's ``Loop``: the iteration's number a constant, the loop-carried values passed
from one copy to the next, outer names read as they are, each scan output's values stacked along a
new first axis (a balanced tree of ``Concat``, as :mod:`.onnx_rnn` joins its steps). A ``Scan``
(opset 9 on) runs once per element of its scan inputs' axis, a static length once the shapes are
bound (ONNX's shape inference): its body is copied once per step after the specification's
``Scan``, each scan input's element a ``Gather`` of a constant index along its axis (from the end
where its direction is reversed), the states carried, each scan output stacked along its own axis
(in reverse where asked). The copies are folded again, so an iteration's index arithmetic becomes
constants (an EmbeddingBag's bag a slice at a constant offset). A loop whose condition is computed
at run time (a while loop), that runs more than :data:`MAX_ITERATIONS` times or holds a subgraph of
its own, and opset 8's ``Scan`` (a batch axis and sequence lengths of its own) are left to TVM's
importer, which then names them in its error.
"""

from __future__ import annotations

import numpy as np

from .onnx_fold import fold_constants
from .onnx_graph import Emitter, Lookup, attrs, default_opset, static_shapes, subgraphs

#: Most iterations written out: the body is copied this many times (a loop over a batch's bags
#: runs once a sample).
MAX_ITERATIONS = 1024


def unroll_loops(proto, input_shapes: dict[str, list[int]] | None = None) -> int:
    """Write out every ``Loop`` of ``proto``'s main graph whose iterations are known, and every
    ``Scan`` whose length is (module docstring), in place, on a graph
    :func:`~.onnx_fold.fold_constants` has folded (trip counts are read through ``Shape`` and index
    arithmetic); ``input_shapes``: the graph inputs' static shapes (for folding the copies and for a
    ``Scan``'s length). Returns how many were written out."""
    graph, opset, count, tried = proto.graph, default_opset(proto), 0, set()
    if not any(_is_loop(n) or _is_scan(n, opset) for n in graph.node):
        return 0
    while True:
        # folding drops constants anywhere in the graph, so a loop is found again by its names
        index = next((k for k, n in enumerate(graph.node)
                      if (_is_loop(n) or _is_scan(n, opset)) and _key(n) not in tried), None)
        if index is None:
            return count
        node = graph.node[index]
        tried.add(_key(node))
        body = next(a.g for a in node.attribute if a.name == "body")
        if _has_subgraph(body):
            continue
        emit = Emitter(graph, f"{node.name or node.op_type}#{len(tried)}", opset)
        if node.op_type == "Scan":
            if not _write_scan(node, body, static_shapes(proto, input_shapes or {}), emit):
                continue
            conditions = []
        else:
            trips = _trip_count(Lookup.of(graph), node)
            if trips is None:
                continue
            conditions = _write_out(node, body, trips, emit)
        before = list(graph.node)
        del graph.node[:]
        graph.node.extend(before[:index] + emit.nodes + before[index + 1:])
        fold_constants(proto, input_shapes, keep=set(conditions))
        folded = Lookup.of(graph)
        if not all(_true(folded.array(c)) for c in conditions):
            del graph.node[:]  # stops on a value computed at run time: left to TVM's importer
            graph.node.extend(before)
            continue
        kept = [n for n in graph.node if not (n.op_type == "Constant" and set(n.output) <= set(conditions))]
        del graph.node[:]
        graph.node.extend(kept)
        count += 1


def _key(node) -> tuple:
    return tuple(node.input), tuple(node.output)


def _has_subgraph(body) -> bool:
    """Whether a node of ``body`` holds a graph of its own (a loop or a branch): not written out."""
    return any(subgraphs(n) for n in body.node)


def _is_loop(node) -> bool:
    return node.op_type == "Loop" and node.domain in ("", "ai.onnx")


def _is_scan(node, opset: int) -> bool:
    """A ``Scan`` of opset 9 on (opset 8's has a batch axis and sequence lengths: left alone)."""
    return node.op_type == "Scan" and node.domain in ("", "ai.onnx") and opset >= 9


def _true(value) -> bool:
    return value is not None and value.dtype == np.bool_ and bool(np.all(value))


def _trip_count(lookup: Lookup, node) -> int | None:
    """The iterations ``node`` runs where its trip count is a constant of at most
    :data:`MAX_ITERATIONS` and its first condition constant true (or absent); else None."""
    if len(node.input) < 1 or not node.input[0]:
        return None
    trips = lookup.array(node.input[0])
    if trips is None or trips.size != 1 or not 1 <= int(trips.reshape(())) <= MAX_ITERATIONS:
        return None
    if len(node.input) > 1 and node.input[1] and not _true(lookup.array(node.input[1])):
        return None
    return int(trips.reshape(()))


def _write_out(node, body, trips: int, emit: Emitter) -> list[str]:
    """Emit ``trips`` copies of ``body`` and the loop's outputs; return each copy's condition."""
    carried = list(node.input[2:])
    n_carried = len(carried)
    scans = [[] for _ in body.output[1 + n_carried:]]
    conditions = []
    for i in range(trips):
        rename = {body.input[0].name: emit.constant(np.array(i, np.int64)), body.input[1].name: emit.constant(np.array(True))}
        rename.update({b.name: v for b, v in zip(body.input[2:], carried)})
        emit.copies(body.node, rename, f"it{i}")
        outs = [rename.get(o.name, o.name) for o in body.output]
        conditions.append(outs[0])
        carried = outs[1:1 + n_carried]
        for k, value in enumerate(outs[1 + n_carried:]):
            scans[k].append(_unsqueezed(value, emit))
    for out, value in zip(node.output[:n_carried], carried):
        if out:
            emit.op("Identity", [value], out)
    for out, values in zip(node.output[n_carried:], scans):
        if out:
            emit.concat(values, 0, out)
    return conditions


def _write_scan(node, body, shapes: dict[str, list[int]], emit: Emitter) -> bool:
    """Emit a copy of ``body`` per step of the ``Scan`` ``node`` and its outputs (module docstring);
    False (nothing emitted) where its length is not static (or 0, or over :data:`MAX_ITERATIONS`)."""
    a = attrs(node)
    m = int(a["num_scan_inputs"])
    n, k = len(node.input) - m, len(body.output) - (len(node.input) - m)
    xs = list(node.input[n:])
    if any(x not in shapes for x in xs):
        return False
    in_axes = [axis % len(shapes[x]) for axis, x in zip(a.get("scan_input_axes", [0] * m), xs)]
    lengths = {shapes[x][axis] for x, axis in zip(xs, in_axes)}
    if len(lengths) != 1 or not 1 <= min(lengths) <= MAX_ITERATIONS:
        return False
    steps = lengths.pop()
    in_reversed = a.get("scan_input_directions", [0] * m)
    # an output's axis from the end (opset 11 on) needs no rank: Unsqueeze reads it so from opset 11
    out_axes, out_reversed = a.get("scan_output_axes", [0] * k), a.get("scan_output_directions", [0] * k)
    states, scans = list(node.input[:n]), [[] for _ in range(k)]
    for t in range(steps):
        rename = {b.name: v for b, v in zip(body.input[:n], states)}
        for b, x, axis, back in zip(body.input[n:], xs, in_axes, in_reversed):
            at = emit.constant(np.array(steps - 1 - t if back else t, np.int64), "step")
            rename[b.name] = emit.op("Gather", [x, at], axis=axis)
        emit.copies(body.node, rename, f"step{t}")
        outs = [rename.get(o.name, o.name) for o in body.output]
        states = outs[:n]
        for values, value in zip(scans, outs[n:]):
            values.append(value)
    for out, value in zip(node.output[:n], states):
        if out:
            emit.op("Identity", [value], out)
    for out, values, axis, back in zip(node.output[n:], scans, out_axes, out_reversed):
        if out:
            emit.concat([_unsqueezed(v, emit, axis) for v in (values[::-1] if back else values)], axis, out)
    return True


def _unsqueezed(x: str, emit: Emitter, axis: int = 0) -> str:
    """``x`` with a new axis ``axis`` (``axes`` an input from opset 13, an attribute before)."""
    if emit.opset < 13:
        return emit.op("Unsqueeze", [x], axes=[axis])
    return emit.op("Unsqueeze", [x, emit.ints([axis])])
