"""PartitionPass: plan and apply in one ``tvm.transform`` pass, for users' own build pipelines.

::

    from tvm_partition.passes import PartitionPass
    seq = tvm.transform.Sequential([PartitionPass("cpu,gpu"), relax.transform.RealizeVDevice(), ...])

It builds the :class:`tvm_partition.ir.graph.OpGraph` of ``main``, plans it with ``strategy`` (any
name of :data:`tvm_partition.planners.STRATEGIES`; default ``auto``) on ``cost_model`` (default:
:func:`tvm_partition.cost_models.default_cost_model`), then runs :class:`.ApplyPlan`. The plan it
applied is kept in :attr:`PartitionPass.plan` (save it with ``plan.save("plan.json")``).
"""

from __future__ import annotations

import tvm

from .apply_plan import ApplyPlan


@tvm.transform.module_pass(opt_level=0, name="PartitionPass")
class PartitionPass:
    def __init__(self, devices, cost_model=None, strategy: str = "auto", func_name: str = "main"):
        from ..devices import parse_devices

        self.devices = parse_devices(devices) if isinstance(devices, str) else list(devices)
        self.cost_model = cost_model
        self.strategy = strategy
        self.func_name = func_name
        self.plan = None

    def transform_module(self, mod: tvm.IRModule, _ctx) -> tvm.IRModule:
        from ..planners import make_plan
        from ..ir.graph import OpGraph

        graph = OpGraph(mod, self.func_name)
        self.plan = make_plan(graph, self.devices, self.strategy, cost_model=self.cost_model)
        return ApplyPlan(self.plan, self.func_name, graph)(mod)
