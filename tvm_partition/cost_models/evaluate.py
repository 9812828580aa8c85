"""Accuracy of the cost models on held-out shapes (``profile --evaluate``), like EOP Fig. 4 / Fig. 7.

Every series of samples (one op, one device, one axis) with at least 5 sizes is cut: every third
interior size is held out, the rest trains. Sizes that ran a tuned schedule are left out: the cost
model answers them from their own measurement, and patterns cover the default-schedule sizes
(:func:`.profiled.fit_records`). On the held-out samples it reports the mean absolute
percentage error (MAPE) of

* ``pattern``: EOP's best-of-three pattern (:mod:`.patterns`) fitted on the series' training sizes;
* ``xgboost``: the device's regressor (:mod:`.xgb`) trained on every training sample of every op
  (those running the schedules builds give them now: :func:`.profiled.training_records`);
* ``linear``: a linear fit only — the assumption EOP argues against (Sec. 2.3, Fig. 9).

per op and device, and over all held-out samples; XGBoost on ops it never saw (5-fold
cross-validation by op) and on the ops larger than any it saw (:func:`large_op_mape`: the fifth of
the ops of the most FLOPs held out, the regressor trained on the rest); draws measured vs predicted for the heaviest
series into ``accuracy.png``; writes ``accuracy.json`` and ``accuracy.md``; and ends with the line
``mape_pattern=<f> mape_xgboost=<f> mape_linear=<f>``.
"""

from __future__ import annotations

import json
import os
from collections import defaultdict

import numpy as np

from . import patterns, xgb
from .logs import ProfileLog
from .profiled import fit_records, training_records

MIN_SERIES = 5


def split_series(records: list[dict]):
    """``{(sig, device, dim): (train records, held-out records)}`` for series with >= MIN_SERIES sizes."""
    series = defaultdict(list)
    for r in records:
        series[(r["sig"], r["device"], int(r["dim"]))].append(r)
    out = {}
    for key, recs in series.items():
        recs = sorted(fit_records(recs), key=lambda r: int(r["size"]))
        if len(recs) < MIN_SERIES:
            continue
        held = [r for i, r in enumerate(recs) if 0 < i < len(recs) - 1 and i % 3 == 1]
        train = [r for r in recs if r not in held]
        out[key] = (train, held)
    return out


def _mape(pred, true) -> float:
    pred, true = np.asarray(pred, float), np.maximum(np.asarray(true, float), 1e-3)
    return float(np.mean(np.abs(pred - true) / true))


def evaluate(folder: str, out_dir: str) -> str:
    """Run the evaluation on the log in ``folder``; write the report into ``out_dir``; return its text."""
    log = ProfileLog(folder)
    split = split_series(log.ops())
    if not split:
        raise ValueError(f"{folder}: no op profiled at {MIN_SERIES} or more sizes: run tvm-partition profile first")
    held_ids = {id(r) for _, held in split.values() for r in held}
    regressors = {}
    for device in sorted({k[1] for k in split}):
        train = [r for r in training_records(log.ops(device)) if id(r) not in held_ids]
        regressors[device] = xgb.train(train)
    rows, points = [], {"pattern": [], "xgboost": [], "linear": []}
    # errors of the held-out samples by the schedule they ran: the patterns fit each series whatever
    # it ran, XGBoost learns only from what builds launch now (training_records)
    by_schedule = defaultdict(lambda: defaultdict(list))
    curves = []
    for (sig, device, dim), (train, held) in sorted(split.items()):
        x = [int(r["size"]) for r in train]
        y = [float(r["mean_us"]) for r in train]
        hx = [int(r["size"]) for r in held]
        hy = [float(r["mean_us"]) for r in held]
        fit = patterns.fit(x, y)
        lin = patterns.fit(x, y, patterns=("linear",))
        preds = {"pattern": fit.predict(hx), "linear": lin.predict(hx),
                 "xgboost": xgb.predict(regressors[device], [xgb.record_features(r) for r in held])}
        errs = {name: np.abs(np.asarray(p) - hy) / np.maximum(hy, 1e-3) for name, p in preds.items()}
        for name, e in errs.items():
            points[name].extend(e)
        for name in ("pattern", "xgboost"):
            for r, err in zip(held, errs[name]):
                by_schedule[r.get("schedule", "tuned" if r.get("tuned") else "default")][name].append(float(err))
        rows.append({"sig": sig, "kind": train[0]["kind"], "fused": train[0].get("fused", ""), "device": device,
                     "dim": train[0].get("dim_name", str(dim)), "pattern": fit.pattern, "n_train": len(x),
                     "n_held": len(hx), "mean_us": float(np.mean(y + hy)),
                     **{f"mape_{k}": _mape(v, hy) for k, v in preds.items()}})
        curves.append((float(np.max(y + hy)), sig, device, dim, train, held, fit, lin, regressors[device]))
    summary = {k: float(np.mean(v)) for k, v in points.items()}
    schedules = {k: {"mape_pattern": float(np.mean(v["pattern"])), "mape_xgboost": float(np.mean(v["xgboost"])),
                     "held_out": len(v["pattern"])} for k, v in sorted(by_schedule.items())}
    unseen = unseen_op_mape(log)
    large = large_op_mape(log)
    os.makedirs(out_dir, exist_ok=True)
    with open(os.path.join(out_dir, "accuracy.json"), "w", encoding="utf-8") as f:
        json.dump({"folder": folder, "summary": summary, "xgboost_unseen_ops": unseen,
                   "xgboost_larger_ops": large, "series": rows,
                   "held_out": len(points["pattern"]), "by_schedule": schedules}, f, indent=1)
    png = os.path.join(out_dir, "accuracy.png")
    _plot(_pick(curves), png)
    text = _render(rows, summary, unseen, len(points["pattern"]), folder, png, schedules, large)
    with open(os.path.join(out_dir, "accuracy.md"), "w", encoding="utf-8") as f:
        f.write(text + "\n")
    return text


