"""Run a multi-server pipeline (``tvm-partition stages``) on a Ray cluster: one actor per edge
server holding runtime-only artifacts, tensors between stages through Ray's object store.

Ray is the distributed engine (issue 20): a server is a Ray node carrying one custom resource,
``server:NAME`` (:func:`resource_of`), so an actor asking for a sliver of it lands on that server
and nowhere else. One actor per server (:class:`ServerActor`, :class:`Pool`) holds a TVM runtime
:class:`~tvm_partition.runtime.runner.Runner` (which verifies the manifest's checksums first) per
artifact it runs, one process and one thread pool per server. A pipeline loads *every* one of its
artifacts on every one of its servers before the first request (:meth:`RayPipeline._warm`), so
the server that takes over a failed server's slice or stage runs it at once: with an actor per
(server, artifact), the takeover started a worker process and imported TVM inside the
remaining server's CPU quota, a 3.2-3.8 s latency spike in the kill test (2026-11-25).
A request never passes through the driver between stages: each stage's
outputs stay in the object store and their ``ObjectRef``\\ s are handed to the next stages' actor
calls (Ray resolves top-level ``ObjectRef`` arguments before the call), only the last stage's
outputs come back. The inputs (a split's slices) go from the driver inside the call, not through
the object store (:data:`INLINE_BYTES`: 2.6-3.3 ms against 8.2-8.7 for a 1.1 MB slice).

Modes (``pipeline.json``): ``split`` (FlexPie's setting, EOP VEE '22 Eq. 5 applied to servers for
the slice sizes: every server runs a part artifact on its slice of the batch at once, outputs
concatenated; ``slices`` gives the items per server) and ``stages`` (stage i on server
``stage_servers[i]``, from a placement plan, FlexPie/MOIRAI; a server may hold several stages).

Faults: an actor call that fails because its actor or node died (``RayActorError``, a lost
object) is retried: first on the same actor, which Ray restarts (``max_restarts``) where its node
is alive, waited for up to ``retry_s``; failing that the server is taken as gone and the slice or
stage moves to a remaining server (the artifact is on a shared path). Requests are pure, so a retry
never answers wrongly; none is dropped. With no server left: :class:`ClusterError`, one line.
Ray's GCS notices a killed node only after its health-check threshold (raised for starved nodes,
:mod:`tvm_partition.bench.servers`), so the bound here does not wait for it.

Imports the TVM runtime (through the runner) and Ray, never the compiler.
"""

from __future__ import annotations

import dataclasses
import json
import os
import socket
import time
from collections import deque

import numpy as np

from . import artifact
from .remote import parse_address
from ..errors import TvmPartitionError

PIPELINE = "pipeline.json"
#: the custom resource that marks a Ray node as edge server NAME
RESOURCE_PREFIX = "server:"
#: how much of a server's resource one actor asks for: many actors fit on one server
ACTOR_SHARE = 0.001
RETRY_S = 15.0
#: how often a request waiting for an answer checks that its servers' nodes are still there (a
#: look at the GCS's node list and a TCP connect per check, none for an answer quicker than it):
#: the kill test's latency spike was 1.16 s at 1.0, 0.43 s at 0.25 (2026-11-26, amd-epyc-znver5-2c)
POLL_S = 0.25
#: the driver's call arguments up to this size travel inside the call to the actor (Ray's
#: ``max_direct_call_object_size``, default 100 KiB; larger ones go through the driver node's
#: object store and are pulled by the server's): a 1.1 MB slice's round trip to a server's actor
#: took 8.2-8.7 ms through the store and 2.6-3.3 ms inline (local cluster, amd-epyc-znver5-2c,
#: 2026-11-26). Set for this driver only, where the user has not set it.
INLINE_BYTES = 16 * 1024 * 1024
INLINE_KEY = "RAY_max_direct_call_object_size"
#: a speed measurement spans at least this long (many cfs periods of a server's CPU quota)
MEASURE_S = 0.3
#: windows of :data:`MEASURE_S` a server's speed is timed over (:func:`time_on`), the quickest
#: kept: a server's own Ray processes (its raylet and agents, inside its cgroup) now and then take
#: part of its quota for a window. The suite's local cluster (A one core, B 40% of one), the LSTM
#: probe, one window each, six rounds (2 Zen 3 threads, 2026-12-07): A 1.57-1.76 ms a run but once
#: 4.42, B 4.69-13.2; the suite's test of that order once read A 4.93 against B 3.00 and failed.
SPEED_WINDOWS = 3
TIMEOUT_S = 120.0

