"""Planners decide; they return a :class:`tvm_partition.plan.Plan` and never touch IR or devices.

``STRATEGIES`` maps a strategy name to ``plan(graph, devices) -> Plan``; later planners (EOP)
register here too; the placement strategies (milp, dominators, dp, heft, metf, msct) are here.
"""

from .baselines import STRATEGIES, plan_with
from .placement import strategies as _placement_strategies

STRATEGIES.update(_placement_strategies())

__all__ = ["STRATEGIES", "plan_with"]
