"""EOP's three performance patterns (Sec. 3.2, Alg. 1): time of an op as a function of the size of
one dimension (batch, H, N...) on one device.

* ``constant``:  t(x) = c                       (Fig. 4(c, d, h): size does not matter)
* ``linear``:    t(x) = a + b x                 (Fig. 4(b, f): mostly on GPUs)
* ``staircase``: t(x) = a + b ceil(x / w)       (Fig. 4(e, g): mostly on CPUs; the step width ``w``
  is found from the data — every width from 2 up is tried, the one with least error kept —
  because where the steps fall depends on the kernel's tiling, not on a rule we could assume)

and one of ours, for what none of the three follows:

* ``hinge``:     t(x) = a + b min(x, k) + c max(0, x - k)   (two slopes meeting at a sampled size
  ``k``: a cache cliff, where the slope rises past the size whose operands leave a cache (BERT's
  layer norm, znver3: 571 us at 128 rows, 3,085 at 256), or a kernel whose parallel loop fills
  both threads only past ``k``, where it falls. ``b, c >= 0``: never faster as it grows.
  Measured by ``profile --evaluate`` on the four CPU profiles shipped (2026-11-28): held-out
  MAPE 13.4 -> 12.9% (znver3), 12.4 -> 9.9% (znver4), 14.3 -> 10.5% (znver5), 16.1 -> 14.0%
  (rocketlake); a hinge that may only rise after ``k`` gained half as much.

Fits minimise *relative* squared error (a 10 us op mispredicted by 5 us matters as much as a
10 ms op by 5 ms). The pattern with least held-out error wins (Alg. 1, Step 2): each pattern is
scored by leave-one-out cross-validation, mean absolute percentage error; ties go to the simpler
pattern.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np

PATTERNS = ("constant", "linear", "staircase", "hinge")


@dataclasses.dataclass(frozen=True)
class Fit:
    pattern: str
    params: tuple[float, ...]  # constant: (c,); linear: (a, b); staircase: (a, b, w); hinge: (a, b, c, k)
    cv_mape: float  # leave-one-out error that chose it (nan when too few samples to cross-validate)
    n: int  # samples it was fitted on
    x_range: tuple[int, int]

    def predict(self, x) -> np.ndarray | float:
        xs = np.asarray(x, dtype=float)
        if self.pattern == "constant":
            y = np.full_like(xs, self.params[0])
        elif self.pattern == "linear":
            y = self.params[0] + self.params[1] * xs
        elif self.pattern == "hinge":
            a, b, c, k = self.params
            y = a + b * np.minimum(xs, k) + c * np.maximum(xs - k, 0.0)
        else:
            a, b, w = self.params
            y = a + b * np.ceil(xs / w)
        y = np.maximum(y, 1e-3)
        return float(y) if np.ndim(x) == 0 else y

    def explain(self, dim_name: str = "x") -> str:
        p = self.params
        formula = {
            "constant": lambda: f"t = {p[0]:.4g} us",
            "linear": lambda: f"t = {p[0]:.4g} + {p[1]:.4g} * {dim_name} us",
            "staircase": lambda: f"t = {p[0]:.4g} + {p[1]:.4g} * ceil({dim_name} / {p[2]:g}) us "
                                 f"(steps every {p[2]:g})",
            "hinge": lambda: f"t = {p[0]:.4g} + {p[1]:.4g} * min({dim_name}, {p[3]:g}) + {p[2]:.4g} * "
                             f"max({dim_name} - {p[3]:g}, 0) us",
        }[self.pattern]()
        err = "n/a" if math.isnan(self.cv_mape) else f"{100 * self.cv_mape:.1f}%"
        return f"{self.pattern}: {formula}; leave-one-out MAPE {err}; {self.n} samples, {dim_name} in " \
               f"[{self.x_range[0]}, {self.x_range[1]}]"

    def to_json(self) -> dict:
        return {"pattern": self.pattern, "params": list(self.params), "cv_mape": self.cv_mape, "n": self.n,
                "x_range": list(self.x_range)}

    @staticmethod
    def from_json(d: dict) -> "Fit":
        return Fit(d["pattern"], tuple(d["params"]), float(d["cv_mape"]), int(d["n"]), tuple(d["x_range"]))


def _wls(features: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Least squares of relative error (rows weighted by 1/y), with non-negative coefficients: a
    time never shrinks as the size grows, and a negative intercept would predict free small parts
    (the second column is refitted alone, then the first, when the joint fit goes negative)."""
    w = 1.0 / np.maximum(y, 1e-9)
    A, b = features * w[:, None], y * w
    coef, *_ = np.linalg.lstsq(A, b, rcond=None)
    if coef.min() >= 0 or A.shape[1] == 1:
        return np.maximum(coef, 0.0)
    best, best_err = None, np.inf
    for col in range(A.shape[1]):
        c = np.zeros(A.shape[1])
        c[col] = max(0.0, float(A[:, col] @ b) / max(float(A[:, col] @ A[:, col]), 1e-30))
        err = float(np.sum((A @ c - b) ** 2))
        if err < best_err:
            best, best_err = c, err
    return best


