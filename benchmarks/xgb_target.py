"""The XGBoost regressor's target, log time against log time over a roofline (:data:`tvm_partition.
cost_models.xgb.ROOFLINES`), on every shipped profile and on measured models it never saw.

    python benchmarks/xgb_target.py [--seeds 5] [--rows RESULTS.json:FINGERPRINT ...]

For each folder of ``tuning_logs/``, each target: XGBoost on ops it never saw (5-fold by op,
:func:`tvm_partition.cost_models.evaluate.unseen_op_mape`, the mean over ``--seeds`` deals) and
on the largest ops held out (:func:`~tvm_partition.cost_models.evaluate.large_op_mape`, the 10%,
20% and 30% of the ops of the most FLOPs). Then each ``--rows`` file's measured ``cpu`` rows of
ONNX models (``bench`` results of models no profile ran: ``build/onnx_light/``, written by
``benchmarks/onnx_light.py``) priced again by the profile of the machine that measured them, under
each target: the planner's prediction against the measurement, without measuring anything here.
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import statistics
import sys
import warnings

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)
sys.path.insert(0, os.path.join(REPO, "benchmarks"))

LOG_TIME = {}  # no roofline for any kind: the target before 2026-12-03


def profiles(seeds: int) -> None:
    from tvm_partition.cost_models import xgb
    from tvm_partition.cost_models.evaluate import large_op_mape, unseen_op_mape
    from tvm_partition.cost_models.logs import ProfileLog

    shipped = dict(xgb.ROOFLINES)
    print(f"{'profile':48} {'target':12} {'unseen ops':>22} {'largest 10% / 20% / 30% (median pred/measured)':>48}")
    for folder in sorted(glob.glob(os.path.join(REPO, "tuning_logs", "*", ""))):
        log = ProfileLog(folder)
        if not len(log):
            continue
        for name, roofs in (("log time", LOG_TIME), ("roofline", shipped)):
            xgb.ROOFLINES = roofs
            for device in sorted({r["device"] for r in log.ops()}):
                unseen = [unseen_op_mape(log, seed=s).get(device) for s in range(seeds)]
                large = [large_op_mape(log, share).get(device) for share in (0.1, 0.2, 0.3)]
                u = [x for x in unseen if x is not None]
                text_u = f"{100 * statistics.mean(u):.1f}% ({100 * min(u):.1f}-{100 * max(u):.1f})" if u else "-"
                text_l = " / ".join(f"{100 * x['mape']:.1f}% ({x['median_ratio']:.2f}x)" if x else "-" for x in large)
                print(f"{os.path.basename(folder.rstrip('/'))[:44] + ' ' + device:48} {name:12} {text_u:>22} {text_l:>48}",
                      flush=True)
    xgb.ROOFLINES = shipped


def rows(spec: str) -> None:
    from conv_kernels import model_graph
    from tvm_partition.cost_models import ROOFLINE, AnalyticCostModel, ProfiledCostModel, xgb
    from tvm_partition.devices import parse_devices
    from tvm_partition.planners import plan_and_simulate

    path, _, fingerprint = spec.partition(":")
    devices = parse_devices("cpu,cpu")
    shipped = dict(xgb.ROOFLINES)
    measured = [r for r in json.load(open(path, encoding="utf-8"))
                if r.get("strategy") == "cpu" and r.get("measured_median_us")]
    graphs, errors = {}, {"log time": [], "roofline": []}
    print(f"\n{fingerprint}: {path}\n{'model':28} {'measured ms':>12} {'log time ms':>16} {'roofline ms':>16}")
    for r in measured:
        onnx = os.path.join(REPO, "build", "onnx_light", f"{r['model']}.onnx")
        if not os.path.exists(onnx):
            continue
        graphs.setdefault(onnx, model_graph(onnx)[1])
        cells = []
        for name, roofs in (("log time", LOG_TIME), ("roofline", shipped)):
            xgb.ROOFLINES = roofs  # a fresh cost model: its regressor trained under these (the saved one is stale)
            cm = ProfiledCostModel(os.path.join(REPO, "tuning_logs", fingerprint), devices,
                                   AnalyticCostModel({d.name: ROOFLINE[d.kind] for d in devices}))
            _, sim = plan_and_simulate(graphs[onnx], devices, "cpu", cost_model=cm)
            errors[name].append(sim.latency_us / r["measured_median_us"] - 1)
            cells.append(f"{sim.latency_us / 1e3:8.2f} ({100 * errors[name][-1]:+4.0f}%)")
        print(f"{r['model']:28} {r['measured_median_us'] / 1e3:12.2f} {cells[0]:>16} {cells[1]:>16}", flush=True)
    xgb.ROOFLINES = shipped
    for name, errs in errors.items():
        if errs:
            print(f"{name}: mean |error| {100 * statistics.mean(abs(e) for e in errs):.1f}%, "
                  f"median {100 * statistics.median(errs):+.1f}%")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seeds", type=int, default=5, help="deals of the ops into folds (default 5)")
    ap.add_argument("--rows", nargs="*", default=[], metavar="RESULTS.json:FINGERPRINT",
                    help="bench results of ONNX models and the tuning_logs folder of the machine that measured them")
    args = ap.parse_args(argv)
    warnings.filterwarnings("ignore")
    if args.seeds:
        profiles(args.seeds)
    for spec in args.rows:
        rows(spec)
    return 0


if __name__ == "__main__":
    sys.exit(main())
