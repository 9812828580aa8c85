"""ONNX ``If`` nodes whose condition is a constant, replaced by the branch they take, before TVM's
importer reads the graph.

TVM 0.27's Relax ONNX importer has no converter for ``If`` (``OpNotImplemented``). Exporters write
one for a condition on shapes: PyTorch's TorchScript exporter for an ``if`` of a scripted function
(``if x.size(-1) > 8``), tf2onnx for TensorFlow's ``cond``, PyTorch's dynamo exporter for
``torch.cond``. Once the inputs' shapes are bound (this tool builds static shapes only) and
:mod:`.onnx_fold` has folded the shape arithmetic, such a condition is a constant; the ONNX
specification's ``If`` then computes the branch it names, so its nodes are copied into the graph
under names of their own (outer names read as they are, the branch's initializers made the graph's,
each of its outputs the ``If``'s output of the same position) and folded again: a branch may hold an
``If`` of its own, whose condition the copy makes constant.

An ``If`` whose condition is computed from the data is converted to data flow where both branches
give outputs of one type and static shape (:func:`select_branches`): both are computed and a
``Where`` picks each output (what a compiler's if-conversion does; the untaken branch's work is the
price). TVM's importer does convert an ``If`` itself (a ``relax.If``, outside its converter map),
but our partitioning reads ``main`` as one dataflow block: such a build failed in TVM's code
generator ("Var gv5 is not defined"). An ``If`` whose branches differ in shape (the graph's shape
depends on the data) is refused by :func:`tvm_partition.frontend.load` in one line.
"""

from __future__ import annotations

from .onnx_fold import fold_constants
from .onnx_graph import Emitter, Lookup, default_opset, static_types

#: Rounds of inlining: each takes the branches whose conditions the rounds before made constant.
MAX_ROUNDS = 16


def inline_constant_branches(proto, input_shapes: dict[str, list[int]] | None = None) -> int:
    """Replace, in place, every ``If`` of ``proto``'s main graph whose condition is a constant by the
    branch it takes (module docstring), on a graph :func:`~.onnx_fold.fold_constants` has folded;
    ``input_shapes``: the graph inputs' static shapes (for folding the copies). Returns how many
    were replaced."""
    graph, count = proto.graph, 0
    for _ in range(MAX_ROUNDS):
        lookup = Lookup.of(graph)
        taken = {k: branch for k, n in enumerate(graph.node) if _is_if(n)
                 and (branch := _taken(n, lookup.array(n.input[0]))) is not None}
        if not taken:
            break
        nodes = []
        for k, node in enumerate(graph.node):
            if k not in taken:
                nodes.append(node)
                continue
            emit = Emitter(graph, f"{node.name or 'If'}#{count}", default_opset(proto))
            for out, value in zip(node.output, _copy(taken[k], emit)):
                if out:
                    emit.op("Identity", [value], out)
            nodes.extend(emit.nodes)
            count += 1
        del graph.node[:]
        graph.node.extend(nodes)
        fold_constants(proto, input_shapes)
    return count


def select_branches(proto, input_shapes: dict[str, list[int]] | None = None) -> int:
    """Replace, in place, every ``If`` left in ``proto``'s main graph whose branches give outputs
    of one type and static shape by both branches and a ``Where`` on its condition for each output
    (module docstring); ``input_shapes``: the graph inputs' static shapes. Returns how many."""
    graph, count, tried = proto.graph, 0, set()
    while True:
        index = next((k for k, n in enumerate(graph.node) if _is_if(n) and n.output[0] not in tried), None)
        if index is None:
            return count
        node = graph.node[index]
        tried.add(node.output[0])
        before, inits = list(graph.node), len(graph.initializer)
        emit = Emitter(graph, f"{node.name or 'If'}#selected{count}", default_opset(proto))
        then = _copy(_branch(node, "then_branch"), emit)
        other = _copy(_branch(node, "else_branch"), emit)
        condition = emit.op("Reshape", [node.input[0], emit.ints([])])  # one element, of any rank
        for out, a, b in zip(node.output, then, other):
            if out:
                emit.op("Where", [condition, a, b], out)
        del graph.node[:]
        graph.node.extend(before[:index] + emit.nodes + before[index + 1:])
        types = static_types(proto, input_shapes or {})
        if all(types.get(a) is not None and types.get(a) == types.get(b) for a, b in zip(then, other)):
            count += 1
            fold_constants(proto, input_shapes)  # a copied branch's own Ifs on shapes
            inline_constant_branches(proto, input_shapes)
            continue
        del graph.node[:]  # outputs of different shapes (or unknown): left as it was
        graph.node.extend(before)
        del graph.initializer[inits:]


def _branch(node, name: str):
    return next((a.g for a in node.attribute if a.name == name), None)


def _is_if(node) -> bool:
    return node.op_type == "If" and node.domain in ("", "ai.onnx") and len(node.input) == 1


def _taken(node, condition):
    """The branch ``node`` runs where its condition is a constant of one element; else None."""
    if condition is None or condition.size != 1:
        return None
    return _branch(node, "then_branch" if bool(condition.reshape(())) else "else_branch")


def _copy(branch, emit: Emitter) -> list[str]:
    """Emit ``branch``'s nodes under new names; returns the names its outputs now have."""
    rename = {}
    for init in branch.initializer:
        rename[init.name] = emit.name("init")
        emit.graph.initializer.append(init)
        emit.graph.initializer[-1].name = rename[init.name]
    emit.copies(branch.node, rename, "out")
    return [rename.get(value.name, value.name) for value in branch.output]


def data_branches(proto) -> list[str]:
    """The ``If`` nodes left in ``proto``'s main graph, by name (or first output)."""
    return [n.name or n.output[0] for n in proto.graph.node if _is_if(n)]
