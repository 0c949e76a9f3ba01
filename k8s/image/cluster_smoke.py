"""``make cluster-smoke``: the project's image run as a Ray cluster of containers, with the three workloads of
``k8s/rendered/cpu-smoke.yaml`` run the way KubeRay runs them, pods lost on the way and the whole cluster lost twice.

The cluster: a head, two workers and a reward node, each a container of the CPU image (``make image``) on the host
network, started with ``ray start`` and the resources the cpu-smoke overlay gives each pod (head ``rayStartParams``;
worker ``--num-cpus``/``--memory`` from the container limits, as KubeRay derives them), the pod's plain ``env``
values, and one host folder mounted at ``/data`` on every node (the ``howeval-data`` volume). Each node gets its
own ports (one host network instead of one network namespace per pod) and binds 127.0.0.1 only. Where the
manifests turn on Ray token authentication (``authOptions.mode: token``), every container gets
``RAY_AUTH_MODE=token`` and one random ``RAY_AUTH_TOKEN``, as KubeRay 1.7.0 sets them from the Secret.

First, with token auth on: a job submitted to the job API without the token, and with a wrong one, must be
refused (HTTP 401/403) and not run (its entrypoint would create ``/data/intruder``). Then the workloads, in
order, each read from the rendered manifests (so they follow any change to them):

1. **sweep** -- the sweep RayJob's ``entrypoint`` with ``ray job submit`` from the head (KubeRay's submitter does
   the same), plus ``--limit``/``--max-tokens`` so it fits a 2-core machine and a second, paid pattern judge
   (:class:`MeteredJudge`, an OpenAI-compatible endpoint on this machine). Once its first rows are written a
   worker container is removed (``rm -f``: the pod is lost) and a new one started (the operator replaces it).
   Once the judge is being called, the **head is lost**: every container of the cluster is killed, head first
   (a reclaimed node; a RayJob whose RayCluster is gone), a new cluster is started over the same ``/data`` and
   the same entrypoint is submitted again (again if it fails, at most 3 times). Then every row table under the
   output is read whole (all part files of a folder together, :func:`count_rows`): rows lost (expected keys
   missing: the first ``--limit`` rows of the config's benchmarks, read with the project's loaders) and
   duplicated (a key twice); and judge calls made on the new cluster for an answer the run's judge cache already
   held at the loss (paid twice).
2. **reward** -- the RayService's ``serveConfigV2`` deployed through the dashboard's REST API (``serve deploy``,
   as KubeRay does), with ``http_options`` moved to 127.0.0.1 and one proxy (``proxy_location: HeadOnly``: the
   containers share one port space). A request with the bearer token must be scored with no degraded row, one
   without it refused with 401.
3. **grpo** -- the GRPO RayJob's entrypoint (elastic, 1..2 workers), with rewards from the endpoint of step 2.
   After its first checkpoint a worker container is removed (training continues at the new size); after a later
   step the **head is lost** again (the whole cluster), a new cluster is started with the reward endpoint
   deployed on it, and the same entrypoint is submitted: it must continue from the checkpoint on ``/data`` with no
   flag changed, and every step 1..N must be trained.

Prints one line per event and one summary line starting ``cluster-smoke:``; exits 0 only when every check held.
Everything it started (containers, the judge endpoint, the temp folder) is removed at the end, also on failure
or Ctrl-C. Needs the container engine, this repository and its venv (PyYAML reads the manifests; pyarrow and the
project's config and manifest loaders read the sweep's rows from the ``/data`` folder, a folder of this machine).
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import secrets
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import yaml

REPO = Path(__file__).resolve().parents[2]
RENDERED = REPO / "k8s" / "rendered" / "cpu-smoke.yaml"
QUANTITY = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "k": 10**3, "M": 10**6, "G": 10**9}


class SmokeFailure(RuntimeError):
    """A check of the smoke run did not hold (the message says which and what was seen)."""


def log(msg: str) -> None:
    """One timestamped progress line on stdout."""
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", flush=True)


def quantity(value: str | int | float) -> float:
    """A Kubernetes quantity (``"4"``, ``"500m"``, ``"12Gi"``) as a number (CPUs or bytes)."""
    s = str(value)
    if s.endswith("m"):
        return float(s[:-1]) / 1000
    for suffix, mult in QUANTITY.items():
        if s.endswith(suffix):
            return float(s[: -len(suffix)]) * mult
    return float(s)


# ----------------------------------------------------------------------------------------------- the manifests
def manifests(path: Path = RENDERED) -> dict[str, Any]:
    """The pieces of the rendered overlay the smoke run uses: the RayJobs' entrypoints and cluster specs, the
    RayService's ``serveConfigV2``. Raises :class:`SmokeFailure` naming what is missing."""
    docs = [d for d in yaml.safe_load_all(path.read_text()) if d]

    def component(d: dict) -> str:
        return d.get("metadata", {}).get("labels", {}).get("app.kubernetes.io/component", "")

    jobs = {component(d): d for d in docs if d.get("kind") == "RayJob"}
    services = [d for d in docs if d.get("kind") == "RayService"]
    for need in ("sweep", "train-grpo"):
        if need not in jobs:
            raise SmokeFailure(f"{path}: no RayJob labelled app.kubernetes.io/component={need}")
    if not services:
        raise SmokeFailure(f"{path}: no RayService")
    return {"sweep": jobs["sweep"]["spec"], "grpo": jobs["train-grpo"]["spec"],
            "serve": yaml.safe_load(services[0]["spec"]["serveConfigV2"]),
            "cluster": jobs["sweep"]["spec"]["rayClusterSpec"]}


def node_shapes(cluster: dict) -> tuple[dict, dict, list[dict]]:
    """(head ``rayStartParams``, the CPU worker's ``ray start`` resources, env of the worker's container).

    KubeRay gives ``--num-cpus``/``--memory`` from the container's limits when ``rayStartParams`` does not."""
    head = dict(cluster["headGroupSpec"].get("rayStartParams", {}))
    groups = [g for g in cluster.get("workerGroupSpecs", []) if "gpu" not in g.get("groupName", "")]
    if not groups:
        raise SmokeFailure("the sweep RayJob's cluster has no CPU worker group")
    container = groups[0]["template"]["spec"]["containers"][0]
    limits = container.get("resources", {}).get("limits", {})
    worker = dict(groups[0].get("rayStartParams", {}))
    worker.setdefault("num-cpus", str(int(quantity(limits.get("cpu", 1)))))
    if "memory" in limits:
        worker.setdefault("memory", str(int(quantity(limits["memory"]))))
    return head, worker, container.get("env", [])


