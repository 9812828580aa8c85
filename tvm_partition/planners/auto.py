"""Strategy ``auto``: plan with every cheap strategy and keep the best predicted plan.

Every candidate is scored on the same list schedule (:mod:`tvm_partition.planners.simulate`), so the
comparison is fair; ``cpu`` and ``gpu`` are always candidates, so ``auto`` never predicts a plan
slower than the best single device, and keeps one device unless a plan using several is
predicted :data:`~tvm_partition.planners.roles.MIN_GAIN` faster. ``milp`` is left out (it spends its time limit); ask for it
by name.
"""

from __future__ import annotations

from ..plan import Plan, PlanError
from .simulate import Simulator
from .roles import pick
from .problem import ProblemError
from .registry import STRATEGIES

CANDIDATES = ("cpu", "gpu", "equal", "fixed", "eop", "heft", "metf", "msct", "dp")


def plan_auto(graph, devices, cost_model, candidates=CANDIDATES) -> Plan:
    if cost_model is None:
        raise PlanError("the auto strategy needs a cost model")
    sim = Simulator(graph, cost_model)
    scored, skipped = {}, {}
    for name in candidates:
        try:
            plan = STRATEGIES[name](graph, devices, cost_model)
        except (PlanError, ProblemError) as e:  # e.g. dp on a graph without dominators
            skipped[name] = str(e)
            continue
        scored[name] = (plan, sim.run(plan).latency_us)
    best = pick({k: v[1] for k, v in scored.items()}, ("cpu", "gpu"))
    plan = scored[best][0]
    meta = dict(plan.meta)
    meta["auto"] = {"chosen": best, "predicted_us": {k: v[1] for k, v in scored.items()}, "skipped": skipped}
    return Plan(plan.devices, plan.ops, strategy="auto", predicted_latency_us=scored[best][1], meta=meta)
