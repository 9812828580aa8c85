"""XGBoost regressor over op features (FlexPie Sec. 4: GBDT estimators over layer features).

One regressor per device kind, trained on every op sample of the profile log; it predicts ops and
shapes never profiled (a new model, a part size outside the sampled range). Features of an op
part: op kind (one-hot), log FLOPs, log bytes and log output elements of the part, arithmetic
intensity, the split fraction, which axis is cut and its size, output rank and operand count.
The target is log time, so errors are relative. Saved beside the log as XGBoost's binary JSON
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


PARAMS = {"objective": "reg:squarederror", "max_depth": 6, "eta": 0.08, "subsample": 0.9,
          "colsample_bytree": 0.9, "nthread": 1}
ROUNDS = 300


def train(records: list[dict], seed: int = 0):
    """An ``xgboost.Booster`` regressing log time on the records' features."""
    import xgboost as xgb

    X = np.array([record_features(r) for r in records], dtype=float)
    y = np.log(np.maximum([r["mean_us"] for r in records], 1e-3))
    return xgb.train(dict(PARAMS, seed=seed), xgb.DMatrix(X, label=y, feature_names=FEATURES), ROUNDS)


def predict(model, rows) -> np.ndarray:
    import xgboost as xgb

    return np.exp(model.predict(xgb.DMatrix(np.asarray(rows, dtype=float), feature_names=FEATURES)))


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
        json.dump({"samples": n_samples, "features": FEATURES, "context": context}, f)
    return path


def load(folder: str, device: str, n_samples: int | None = None, context: str = ""):
    """The saved regressor of ``device``, or None if absent, unreadable, or trained on another
    number of samples than ``n_samples`` or on times scaled by other ``context`` factors (their
    digest, :meth:`tvm_partition.cost_models.profiled.Context.tag`): stale."""
    import xgboost as xgb

    path = model_path(folder, device)
    try:
        with open(path + ".meta", encoding="utf-8") as f:
            meta = json.load(f)
        if meta.get("features") != FEATURES or (n_samples is not None and meta.get("samples") != n_samples):
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
