"""Relax passes of tvm_partition: :class:`ApplyPlan` rewrites a module according to a Plan;
:class:`PropagateVDevice` keeps legalized kernels on their inputs' device."""

from .apply_plan import ApplyPlan
from .propagate_vdevice import PropagateVDevice

__all__ = ["ApplyPlan", "PropagateVDevice"]