# ----------------------------------------------------------------------------------------------- the cluster
class Cluster:
    """A head and workers, each a container on the host network with its own ports; all removed by ``down()``."""

    def __init__(self, engine: str, image: str, base_port: int, data: Path, env: dict[str, str]) -> None:
        self.engine, self.image, self.base, self.data, self.env = engine, image, base_port, data, env
        self.label = f"howeval-cluster-smoke={os.getpid()}"
        self.names: list[str] = []
        self.head = ""  # the running head container
        self.node_port: dict[str, int] = {}  # container -> its raylet's node-manager port (how Ray names it)
        self.n = 0
        # the runtime may not raise limits above this process's hard limits (Ray wants many open files)
        nofile = min(65536, resource.getrlimit(resource.RLIMIT_NOFILE)[1])
        nproc = min(32768, resource.getrlimit(resource.RLIMIT_NPROC)[1])  # 65535 was refused here
        self.engine_flags = (["--runtime", "runc"] if engine == "podman" and shutil.which("runc") else []) + \
            (["--ulimit", f"nofile={nofile}:{nofile}", "--ulimit", f"nproc={nproc}:{nproc}"] if engine == "podman" else [])

    @property
    def gcs(self) -> str:
        return f"127.0.0.1:{self.base}"

    @property
    def dashboard_port(self) -> int:
        return self.base + 1

    def _ports(self, i: int) -> list[str]:
        p = self.base + 10 + 10 * i
        lo = self.base + 200 + 400 * i
        return [f"--node-manager-port={p}", f"--object-manager-port={p + 1}", f"--metrics-export-port={p + 2}",
                f"--dashboard-agent-listen-port={p + 3}", f"--dashboard-agent-grpc-port={p + 4}",
                f"--runtime-env-agent-port={p + 5}", f"--min-worker-port={lo}", f"--max-worker-port={lo + 399}"]

    def start(self, role: str, params: dict[str, str]) -> str:
        """Start one node (``role`` = head | worker) with ``ray start --block`` and the given params."""
        self.n += 1
        name = f"howeval-smoke-{os.getpid()}-{role}{self.n}"
        args = ["ray", "start", "--block", "--node-ip-address=127.0.0.1", "--disable-usage-stats", *self._ports(self.n)]
        if role == "head":
            args += ["--head", f"--port={self.base}", "--dashboard-host=127.0.0.1",
                     f"--dashboard-port={self.dashboard_port}", f"--ray-client-server-port={self.base + 2}"]
        else:
            args += [f"--address={self.gcs}"]
        args += [f"--{k}={v}" for k, v in params.items() if k not in ("dashboard-host", "block")]
        envs = [x for k, v in self.env.items() for x in ("-e", f"{k}={v}")]
        cmd = [self.engine, "run", "-d", "--name", name, "--label", self.label, "--network", "host",
               "--shm-size=1g", *self.engine_flags, "-v", f"{self.data}:/data", *envs, self.image, *args]
        subprocess.run(cmd, check=True, capture_output=True, text=True)
        self.names.append(name)
        self.node_port[name] = self.base + 10 + 10 * self.n
        if role == "head":
            self.head = name
        log(f"started {role} {name}: ray start {' '.join(a for a in args[2:] if 'port' not in a)}")
        return name

    def exec(self, name: str, cmd: list[str], timeout: float = 600, check: bool = True) -> subprocess.CompletedProcess:
        """Run ``cmd`` inside container ``name`` (as the image's user, from /app)."""
        proc = subprocess.run([self.engine, "exec", name, *cmd], capture_output=True, text=True, timeout=timeout)
        if check and proc.returncode != 0:
            raise SmokeFailure(f"{' '.join(cmd)[:120]} in {name}: exit {proc.returncode}: {proc.stderr[-1500:]}")
        return proc

    def remove(self, name: str) -> None:
        """Remove a node the way a pod is lost: the container is killed, not drained."""
        subprocess.run([self.engine, "rm", "-f", "-t", "0", name], capture_output=True, text=True)
        if name in self.names:
            self.names.remove(name)
        log(f"removed {name} (killed)")

    def alive_nodes(self, head: str | None = None) -> int:
        """How many Ray nodes the head sees alive."""
        proc = self.exec(head or self.head, ["python3", "-c", f"import ray; ray.init(address='{self.gcs}', logging_level='ERROR'); "
                                "print(sum(n['Alive'] for n in ray.nodes()))"], timeout=120, check=False)
        lines = proc.stdout.strip().splitlines()
        return int(lines[-1]) if proc.returncode == 0 and lines and lines[-1].isdigit() else 0  # not up yet

    def running(self, name: str) -> bool:
        """Whether container ``name`` is still running (a node whose ``ray start`` gave up has exited)."""
        out = subprocess.run([self.engine, "inspect", "-f", "{{.State.Running}}", name], capture_output=True, text=True)
        return out.stdout.strip() == "true"

    def tail(self, name: str, lines: int = 3) -> str:
        out = subprocess.run([self.engine, "logs", "--tail", str(lines), name], capture_output=True, text=True)
        return " | ".join((out.stdout + out.stderr).strip().splitlines()[-lines:])

    def up(self, head_params: dict[str, str], worker_params: dict[str, str]) -> str:
        """A new cluster: a head, two CPU workers and the reward node, over the same ``/data``; returns the head
        once the head sees all 4 nodes alive. A node whose container exits while it starts (``ray start`` gives a
        raylet 30 s to register, which a loaded machine can miss) is replaced by a new one, as KubeRay replaces a
        Ray pod whose container exited (``restartPolicy: Never`` under autoscaler v2)."""
        reward_params = {**worker_params, "num-cpus": "0", "resources": json.dumps({REWARD_RESOURCE: 6})}
        nodes: dict[str, tuple[str, dict]] = {}

        def replace_exited() -> None:
            for name in [n for n in nodes if not self.running(n)]:
                role, params = nodes.pop(name)
                log(f"{name} exited while starting ({self.tail(name)}): a new {role} replaces it")
                self.remove(name)
                nodes[self.start(role, params)] = (role, params)

        head = self.start("head", head_params)
        nodes[head] = ("head", head_params)

        def head_up() -> bool:
            replace_exited()
            return self.alive_nodes() >= 1

        wait_for("the head node", head_up, 600, every=5)
        nodes = {}
        for role, params in (("worker", worker_params), ("worker", worker_params), ("reward", reward_params)):
            nodes[self.start(role, params)] = (role, params)

        def all_up() -> bool:
            replace_exited()
            return self.alive_nodes() >= 4

        wait_for("4 alive Ray nodes", all_up, 900, every=5)
        log("cluster up: 1 head + 2 workers + 1 reward node")
        return self.head

    def lose(self) -> None:
        """The whole cluster lost, head first (a reclaimed node, a deleted RayCluster): every container is
        killed; ``/data`` stays."""
        head, others = self.head, [n for n in self.names if n != self.head]
        self.remove(head)
        for n in others:
            self.remove(n)
        self.head = ""

    def down(self) -> None:
        """Remove every container this run started (by label, so a crashed run's leftovers go too)."""
        ids = subprocess.run([self.engine, "ps", "-aq", "--filter", f"label={self.label}"],
                             capture_output=True, text=True).stdout.split()
        if ids:
            subprocess.run([self.engine, "rm", "-f", "-t", "0", *ids], capture_output=True, text=True)
        self.names.clear()


