"""The order in which a plan's program is emitted: one definition for the pass and the simulator.

:class:`tvm_partition.passes.ApplyPlan` emits a plan unit by unit in this order, and
:mod:`tvm_partition.planners.simulate` walks the same units to predict the copies, slices and concats the
program runs (``tests/test_data_movement.py`` checks the two agree on random plans). Where a value
is first concatenated or copied decides where later consumers fetch it from, so the two must
visit the ops in the same order: they walked it separately, and the simulator, visiting an op
placed whole at its first binding, fetched a residual add's input before a split op that the pass
emitted first (ResNet-18 on ``cpu,cpu,cpu``: the same copies, between other devices).
"""

from __future__ import annotations

import networkx as nx

from .graph import OpGraph
from ..plan import OnDevice, Plan


def whole_device(graph: OpGraph, plan: Plan, op_id: str) -> str | None:
    """The device of an op placed whole (no decision: the host); None for split ops and for
    views without a decision (they follow their producer)."""
    dec = plan.ops.get(op_id)
    if dec is None:
        return None if graph.ops[op_id].is_view else plan.host
    return dec.device if isinstance(dec, OnDevice) else None


def fed_across(graph: OpGraph, plan: Plan, op_id: str) -> bool:
    """Whether op ``op_id``, placed whole, reads a tensor made on another device or by a split op
    (or by a view that follows one), directly or through glue (a split's tuple item): the program
    copies or joins it before the op's kernel."""
    dev = whole_device(graph, plan, op_id)
    for is_param, producers in graph.input_sources[op_id]:
        if is_param and dev != plan.host:  # a parameter of main: on the host
            return True
        if any(src != op_id and whole_device(graph, plan, src) != dev for src in producers):
            return True
    return False


def units(graph: OpGraph, plan: Plan) -> list:
    """Static bindings ``("static", i)``, glue bindings ``("glue", i)``, the bindings of ops placed
    whole ``("member", i)`` and the other ops (their id), in a topological order close to the
    original.

    The bindings of an op placed whole are units of their own, so they keep the model's order:
    TVM's ``FuseOps`` joins an add of two producers (an LSTM gate, a residual add) to the
    producer that comes first, and emitting an op's bindings together would reverse that, making
    the build fuse other kernels than the OpGraph (and the profile, and TVM's own flow) has.
    Except an op :func:`fed_across` devices: it is one unit, after all its inputs, whose copies and
    joins come first. Emitted binding by binding, a copy fell between its bindings (a GRU gate of
    ``eop`` on ``cpu,gpu`` read two joins), and :class:`tvm_partition.passes.FenceCopies`, which
    keeps every kernel on its side of each copy, would have cut the op in two; left unfenced,
    ``FuseOps`` ran the fused op at its first binding, ahead of the copy it needs."""
    g = graph
    unit_of, whole = {}, {}
    for i in range(len(g.bindings)):
        op_id = g.op_of_binding.get(i)
        if op_id is None:
            unit_of[i] = ("glue", i) if i not in g.static else ("static", i)
        else:
            if op_id not in whole:  # once per op, not per binding
                whole[op_id] = whole_device(g, plan, op_id) is not None and not fed_across(g, plan, op_id)
            unit_of[i] = ("member", i) if whole[op_id] else op_id
    dag = nx.DiGraph()
    first = {}
    for i, u in unit_of.items():
        dag.add_node(u)
        first[u] = min(first.get(u, i), i)
        for j in g.binding_reads[i]:
            if unit_of[j] != u:
                dag.add_edge(unit_of[j], u)
    return list(nx.lexicographical_topological_sort(dag, key=lambda u: first[u]))
