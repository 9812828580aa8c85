"""Split-op benchmark: a model's key operators alone, whole on each device and split, and their bound.

EOP (VEE '22, Sec. 3.2, Eq. 2) prices a split op as its two parts running at once plus the copies
and the concat. The best any split can do is the *ideal co-execution bound*
``1 / (1/t_cpu + 1/t_gpu)``: both devices busy for the whole op, each on the share it finishes in
the same time. With ``t_gpu`` measured from inputs on the host to the output back there, the
bound includes the copies (a part's copies scale with its share).

``tvm-partition bench --split-ops N`` adds, per model setting, the ``N`` heaviest key
ops (EOP's selection, one per kernel signature) as models of their own (:func:`op_model`: the op's
run-time inputs are the model's inputs, its weights are the model's own weights), each measured
three ways like any benchmark row (strategy ``cpu``, ``gpu`` = the whole op on the accelerator,
and ``split`` at the ratio EOP's Eq. 2 search finds best, :func:`best_split`). The report gives
every group its ideal bound and each row's distance to it (:func:`tvm_partition.bench.results.ideal`).
"""

from __future__ import annotations

import numpy as np

from ..plan import OnDevice, Plan, Split

#: The strategy name of an op row split at :func:`best_split`'s ratio.
SPLIT = "split"
OP_STRATEGIES = ("cpu", "gpu", SPLIT)


def op_model(model, graph, op_id: str, seed: int = 0):
    """Op ``op_id`` of ``graph`` (``model``'s OpGraph) alone as a :class:`~tvm_partition.frontend.model.Model`
    named ``model/fused_name``: the tensors it reads at run time are its inputs (random, seeded),
    the weights it reads are ``model``'s (bound at load time, so they sit on their device)."""
    from tvm import relax

    from ..profiling.samples import external_operands, sample_module
    from ..inputs import random_input
    from ..frontend.model import Model
    from ..ir.relax_utils import Constant, with_callees

    op = graph.ops[op_id]
    if not op.output_shapes[-1]:
        raise ValueError(f"op {op_id} has a scalar output: nothing to benchmark")
    sample = sample_module(graph, op, 0, op.output_shapes[-1][0])
    func = sample["main"]
    weights = {p: i for i, p in enumerate(graph.weight_params)}
    data, params, values = [], [], []
    rng = np.random.default_rng(seed)
    for var, operand in zip(func.params, external_operands(graph, op)):
        if operand in weights:
            params.append(var)
            values.append(np.asarray(model.params[weights[operand]]))
        elif isinstance(operand, Constant):
            params.append(var)
            values.append(operand.data.numpy())
        else:
            data.append(var)
    main = relax.Function(data + params, func.body, func.ret_ty, is_pure=True)
    main = main.with_attr("global_symbol", "main").with_attr("num_input", len(data))
    inputs = {v.name: random_input([int(x) for x in v.ty.shape.values], v.ty.dtype, rng) for v in data}
    return Model(f"{model.name}/{op.fused_name}", with_callees(main, sample), values, inputs,
                 dict(model.config))


def best_split(eop, op_id: str) -> Split | None:
    """How to split ``op_id``: EOP's choice (Eq. 2 optimum over legal dims and the 0.01 ratio
    grid) where it beats both whole placements (Eq. 3); elsewhere the grid ratio nearest the
    ideal share ``t_cpu / (t_cpu + t_gpu)`` on the dim whose Eq. 2 time is lowest there (the bench
    tests how close a split gets to the bound, also where the cost model says it will not pay).
    None where no dim can be split."""
    from ..ir.split_rules import IllegalSplit

    choice = eop.best_choice(op_id)
    if choice.split:
        return choice.decision
    share = choice.cpu_us / (choice.cpu_us + choice.gpu_us)
    best, best_t = None, float("inf")
    for dim in sorted(eop.g.ops[op_id].split_dims):
        cands = eop.ratio_candidates(op_id, dim)
        if not cands:
            continue
        s = min(cands, key=lambda c: abs(c.ratios[c.devices.index(eop.acc)] - share))
        try:
            res = eop.split_time(op_id, s)
        except IllegalSplit:
            continue
        if res is not None and res[0] < best_t:
            best, best_t = s, res[0]
    return best


