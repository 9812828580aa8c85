"""The simulator moves data as ApplyPlan does (issue 18 item 3: the two walk a plan separately).

:mod:`tvm_partition.planners.simulate` prices the copies, slices and concats it expects the rewritten
program to run; :class:`tvm_partition.passes.ApplyPlan` emits them. On random plans over zoo
graphs (every op whole on a random device, or split on a random legal axis at random ratios over
random devices), the program ApplyPlan emits (after dead-code elimination and with the weights'
slices and copies lifted to load time, as ``build.lower`` runs it) must still compute exactly as
many of the copies into each device, slices and concats the emitter created as the simulator has
copy, slice and concat tasks.
"""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest
import tvm
from tvm import relax

from helpers import mlp_model
from tvm_partition import frontend
from tvm_partition.cost_models import AnalyticCostModel, DeviceRoofline
from tvm_partition.devices import parse_devices
from tvm_partition.ir.graph import OpGraph
from tvm_partition.passes import ApplyPlan
from tvm_partition.passes.apply_plan import _Emitter
from tvm_partition.plan import OnDevice, Plan, Split
from tvm_partition.planners.simulate import simulate

DEVICES = parse_devices("cpu,cpu,cpu")
PLANS = 12


def random_plan(graph: OpGraph, rng) -> Plan:
    names = [d.name for d in DEVICES]
    ops = {}
    for i, op in graph.ops.items():
        dims = sorted(op.split_dims)
        if dims and rng.random() < 0.6:
            k = int(rng.integers(2, 4))
            ratios = rng.dirichlet(np.ones(k))
            devs = tuple(rng.permutation(names)[:k])
            dim = int(rng.choice(dims))
            ops[i] = Split(dim, tuple(float(r) for r in ratios), devs).exact(
                op.output_shapes[-1][dim], op.granules.get(dim, 1))
        elif rng.random() < 0.8:
            ops[i] = OnDevice(str(rng.choice(names)))
    return Plan(DEVICES, ops)


class Tagged:
    """Names of the values ApplyPlan's emitter creates to move data, by kind (``copy->DEV``,
    ``slice``, ``concat``): its ``move`` / ``slice`` / ``concat`` wrapped for the test (clear
    ``kind`` before each rewrite)."""

    def __init__(self, monkeypatch):
        self.kind: dict[str, str] = {}
        for method in ("move", "slice", "concat"):
            monkeypatch.setattr(_Emitter, method, self._wrap(method, getattr(_Emitter, method)))

    def _wrap(self, method, fn):
        def wrapped(emitter, expr, *args, **kwargs):
            val = fn(emitter, expr, *args, **kwargs)
            if method != "move":
                self.kind[val.name] = method
            elif not isinstance(val.ty, relax.TupleType):  # a tuple moves field by field
                self.kind[val.name] = f"copy->{args[0]}"
            return val
        return wrapped

    def follow_aliases(self, mod: tvm.IRModule) -> None:
        """Tag ``y`` of ``y = x`` where ``x`` is tagged: clean-up passes fold the alias, keeping ``y``."""
        for blk in mod["main"].body.blocks:
            for b in blk.bindings:
                if isinstance(b.value, relax.Var) and b.value.name in self.kind:
                    self.kind[b.var.name] = self.kind[b.value.name]

    def count(self, mod: tvm.IRModule) -> Counter:
        """Those of the tagged values still computed by ``main`` (not dead, not lifted to load time)."""
        bound = [b.var.name for blk in mod["main"].body.blocks for b in blk.bindings
                 if not isinstance(b.value, relax.Var)]
        return Counter(self.kind[n] for n in bound if n in self.kind)


def simulated(graph: OpGraph, plan: Plan) -> Counter:
    cm = AnalyticCostModel({d.name: DeviceRoofline(100.0, 20.0, 1.0) for d in DEVICES})
    out = Counter()
    for t in simulate(graph, plan, cm).tasks:
        if t.kind == "copy":
            out[f"copy->{t.resource.split('->')[1]}"] += 1
        elif t.kind in ("slice", "concat"):
            out[t.kind] += 1
    return out


def lowered(mod, plan, graph, tagged: Tagged) -> tvm.IRModule:
    """ApplyPlan and the clean-up of ``build.lower`` (dead code, weights lifted to load time)."""
    mod = ApplyPlan(plan, graph=graph)(mod)
    tagged.follow_aliases(mod)
    seq = tvm.transform.Sequential([relax.transform.DeadCodeElimination(["main"]), relax.transform.RealizeVDevice(),
                                    relax.transform.LiftTransformParams()])
    return seq(mod)


@pytest.mark.parametrize("name", ["mlp", "lstm", "bert-tiny", "resnet18"])
def test_simulated_copies_slices_and_concats_are_what_apply_plan_emits(name, monkeypatch):
    model = mlp_model(batch=6) if name == "mlp" else frontend.load(
        name, batch=4, **({"image_size": 32} if name == "resnet18" else {"seq_len": 4, "layers": 1}))
    graph = OpGraph(model.mod)
    rng = np.random.default_rng(0)
    tagged = Tagged(monkeypatch)
    for k in range(PLANS):
        plan = random_plan(graph, rng)
        tagged.kind.clear()
        got = tagged.count(lowered(model.mod, plan, graph, tagged))
        assert got == simulated(graph, plan), f"{name} plan {k}: {plan.ops}"


@pytest.mark.parametrize("name", ["mlp", "resnet18"])
def test_a_trial_rolled_back_leaves_the_schedule_as_it_was(name):
    """Planners try a decision on the growing schedule and roll it back (:meth:`Run.mark`,
    :meth:`Run.rollback`): on random plans, trying two random decisions before each op (each with
    the next op after it) and then emitting the plan's own gives the schedule of the plan emitted
    alone, task for task. The trials reach joins priced in place and launched after all
    (``Run._part_read``), whose undo runs after the clock has cut its tasks back."""
    from tvm_partition.planners.simulate import Simulator, emit_order

    model = mlp_model(batch=8) if name == "mlp" else frontend.load(name, batch=4, image_size=32)
    graph = OpGraph(model.mod)
    cm = AnalyticCostModel({d.name: DeviceRoofline(100.0, 20.0, 1.0) for d in DEVICES})
    sim, order = Simulator(graph, cm), emit_order(graph)
    rng = np.random.default_rng(1)
    for _ in range(4):
        plan = random_plan(graph, rng)
        alone = sim.start(plan)
        for op_id in order:
            alone.emit_op(op_id)
        want = alone.finish()
        run = sim.start(plan)
        for k, op_id in enumerate(order):
            for _ in range(2):
                trial = random_plan(graph, rng).ops
                mark = run.mark()
                for other in order[k:k + 2]:
                    run.emit_op(other, trial.get(other))
                run.rollback(mark)
            run.emit_op(op_id)
        got = run.finish()
        assert (got.tasks, got.latency_us, got.sum_us) == (want.tasks, want.latency_us, want.sum_us)
