"""Planners decide; they return a :class:`tvm_partition.plan.Plan` and never touch IR or devices.

``STRATEGIES`` maps a strategy name to ``plan(graph, devices) -> Plan``; later planners (EOP,
placement) register here too.
"""

from .baselines import STRATEGIES, plan_with

__all__ = ["STRATEGIES", "plan_with"]