_joined: str | None = None
_pool: "Pool | None" = None


class ClusterError(TvmPartitionError, RuntimeError):
    """The cluster cannot serve the request (unreachable, too few servers, none left), or a local
    one cannot be started (:mod:`tvm_partition.bench.servers`: the message says which node and why)."""


def resource_of(server: str) -> str:
    return f"{RESOURCE_PREFIX}{server}"


def read_spec(path: str) -> dict:
    file = os.path.join(path, PIPELINE)
    try:
        with open(file, encoding="utf-8") as f:
            spec = json.load(f)
    except FileNotFoundError:
        raise artifact.ArtifactError(f"{path}: no {PIPELINE} (write one with tvm-partition stages)") from None
    except (OSError, json.JSONDecodeError) as e:
        raise artifact.ArtifactError(f"{file}: unreadable ({e})") from None
    if not isinstance(spec, dict) or spec.get("format_version") != 1 or spec.get("mode") not in ("stages", "split"):
        raise artifact.ArtifactError(f"{file}: not a pipeline this version understands")
    return spec


def stage_servers(spec: dict, path: str) -> list[int]:
    """The server index of each stage: ``stage_servers`` of a placement pipeline, else i."""
    n, count = int(spec["servers"]), len(spec["artifacts"])
    servers = spec.get("stage_servers", list(range(count)))
    if (not isinstance(servers, list) or len(servers) != count
            or not all(isinstance(s, int) and 0 <= s < n for s in servers)):
        raise artifact.ArtifactError(f"{os.path.join(path, PIPELINE)}: stage_servers must give a server "
                                     f"index below {n} for each of the {count} stages")
    return servers


def split_parts(spec: dict, path: str) -> list[tuple[int, str]]:
    """``(items, artifact)`` per server of a split pipeline (``slices`` / ``slice_artifacts``; an
    older pipeline: one ``part`` artifact, equal slices)."""
    n = int(spec["servers"])
    slices = spec.get("slices")
    arts = spec.get("slice_artifacts")
    if slices is None:
        part = artifact.read_manifest(os.path.join(path, spec["artifacts"][0]))["inputs"][0]["shape"][0]
        return [(int(part), spec["artifacts"][0])] * n
    if (not isinstance(slices, list) or not isinstance(arts, list) or len(slices) != n or len(arts) != n
            or not all(isinstance(s, int) and s >= 0 for s in slices) or not any(slices)):
        raise artifact.ArtifactError(f"{os.path.join(path, PIPELINE)}: slices / slice_artifacts must give the "
                                     f"items (>= 0) and artifact of each of the {n} servers")
    return list(zip(slices, arts))


def connect(address: str, timeout: float = 30.0) -> None:
    """Join the Ray cluster at ``address`` as a driver; a second call with the same address is a
    no-op. Unreachable within ``timeout`` s: one-line :class:`ClusterError` (``ray.init`` itself
    retries for a long time, so the GCS port is probed first)."""
    global _joined
    import ray

    if _joined == address and ray.is_initialized():
        return
    host, port = parse_address(address, "--ray")
    end = time.monotonic() + timeout
    while True:
        try:
            socket.create_connection((host, port), timeout=max(0.1, end - time.monotonic())).close()
            break
        except OSError as e:
            if time.monotonic() >= end:
                raise ClusterError(f"cannot reach the Ray cluster at {address} within {timeout:g} s "
                                   f"({e.strerror or e}): start one with `ray start --head`") from None
            time.sleep(0.2)
    disconnect()
    # read once, by ray.init, for this driver only: not left for the processes it starts later
    # (Ray nodes of bench/servers.py would return their stages' outputs inline to the driver)
    inline = INLINE_KEY not in os.environ
    if inline:
        os.environ[INLINE_KEY] = str(INLINE_BYTES)
    try:
        # log_to_driver off: the actors' TVM logs stay in the cluster's log folder
        ray.init(address=address, logging_level="ERROR", log_to_driver=False, configure_logging=False)
    except (ConnectionError, ray.exceptions.AuthenticationError) as e:
        raise ClusterError(f"cannot join the Ray cluster at {address}: {_line(e)}{_auth_hint()}") from None
    finally:
        if inline:
            os.environ.pop(INLINE_KEY, None)
    _joined = address