def wait_for(what: str, check, timeout: float, every: float = 3.0):
    """Poll ``check()`` until it returns something truthy; :class:`SmokeFailure` after ``timeout`` seconds."""
    t0 = time.monotonic()
    while time.monotonic() - t0 < timeout:
        got = check()
        if got:
            return got
        time.sleep(every)
    raise SmokeFailure(f"{what}: not within {timeout:.0f} s")


# ----------------------------------------------------------------------------------------------- jobs
class Jobs:
    """``ray job submit``/``status``/``stop``/``logs`` run inside the head container against its dashboard."""

    def __init__(self, cluster: Cluster) -> None:
        self.c = cluster
        self.address = f"http://127.0.0.1:{cluster.dashboard_port}"

    @property
    def head(self) -> str:
        """The cluster's current head (a new one after a head loss)."""
        return self.c.head

    def submit(self, sub_id: str, entrypoint: str, runtime_env: dict | None = None) -> None:
        cmd = ["ray", "job", "submit", "--address", self.address, "--submission-id", sub_id, "--no-wait"]
        if runtime_env:
            cmd += ["--runtime-env-json", json.dumps(runtime_env)]
        self.c.exec(self.head, [*cmd, "--", *shlex.split(entrypoint)], timeout=180)
        log(f"submitted {sub_id}: {entrypoint}")

    def status(self, sub_id: str) -> str:
        """``PENDING``/``RUNNING``/``SUCCEEDED``/``FAILED``/``STOPPED`` from the job SDK (``ray job status``
        prints a finished job as ``Job 'x' succeeded``, not as a status word); ``UNKNOWN`` when unreachable."""
        code = ("import sys; from ray.job_submission import JobSubmissionClient as C; "
                "print(C(sys.argv[1]).get_job_status(sys.argv[2]).value)")
        out = self.c.exec(self.head, ["python3", "-c", code, self.address, sub_id], timeout=120, check=False).stdout
        words = out.split()
        return words[-1] if words and words[-1].isupper() else "UNKNOWN"

    def wait(self, sub_id: str, timeout: float) -> str:
        return wait_for(f"job {sub_id} to finish", lambda: (s := self.status(sub_id)) in
                        ("SUCCEEDED", "FAILED", "STOPPED") and s, timeout, every=5)

    def stop(self, sub_id: str) -> None:
        self.c.exec(self.head, ["ray", "job", "stop", "--address", self.address, sub_id], timeout=120, check=False)
        log(f"stopped {sub_id} (ray job stop: its driver is killed)")

    def logs(self, sub_id: str) -> str:
        return self.c.exec(self.head, ["ray", "job", "logs", "--address", self.address, sub_id],
                           timeout=120, check=False).stdout


# ----------------------------------------------------------------------------------------------- paid judge calls
class MeteredJudge:
    """An OpenAI-compatible chat endpoint on 127.0.0.1 that plays a paid LLM pattern judge and meters its calls.

    The sweep gets it as a second pattern judge (``kind: llm``, :data:`JUDGE_OVERRIDE`), so its calls go through
    the project's write-ahead judge cache (``howeval/judges/cache.py``: ``<run>/judge_cache`` on ``/data``).
    Every answer is a valid pattern-label object (``howeval.judges.rubric.parse_pattern_output`` reads the four
    booleans and ignores other keys) carrying the call's number as ``smoke_call``, so the cache's own lines say
    which calls reached the run and were stored. :meth:`paid_twice` counts the calls asked again after a loss
    whose answer the run had already stored: the judge paid twice for one answer. A call in flight at the loss
    (answered or not, never stored) is legitimately asked again and not counted. ``latency_s`` per call keeps
    the judge stage running long enough to be interrupted."""

    def __init__(self, latency_s: float = 1.0) -> None:
        import hashlib
        import threading
        from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

        self.latency_s = latency_s
        self.calls: list[str] = []  # call number - 1 -> the request's key (sha256 of model and messages)
        self.lock = threading.Lock()
        judge = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *a):  # noqa: D401 - quiet
                pass

            def do_POST(self):  # noqa: N802 - http.server's name
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
                key = hashlib.sha256(json.dumps([body.get("model"), body.get("messages")], sort_keys=True)
                                     .encode()).hexdigest()
                with judge.lock:
                    judge.calls.append(key)
                    n = len(judge.calls)
                time.sleep(judge.latency_s)
                text = json.dumps({"cot": False, "rep": False, "con": False, "pr": False, "smoke_call": n})
                out = json.dumps({"id": f"smoke-{n}", "object": "chat.completion", "created": int(time.time()),
                                  "model": body.get("model", "metered"),
                                  "choices": [{"index": 0, "finish_reason": "stop",
                                               "message": {"role": "assistant", "content": text}}],
                                  "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}}).encode()
                try:
                    self.send_response(200)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(out)))
                    self.end_headers()
                    self.wfile.write(out)
                except OSError:  # the caller is gone (its node was killed)
                    pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    @staticmethod
    def stored_calls(cache_dir: Path) -> set[int]:
        """The call numbers whose answers the run's judge cache holds (its JSON-lines segments; a line torn by
        a kill is skipped, as the cache itself skips it)."""
        got: set[int] = set()
        for f in cache_dir.rglob("*.jsonl") if cache_dir.exists() else []:
            for line in f.read_text(errors="replace").splitlines():
                try:
                    text = json.loads(line)["completion"]["text"]
                    got.add(int(json.loads(text)["smoke_call"]))
                except (ValueError, KeyError, TypeError):
                    continue
        return got

    def paid_twice(self, stored: set[int], since: int) -> int:
        """Calls after the first ``since`` calls whose request has an answer among the ``stored`` calls."""
        with self.lock:
            stored_keys = {self.calls[n - 1] for n in stored if 0 < n <= len(self.calls)}
            return sum(1 for k in self.calls[since:] if k in stored_keys)


JUDGE_OVERRIDE = ("judges.pattern=[{name: rules, kind: rules}, {name: metered, kind: llm, with_image: false, "
                  "llm: {model: metered-judge, max_tokens: 64, options: {base_url_env: SMOKE_JUDGE_URL, "
                  "api_key_env: SMOKE_JUDGE_KEY, max_concurrency: 2}}}]")