def unseen_op_mape(log: ProfileLog, folds: int = 5, seed: int = 0) -> dict:
    """XGBoost on ops it never saw: ops (signatures) are dealt into ``folds`` groups; each group is
    predicted, at every sampled size, by a regressor trained on the other groups only. Returns
    ``{device: MAPE}`` (devices with fewer than ``folds`` ops are left out)."""
    out = {}
    rng = np.random.default_rng(seed)
    for device in sorted({r["device"] for r in log.ops()}):
        recs = training_records(log.ops(device))
        sigs = sorted({r["sig"] for r in recs})
        if len(sigs) < folds:
            continue
        fold_of = dict(zip(sigs, rng.permutation(len(sigs)) % folds))
        errs = []
        for k in range(folds):
            train = [r for r in recs if fold_of[r["sig"]] != k]
            test = [r for r in recs if fold_of[r["sig"]] == k]
            pred = xgb.predict(xgb.train(train), [xgb.record_features(r) for r in test])
            true = np.maximum([r["mean_us"] for r in test], 1e-3)
            errs.extend(np.abs(pred - true) / true)
        out[device] = float(np.mean(errs))
    return out


def large_op_mape(log: ProfileLog, share: float = 0.2) -> dict:
    """XGBoost on ops larger than any it saw: the ``share`` of a device's ops (signatures) of the most
    FLOPs held out, each whole op predicted by a regressor trained on the others. Returns
    ``{device: {"mape": MAPE, "median_ratio": median predicted / measured, "samples": held-out samples}}``.
    Why: a new model's ops are often larger than the profiled ones (VGG-19's convolutions against
    ResNet-18's), and trees do not extrapolate (:data:`.xgb.ROOFLINES`)."""
    out = {}
    for device in sorted({r["device"] for r in log.ops()}):
        recs = training_records(log.ops(device))
        flops = defaultdict(float)
        for r in recs:
            flops[r["sig"]] = max(flops[r["sig"]], float(r.get("op_flops") or 0))
        sigs = sorted(flops, key=lambda s: (flops[s], s))
        held = set(sigs[len(sigs) - int(len(sigs) * share):]) if int(len(sigs) * share) else set()
        test = [r for r in recs if r["sig"] in held and int(r["size"]) == int(r["full"])]
        train = [r for r in recs if r["sig"] not in held]
        if not test or not train:
            continue
        pred = xgb.predict(xgb.train(train), [xgb.record_features(r) for r in test])
        true = [r["mean_us"] for r in test]
        out[device] = {"mape": _mape(pred, true), "median_ratio": float(np.median(pred / np.maximum(true, 1e-3))),
                       "samples": len(test)}
    return out