def _auth_hint() -> str:
    """Why a reachable cluster may refuse this driver: Ray 2.60's ``ray start --head`` turns token
    authentication on where ``~/.ray/auth_token`` exists, and ``ray.init(address=...)`` sends the
    token only with ``RAY_AUTH_MODE=token`` (it then said only "Failed to connect", 2026-11-26)."""
    if os.environ.get("RAY_AUTH_MODE") or not (os.environ.get("RAY_AUTH_TOKEN") or os.environ.get("RAY_AUTH_TOKEN_PATH")
                                               or os.path.exists(os.path.expanduser("~/.ray/auth_token"))):
        return ""
    return ("; this machine holds a Ray token, and a cluster started with `ray start` where one exists requires it: "
            "set RAY_AUTH_MODE=token (every node and this driver alike)")


def disconnect() -> None:
    global _joined, _pool
    import ray

    _pool, _joined = None, None
    if ray.is_initialized():
        ray.shutdown()


def server_names(reachable: bool = True) -> list[str]:
    """The servers of the cluster (nodes with a ``server:`` resource); with ``reachable``, only
    those the GCS lists alive and whose raylet accepts a connection (:func:`_raylet_up`)."""
    import ray

    names = set()
    for node in ray.nodes():
        if reachable and not (node.get("Alive") and _raylet_up(node)):
            continue
        names.update(r[len(RESOURCE_PREFIX):] for r in node.get("Resources", {}) if r.startswith(RESOURCE_PREFIX))
    return sorted(names)


def _raylet_up(node: dict, timeout: float = 1.0) -> bool:
    """Whether the node's raylet accepts a TCP connection. The GCS marks a killed node dead only
    when its health checks give up (tens of seconds, longer with the threshold raised for starved
    nodes), and until then restarts its actors there, which hang; a refused connection says at once
    that the node is gone (the kill test waited 15 s for a restart on a dead node, 2026-11-25)."""
    try:
        with socket.create_connection((node["NodeManagerAddress"], int(node["NodeManagerPort"])), timeout=timeout):
            return True
    except (OSError, KeyError, ValueError):
        return False


def _server_up(server: str) -> bool:
    """Whether some node carrying ``server``'s resource has a raylet that accepts a connection."""
    import ray

    return any(_raylet_up(n) for n in ray.nodes() if n.get("Alive") and resource_of(server) in n.get("Resources", {}))


class ServerActor:
    """The artifacts one server runs, each loaded once (the class is made a Ray actor by
    :func:`_actor_class`; artifacts are named by real path)."""

    def __init__(self):
        self.runners: dict = {}

    def _runner(self, art: str):
        if art not in self.runners:
            from .runner import Runner

            self.runners[art] = Runner(art)
        return self.runners[art]

    def load(self, arts: list[str]) -> list[str]:
        """Load ``arts`` now (a later run of them starts at once); returns every artifact loaded."""
        for art in arts:
            self._runner(art)
        return list(self.runners)

    def unload(self, arts: list[str]) -> list[str]:
        for art in arts:
            self.runners.pop(art, None)
        return list(self.runners)

    def ping(self) -> int:
        return os.getpid()

    def run(self, art: str, in_keys: list[str], out_keys: list[str] | None, *envs: dict):
        """Run ``art`` on the inputs named ``in_keys`` in the merged ``envs`` (earlier stages'
        outputs, resolved by Ray); returns ``{out_key: tensor}``, or the list of outputs for the
        last stage."""
        runner = self._runner(art)
        env = {}
        for e in envs:
            env.update(e)
        names = [i["name"] for i in runner.input_info]
        outs = runner.run({n: env[k] for n, k in zip(names, in_keys)})
        return dict(zip(out_keys, outs)) if out_keys is not None else outs

    def time_ms(self, art: str, inputs: dict, repeat: int, min_s: float = MEASURE_S) -> float:
        """Milliseconds per run of ``art`` here: at least ``repeat`` runs back to back and at least
        ``min_s`` seconds, averaged. A CPU quota (cgroup cfs) limits the time per period, not each
        run: a run shorter than the quota is not slowed, so a share only shows over many periods."""
        runner = self._runner(art)
        runner.time(inputs, 1, warmup=2)
        count, t0 = 0, time.perf_counter()
        while count < repeat or time.perf_counter() - t0 < min_s:
            runner.time(inputs, 1, warmup=0)
            count += 1
        return (time.perf_counter() - t0) * 1e3 / count

    def blob(self, nbytes: int) -> np.ndarray:
        return np.zeros(nbytes, np.uint8)

    def size(self, x) -> int:
        return int(np.asarray(x).nbytes)