"""The sweep's dot-list override that adds :class:`MeteredJudge` as a second pattern judge (the rules judge stays
the primary)."""


# ----------------------------------------------------------------------------------------------- token auth
def unauthenticated_submit(c: Cluster, token: str) -> dict[str, Any]:
    """A stranger's job submission to the head's job API (Ray's REST endpoint ``POST /api/jobs/``, what ``ray job
    submit`` calls), without the token and with a wrong one; its entrypoint would create ``/data/intruder``.
    Returns the HTTP statuses, whether the file appeared and the jobs the cluster lists (asked with the token)."""
    marker = c.data / "intruder"
    body = json.dumps({"entrypoint": "touch /data/intruder"}).encode()
    got: dict[str, Any] = {}
    for label, header in (("no token", {}), ("wrong token", {"Authorization": f"Bearer {secrets.token_hex(16)}"})):
        req = urllib.request.Request(f"http://127.0.0.1:{c.dashboard_port}/api/jobs/", data=body, method="POST",
                                     headers={"Content-Type": "application/json", **header})
        try:
            with urllib.request.urlopen(req, timeout=30) as r:
                got[label] = r.status
        except urllib.error.HTTPError as e:
            got[label] = e.code
    time.sleep(5)
    code = ("import json; from ray.job_submission import JobSubmissionClient as C; "
            f"print(json.dumps([j.entrypoint for j in C('http://127.0.0.1:{c.dashboard_port}').list_jobs()]))")
    listed = c.exec(c.head, ["python3", "-c", code], timeout=120).stdout.strip().splitlines()[-1]
    got["jobs"] = json.loads(listed)
    got["intruder"] = marker.exists()
    log(f"job API without the Ray token: {got['no token']}, with a wrong one: {got['wrong token']}; "
        f"jobs the cluster lists with the token: {len(got['jobs'])}, the intruder's among them: "
        f"{any('intruder' in j for j in got['jobs'])}; /data/intruder exists: {got['intruder']}")
    refused = all(got[k] in (401, 403) for k in ("no token", "wrong token"))
    if not refused or got["intruder"] or any("intruder" in j for j in got["jobs"]):
        raise SmokeFailure(f"a job submitted without the Ray token was not refused: {got}")
    return got


# ----------------------------------------------------------------------------------------------- row checks
KEY_COLUMNS = ("sample_id", "config", "mode", "judge", "embedder", "tau", "alpha", "order", "variant")
"""The columns that name one unit of work in a row table (``howeval.records``: ``KEY`` plus the judge of a
judgment, the embedder/tau/alpha/order of ``STEP_KEY``). ``response_hash`` is left out on purpose: a response
generated twice for one (sample, config, mode), or judged twice, is a duplicate here even when the texts differ."""


def read_tables(root: Path) -> dict[str, dict]:
    """The row tables under a sweep's output folder, each read whole: every Parquet part file of a top-level
    folder (``responses/``, ``judgments/``, ``steps/``, ``adapt/``: all their part files, of every config,
    together) and ``samples.parquet`` as ``samples``. Returns ``{table: {"keys": [key tuple per row], "files": n,
    "errors": [...]}}`` with the :data:`KEY_COLUMNS` each table has. Hidden and ``_``-prefixed folders (a writer's
    temporary files) are skipped. Read on this machine: ``/data`` of the containers is a folder here."""
    import pyarrow.parquet as pq

    out: dict[str, dict] = {}
    for f in sorted(root.rglob("*.parquet")):
        rel = f.relative_to(root).parts
        if any(p.startswith((".", "_")) for p in rel):
            continue
        table = rel[0] if len(rel) > 1 else f.stem
        entry = out.setdefault(table, {"keys": [], "files": 0, "errors": [], "columns": None})
        try:
            t = pq.read_table(f)
        except Exception as e:  # noqa: BLE001 - a part file that cannot be read is reported, not fatal here
            entry["errors"].append(f"{f.relative_to(root)}: {e}")
            continue
        cols = tuple(c for c in KEY_COLUMNS if c in t.column_names)
        if "sample_id" not in cols:
            continue
        if entry["columns"] not in (None, cols):
            entry["errors"].append(f"{f.relative_to(root)}: key columns {cols}, other part files {entry['columns']}")
            continue
        entry["columns"] = cols
        entry["files"] += 1
        entry["keys"] += list(zip(*[t.column(c).to_pylist() for c in cols]))
    return {k: v for k, v in out.items() if v["files"] or v["errors"]}


def expected_samples(config: str, limit: int) -> tuple[dict[str, set[str]], list[str]]:
    """The sample ids a sweep of ``config`` with ``--limit limit`` must cover, per table: ``"*"`` every table,
    ``"steps"`` those with reference steps (CRYSTAL, ``howeval/plugins/crystal.py``), ``"adapt"`` those with evidence boxes
    and an image (AdaptMMBench, ``howeval/plugins/adapt.py``). Read with the project's own config and manifest loaders
    (the first ``limit`` rows of each benchmark, as ``--limit`` takes them), from this clone: the image's
    ``/app`` is a copy of it. Also returns the tables the run must write: responses, judgments and samples, plus
    steps and adapt where the config turns them on and a sample qualifies."""
    from howeval.benchmarks.loaders import load_benchmark
    from howeval.config import load_sweep_config

    cfg = load_sweep_config(str(REPO / config))
    rows: list[dict] = []
    for b in cfg.benchmarks:
        rows += load_benchmark(b.path, name=b.name, limit=limit, read_images=False, fmt=b.format,
                               image_dir=b.image_dir, image_root=b.image_root).samples
    samples = {"*": {r["sample_id"] for r in rows},
               "steps": {r["sample_id"] for r in rows if r.get("reference_steps")},
               "adapt": {r["sample_id"] for r in rows if r.get("evidence_boxes") and (r.get("images") or r.get("image_paths"))}}
    required = ["responses", "judgments", "samples"]
    required += [t for t, on in (("steps", cfg.crystal is not None), ("adapt", cfg.adapt is not None)) if on and samples[t]]
    return samples, required