def heaviest_key_ops(graph, devices, cost_model, n: int) -> list[tuple[str, Split]]:
    """Up to ``n`` key ops of EOP's selection that can be split, heaviest first, one per kernel
    signature, each with :func:`best_split`."""
    from ..ir.graph import op_signature
    from ..planners.eop import EOP

    eop = EOP(graph, devices, cost_model)
    out, seen = [], set()
    for v in eop.key_ops():  # heaviest first on the faster single device
        sig = op_signature(graph.ops[v])
        if sig in seen or len(out) >= n:
            continue
        seen.add(sig)
        split = best_split(eop, v)
        if split is not None:
            out.append((v, split))
    return out


class AsParent:
    """A cost model answering for an op model's op as for the model op it came from.

    TVM numbers a fused kernel's name by what else its module holds (``fused_matmul3_add3_gelu``
    in BERT-tiny is ``fused_matmul_add_gelu`` alone), and the profile keys samples by that name:
    the op model's own op would fall back to XGBoost. Everything else is ``inner``'s."""

    def __init__(self, inner, parent_op, child_signature: str):
        self.inner, self.parent_op, self.child = inner, parent_op, child_signature

    def estimate(self, op, device: str, shape=None):
        from ..ir.graph import op_signature

        return self.inner.estimate(self.parent_op if op_signature(op) == self.child else op, device, shape)

    def op_time(self, op, device: str, shape=None) -> float:
        return self.estimate(op, device, shape).us

    def for_graph(self, graph):
        """Pricing the op model ``graph`` as ``inner`` prices it (one compute op: its time alone)."""
        return AsParent(self.inner.for_graph(graph, {self.child: self.parent_op}), self.parent_op, self.child)

    def __getattr__(self, name):
        return getattr(self.inner, name)


def as_parent(cost_model, graph, op_id: str, op_model_graph):
    """:class:`AsParent` for the op model of ``graph``'s ``op_id`` (whose OpGraph is ``op_model_graph``)."""
    from ..ir.graph import op_signature

    return AsParent(cost_model, graph.ops[op_id], op_signature(op_model_graph.ops[main_op(op_model_graph)]))


def main_op(graph) -> str:
    """The op model's op: its one compute op (the heaviest, should glue remain)."""
    return max((v for v, op in graph.ops.items() if not op.is_view), key=lambda v: graph.ops[v].flops)


def split_plan(graph, devices, split: Split) -> Plan:
    """The op model's plan: its op split as ``split``, anything else (views, glue) on the host."""
    main = main_op(graph)
    host = devices[0].name
    ops = {v: (split if v == main else OnDevice(host)) for v in graph.ops}
    return Plan(list(devices), ops, strategy=SPLIT)


def op_rows(model, devices, cost_model, n: int):
    """``(op model, its split plan, row fields, its cost model)`` of ``model``'s ``n`` heaviest
    splittable key ops (:func:`heaviest_key_ops`): what ``bench --split-ops`` measures."""
    from ..ir.graph import OpGraph
    from ..planners.roles import accelerator

    graph = OpGraph(model.mod)
    acc = accelerator(devices).name
    for op_id, split in heaviest_key_ops(graph, devices, cost_model, n):
        om = op_model(model, graph, op_id)
        og = OpGraph(om.mod)
        yield om, split_plan(og, devices, split), {"op": describe(graph, op_id, split, acc)}, \
            as_parent(cost_model, graph, op_id, og)


def describe(graph, op_id: str, split: Split, acc: str) -> dict:
    """The ``op`` field of an op row: what was split, how."""
    op = graph.ops[op_id]
    return {"op": op_id, "fused": op.fused_name, "kind": op.kind, "shape": list(op.output_shapes[-1]),
            "dim": graph.dim_name(op, split.dim), "gpu_ratio": split.ratios[split.devices.index(acc)]}
