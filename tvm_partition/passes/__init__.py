"""Relax passes of tvm_partition: :class:`ApplyPlan` rewrites a module according to a Plan."""

from .apply_plan import ApplyPlan

__all__ = ["ApplyPlan"]