def count_rows(tables: dict[str, dict], samples: dict[str, set[str]], required: Iterable[str] = ()) -> dict[str, Any]:
    """Rows written, lost and duplicated over whole tables (all part files of a folder together).

    A key is one row's :data:`KEY_COLUMNS`. Duplicated = rows whose key is already in the table (a key written
    twice, in one part file or two). Lost = expected keys that are in no part file. The expected keys of a
    table: per config, its sample set (``samples[table]``, else ``samples["*"]``) times every combination of the
    values its other key columns take in the table (a mode or judge that wrote for one sample must have written
    for all); a table keyed like the responses (judgments, steps, samples: columns sample_id, config, mode, ...)
    is also expected to hold every (config, mode) of ``responses``, so a whole mode or config lost counts. A
    ``required`` table with no rows at all loses one row per expected sample and (config, mode) of responses.
    ``unexpected`` = rows of samples outside the expected set (reported, not counted as lost)."""
    from itertools import product

    resp_modes: dict[Any, set] = {}
    resp = tables.get("responses")
    if resp and (resp["columns"] or ())[:3] == ("sample_id", "config", "mode"):
        for k in resp["keys"]:
            resp_modes.setdefault(k[1], set()).add(k[2])
    per: dict[str, dict] = {}
    for name in sorted(set(tables) | set(required)):
        t = tables.get(name) or {"keys": [], "files": 0, "errors": [], "columns": None}
        keys, cols = t["keys"], t["columns"] or ()
        want = samples.get(name, samples["*"])
        present = set(keys)
        like_responses = name != "adapt" and cols[1:3] == ("config", "mode")
        if not keys:
            lost = len(want) * sum(len(m) for m in resp_modes.values()) or len(want)
        else:
            configs = {k[1] for k in keys} | (set(resp_modes) if like_responses else set())
            expected: set[tuple] = set()
            for cfg in configs:
                ks = [k for k in keys if k[1] == cfg]
                # the values of the columns after config: this config's own, else the table's (a config lost whole)
                values = [sorted({k[i] for k in (ks or keys)}, key=repr) for i in range(2, len(cols))]
                if like_responses and cfg in resp_modes:
                    values[0] = sorted(set(values[0]) | resp_modes[cfg], key=repr)
                expected |= {(s, cfg, *rest) for s in want for rest in product(*values)}
            lost = len(expected - present)
        per[name] = {"rows": len(keys), "files": t["files"], "duplicated": len(keys) - len(present), "lost": lost,
                     "unexpected": sum(1 for k in keys if k[0] not in want), "errors": t["errors"]}
    return {"tables": per, "rows": sum(v["rows"] for v in per.values()),
            "lost": sum(v["lost"] for v in per.values()), "duplicated": sum(v["duplicated"] for v in per.values()),
            "unexpected": sum(v["unexpected"] for v in per.values()),
            "errors": [e for v in per.values() for e in v["errors"]]}


def host_path(cluster: Cluster, container_path: str) -> Path:
    """The folder on this machine that a ``/data/...`` path of the containers is."""
    if not container_path.startswith("/data/"):
        raise SmokeFailure(f"{container_path}: the smoke reads outputs under /data only")
    return cluster.data / container_path[len("/data/"):]


def count_written(cluster: Cluster, out_dir: str) -> int:
    """Rows written so far (0 when nothing is there yet)."""
    root = host_path(cluster, out_dir)
    return sum(len(v["keys"]) for v in read_tables(root).values()) if root.exists() else 0


# ----------------------------------------------------------------------------------------------- workloads
def entrypoint_of(spec: dict, extra: Iterable[str]) -> str:
    """The RayJob's entrypoint, with ``extra`` args appended (quoted)."""
    return " ".join([spec["entrypoint"], *map(shlex.quote, extra)])


def config_of(entrypoint: str) -> str:
    """The ``--config`` file of an entrypoint (relative to the job's working_dir, /app = this clone)."""
    parts = shlex.split(entrypoint)
    if "--config" not in parts:
        raise SmokeFailure(f"the entrypoint has no --config: {entrypoint}")
    return parts[parts.index("--config") + 1]


def output_of(entrypoint: str) -> str:
    """The ``--output`` folder of a sweep entrypoint."""
    parts = shlex.split(entrypoint)
    if "--output" not in parts:
        raise SmokeFailure(f"the sweep RayJob's entrypoint has no --output: {entrypoint}")
    return parts[parts.index("--output") + 1]


def run_sweep(c: Cluster, jobs: Jobs, spec: dict, limit: int, timeout: float, judge: MeteredJudge,
              restart: Callable[[], None]) -> dict:
    """Workload 1: the sweep, with a worker killed once rows are written and then the whole cluster lost (head
    first) once the paid judge is being called; ``restart()`` brings up a new cluster over the same ``/data``,
    where the same entrypoint is submitted again (and again if it fails, at most 3 times) until it succeeds.
    Then every row table is counted (:func:`count_rows`) and the judge's calls after the loss are checked
    against the answers its cache had stored (:meth:`MeteredJudge.paid_twice`)."""
    ep = entrypoint_of(spec, ["--limit", str(limit), "--max-tokens", "24", JUDGE_OVERRIDE])
    out = output_of(ep)
    runtime_env = yaml.safe_load(spec["runtimeEnvYAML"]) if spec.get("runtimeEnvYAML") else None
    jobs.submit("smoke-sweep-1", ep, runtime_env)
    wait_for("the sweep's first rows", lambda: count_written(c, out) > 0, timeout)
    victim = next(n for n in c.names if "worker" in n)
    c.remove(victim)
    c.start("worker", WORKER_PARAMS)
    # the head loss: once the paid judge has answered a call (judging under way, rows still to write)
    wait_for("the sweep's first judge call", lambda: judge.calls or jobs.status("smoke-sweep-1") in
             ("SUCCEEDED", "FAILED", "STOPPED"), timeout, every=1)
    status = jobs.status("smoke-sweep-1")
    if status != "RUNNING":
        raise SmokeFailure(f"the sweep was {status} before the head loss (the judge saw {len(judge.calls)} calls): "
                           f"nothing to lose mid-sweep\n{jobs.logs('smoke-sweep-1')[-3000:]}")
    # ... and once the run's judge cache holds at least one answer: a loss before that would make "0 paid
    # twice" vacuous (nothing stored, nothing that could be paid again)
    cache_dir = host_path(c, out) / "judge_cache"
    wait_for("a judge answer stored in the run's judge cache", lambda: MeteredJudge.stored_calls(cache_dir)
             or jobs.status("smoke-sweep-1") in ("SUCCEEDED", "FAILED", "STOPPED"), timeout, every=0.5)
    c.lose()
    calls_before = len(judge.calls)
    stored = MeteredJudge.stored_calls(cache_dir)
    if not stored:
        raise SmokeFailure(f"the head was lost with no judge answer stored ({calls_before} calls made, sweep "
                           f"{jobs.status('smoke-sweep-1')}): the paid-twice check would be vacuous")
    rows_before = count_written(c, out)
    log(f"head lost mid-sweep: {rows_before} rows on /data, {calls_before} judge calls made, {len(stored)} stored "
        "in the judge cache")
    restart()
    resumes, attempt = 0, 1
    jobs.submit(f"smoke-sweep-{attempt + 1}", ep, runtime_env)
    attempt += 1
    while (status := jobs.wait(f"smoke-sweep-{attempt}", timeout)) != "SUCCEEDED":
        if attempt >= 4:
            raise SmokeFailure(f"the sweep ended {status} three times on the new cluster; last logs:\n"
                               f"{jobs.logs(f'smoke-sweep-{attempt}')[-3000:]}")
        log(f"smoke-sweep-{attempt} ended {status}: re-submitting the same entrypoint (it resumes by key)")
        attempt += 1
        resumes += 1
        jobs.submit(f"smoke-sweep-{attempt}", ep, runtime_env)
    samples, required = expected_samples(config_of(ep), limit)
    counts = count_rows(read_tables(host_path(c, out)), samples, required)
    log("sweep rows per table: " + ", ".join(f"{k} {v['rows']} rows in {v['files']} files ({v['lost']} lost, "
                                               f"{v['duplicated']} duplicated)" for k, v in counts["tables"].items()))
    if counts["errors"]:
        raise SmokeFailure(f"unreadable row tables: {counts['errors']}")
    twice = judge.paid_twice(stored, calls_before)
    log(f"paid judge: {len(judge.calls)} calls in all, {len(judge.calls) - calls_before} after the head loss, "
        f"{twice} of them for an answer already stored")
    return {"tables": len(counts["tables"]), "rows": counts["rows"], "lost": counts["lost"],
            "duplicated": counts["duplicated"], "unexpected": counts["unexpected"], "resumes": resumes,
            "killed": victim, "samples": len(samples["*"]), "rows_at_head_loss": rows_before,
            "judge_calls": len(judge.calls), "judge_stored_at_loss": len(stored), "judge_paid_twice": twice}


