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

STRATEGIES = {"cpu": plan_cpu, "gpu": plan_gpu, "equal": plan_equal, "fixed": plan_fixed, "eop": plan_eop,
              **_placement_strategies()}