def _actor_class():
    import ray

    # max_restarts: Ray restarts a dead actor where its server's node is alive; the pipeline
    # retries the call itself (max_task_retries 0), so it can move it when the node is gone
    # health: a second thread answers pings while a run is busy (the default group stays serial)
    # (a restarted actor holds no runner: each loads again at its first run)
    return ray.remote(max_restarts=4, max_task_retries=0, concurrency_groups={"health": 1})(ServerActor)


class Pool:
    """One actor per server, shared by every pipeline of this driver."""

    def __init__(self):
        self.actors: dict = {}
        self.cls = _actor_class()

    def actor(self, server: str):
        if server not in self.actors:
            self.actors[server] = self.cls.options(num_cpus=0, resources={resource_of(server): ACTOR_SHARE}).remote()
        return self.actors[server]

    def forget(self, server: str) -> None:
        self.actors.pop(server, None)


def pool() -> Pool:
    global _pool
    if _pool is None:
        _pool = Pool()
    return _pool


def _is_fault(e: Exception) -> bool:
    """A failure of the cluster (actor, node, object lost, too slow) rather than of the request."""
    import ray.exceptions as rx

    if isinstance(e, rx.RayTaskError):
        return isinstance(getattr(e, "cause", None), rx.RayError)
    return isinstance(e, (rx.RayError, TimeoutError))


@dataclasses.dataclass
class Request:
    """One request in flight: its refs, when it started, what each task needs to be resubmitted."""

    inputs: dict
    refs: list
    t0: float
    tasks: list  # split: (slice index, server); stages: the servers the chain used