def deploy_reward(c: Cluster, serve_cfg: dict, port: int, token: str) -> dict:
    """Workload 2: the RayService's serveConfigV2 through the REST API; a scored request and a refused one."""
    cfg = json.loads(json.dumps(serve_cfg))
    cfg.setdefault("http_options", {}).update(host="127.0.0.1", port=port)
    cfg["proxy_location"] = "HeadOnly"
    for app in cfg["applications"]:  # on the reward node only, as on the RayService's own RayCluster
        for dep in app.get("deployments", []):
            opts = dep.setdefault("ray_actor_options", {})
            opts["resources"] = {**opts.get("resources", {}), REWARD_RESOURCE: opts.get("num_cpus", 1)}
            opts["num_cpus"] = 0  # (Serve's default is 1)
    (c.data / "serve.yaml").write_text(yaml.safe_dump(cfg, sort_keys=False))
    c.exec(c.head, ["serve", "deploy", "/data/serve.yaml", "--address", f"http://127.0.0.1:{c.dashboard_port}"],
           timeout=300)
    log(f"deployed serveConfigV2 ({', '.join(a['name'] for a in cfg['applications'])}) on 127.0.0.1:{port}")

    def running() -> bool:
        out = c.exec(c.head, ["serve", "status", "--address", f"http://127.0.0.1:{c.dashboard_port}"],
                     timeout=120, check=False).stdout
        apps = (yaml.safe_load(out) or {}).get("applications", {})
        bad = {n: a.get("status") for n, a in apps.items() if a.get("status") in ("DEPLOY_FAILED", "UNHEALTHY")}
        if bad:
            raise SmokeFailure(f"serve status: {bad}\n{out[-3000:]}")
        return bool(apps) and all(a.get("status") == "RUNNING" for a in apps.values())

    wait_for("the reward applications to be RUNNING", running, 600, every=5)
    items = [{"prompt": "What is 3 + 4?", "response": "3 + 4 = 7, so the answer is \\boxed{7}.", "answer": "7",
              "answer_type": "integer_number", "kind": "pattern"},
             {"prompt": "What is 2 + 2?", "response": "The answer is \\boxed{5}.", "answer": "4",
              "answer_type": "integer_number", "kind": "pattern"}]
    body = json.dumps({"items": items}).encode()

    last: dict[str, Any] = {}

    def post(auth: bool) -> tuple[int, dict]:
        req = urllib.request.Request(f"http://127.0.0.1:{port}/v1/rewards", data=body, method="POST",
                                     headers={"Content-Type": "application/json",
                                              **({"Authorization": f"Bearer {token}"} if auth else {})})
        try:
            with urllib.request.urlopen(req, timeout=60) as r:
                return r.status, json.loads(r.read())
        except urllib.error.HTTPError as e:
            last.update(status=e.code, body=e.read()[:500].decode("utf-8", "replace"))
            return e.code, {}
        except OSError as e:  # not listening yet
            last.update(status=None, body=str(e))
            return 0, {}

    try:
        status, answer = wait_for("a scored /v1/rewards answer", lambda: (r := post(True))[0] == 200 and r, 180)
    except SmokeFailure as e:
        raise SmokeFailure(f"{e}; last answer: {last}") from None
    rows = answer.get("rewards") or answer.get("results") or answer.get("items") or []
    degraded = [r for r in rows if r.get("degraded")]
    refused, _ = post(False)
    log(f"/v1/rewards with the token: {status}, {len(rows)} rows, {len(degraded)} degraded; without: {refused}")
    if refused != 401 or len(rows) != len(items) or degraded:
        raise SmokeFailure(f"reward: token -> {status} rows {rows}; no token -> {refused} (want 401, 2 rows, 0 degraded)")
    return {"scored": len(rows), "degraded": len(degraded), "refused": refused}


def grpo_steps(log_text: str) -> tuple[list[int], list[int]]:
    """(steps, world sizes) of the training-step lines of a GRPO job's log (rank 0 prints
    ``[train_grpo] {"step": N, "world_size": W, "loss": ...}`` per logged step; summary lines have no ``loss``)."""
    steps, sizes = [], []
    for line in log_text.splitlines():
        i = line.find("{")
        if i < 0 or "[train_grpo]" not in line[:i]:
            continue
        try:
            rec = json.loads(line[i:])
        except json.JSONDecodeError:
            continue
        if isinstance(rec, dict) and "step" in rec and ("loss" in rec or "reward" in rec):
            steps.append(int(rec["step"]))
            sizes.append(int(rec.get("world_size", 0)))
    return steps, sizes


PLACEMENT_PY = r"""
import json, sys
import ray
from ray.job_submission import JobSubmissionClient
from ray.util.state import list_actors
gcs, dashboard, sub_id = sys.argv[1:4]
ray.init(address=gcs, logging_level="ERROR")
port = {n["NodeID"]: n["NodeManagerPort"] for n in ray.nodes() if n["Alive"]}
driver = JobSubmissionClient(dashboard).get_job_info(sub_id).driver_node_id
train = list_actors(address=dashboard, filters=[("class_name", "=", "RayTrainWorker"), ("state", "=", "ALIVE")])
print(json.dumps({"driver": port.get(driver), "train": [port.get(a.node_id) for a in train]}))
"""


