"""Relax passes of tvm_partition: :class:`ApplyPlan` rewrites a module according to a Plan;
:class:`PartitionPass` plans (any strategy, on a cost model) and applies in one pass;
:class:`PropagateVDevice` keeps legalized kernels on their inputs' device."""

from .apply_plan import ApplyPlan
from .partition import PartitionPass
from .propagate_vdevice import PropagateVDevice

__all__ = ["ApplyPlan", "PartitionPass", "PropagateVDevice"]
