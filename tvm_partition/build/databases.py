"""Tuning databases on disk: MetaSchedule's JSON files in ``tuning_logs/<hardware-fingerprint>/``,
opened whole or as their best records, torn lines dropped.

A database is MetaSchedule's own JSON pair (``database_workload.json`` and
``database_tuning_record.json``, one JSON record per line, appended as trials are measured): a
killed tuning run loses only the trials in flight (:mod:`tvm_partition.build.tuning` gives each
kernel the trials it lacks on a rerun). A kill during an append leaves a torn last line, and
MetaSchedule refuses the whole file for it; such lines, and any line that is not JSON, cost that
line only (:func:`_whole_lines`): readers open a copy without them, ``tune`` rewrites the files
without them before appending (one warning naming file and lines). A build reads only the best
record of each workload (:func:`open_best`), parsed from a compact copy cached by the files'
digest.
"""

from __future__ import annotations

import atexit
import json
import os
import shutil
import sys
import tempfile

from ..cost_models.logs import skipped_lines
from ..devices import database_dir
from ..errors import TvmPartitionError


class TuningError(TvmPartitionError, RuntimeError):
    """Tuning cannot run (no such device here, unreadable database); the message says why."""


#: MetaSchedule's JSONDatabase: workloads, then records naming them by line index.
DATABASE_FILES = ("database_workload.json", "database_tuning_record.json")
#: Beside a database: the matmul template's races against the records tuned here
#: (:func:`.tuning.race_templates`), ``{workload hash: {target, record_secs, record_us, template_us, kernel}}``.
RACES_FILE = "template_races.json"
#: Databases opened for reading, by (folder, size and mtime of its files): parsing a database of a
#: few thousand records takes seconds, and a benchmark compiles many builds against the same one.
_OPENED: dict = {}


def stamp(path: str) -> tuple:
    """The size and modification time of each database file at ``path`` (None where absent): a key
    that changes whenever the files do."""
    files = [os.path.join(path, f) for f in DATABASE_FILES]
    return tuple((os.stat(f).st_size, os.stat(f).st_mtime_ns) if os.path.exists(f) else None for f in files)


def local_database(logs: str | None = None) -> str:
    """This machine's tuning database folder under ``logs`` (default: the shipped tuning_logs/); it
    need not exist (builds then transfer schedules from the shipped databases: :func:`.tuning.open_schedules`)."""
    if logs and not os.path.isdir(logs):
        raise TuningError(f"--tuning-logs {logs}: no such folder")
    return database_dir(logs)


def open_database(path: str, create: bool = False):
    """MetaSchedule JSONDatabase at ``path`` (None if absent and not ``create``). Read-only opens
    of unchanged files share one parsed database; ``create`` (tuning) always opens a fresh one."""
    if not create and not os.path.exists(os.path.join(path, "database_workload.json")):
        return None
    key = (os.path.abspath(path), stamp(path))
    if not create and key in _OPENED:
        return _OPENED[key]
    os.makedirs(path, exist_ok=True)
    try:
        db = _json_database(path, path)
    except TuningError:  # only then read every line: parsing the 3,927 of amd-epyc-2c's took 1.4 s
        folder = _whole_lines(path, repair=create)
        if folder is None:  # every line is whole JSON: MetaSchedule's own reason stands
            raise
        db = _json_database(folder, path)
    if not create:
        for old in [k for k in _OPENED if k[0] == key[0]]:  # a stale parse of the same folder is never wanted again
            del _OPENED[old]
        _OPENED[key] = db
    return db


def _json_database(folder: str, path: str):
    """MetaSchedule's JSONDatabase of ``folder``; its errors as :class:`TuningError` naming ``path``."""
    import tvm.s_tir.meta_schedule as ms

    try:
        return ms.database.JSONDatabase(work_dir=folder, allow_missing=True)
    except Exception as e:  # noqa: BLE001 - MetaSchedule reports corrupt files with TVM errors
        raise TuningError(f"{path}: unreadable tuning database ({str(e).splitlines()[-1]})") from None