def training_victim(c: Cluster, jobs: Jobs, head: str, sub_id: str) -> str:
    """A worker container that runs a training worker of job ``sub_id`` but not its driver (the driver
    runs on a worker node too, the head having no CPUs: losing its node ends the job, the re-submission's
    case, not the resize's). :class:`SmokeFailure` when every training worker shares the driver's node."""
    proc = c.exec(head, ["python3", "-c", PLACEMENT_PY, c.gcs, jobs.address, sub_id], timeout=120)
    where = json.loads(proc.stdout.strip().splitlines()[-1])
    by_port = {p: n for n, p in c.node_port.items()}
    hosts = [by_port.get(p) for p in where["train"] if p != where["driver"]]
    hosts = [h for h in hosts if h and "worker" in h]
    if not hosts:
        raise SmokeFailure(f"no worker node runs a training worker without the job's driver: {where} ({c.node_port})")
    return hosts[0]


def grpo_starts(log_text: str) -> list[dict]:
    """Each worker group's start line in a GRPO job's log, in order: ``{"world_size", "resumed_from"}``
    (rank 0 prints ``[train_grpo] start {...}`` when a group starts, the first and every restart)."""
    out = []
    for line in log_text.splitlines():
        i = line.find("[train_grpo] start {")
        if i >= 0:
            try:
                rec = json.loads(line[i + len("[train_grpo] start "):])
            except json.JSONDecodeError:
                continue
            if not out or rec != out[-1]:  # Ray prints a worker's line once per driver stream it reaches
                out.append(rec)
    return out


def trained_steps(first: list[int], second_log: str, steps: int) -> int:
    """The checkpoint step the job on the new cluster resumed from, after checking that every step 1..``steps`` was
    trained: those the first job logged, those up to that checkpoint (the first job may train and save a step after
    its log was read and before the head is lost: the checkpoint on ``/data`` is the proof), and those the second
    job logged. :class:`SmokeFailure` when the second job started from no checkpoint or a step is missing."""
    second, _ = grpo_steps(second_log)
    starts = grpo_starts(second_log)
    resumed = starts[0].get("resumed_from") if starts else None
    if not resumed or not second or min(second) != resumed + 1:
        raise SmokeFailure(f"the GRPO job on the new cluster did not continue from a checkpoint (start {starts[:1]}, "
                           f"steps {second}):\n{second_log[-2000:]}")
    trained = sorted(set(first) | set(range(1, resumed + 1)) | set(second))
    if trained != list(range(1, steps + 1)):
        raise SmokeFailure(f"GRPO steps trained {trained}, want 1..{steps} (first job {first}, checkpoint {resumed}, "
                           f"second {second})")
    return resumed


def run_grpo(c: Cluster, jobs: Jobs, spec: dict, steps: int, timeout: float, restart: Callable[[], None]) -> dict:
    """Workload 3: elastic GRPO; a worker killed after the first checkpoint (the group shrinks and continues),
    then the whole cluster lost (head first); ``restart()`` brings up a new cluster (and the reward endpoint)
    over the same ``/data``, where the same entrypoint must continue from the checkpoint on the volume."""
    # one training worker per worker node (3 of its 4 CPUs; the job's driver takes 1 CPU somewhere): losing a node
    # must shrink the group, where 1-CPU workers would just restart at the same size on the survivor
    ep = entrypoint_of(spec, ["--max-steps", str(steps), "scaling.resources_per_worker.CPU=3"])
    runtime_env = yaml.safe_load(spec["runtimeEnvYAML"]) if spec.get("runtimeEnvYAML") else None
    jobs.submit("smoke-grpo-1", ep, runtime_env)

    def logged(sub_id: str, at_least: int):
        got, _ = grpo_steps(jobs.logs(sub_id))
        if jobs.status(sub_id) in ("FAILED", "STOPPED", "SUCCEEDED") and max(got, default=0) < at_least:
            raise SmokeFailure(f"{sub_id} ended before step {at_least}:\n{jobs.logs(sub_id)[-3000:]}")
        return max(got, default=0) >= at_least

    # step 2 logged: step 1's checkpoint is committed (every worker reports each step together)
    wait_for("GRPO step 2", lambda: logged("smoke-grpo-1", 2), timeout, every=5)
    victim = training_victim(c, jobs, c.head, "smoke-grpo-1")
    c.remove(victim)

    def restarted_and_stepped(sub_id: str) -> bool:
        # a step logged by the group restarted after the loss (a step logged before Ray Train saw the loss, as
        # step 3 was on a loaded machine on 5 December, does not count): a second start line, a step after it
        text = jobs.logs(sub_id)
        if jobs.status(sub_id) in ("FAILED", "STOPPED", "SUCCEEDED"):
            raise SmokeFailure(f"{sub_id} ended before its group restarted after the worker loss:\n{text[-3000:]}")
        return len(grpo_starts(text)) >= 2 and bool(grpo_steps(text[text.rfind("[train_grpo] start {"):])[0])

    wait_for("a GRPO step by the group restarted after the worker loss",
             lambda: restarted_and_stepped("smoke-grpo-1"), timeout, every=5)
    first_log = jobs.logs("smoke-grpo-1")  # the job's logs live on this cluster: read them before it goes
    starts = grpo_starts(first_log)
    if len(starts) < 2 or not starts[-1].get("resumed_from"):
        raise SmokeFailure(f"after the worker loss the group did not restart from a checkpoint: {starts}")
    first, first_sizes = grpo_steps(first_log)
    if jobs.status("smoke-grpo-1") != "RUNNING":
        raise SmokeFailure(f"the GRPO job was not running at the head loss:\n{first_log[-2000:]}")
    c.lose()
    log(f"head lost mid-training after step {max(first)}")
    restart()
    jobs.submit("smoke-grpo-2", ep, runtime_env)
    status = jobs.wait("smoke-grpo-2", timeout)
    second_log = jobs.logs("smoke-grpo-2")
    second, second_sizes = grpo_steps(second_log)
    if status != "SUCCEEDED":
        raise SmokeFailure(f"the GRPO job re-submitted on the new cluster ended {status}:\n{second_log[-3000:]}")
    resumed = trained_steps(first, second_log, steps)
    if len(set(first_sizes)) < 2:
        raise SmokeFailure(f"the first GRPO job's world size never changed after the worker loss: {first_sizes}")
    return {"steps": steps, "first_job_steps": max(max(first), resumed), "resumed_from": resumed, "killed": victim,
            "resized": f"{starts[0]['world_size']} -> {starts[-1]['world_size']} workers, resumed from step "
                       f"{starts[-1]['resumed_from']}",
            "world_sizes": [*dict.fromkeys(first_sizes + second_sizes)]}


