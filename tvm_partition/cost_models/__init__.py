"""Cost models: what an op costs on a device, and what a copy costs between two (EOP Sec. 2.3, 3.2).

:class:`CostModel` is the interface every planner uses (:mod:`.base`); :class:`ProfiledCostModel`
answers from this machine's profile (:mod:`.profiled`; ``python -m tvm_partition.profile``);
:class:`AnalyticCostModel` is a roofline estimate for machines never profiled.
"""

from .base import AnalyticCostModel, CostModel, DeviceRoofline, Estimate, cut_axes, part_fraction
from .profiled import CostModelError, ProfiledCostModel


def open_cost_model(devices, logs: str | None = None, fallback: CostModel | None = None) -> ProfiledCostModel:
    """The profiled cost model of ``logs`` (default: the shipped ``tuning_logs/``) for this machine's
    fingerprint, or ``logs`` itself when it is a fingerprint folder."""
    import os

    from ..tuning import DEFAULT_LOGS, database_dir

    logs = logs or DEFAULT_LOGS
    folder = logs if os.path.exists(os.path.join(logs, "profile.jsonl")) else database_dir(logs)
    return ProfiledCostModel(folder, devices, fallback)


__all__ = ["AnalyticCostModel", "CostModel", "CostModelError", "DeviceRoofline", "Estimate", "ProfiledCostModel",
           "cut_axes", "open_cost_model", "part_fraction"]