def _render(rows, summary, unseen, n_held, folder, png, schedules=None, large=None) -> str:
    by_op = defaultdict(list)
    for r in rows:
        by_op[(r["kind"], r["fused"][:40], r["device"])].append(r)
    lines = [f"Held-out accuracy of {folder}: {len(rows)} series, {n_held} held-out samples (every third interior "
             "size of each series); MAPE per op and device (mean over its axes).", "",
             "| op | kernel | device | axes (pattern chosen) | mean us | pattern | xgboost | linear |",
             "| --- | --- | --- | --- | ---: | ---: | ---: | ---: |"]
    for (kind, fused, device), rs in sorted(by_op.items(), key=lambda kv: -max(r["mean_us"] for r in kv[1])):
        axes = ", ".join(f"{r['dim']} ({r['pattern']})" for r in rs)
        m = {k: np.mean([r[f"mape_{k}"] for r in rs]) for k in ("pattern", "xgboost", "linear")}
        lines.append(f"| {kind} | `{fused}` | {device} | {axes} | {np.mean([r['mean_us'] for r in rs]):.1f} | "
                     f"{100 * m['pattern']:.1f}% | {100 * m['xgboost']:.1f}% | {100 * m['linear']:.1f}% |")
    if unseen:
        lines += ["", "XGBoost on ops it never saw (5-fold by op, every sampled size): "
                  + ", ".join(f"{d} MAPE {100 * v:.1f}%" for d, v in unseen.items()) + "."]
    if large:
        lines += ["", "XGBoost on the fifth of the ops of the most FLOPs, trained on the rest (each whole op): "
                  + ", ".join(f"{d} MAPE {100 * v['mape']:.1f}%, median {v['median_ratio']:.2f}x the measured "
                              f"({v['samples']} samples)" for d, v in large.items()) + "."]
    if schedules:
        lines += ["", "By the schedule the held-out kernels ran (tuned sizes are answered by their own "
                  "measurement), MAPE of patterns / XGBoost: "
                  + ", ".join(f"{k} {100 * v['mape_pattern']:.1f}% / {100 * v['mape_xgboost']:.1f}% ({v['held_out']} samples)"
                              for k, v in schedules.items()) + "."]
    lines += ["", f"Plot: `{os.path.basename(png)}`.", "",
              f"mape_pattern={summary['pattern']:.4f} mape_xgboost={summary['xgboost']:.4f} "
              f"mape_linear={summary['linear']:.4f}"]
    return "\n".join(lines)


def _pick(curves, n: int = 6) -> list:
    """The heaviest series of each (op kind, axis name), heaviest first: a variety, like EOP Fig. 4."""
    best = {}
    for c in sorted(curves, key=lambda c: -c[0]):
        r = c[4][0]
        best.setdefault((r["kind"], r.get("dim_name")), c)
    return sorted(best.values(), key=lambda c: -c[0])[:n]


def _plot(curves, path: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    n = max(1, len(curves))
    cols = min(3, n)
    rows = (n + cols - 1) // cols
    fig, axes = plt.subplots(rows, cols, figsize=(5 * cols, 3.6 * rows), squeeze=False)
    for ax, (_, sig, device, dim, train, held, fit, lin, reg) in zip(axes.flat, curves):
        allr = sorted(train + held, key=lambda r: int(r["size"]))
        xs = np.arange(1, int(allr[-1]["size"]) + 1)
        ax.plot([int(r["size"]) for r in train], [r["mean_us"] for r in train], "o", color="k", ms=4, label="measured")
        ax.plot([int(r["size"]) for r in held], [r["mean_us"] for r in held], "x", color="r", ms=7, label="held out")
        ax.plot(xs, fit.predict(xs), "-", label=f"pattern ({fit.pattern})")
        ax.plot(xs, lin.predict(xs), "--", label="linear only")
        grid = [dict(allr[-1], size=int(x)) for x in xs]
        ax.plot(xs, xgb.predict(reg, [xgb.record_features(r) for r in grid]), ":", label="xgboost")
        dim_name = allr[0].get("dim_name", f"axis{dim}")
        ax.set_title(f"{allr[0]['kind']} {allr[0].get('fused', '')[:28]}\non {device}, vary {dim_name}", fontsize=8)
        ax.set_xlabel(dim_name)
        ax.set_ylabel("us")
        if xs[-1] >= 100:  # batch 1..1024: log axes keep the small sizes visible
            ax.set_xscale("log")
            ax.set_yscale("log")
        ax.legend(fontsize=6)
    for ax in list(axes.flat)[len(curves):]:
        ax.axis("off")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
