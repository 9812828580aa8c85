"""Relax passes of tvm_partition: :class:`ApplyPlan` rewrites a module according to a Plan;
:class:`PartitionPass` plans (any strategy, on a cost model) and applies in one pass;
:class:`PropagateVDevice` keeps legalized kernels on their inputs' device; :func:`keep_joins_apart`
keeps the concats joining a split op's parts out of TVM's fused groups; :class:`FenceCopies` keeps
every kernel on its side of each cross-device copy through TVM's fusion."""

from .apply_plan import ApplyPlan
from .fences import FenceCopies
from .joins import keep_joins_apart
from .partition import PartitionPass
from .propagate_vdevice import PropagateVDevice

__all__ = ["ApplyPlan", "FenceCopies", "PartitionPass", "PropagateVDevice", "keep_joins_apart"]