WORKER_PARAMS: dict[str, str] = {}
REWARD_RESOURCE = "howeval_reward_node"
"""On KubeRay the reward endpoint (a RayService) and each RayJob get their own RayCluster, so losing a training
pod never takes a reward replica with it, and Ray Train's elastic policy (which counts each node's CPUs) never
counts the reward pods. Here one Ray cluster runs all three: the reward node offers no CPU, only this resource,
and each reward replica asks for its ``num_cpus`` in it instead (ingress 1 + step scorer 2 + PatternRM 2)."""


def main() -> int:
    global WORKER_PARAMS
    ap = argparse.ArgumentParser(description="A Ray cluster of the image's containers running the three workloads.")
    ap.add_argument("--image", default="howeval:0.1.0-cpu", help="the CPU image (make image)")
    ap.add_argument("--engine", default="podman", choices=("podman", "docker"))
    ap.add_argument("--base-port", type=int, default=int(os.environ.get("CLUSTER_SMOKE_PORT", 26400)),
                    help="first of the ports the nodes use (about 1,400 above it)")
    ap.add_argument("--limit", type=int, default=6, help="sweep prompts (--limit of howeval.ray_jobs.sweep)")
    ap.add_argument("--grpo-steps", type=int, default=6, help="GRPO steps (one more than 5 since 5 December: a step or two may run between the worker loss and the restart; the head loss needs steps left) (--max-steps of howeval.ray_jobs.train_grpo)")
    ap.add_argument("--timeout", type=float, default=1500, help="seconds each workload may take")
    ap.add_argument("--judge-latency", type=float, default=1.0, help="seconds the metered judge takes per call")
    ap.add_argument("--keep", action="store_true", help="leave the containers and the /data folder for a look")
    args = ap.parse_args()

    t0 = time.monotonic()
    m = manifests()
    head_params, WORKER_PARAMS, pod_env = node_shapes(m["cluster"])
    token = secrets.token_hex(16)
    serve_port = args.base_port + 3
    judge = MeteredJudge(latency_s=args.judge_latency)
    env = {e["name"]: str(e["value"]) for e in pod_env if "value" in e}
    env.update(HOWEVAL_REWARD_TOKEN=token, REWARD_SERVER_URL=f"http://127.0.0.1:{serve_port}",
               RAY_GRACEFUL_SHUTDOWN_DRAIN_TIMEOUT_S="0", SMOKE_JUDGE_URL=judge.base_url,
               SMOKE_JUDGE_KEY=secrets.token_hex(8))
    # Ray token auth as the manifests ask for it (authOptions): KubeRay sets these two on every Ray container
    # and the submitter, the token from the Secret; here every container gets a fresh random one
    auth = m["cluster"].get("authOptions") or {}
    if auth.get("mode") == "token":
        env.update(RAY_AUTH_MODE="token", RAY_AUTH_TOKEN=secrets.token_hex(32))
    data = Path(tempfile.mkdtemp(prefix="howeval-cluster-smoke-"))
    data.chmod(0o777)  # the image's user (uid 1000) writes here, as on the PVC
    c = Cluster(args.engine, args.image, args.base_port, data, env)
    jobs = Jobs(c)
    result: dict[str, Any] = {}
    ok = False

    def new_cluster(with_reward: bool) -> Callable[[], None]:
        def restart() -> None:
            c.up(head_params, WORKER_PARAMS)
            if with_reward:
                deploy_reward(c, m["serve"], serve_port, token)
        return restart

    try:
        if auth.get("mode") != "token":
            raise SmokeFailure(f"the sweep RayJob's cluster leaves Ray token authentication off (authOptions {auth})")
        c.up(head_params, WORKER_PARAMS)
        result["auth"] = unauthenticated_submit(c, token)
        result["sweep"] = run_sweep(c, jobs, m["sweep"], args.limit, args.timeout, judge, new_cluster(False))
        log(f"sweep: {result['sweep']}")
        result["reward"] = deploy_reward(c, m["serve"], serve_port, token)
        result["grpo"] = run_grpo(c, jobs, m["grpo"], args.grpo_steps, args.timeout, new_cluster(True))
        log(f"grpo: {result['grpo']}")
        s = result["sweep"]
        ok = s["lost"] == 0 and s["duplicated"] == 0 and s["judge_paid_twice"] == 0
    except SmokeFailure as e:
        log(f"FAILED: {e}")
    except subprocess.CalledProcessError as e:
        log(f"FAILED: {' '.join(map(str, e.cmd))[:200]}: {e.stderr[-2000:] if e.stderr else ''}")
    finally:
        judge.close()
        if args.keep:
            log(f"kept: containers labelled {c.label}, /data = {data}")
        else:
            c.down()
            shutil.rmtree(data, ignore_errors=True)
    print(summary(ok, result, time.monotonic() - t0), flush=True)
    return 0 if ok else 1


def summary(ok: bool, result: dict[str, Any], seconds: float) -> str:
    """The one ``cluster-smoke:`` line: what each workload showed, the losses survived, the time."""
    a, s, r, g = (result.get(k, {}) for k in ("auth", "sweep", "reward", "grpo"))
    kills = sum(1 for x in (s.get("killed"), g.get("killed")) if x) + (1 if s.get("judge_calls") else 0) \
        + (1 if g.get("resumed_from") else 0)
    return (f"cluster-smoke: {'ok' if ok else 'FAILED'}; ray job submit without the token -> "
            f"{a.get('no token', '-')} (wrong token {a.get('wrong token', '-')}), not run; "
            f"sweep through a worker loss and a head loss at {s.get('rows_at_head_loss', '-')} rows (new cluster, "
            f"same entrypoint): rows {s.get('rows', '-')} written, {s.get('lost', '-')} lost, "
            f"{s.get('duplicated', '-')} duplicated; judge calls {s.get('judge_calls', '-')}, "
            f"{s.get('judge_paid_twice', '-')} paid twice; "
            f"reward {r.get('scored', '-')} scored, {r.get('degraded', '-')} degraded, no token -> {r.get('refused', '-')}; "
            f"grpo steps 1..{g.get('steps', '-')}, {g.get('resized', '-')} after a node loss, head loss after step "
            f"{g.get('first_job_steps', '-')}: new cluster resumed from step {g.get('resumed_from', '-')}; "
            f"losses survived {kills}/4; {seconds:.0f} s")


if __name__ == "__main__":
    sys.exit(main())
