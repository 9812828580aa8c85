"""Planners decide; they return a :class:`tvm_partition.plan.Plan` and never touch IR or devices.

``STRATEGIES`` maps a strategy name to ``plan(graph, devices, cost_model) -> Plan``: the
baselines (cpu, gpu, equal, fixed), the EOP planner (eop), the placement strategies (milp,
dominators, dp, heft, metf, msct) and ``auto`` (the best predicted of the cheap ones).
"""

from .auto import plan_auto
from .baselines import STRATEGIES, plan_with
from .placement import strategies as _placement_strategies

STRATEGIES.update(_placement_strategies())
STRATEGIES["auto"] = plan_auto

#: Strategies that split ops over a CPU and an accelerator, then the placement ones.
NAMES = tuple(STRATEGIES)

__all__ = ["NAMES", "STRATEGIES", "plan_with"]
