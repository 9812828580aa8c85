"""Joint split + placement: the MILP chooses, for key ops, between running an op whole on one
device and splitting it over two devices at a ratio from a small set -- EOP's split (Sec. 3) and
MOIRAI's placement (Sec. IV) in one model, which none of the papers does.

Key ops are EOP's (Sec. 3.3): the ops that together take 95% of the time (at their fastest), at
most ``max_ops`` of them, that can be split on some axis (:func:`.baselines.preferred_dim`). For
every ordered device pair ``(d0, d1)`` and ratio ``r`` an option is added whose time is

    max(t(d0, part r), t(d1, part 1 - r)) + comm(inputs, d0 -> d1) + comm(output part, d1 -> d0)

(the parts from the cost model's ``op_time`` with the output shape shrunk on the split axis; the
second device is sent the op's whole inputs -- conservative, as a split on N needs all of A -- and
returns its part of the output to ``d0``, where the parts are joined). The MILP (``_split_choices``
in :mod:`.milp`) gives the option an interval on both devices.
"""

from __future__ import annotations

import math

from ..plan import Split
from .baselines import preferred_dim
from .problem import Problem


def key_ops(problem: Problem, opgraph, share: float = 0.95, max_ops: int = 16) -> list[str]:
    fastest = {v: min(problem.graph.nodes[v]["time_us"].values()) for v in problem.graph}
    total = sum(fastest.values()) or 1.0
    out, acc = [], 0.0
    for v in sorted(fastest, key=fastest.get, reverse=True):
        if acc >= share * total or len(out) >= max_ops or fastest[v] <= 0:
            break
        acc += fastest[v]
        if preferred_dim(opgraph, v) is not None:
            out.append(v)
    return out


def _part_shape(shape, dim: int, size: int) -> tuple[int, ...]:
    shape = list(shape)
    shape[dim] = size
    return tuple(shape)


def add_split_options(problem: Problem, opgraph, cost_model, ratios=(0.25, 0.5, 0.75)) -> None:
    """Give each key op of ``problem`` (an OpGraph's problem) split options over device pairs."""
    g = problem.graph
    for v in key_ops(problem, opgraph):
        op = opgraph.ops[v]
        dim = preferred_dim(opgraph, v)
        full = op.output_shapes[-1]
        in_bytes = sum(g.edges[u, v]["bytes"] for u in g.predecessors(v))
        out_bytes = g.nodes[v]["mem_bytes"]
        opts = []
        for d0 in problem.allowed(v):
            for d1 in problem.allowed(v):
                if d0 == d1:
                    continue
                for r in ratios:  # cut where the split will cut: at the op's granule (tvm_partition.build.align)
                    parts = Split(dim, (r, 1 - r), (d0, d1)).parts(full[dim], op.granules.get(dim, 1))
                    if len(parts) != 2:
                        continue
                    (_, lo, cut), (_, _, hi) = parts
                    t0 = cost_model.op_time(op, d0, _part_shape(full, dim, cut - lo))
                    t1 = cost_model.op_time(op, d1, _part_shape(full, dim, hi - cut))
                    t = (max(t0, t1) + problem.comm_time(in_bytes, d0, d1)
                         + problem.comm_time(out_bytes * (hi - cut) / hi, d1, d0))
                    if math.isfinite(t):
                        opts.append({"devices": (d0, d1), "ratios": (r, 1 - r), "time_us": float(t)})
        if opts:
            g.nodes[v]["splits"] = opts
    problem.validate()


def split_decision(opgraph, op_id: str, option: dict) -> Split:
    return Split(preferred_dim(opgraph, op_id), tuple(option["ratios"]), tuple(option["devices"]))
