"""The roles planners give devices, and the rule that keeps one of several predicted plans.

Two-device strategies (EOP's and its baselines, VEE '22 Sec. 3-5) split work between the host CPU
(the first device) and an accelerator (:func:`accelerator`); every strategy that chooses among
plans keeps a single-device plan unless another is predicted :data:`MIN_GAIN` faster (:func:`pick`).
Its own module so that the planners it serves import it without importing each other.
"""

from __future__ import annotations

from ..devices import DeviceSpec
from ..plan import PlanError


def accelerator(devices: list[DeviceSpec]) -> DeviceSpec:
    """The accelerator of a two-device strategy: the first GPU, else the second device."""
    if len(devices) < 2:
        raise PlanError("this strategy needs two devices, e.g. --devices cpu,gpu")
    return next((d for d in devices if d.kind == "gpu"), devices[1])


#: A plan using several devices must be predicted at least this much faster than the best
#: single-device plan to be chosen over it. Below it a split is a coin toss: on the build machine's
#: tuned builds, predictions were 0-25% off end to end (BENCHMARKS.md), and on 2026-11-23 EOP
#: split one BERT-tiny transpose at a 0.8% predicted gain that measured 1-3% slower.
MIN_GAIN = 0.03


def pick(predicted: dict[str, float], single: tuple[str, ...]) -> str:
    """The key of ``predicted`` (plan name -> predicted us) to keep: the fastest, unless it is not
    one of the ``single``-device plans and beats the best of them by less than :data:`MIN_GAIN`."""
    best = min(predicted, key=predicted.get)
    singles = [k for k in single if k in predicted]
    if best in singles or not singles:
        return best
    alone = min(singles, key=predicted.get)
    return best if predicted[best] < (1.0 - MIN_GAIN) * predicted[alone] else alone