class RayPipeline:
    """The stages or parts of ``path`` on the Ray servers ``servers`` (default: the first live
    ones by name), each in its actor; ``retry_s`` bounds the wait for a restarted actor, ``timeout``
    one request. Work of a failed server moves to another of ``servers`` if they were given, else
    to any live server."""

    def __init__(self, path: str, servers: list[str] | None = None, *, timeout: float = TIMEOUT_S,
                 retry_s: float = RETRY_S):
        self.path, self.timeout, self.retry_s = path, timeout, retry_s
        self.spec = read_spec(path)
        n = int(self.spec["servers"])
        live = server_names()
        servers_given = bool(servers)
        servers = list(servers) if servers else live[:n]
        missing = [s for s in servers if s not in live]
        if missing:
            raise ClusterError(f"server {missing[0]!r} is not in the cluster (live: {', '.join(live) or 'none'})")
        if len(servers) != n:
            raise ClusterError(f"{path} is a {n}-server {self.spec['mode']} pipeline: give {n} servers "
                               f"(--servers A,B,...; live: {', '.join(live) or 'none'}), got {len(servers)}")
        #: the servers a fault may move work to: those given, else every live one
        self.allowed = set(servers) if servers_given else None
        self.servers, self.gone = servers, set()
        self.mode = self.spec["mode"]
        if self.mode == "split":
            self.parts = split_parts(self.spec, path)
            arts = {a for _, a in self.parts}
        else:
            self.stage_server = [servers[i] for i in stage_servers(self.spec, path)]
            self.io = self._stage_io()
            arts = set(self.spec["artifacts"])
        for a in arts:  # refuse a tampered artifact before any actor loads it
            artifact.verify(os.path.join(path, a), artifact.read_manifest(os.path.join(path, a)))
        self.pool = pool()
        self._warm()

    def _stage_io(self) -> list[dict]:
        if "stage_io" in self.spec:
            return self.spec["stage_io"]
        io, keys = [], [i["name"] for i in self.spec["inputs"]]
        for i, a in enumerate(self.spec["artifacts"]):
            last = i + 1 == len(self.spec["artifacts"])
            count = len(artifact.read_manifest(os.path.join(self.path, a))["outputs"])
            outs = None if last else [f"stage{i}:{j}" for j in range(count)]
            io.append({"inputs": keys, "outputs": outs})
            keys = outs
        return io

    def _art(self, name: str) -> str:
        return os.path.realpath(os.path.join(self.path, name))

    def _arts(self) -> list[str]:
        return list(dict.fromkeys(self._art(a) for a in self.spec["artifacts"]))

    def _warm(self) -> None:
        """Load every artifact of the pipeline on every one of its servers now (a second or two),
        so neither the first request nor the takeover after a fault waits for it; a server that
        cannot load one fails here."""
        import ray

        loads = [self.pool.actor(s).load.remote(self._arts()) for s in dict.fromkeys(self.servers)]
        try:
            ray.get(loads, timeout=self.timeout)
        except Exception as e:  # noqa: BLE001 - one line, whatever Ray raised
            raise ClusterError(f"the servers' actors did not start: {_line(e)}") from None

    # -- submitting ---------------------------------------------------------------------------

    def submit(self, inputs: dict[str, np.ndarray]) -> Request:
        """Start one request; its answer is :meth:`result`."""
        for info in self.spec["inputs"]:
            if info["name"] not in inputs:
                raise ValueError(f"input {info['name']!r} is missing (have {sorted(inputs)})")
        t0 = time.perf_counter()
        if self.mode == "split":
            req = Request(inputs, [], t0, [])
            for i, (items, _) in enumerate(self.parts):
                if items:
                    req.refs.append(self._submit_slice(i, self.servers[i], inputs))
                    req.tasks.append((i, self.servers[i]))
            return req
        ref = self._submit_chain(dict(inputs))
        return Request(inputs, [ref], t0, list(self.stage_server))

    def _slice(self, i: int, inputs: dict) -> dict:
        axis = int(self.spec.get("axis", 0))
        start = sum(items for items, _ in self.parts[:i])
        stop = start + self.parts[i][0]
        return {k: np.take(np.asarray(v), range(start, stop), axis=axis) for k, v in inputs.items()}

    def _submit_slice(self, i: int, server: str, inputs: dict):
        names = [info["name"] for info in self.spec["inputs"]]
        return self.pool.actor(server).run.remote(self._art(self.parts[i][1]), names, None, self._slice(i, inputs))

    def _submit_chain(self, inputs: dict):
        """Every stage's call, each taking the refs of the stages it reads from, or the inputs
        themselves (which travel in the call, :data:`INLINE_BYTES`)."""
        producer = {k: inputs for k in self.io[0]["inputs"]}
        ref = None
        for i, io in enumerate(self.io):
            missing = [k for k in io["inputs"] if k not in producer]
            if missing:
                raise ValueError(f"stage {i} needs {missing[0]!r}, which no input or earlier stage gives")
            sources = list({id(v): v for v in (producer[k] for k in io["inputs"])}.values())  # each once, in order
            actor = self.pool.actor(self.stage_server[i])
            ref = actor.run.remote(self._art(self.spec["artifacts"][i]), io["inputs"], io["outputs"], *sources)
            for k in io["outputs"] or []:
                producer[k] = ref
        return ref

    # -- answers and faults -------------------------------------------------------------------

    def result(self, req: Request) -> list[np.ndarray]:
        """The outputs of ``req``, retrying or moving what failed; within ``timeout`` s."""
        deadline = req.t0 + self.timeout
        if self.mode == "split":
            outs = [self._answer(req, k, deadline) for k in range(len(req.refs))]
            axis = int(self.spec.get("axis", 0))
            return [np.concatenate([o[j] for o in outs], axis=axis) for j in range(len(outs[0]))]
        while True:
            # a chain that ran on a server found gone since is submitted again without waiting
            if not any(s in self.gone for s in req.tasks):
                servers = list(dict.fromkeys(self.stage_server))
                try:
                    return self._get(req.refs[0], deadline, servers)
                except Exception as e:  # noqa: BLE001
                    if not _is_fault(e):
                        raise
                    for server in servers:
                        self._heal(server, deadline, e)
            req.tasks = list(self.stage_server)
            req.refs[0] = self._submit_chain(dict(req.inputs))

    def _answer(self, req: Request, k: int, deadline: float):
        while True:
            i, server = req.tasks[k]
            # found gone while this request waited in line: moved now, not after its own timeout
            why: Exception = ClusterError(f"server {server} went away")
            if server not in self.gone:
                try:
                    return self._get(req.refs[k], deadline, [server])
                except Exception as e:  # noqa: BLE001
                    if not _is_fault(e):
                        raise
                    why = e
            server = self._heal(server, deadline, why)
            req.tasks[k] = (i, server)
            req.refs[k] = self._submit_slice(i, server, req.inputs)

    def _get(self, ref, deadline: float, servers: list[str]):
        """``ray.get`` in slices of :data:`POLL_S`: after each slice without an answer, a server
        whose raylet refuses connections is a fault at once, and after ``retry_s`` without one the
        servers' actors are asked whether they live (their ``health`` group answers while a run is
        busy); no answer is a fault (a node killed is not reported by Ray until its health checks
        give up, and a call to it would wait that long)."""
        import ray

        silent_since = time.perf_counter()
        while True:
            left = deadline - time.perf_counter()
            if left <= 0:
                raise ClusterError(f"a request was not answered within {self.timeout:g} s")
            try:
                return ray.get(ref, timeout=min(left, POLL_S, self.retry_s))
            except ray.exceptions.GetTimeoutError:
                gone = [s for s in servers if not _server_up(s)]
                if gone:  # a node's raylet refuses connections: it is gone, whatever the GCS says yet
                    raise TimeoutError(f"server(s) {', '.join(gone)} went away") from None
                if time.perf_counter() - silent_since < self.retry_s:
                    continue
                if not self._answers(servers, deadline):
                    raise TimeoutError(f"server(s) {', '.join(servers)} did not answer within {self.retry_s:g} s") from None
                silent_since = time.perf_counter()

    def _answers(self, server: str | list[str], deadline: float) -> bool:
        """Whether every actor of ``server(s)`` answers a ping within ``retry_s``."""
        import ray

        servers = [server] if isinstance(server, str) else server
        actors = [a for s, a in self.actors().items() if s in servers]
        try:
            ray.get([_ping(a) for a in actors], timeout=max(0.1, min(self.retry_s, deadline - time.perf_counter())))
            return True
        except Exception:  # noqa: BLE001 - gone, restarting or unreachable
            return False

    def _heal(self, server: str, deadline: float, why: Exception) -> str:
        """The server to use instead of ``server`` after a fault: itself once its actors answer
        again (restarted by Ray, within ``retry_s``), else a remaining server, which takes over its
        slices and stages from now on."""
        if server not in self.gone:
            end = min(deadline, time.perf_counter() + self.retry_s)
            while time.perf_counter() < end and _server_up(server):  # Ray restarts a dead actor where its node lives
                if self._answers(server, end):
                    return server
                time.sleep(0.2)
            self.gone.add(server)
            self.pool.forget(server)
        left = [s for s in server_names() if s not in self.gone and (self.allowed is None or s in self.allowed)]
        if not left:
            raise ClusterError(f"no server left to run on: {', '.join(sorted(self.gone))} failed "
                               f"({_line(why)})")
        # prefer a server the pipeline already uses (its actors are warm), then any other
        spare = next((s for s in self.servers if s in left), left[0])
        self.servers = [spare if s == server else s for s in self.servers]
        if self.mode == "stages":
            self.stage_server = [spare if s == server else s for s in self.stage_server]
        return spare

    # -- conveniences -------------------------------------------------------------------------

    def close(self) -> None:
        """Unload this pipeline's artifacts (their weights) from its servers' actors; the actors
        stay for other pipelines of this driver and end with it."""
        import ray

        try:
            ray.get([a.unload.remote(self._arts()) for a in self.actors().values()], timeout=self.retry_s)
        except Exception:  # noqa: BLE001 - a server gone meanwhile holds nothing any more
            pass

    def actors(self) -> dict:
        """``{server: actor}`` of the servers this pipeline runs on now (the pool holds other
        servers' too: a health check must not wait for those)."""
        return {s: self.pool.actors[s] for s in dict.fromkeys(self.servers) if s in self.pool.actors}

    def run(self, inputs: dict[str, np.ndarray]) -> list[np.ndarray]:
        return self.result(self.submit(inputs))

    def stream(self, requests: list[dict], window: int, on_answer=None) -> tuple[list[list[np.ndarray]], list[float], float]:
        """Run ``requests`` with up to ``window`` in flight: (answers in order, each one's latency
        in ms, the wall time of all in s). ``on_answer(i)`` is called after answer ``i`` (a
        benchmark kills a server there)."""
        t0 = time.perf_counter()
        flying, answers, latency = deque(), [], []
        for inputs in requests:
            if len(flying) >= window:
                self._finish(flying.popleft(), answers, latency, on_answer)
            flying.append(self.submit(inputs))
        while flying:
            self._finish(flying.popleft(), answers, latency, on_answer)
        return answers, latency, time.perf_counter() - t0

    def _finish(self, req: Request, answers: list, latency: list, on_answer) -> None:
        answers.append(self.result(req))
        latency.append((time.perf_counter() - req.t0) * 1e3)
        if on_answer is not None:
            on_answer(len(answers) - 1)

    def example_inputs(self, seed: int = 0) -> dict[str, np.ndarray]:
        from ..inputs import random_input

        rng = np.random.default_rng(seed)
        return {i["name"]: random_input(i["shape"], i["dtype"], rng) for i in self.spec["inputs"]}


