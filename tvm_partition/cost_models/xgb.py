"""XGBoost regressor over op features (FlexPie Sec. 4: GBDT estimators over layer features).

One regressor per device kind, trained on every op sample of the profile log; it predicts ops and
shapes never profiled (a new model, a part size outside the sampled range). Features of an op
part: op kind (one-hot), log FLOPs, log bytes and log output elements of the part, arithmetic
intensity, the split fraction, which axis is cut and its size, output rank and operand count.
The target is log time over a nominal roofline time of the part (:func:`roof_us`: a microsecond, plus
its FLOPs at 100 GFLOP/s, plus its bytes at 10 GB/s), so errors are relative and an op larger than
any the regressor saw gets the ratio of the largest ones it did, times its own size. Why: trees do
not extrapolate, and on log time alone an op past the training sizes came out at about the time
of the largest ones trained on: with the fifth of each profile's CPU ops of the most FLOPs held
out (:func:`tvm_partition.cost_models.evaluate.large_op_mape`), it put them at a median 0.54-0.92x
their time on the six 2-vCPU profiles (MAPE 28-45%), now 0.97-1.13x (9-17%); VGG-19's
convolutions fell to the compute floor (:meth:`~tvm_partition.cost_models.profiled.
ProfiledCostModel.compute_floor`, the fastest sample's rate) and the model was predicted at 0.55x
its time on the Ice Lake VM, now 0.96x (2026-12-03; ``benchmarks/xgb_target.py``, BENCHMARKS.md
"XGBoost learns a CPU op's time over its roofline time"). Saved beside the log as XGBoost's binary JSON
(UBJSON), gzip-compressed (``xgb-<device>.ubj.gz``), with the number of samples it was trained on
(native Booster API: no scikit-learn needed) (a stale model is retrained). Why compressed: the
shipped folders' models were 1.55-1.68 MB each as XGBoost JSON, 9.6 MB of a 48 MiB tree that the
GPU machine's device tool sends whole with every call (64 MiB with the GPU kit's step); the same
models are 1.1 MB as UBJSON and about 0.3 MB gzipped, and load to the same trees (2026-12-03).
"""

from __future__ import annotations

import gzip
import json
import math
import os

import numpy as np

from .base import cut_axes, full_shape

KINDS = ("matmul", "conv2d", "max_pool2d", "avg_pool2d", "adaptive_avg_pool2d", "softmax", "layer_norm",
         "mean", "sum", "concat", "take", "strided_slice", "add", "multiply", "tanh", "sigmoid", "relu",
         "gelu", "clip", "permute_dims", "subtract", "divide")
FEATURES = [f"kind={k}" for k in KINDS] + ["kind=other", "log_flops", "log_bytes", "log_out_elems", "intensity",
                                            "fraction", "dim", "log_dim_size", "rank", "n_inputs"]


def features(kind: str, op_flops: float, op_bytes: float, full_shape, dim: int, size: int, n_inputs: int) -> list[float]:
    """Feature row of an op cut to ``size`` along ``dim`` (``size == full_shape[dim]``: the whole op)."""
    full = full_shape[dim] if full_shape else 1
    frac = size / full if full else 1.0
    flops, nbytes = op_flops * frac, op_bytes * frac
    out_elems = math.prod(full_shape) * frac if full_shape else 1.0
    onehot = [1.0 if kind == k else 0.0 for k in KINDS] + [0.0 if kind in KINDS else 1.0]
    return onehot + [math.log1p(flops), math.log1p(nbytes), math.log1p(out_elems), flops / max(nbytes, 1.0),
                     frac, float(dim), math.log1p(size), float(len(full_shape)), float(n_inputs)]


def record_features(rec: dict) -> list[float]:
    return features(rec["kind"], rec.get("op_flops", 0.0), rec.get("op_bytes", 0.0), rec["full_shape"],
                    int(rec["dim"]), int(rec["size"]), int(rec.get("n_inputs", 1)))


def op_features(op, shape=None) -> list[float]:
    """Feature row of a :class:`tvm_partition.ir.graph.Op`, whole or cut to output ``shape``."""
    full = full_shape(op)
    dim, size = 0, full[0] if full else 1
    cut = cut_axes(op, shape)
    if cut:
        dim, size = cut[0], shape[cut[0]]
    return features(op.kind, op.flops, op.bytes, full, dim, size, len(op.input_shapes))


