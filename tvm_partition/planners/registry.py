"""The strategies a plan can be asked for by name, each ``plan(graph, devices, cost_model) -> Plan``.

The baselines (cpu, gpu, equal, fixed: :mod:`.baselines`), the EOP planner (eop: :mod:`.eop`) and
the placement strategies (milp, dominators, dp, heft, metf, msct: :mod:`.placement`). ``auto``,
which plans with these and keeps the best, is added by the package (:mod:`tvm_partition.planners`):
it is kept out of this table so :mod:`.auto` can read it without importing its own caller.
"""

from __future__ import annotations

from .baselines import plan_cpu, plan_equal, plan_fixed, plan_gpu
from .eop import plan_eop
from .placement import strategies as _placement_strategies



def _cpu_only_on_host(plan):
    """``plan`` as its planner made it, but the ops that run on a CPU only
    (:attr:`tvm_partition.ir.graph.OpGraph.cpu_only`) on the host: the planners place ops by their
    cost alone."""
    def planned(graph, devices, cost_model=None):
        return plan(graph, devices, cost_model).with_cpu_only_on_host(graph)

    return planned


STRATEGIES = {name: _cpu_only_on_host(plan) for name, plan in {
    "cpu": plan_cpu, "gpu": plan_gpu, "equal": plan_equal, "fixed": plan_fixed, "eop": plan_eop,
    **_placement_strategies()}.items()}
