"""Cost models: what an op costs on a device, and what a copy costs between two (EOP Sec. 2.3, 3.2).

:class:`CostModel` is the interface every planner uses; see :mod:`.base`.
"""

from .base import AnalyticCostModel, CostModel, DeviceRoofline, Estimate, part_fraction

__all__ = ["AnalyticCostModel", "CostModel", "DeviceRoofline", "Estimate", "part_fraction"]