def _json_lines(file: str) -> list[tuple[int, str, object]]:
    """``(line number, text, parsed or None)`` of every non-empty line of ``file``."""
    if not os.path.exists(file):
        return []
    out = []
    with open(file, encoding="utf-8", errors="replace") as f:
        for n, line in enumerate(f, 1):
            if line.strip():
                try:
                    out.append((n, line.rstrip("\n"), json.loads(line)))
                except ValueError:
                    out.append((n, line.rstrip("\n"), None))
    return out


def _whole_lines(path: str, repair: bool) -> str | None:
    """The database folder MetaSchedule should open for ``path``: None when every line is whole
    JSON (nothing to drop); else, after one warning naming the files and lines dropped, ``path`` rewritten
    without them (``repair``: tuning appends after them) or a copy without them (reading). A file
    with no whole line at all is refused (:class:`TuningError`): that is no database, not a torn one.

    A record names its workload by line index (``[index, record]``), so a dropped workload line
    drops its records and renumbers the rest."""
    wl_file, rec_file = (os.path.join(path, f) for f in DATABASE_FILES)
    workloads, records = _json_lines(wl_file), _json_lines(rec_file)
    renumber, wl_text, bad = {}, [], {wl_file: [], rec_file: []}
    for i, (n, text, obj) in enumerate(workloads):
        if isinstance(obj, list) and len(obj) == 2:
            renumber[i] = len(wl_text)
            wl_text.append(text)
        else:
            bad[wl_file].append(n)
    rec_text = []
    for n, text, obj in records:
        if isinstance(obj, list) and len(obj) == 2 and isinstance(obj[0], int) and obj[0] in renumber:
            rec_text.append(f"[{renumber[obj[0]]}," + text.split(",", 1)[1])
        else:
            bad[rec_file].append(n)
    if not any(bad.values()):
        return None
    for file, kept in ((wl_file, wl_text), (rec_file, rec_text)):
        if bad[file] and not kept:  # not a torn database: no database at all (a disk filled mid-write)
            raise TuningError(f"{path}: unreadable tuning database (no line of {os.path.basename(file)} is a record)")
    for file, lines in bad.items():
        if lines:
            print(f"warning: {skipped_lines(file, lines, 'torn or corrupt')}", file=sys.stderr)
    target = path if repair else tempfile.mkdtemp(prefix="tvmp-db-")
    if not repair:
        atexit.register(shutil.rmtree, target, True)
    for file, lines in ((wl_file, wl_text), (rec_file, rec_text)):
        tmp = os.path.join(target, f".{os.path.basename(file)}.tmp-{os.getpid()}")
        with open(tmp, "w", encoding="utf-8") as f:
            f.write("".join(line + "\n" for line in lines))
        os.replace(tmp, os.path.join(target, os.path.basename(file)))  # whole file or the old one
    return target


def _cache_root() -> str:
    return os.path.join(os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "tvm_partition", "best")


#: Content digests of database folders by (folder, size and mtime of its files).
_DIGESTS: dict = {}


def database_digest(path: str) -> str:
    """sha1 of the database files at ``path`` and the template's races beside them (their contents:
    a clone has other mtimes)."""
    import hashlib

    races = os.path.join(path, RACES_FILE)
    key = (os.path.abspath(path), stamp(path), os.stat(races).st_mtime_ns if os.path.exists(races) else None)
    if key not in _DIGESTS:
        digest = hashlib.sha1()
        for f in (*DATABASE_FILES, RACES_FILE):
            if os.path.exists(os.path.join(path, f)):
                with open(os.path.join(path, f), "rb") as fh:
                    digest.update(fh.read())
        _DIGESTS[key] = digest.hexdigest()
    return _DIGESTS[key]