#: The nominal roofline a CPU part's time is learnt relative to, by device kind (:func:`roof_us`):
#: ``(fixed us, FLOPs per us, bytes per us)``, a microsecond plus 100 GFLOP/s plus 10 GB/s. Any
#: fixed rates do (the regressor learns the ratio; these bend at 10 FLOP a byte); rates fitted to
#: each profile instead (the 5th percentile of its times, its fastest samples' FLOP and byte rates)
#: put the held-out largest ops 14-30% off (median 1.07-1.32x), these 8-15% (0.93-1.05x) on the six
#: 2-vCPU profiles (2026-12-03, a first cut of :func:`~tvm_partition.cost_models.evaluate.
#: large_op_mape`). A GPU keeps log time: its samples are mostly launch-bound (their time barely
#: grows with their work up to the largest sampled), and a time proportional to the work past them
#: put the H200 profiles' largest GPU ops at a median 4.4-5.2x their time (MAPE 2.1-2.4), log time
#: at 1.0x (MAPE 0.53).
ROOFLINES = {"cpu": (1.0, 1e5, 1e4)}
_LOG_FLOPS, _LOG_BYTES = FEATURES.index("log_flops"), FEATURES.index("log_bytes")
_NO_ROOF = (1.0, float("inf"), float("inf"))


def target() -> str:
    """What a regressor trained now regresses, :data:`ROOFLINES` included: a saved one of another
    target is stale (:func:`load`)."""
    return "log(us / roof_us) " + json.dumps(ROOFLINES, sort_keys=True)


def roof_us(rows, roof: tuple[float, float, float]) -> np.ndarray:
    """The roofline time of each feature row's part: ``roof``'s fixed time, plus its FLOPs and its
    bytes each at ``roof``'s rate (:data:`ROOFLINES`)."""
    rows = np.asarray(rows, dtype=float)
    fixed, flop_rate, byte_rate = roof
    return fixed + np.expm1(rows[:, _LOG_FLOPS]) / flop_rate + np.expm1(rows[:, _LOG_BYTES]) / byte_rate


PARAMS = {"objective": "reg:squarederror", "max_depth": 6, "eta": 0.08, "subsample": 0.9,
          "colsample_bytree": 0.9, "nthread": 1}
ROUNDS = 300


def train(records: list[dict], seed: int = 0):
    """An ``xgboost.Booster`` regressing log time over :func:`roof_us` on the records' features."""
    import xgboost as xgb

    X = np.array([record_features(r) for r in records], dtype=float)
    us = np.maximum([r["mean_us"] for r in records], 1e-3)
    kinds = {r.get("device") for r in records}
    roof = ROOFLINES.get(kinds.pop(), _NO_ROOF) if len(kinds) == 1 else _NO_ROOF
    model = xgb.train(dict(PARAMS, seed=seed), xgb.DMatrix(X, label=np.log(us / roof_us(X, roof)),
                                                           feature_names=FEATURES), ROUNDS)
    model.set_attr(roofline=json.dumps(roof))  # saved with the model: predict() prices by it
    return model


def predict(model, rows) -> np.ndarray:
    import xgboost as xgb

    rows = np.asarray(rows, dtype=float)
    roof = tuple(json.loads(model.attr("roofline")))
    return np.exp(model.predict(xgb.DMatrix(rows, feature_names=FEATURES))) * roof_us(rows, roof)


def model_path(folder: str, device: str) -> str:
    return os.path.join(folder, f"xgb-{device}.ubj.gz")


def save(model, folder: str, device: str, n_samples: int, context: str = "") -> str:
    path = model_path(folder, device)
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        # mtime=0: the same model writes the same bytes (no spurious change in git)
        f.write(gzip.compress(bytes(model.save_raw("ubj")), mtime=0))
    os.replace(tmp, path)
    with open(path + ".meta", "w", encoding="utf-8") as f:
        json.dump({"samples": n_samples, "features": FEATURES, "target": target(), "context": context}, f)
    return path


def load(folder: str, device: str, n_samples: int | None = None, context: str = ""):
    """The saved regressor of ``device``, or None if absent, unreadable, or trained on another
    number of samples than ``n_samples``, on times scaled by other ``context`` factors (their
    digest, :meth:`tvm_partition.cost_models.profiled.Context.tag`) or to another :func:`target`: stale."""
    import xgboost as xgb

    path = model_path(folder, device)
    try:
        with open(path + ".meta", encoding="utf-8") as f:
            meta = json.load(f)
        if meta.get("features") != FEATURES or meta.get("target") != target() or (n_samples is not None and meta.get("samples") != n_samples):
            return None
        if meta.get("context", "") != context:
            return None
        with open(path, "rb") as f:
            raw = gzip.decompress(f.read())
        model = xgb.Booster()
        model.load_model(bytearray(raw))
        return model
    except (OSError, ValueError, EOFError, xgb.core.XGBoostError):
        return None
