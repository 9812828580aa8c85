"""Relax passes of tvm_partition: :class:`ApplyPlan` rewrites a module according to a Plan;
:class:`PartitionPass` plans (any strategy, on a cost model) and applies in one pass;
:class:`PropagateVDevice` keeps legalized kernels on their inputs' device; :func:`keep_joins_apart`
keeps the concats joining a split op's parts out of TVM's fused groups; :class:`FenceCopies` keeps
every kernel on its side of each cross-device copy through TVM's fusion; :func:`elide_host_copies`
drops the copies between two CPU virtual devices (one memory) before memory planning,
:func:`share_packed_weights` packs a weight once for them all, :func:`merge_repeated_params` passes it to
``main`` once, and :func:`write_joins_in_place`
lets the parts of a split write into the joined tensor instead of a concat copying them there;
:func:`slices_as_views` takes a slice kernel that copies one aligned block as a view instead."""

from .apply_plan import ApplyPlan
from .fences import FenceCopies
from .host_copies import elide_host_copies, merge_repeated_params, share_packed_weights
from .in_place_joins import write_joins_in_place
from .joins import keep_joins_apart
from .partition import PartitionPass
from .propagate_vdevice import PropagateVDevice
from .slice_views import slices_as_views

__all__ = ["ApplyPlan", "FenceCopies", "PartitionPass", "PropagateVDevice", "elide_host_copies", "keep_joins_apart",
           "merge_repeated_params", "share_packed_weights", "slices_as_views", "write_joins_in_place"]