def open_best(path: str):
    """The fastest record of every workload and target of the database at ``path`` (None if it has
    none), as a database of its own: all a build reads (:class:`.tuning.Schedules`). Parsing a tuning
    database costs about 5 ms a record (MetaSchedule replays each record's trace on its workload),
    and a database keeps every trial: the Zen 3 one as tuned (3,927 records) took 20-22 s to open,
    its 48 best 0.3 s. So the best records are picked from the files' JSON lines
    (:func:`_best_lines`, 2.2-2.4 s there; 3.0 s in all for a first open) and only they are parsed;
    the compact copy is cached under
    ``~/.cache/tvm_partition/best/<sha1 of the database files>`` (in a temporary folder where that
    cannot be written)."""
    import tvm.s_tir.meta_schedule as ms

    if not os.path.exists(os.path.join(path, "database_workload.json")):
        return None
    key = ("best", database_digest(path))
    if key in _OPENED:
        return _OPENED[key]
    cache = os.path.join(_cache_root(), key[1])
    try:
        db = ms.database.JSONDatabase(work_dir=cache, allow_missing=False) if os.path.isdir(cache) else None
    except Exception:  # noqa: BLE001 - a half-written cache: make it again
        db = None
    if db is None:
        lines = _best_lines(path)
        if lines is None:  # a torn line: dropped with one warning, as open_database drops it
            folder = _whole_lines(path, repair=False)
            lines = _best_lines(folder) if folder else None
            if lines is None:
                raise TuningError(f"{path}: unreadable tuning database (a line is no MetaSchedule record)")
        db = _write_best(lines, cache)
    _OPENED[key] = db
    return db


def _best_lines(path: str) -> tuple[list[str], list[str]] | None:
    """``(workload lines, record lines)`` of a database holding the fastest record (lowest mean
    run time) of every workload and target of the database at ``path``, read off its JSON lines (a
    record line is ``[workload index, [trace, run_secs, target, args_info]]``, a workload line
    ``[structural hash, module]``); None where a line is not such JSON."""
    workloads, records = (_json_lines(os.path.join(path, f)) for f in DATABASE_FILES)
    if any(not (isinstance(obj, list) and len(obj) == 2) for _, _, obj in workloads):
        return None
    best: dict = {}
    for _, text, obj in records:
        if not (isinstance(obj, list) and len(obj) == 2 and isinstance(obj[0], int) and 0 <= obj[0] < len(workloads)
                and isinstance(obj[1], list) and len(obj[1]) == 4):
            return None
        _, run_secs, target, _ = obj[1]
        if not run_secs or target is None:
            continue
        key = (workloads[obj[0]][2][0], json.dumps(target, sort_keys=True))
        mean = sum(float(x) for x in run_secs) / len(run_secs)
        if key not in best or mean < best[key][0]:
            best[key] = (mean, obj[0], text)
    used = {i: n for n, i in enumerate(sorted({i for _, i, _ in best.values()}))}
    return ([workloads[i][1] for i in used],
            [f"[{used[i]}," + text.split(",", 1)[1] for _, i, text in best.values()])


def _write_best(lines: tuple[list[str], list[str]], cache: str):
    """MetaSchedule's database of ``lines`` (:func:`_best_lines`), written to ``cache`` whole or
    not at all (a temporary folder where ``cache`` cannot be written)."""
    import tvm.s_tir.meta_schedule as ms

    tmp = f"{cache}.tmp-{os.getpid()}"
    try:
        os.makedirs(tmp, exist_ok=True)
    except OSError:
        tmp = tempfile.mkdtemp(prefix="tvmp-best-")
        atexit.register(shutil.rmtree, tmp, True)
        cache = None
    for name, text in zip(DATABASE_FILES, lines):
        with open(os.path.join(tmp, name), "w", encoding="utf-8") as f:
            f.write("".join(line + "\n" for line in text))
    db = ms.database.JSONDatabase(work_dir=tmp, allow_missing=False)  # read whole here: the folder may go
    if cache is not None:
        try:
            os.rename(tmp, cache)  # atomic: a reader sees the whole cache or none
        except OSError:  # another process made it first (or a broken one stands: this process keeps its own)
            shutil.rmtree(tmp, ignore_errors=True)
    return db
