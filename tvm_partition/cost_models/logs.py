"""The profile log: append-only JSON Lines in ``tuning_logs/<hardware-fingerprint>/profile.jsonl``.

One measured sample per line, written and flushed as soon as it is measured (a killed profiler
loses at most the sample in flight). Two record types::

    {"type": "op", "sig", "kind", "fused", "dim", "dim_name", "size", "full", "shape", "full_shape",
     "op_flops", "op_bytes", "n_inputs", "device", "tuned", "schedule", "schedules", "transfer", "mean_us", "std_us",
     "repeats", "tvm", "fingerprint", "time"}
    {"type": "comm", "comm": "copy" | "slice" | "concat" | "launch" | "run" | "view" | "arg" | "alloc" | "alloc0"
     | "context", "src", "dst", "bytes",
     "mean_us", "std_us", "repeats", "tvm", "fingerprint", "time"}

(``schedule``: tuned, transferred or default, what the sample's kernel ran; ``schedules``: the
digest of the tuning databases it was drawn from, :class:`tvm_partition.build.tuning.Schedules`: a
profile run times again the samples recorded with other databases; ``transfer``: the
sample was built as builds build kernels since schedule transfer, :mod:`tvm_partition.build.transfer`;
samples without it ran TVM's default schedule wherever the database had no record and are
measured again. ``launch``: the VM's time per kernel launch on ``src`` beyond the kernel, ``bytes`` 0, per
``kernels`` one-element kernels in a chain. ``run``: one run of a VM of one such kernel (``kernels``
1), called from Python as a runner calls ``main`` and waited for. ``view``: per view, of a chain of
``kernels`` views. ``arg``: that run of one kernel given ``kernels`` one-element arguments more, per
argument (the whole run over ``kernels``). ``alloc`` and ``alloc0``: a run of ``kernels`` + 1
one-element kernels summed by ``kernels`` more, their outputs all alive (a storage each) or taking
turns, over ``kernels`` (:func:`tvm_partition.profiling.samples.alloc_function`). ``context``: how much slower than its kernels timed
alone ``model`` ran in the VM on ``src`` (``mean_us`` holds that factor; also ``kernels``,
``warm_us``, ``vm_us`` and ``sigs``, its ops' signatures), :mod:`tvm_partition.profiling.context`.)

A line that is not such a record (a half-written last line, a hand edit) is reported with its line
number and skipped; the rest of the file is still used.
"""

from __future__ import annotations

import json
import os
import sys
import time

PROFILE_FILE = "profile.jsonl"
_OP_FIELDS = ("sig", "kind", "dim", "size", "full", "shape", "full_shape", "device", "mean_us")
_COMM_FIELDS = ("comm", "src", "dst", "bytes", "mean_us")


def sample_key(rec: dict) -> tuple:
    """What makes two records the same measurement (a rerun skips keys already in the log)."""
    if rec["type"] == "op":
        return ("op", rec["sig"], rec["device"], int(rec["dim"]), int(rec["size"]), bool(rec.get("transfer")))
    return ("comm", rec["comm"], rec["src"], rec["dst"], int(rec["bytes"]), rec.get("model", ""))


def _valid(rec) -> bool:
    if not isinstance(rec, dict):
        return False
    fields = {"op": _OP_FIELDS, "comm": _COMM_FIELDS}.get(rec.get("type"))
    if fields is None or any(f not in rec for f in fields):
        return False
    m = rec["mean_us"]
    return isinstance(m, (int, float)) and m >= 0


def skipped_lines(path: str, lines: list[int], what: str) -> str:
    """``PATH: skipped N <what> line(s): line a, b, ...`` (the first ten), the one warning a reader
    of a line-per-record file gives for the lines it could not use."""
    shown = ", ".join(map(str, lines[:10])) + (" ..." if len(lines) > 10 else "")
    return f"{path}: skipped {len(lines)} {what} line(s): line {shown}"


#: What :func:`read_once` read, by file: ``(path, size, mtime_ns, inode) -> value``.
_READ: dict = {}


def read_once(path: str, parse, kind: str = ""):
    """``parse(path)``, read again only when the file changed (its size, modification time or inode):
    a process that opens a cost model for every build (``bench``, a test module) parsed the same
    profile each time, 0.47 s for the Zen 3's 10,580 lines and 0.26 s for its fits (2026-11-28;
    0.88 s of a 4.1 s LSTM compile). The value is shared: callers copy what they change. A missing
    file is not cached. ``kind`` names what ``parse`` makes of the file, where there is more than
    one (the records of a log, the cost model's tables of them)."""
    st = os.stat(path)
    key = (path, kind, st.st_size, st.st_mtime_ns, st.st_ino)
    if key not in _READ:
        for old in [k for k in _READ if k[:2] == (path, kind)]:  # one version of a file is kept
            del _READ[old]
        _READ[key] = parse(path)
    return _READ[key]