def _fit_params(pattern: str, x: np.ndarray, y: np.ndarray) -> tuple[float, ...] | None:
    if pattern == "constant":
        return (float(_wls(np.ones((len(x), 1)), y)[0]),)
    if pattern == "linear":
        if len(set(x.tolist())) < 2:
            return None
        a, b = _wls(np.column_stack([np.ones_like(x), x]), y)
        return float(a), float(b)
    if pattern == "hinge":
        return _fit_hinge(x, y)
    # staircase: every step width at once; keep the one with least relative error
    widths = np.array(_widths(x), dtype=float)
    steps = np.ceil(x[None, :] / widths[:, None])  # (widths, samples)
    ok = steps.max(axis=1) > steps.min(axis=1)  # at least two steps among the samples
    if not ok.any():
        return None
    widths, steps = widths[ok], steps[ok]
    a, b = _wls2(steps, y)
    pred = np.maximum(a[:, None] + b[:, None] * steps, 1e-3)
    err = np.mean(np.abs(pred - y[None, :]) / y[None, :], axis=1)
    k = int(np.argmin(err))
    return float(a[k]), float(b[k]), float(widths[k])


def _fit_hinge(x: np.ndarray, y: np.ndarray) -> tuple[float, ...] | None:
    """The hinge at every interior sampled size; the one with least relative error. None below
    four sizes (two slopes and an intercept would pass through any three points). The hinges are
    solved at once (normal equations, as :func:`_wls`'s weights), :func:`_wls` redoing those that
    come out negative: fitted one by one, the leave-one-out scoring doubled ``profile --evaluate``."""
    sizes = np.unique(x)
    if len(sizes) < 4:
        return None
    ks = sizes[1:-1]
    features = np.stack([np.broadcast_to(np.ones_like(x), (len(ks), len(x))), np.minimum(x[None, :], ks[:, None]),
                         np.maximum(x[None, :] - ks[:, None], 0.0)], axis=2)  # (hinges, samples, 3)
    w = 1.0 / np.maximum(y, 1e-9)
    a = features * w[None, :, None]
    normal = np.einsum("kni,knj->kij", a, a)
    rhs = np.einsum("kni,n->ki", a, y * w)
    coef = np.linalg.solve(normal + 1e-12 * np.eye(3)[None], rhs[..., None])[..., 0]
    for i in np.flatnonzero(coef.min(axis=1) < 0):
        coef[i] = _wls(features[i], y)
    pred = np.maximum(np.einsum("kni,ki->kn", features, coef), 1e-3)
    best = int(np.argmin(np.mean(np.abs(pred - y[None, :]) / y[None, :], axis=1)))
    return float(coef[best, 0]), float(coef[best, 1]), float(coef[best, 2]), float(ks[best])


def _wls2(s: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """:func:`_wls` of ``y ~ a + b * s`` for each row of ``s`` at once (closed form, a, b >= 0)."""
    w2 = 1.0 / np.maximum(y, 1e-9) ** 2
    sw, sws, swss = w2.sum(), (s * w2).sum(1), (s * s * w2).sum(1)
    swy, swsy = (w2 * y).sum(), (s * w2 * y).sum(1)
    det = sw * swss - sws**2
    safe = np.where(np.abs(det) > 1e-30, det, 1.0)
    a = np.where(np.abs(det) > 1e-30, (swss * swy - sws * swsy) / safe, swy / sw)
    b = np.where(np.abs(det) > 1e-30, (sw * swsy - sws * swy) / safe, 0.0)
    # a negative coefficient: the better of the two one-coefficient fits (as in _wls)
    neg = (a < 0) | (b < 0)
    a_only, b_only = swy / sw, np.maximum(swsy / np.maximum(swss, 1e-30), 0.0)
    err_a = ((a_only - y[None, :]) ** 2 * w2).sum(1)
    err_b = ((b_only[:, None] * s - y[None, :]) ** 2 * w2).sum(1)
    use_a = neg & (err_a <= err_b)
    use_b = neg & ~use_a
    a = np.where(use_a, a_only, np.where(use_b, 0.0, a))
    b = np.where(use_a, 0.0, np.where(use_b, b_only, b))
    return a, b


def _widths(x: np.ndarray) -> list[int]:
    hi = int(x.max())
    cands = set(range(2, min(hi, 64) + 1))
    p = 64
    while p <= hi:
        cands.add(p)
        p *= 2
    cands.update(int(v) for v in x if v >= 2)
    return sorted(cands)


def _fit_one(pattern: str, x: np.ndarray, y: np.ndarray) -> Fit | None:
    params = _fit_params(pattern, x, y)
    if params is None:
        return None
    return Fit(pattern, params, math.nan, len(x), (int(x.min()), int(x.max())))


def loo_mape(pattern: str, x: np.ndarray, y: np.ndarray) -> float:
    """Leave-one-out mean absolute percentage error of ``pattern`` on the samples."""
    errs = []
    for i in range(len(x)):
        keep = np.arange(len(x)) != i
        fit = _fit_one(pattern, x[keep], y[keep])
        if fit is None:
            return math.inf
        errs.append(abs(fit.predict(float(x[i])) - y[i]) / y[i])
    return float(np.mean(errs)) if errs else math.nan


def fit(x, y, patterns=PATTERNS) -> Fit:
    """The pattern (of ``patterns``) with least leave-one-out error, fitted on all samples."""
    x = np.asarray(x, dtype=float)
    y = np.maximum(np.asarray(y, dtype=float), 1e-3)
    if len(x) == 0:
        raise ValueError("no samples to fit")
    if len(x) < 3:  # too few to cross-validate: the simplest pattern that fits them
        for p in patterns:
            f = _fit_one(p, x, y) if (p != "constant" or len(x) == 1) else None
            if f is not None:
                return f
        return _fit_one("constant", x, y)
    best, best_err = None, math.inf
    for p in patterns:  # in order of simplicity: ties keep the simpler pattern
        err = loo_mape(p, x, y)
        if err < best_err - 1e-9:
            best, best_err = p, err
    f = _fit_one(best, x, y)
    return dataclasses.replace(f, cv_mape=best_err)