def _ping(actor):
    return actor.ping.options(concurrency_group="health").remote()


def _line(e: Exception) -> str:
    text = str(e).strip().splitlines()
    return f"{type(e).__name__}: {text[0] if text else ''}"[:300]


# -- measuring servers (cli/stages --ratios speed, placements over measured servers) ----------

def time_on(server: str, art_dir: str, inputs: dict, repeat: int = 5, timeout: float = TIMEOUT_S) -> float:
    """Ms per run of ``art_dir`` on ``server`` (in its actor): the quickest of :data:`SPEED_WINDOWS`
    windows, each of ``repeat`` runs and :data:`MEASURE_S` at least (the actor runs them in turn)."""
    import ray

    actor, path = pool().actor(server), os.path.realpath(art_dir)
    return min(ray.get([actor.time_ms.remote(path, inputs, repeat) for _ in range(SPEED_WINDOWS)], timeout=timeout))


def time_together(servers: list[str], art_dir: str, inputs: dict, window_s: float, timeout: float = TIMEOUT_S
                  ) -> tuple[float, ...]:
    """Ms per run of ``art_dir`` on every server at once, each timing back-to-back runs for
    ``window_s`` (give the slowest server's few runs: then all are busy the whole window): what
    each takes while the others run too."""
    import ray

    window_s = max(window_s, MEASURE_S)  # a quota shows only over many of its periods
    refs = [pool().actor(s).time_ms.remote(os.path.realpath(art_dir), inputs, 1, window_s) for s in servers]
    return tuple(ray.get(refs, timeout=timeout))


def link_ms(src: str | None, dst: str | None, nbytes: int, repeat: int = 5, timeout: float = TIMEOUT_S) -> float:
    """Median ms to move ``nbytes`` from ``src`` to ``dst`` (None: the driver) as a pipeline moves
    them: one side makes the bytes, the other reads their size (ping-pong of one tensor). From the
    driver the bytes go in the call (:data:`INLINE_BYTES`), between servers through the object store."""
    import ray

    times = []
    for _ in range(repeat + 1):
        t0 = time.perf_counter()
        data = np.zeros(nbytes, np.uint8) if src is None else pool().actor(src).blob.remote(nbytes)
        if dst is not None:
            ray.get(pool().actor(dst).size.remote(data), timeout=timeout)
        elif src is not None:
            ray.get(data, timeout=timeout)
        times.append((time.perf_counter() - t0) * 1e3)
    return float(np.median(times[1:]))
