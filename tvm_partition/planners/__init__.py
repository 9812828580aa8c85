"""Planners decide; they return a :class:`tvm_partition.plan.Plan` and never touch IR or devices.

``STRATEGIES`` maps a strategy name to ``plan(graph, devices, cost_model) -> Plan``: the
baselines (cpu, gpu, equal, fixed), the EOP planner (eop), the placement strategies (milp,
dominators, dp, heft, metf, msct) and ``auto`` (the best predicted of the cheap ones).
:func:`plan_and_simulate` is the one entry point callers use (the compile command, the
``PartitionPass``, the multi-server stages): it plans, validates, and prices the plan on the
cost model's list schedule (:mod:`tvm_partition.planners.simulate`), so every plan is scored the same way.
"""

from __future__ import annotations

from ..plan import Plan, PlanError, Split


def _strategies() -> dict:
    """``STRATEGIES``, built once on first use: the registry's planners and the simulator import
    TVM (1.4 s of the 2.0 s ``place`` spent importing here), which the placement modules of this
    package never need (``place``'s time limit counts from the process's start)."""
    if "STRATEGIES" not in globals():
        from .auto import plan_auto
        from .registry import STRATEGIES as registered

        strategies = dict(registered, auto=plan_auto)
        # NAMES: the strategies that split ops over a CPU and an accelerator, then the placement ones
        globals().update(STRATEGIES=strategies, NAMES=tuple(strategies))
    return globals()["STRATEGIES"]


def __getattr__(name: str):
    if name in ("STRATEGIES", "NAMES"):
        _strategies()
        return globals()[name]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def plan_with(strategy: str, graph, devices, cost_model=None) -> Plan:
    strategies = _strategies()
    try:
        fn = strategies[strategy]
    except KeyError:
        raise PlanError(f"unknown strategy {strategy!r}: choose one of {', '.join(strategies)}") from None
    return fn(graph, devices, cost_model)


def plan_and_simulate(graph, devices, strategy: str = "auto", plan_file=None, topology=None,
                      time_limit: float = 10.0, cost_model=None, split_ratios=()):
    """Plan ``graph`` with ``strategy`` (a name of :data:`STRATEGIES`) or take ``plan_file`` (a plan
    file, or a :class:`Plan`); ``cost_model`` (default:
    :func:`tvm_partition.cost_models.default_cost_model`) prices the plan. ``topology`` /
    ``time_limit`` / ``split_ratios`` are for the placement strategies (milp...).
    ``predicted_latency_us`` is the simulated latency, whatever the strategy. Returns ``(plan, simulation)``."""
    from .placement import STRATEGY_NAMES, plan_placement
    from .simulate import simulate

    if cost_model is None:
        from ..cost_models import default_cost_model

        cost_model = default_cost_model(devices)[0]
    cost_model = cost_model.for_graph(graph)
    if isinstance(plan_file, Plan):
        plan = plan_file
    elif plan_file:
        plan = Plan.load(plan_file)
    elif strategy in STRATEGY_NAMES:
        plan = plan_placement(strategy, graph, devices, cost_model, topology, time_limit,
                              split_ratios).with_cpu_only_on_host(graph)
    else:
        plan = plan_with(strategy, graph, devices, cost_model)
    plan.validate(graph)
    if not plan_file:  # a planner's ratios, written as the exact fractions its cuts make (tvm_partition.build.align)
        plan.ops = {k: d.exact(graph.ops[k].output_shapes[-1][d.dim], graph.ops[k].granules.get(d.dim, 1))
                    if isinstance(d, Split) else d for k, d in plan.ops.items()}
    sim = simulate(graph, plan, cost_model)
    plan.predicted_latency_us = sim.latency_us
    plan.meta["predicted"] = {"latency_us": sim.latency_us, "sum_us": sim.sum_us, "cost_model": type(cost_model).__name__,
                              "sources": sim.op_sources, "estimated_share": round(sim.estimated_share(), 4)}
    if getattr(cost_model, "graph_factor", None) is not None:  # measured in the VM, or one kernel (alone)
        plan.meta["predicted"]["in_model_factor"] = round(cost_model.graph_factor, 4)
        plan.meta["predicted"]["in_model_factor_from"] = cost_model.graph_factor_from
    if getattr(cost_model, "graph_launch", None) is not None:  # a CPU launch, solved with the factor
        plan.meta["predicted"]["in_model_launch_us"] = round(cost_model.graph_launch, 4)
    return plan, sim


def make_plan(graph, devices, strategy: str = "auto", plan_file=None, **options) -> Plan:
    """The plan of :func:`plan_and_simulate`."""
    return plan_and_simulate(graph, devices, strategy, plan_file, **options)[0]


__all__ = ["NAMES", "STRATEGIES", "make_plan", "plan_and_simulate", "plan_with"]