def _parse_log(path: str) -> tuple[dict, list[int]]:
    """A profile log's last record of each sample key, in logged order, and its unreadable lines."""
    by_key: dict = {}
    bad: list[int] = []
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                rec = json.loads(line)
            except ValueError:
                rec = None
            if not _valid(rec):
                bad.append(n)
                continue
            _add_last(by_key, rec)
    return by_key, bad


def _add_last(by_key: dict, rec: dict) -> None:
    key = sample_key(rec)
    # the same sample twice (a profile timed again, an import): the last one wins, logged last.
    # Rebuilding the list instead made reading a log quadratic: 8.6 s for the 6,614 lines of a
    # profile timed twice, in every process that opens a cost model (the suite went from 10 to
    # 19 minutes; 2026-11-26)
    by_key.pop(key, None)
    by_key[key] = rec


class ProfileLog:
    """Records of one fingerprint folder; :meth:`append` adds and persists one at a time."""

    def __init__(self, folder: str, warn=None):
        self.folder = folder
        self.path = os.path.join(folder, PROFILE_FILE)
        self.bad_lines: list[int] = []
        #: the last record of each sample key, in the order they were logged (a dict keeps it)
        self._by_key: dict = {}
        warn = warn or (lambda msg: print(msg, file=sys.stderr))
        if os.path.exists(self.path):
            by_key, bad = read_once(self.path, _parse_log)
            # this log's own records (append and compact change them; a reader may too)
            self._by_key, self.bad_lines = {k: dict(r) for k, r in by_key.items()}, list(bad)
            if self.bad_lines:
                warn(skipped_lines(self.path, self.bad_lines, "corrupt"))

    def _add(self, rec: dict) -> None:
        _add_last(self._by_key, rec)

    @property
    def records(self) -> list[dict]:
        """Every sample's last record, in the order they were logged."""
        return list(self._by_key.values())

    def __contains__(self, key) -> bool:
        return key in self._by_key

    def get(self, key) -> dict | None:
        """The record of a sample key (the last one logged), or None."""
        return self._by_key.get(key)

    def __len__(self) -> int:
        return len(self._by_key)

    def append(self, rec: dict) -> None:
        """Stamp ``rec`` (TVM version, fingerprint, time), write it as one line and flush it."""
        from ..devices import hardware_fingerprint

        rec = dict(rec)
        rec.setdefault("tvm", _tvm_version())
        rec.setdefault("fingerprint", hardware_fingerprint())
        rec.setdefault("time", time.strftime("%Y-%m-%dT%H:%M:%S"))
        if not _valid(rec):
            raise ValueError(f"not a profile record: {rec}")
        os.makedirs(self.folder, exist_ok=True)
        needs_newline = os.path.exists(self.path) and os.path.getsize(self.path) > 0 and not _ends_with_newline(self.path)
        with open(self.path, "a", encoding="utf-8") as f:
            if needs_newline:  # a previous run was killed mid-line: never glue a record to it
                f.write("\n")
            f.write(json.dumps(rec, sort_keys=True) + "\n")
            f.flush()
            os.fsync(f.fileno())
        self._add(rec)

    def compact(self, drop=()) -> tuple[int, int]:
        """Rewrite the log with each sample's last record only (what every reader keeps anyway),
        less the samples whose keys are in ``drop``, atomically: a crash leaves the old file.
        Returns the lines ``(before, after)``. A profile timed again after a schedule change appends
        a record per sample: the Zen 5 log had grown to 9,599 lines for 3,600-odd samples (2026-11-26)."""
        for key in drop:
            self._by_key.pop(key, None)
        if not os.path.exists(self.path):
            return 0, 0
        with open(self.path, encoding="utf-8") as f:
            before = sum(1 for line in f if line.strip())
        tmp = self.path + ".tmp"
        with open(tmp, "w", encoding="utf-8") as f:
            for rec in self._by_key.values():
                f.write(json.dumps(rec, sort_keys=True) + "\n")
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, self.path)
        self.bad_lines = []
        return before, len(self._by_key)

    def ops(self, device: str | None = None) -> list[dict]:
        return [r for r in self._by_key.values() if r["type"] == "op" and (device is None or r["device"] == device)]

    def comms(self) -> list[dict]:
        return [r for r in self._by_key.values() if r["type"] == "comm"]


def _ends_with_newline(path: str) -> bool:
    with open(path, "rb") as f:
        f.seek(-1, os.SEEK_END)
        return f.read(1) == b"\n"


def _tvm_version() -> str:
    try:
        import tvm

        return str(tvm.__version__)
    except Exception:  # noqa: BLE001 - the version is informative only
        return "unknown"
