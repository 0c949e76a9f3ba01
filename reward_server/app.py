"""The reward server: a Ray Serve application that scores rollouts for RL workers (SPEC sections 2 and 3).

Two Serve applications, started together by ``serve run configs/serve/reward.yaml``:

- ``patternrm`` (``build_patternrm_app``): ``PatternRMServer``, a batched wrapper of
  ``howeval.judges.patternrm.model.PatternRM`` (default: the embedded trained PatternRM; no HTTP route).
  Deployed apart so it can be scaled, upgraded or stopped alone; the reward app keeps answering while it
  is down (degraded rewards).
- ``reward`` (``build_app``): ``RewardIngress`` (FastAPI: ``POST /v1/rewards``, ``POST /get_reward``,
  ``GET /healthz``, ``GET /metrics``, ``/openapi.json``, ``/docs``) and ``StepScorer`` (batched step
  embeddings for CPR).

Config: each builder validates its application's ``args`` (the Serve config's YAML mapping) once, into
``RewardServerConfig`` / ``PatternRMAppConfig`` (a bad key is a ``ConfigError`` at deploy, before any
replica starts), and binds the typed objects (``RewardServerConfig``, its ``cpr: CPRConfig``,
``PatternRMConfig``) to the deployments; Serve pickles them to the replicas. A deployment never
re-validates a dict: given one, it raises TypeError (``howeval.config.check_config``).

Rewards come from ``howeval.rewards.pipeline`` (``prepare`` -> model parts -> ``assemble``), the same
pipeline the GRPO trainer's in-process scorer and TRL adapter run. Routes only parse, authorize and
delegate to ``RewardIngress.score``.

Batching (STYLE rule 4): each batched deployment has per-input methods (``label``, ``f1``) and per-request
ones (``label_many``, ``f1_many``: the ingress makes one handle call per request and part, not one per item)
that await a separate ``@serve.batch`` list method item by item, so the items of concurrent requests share
one forward pass; ``reconfigure(user_config)`` sets ``max_batch_size`` (items per forward pass) and
``batch_wait_timeout_s`` from the Serve config.

Load shedding is Serve's own: each replica works on ``max_ongoing_requests`` at once, at most
``max_queued_requests`` wait, and the rest are answered at once by the proxy with ``503`` and
``Retry-After`` (``backpressure_config``; values in ``configs/serve/reward.yaml``), so clients back off
instead of queueing without limit.

Counters and latency go through ``ray.serve.metrics`` (aggregated by Ray's metrics agent across
replicas, tagged by route/status/kind); ``GET /metrics`` returns this node's agent text filtered to them.
"""
# no `from __future__ import annotations`: FastAPI reads the route annotations of the ingress class at runtime
import asyncio
import hmac
import json
import logging
import os
import threading
import time
from typing import Any

from fastapi import Depends, FastAPI, HTTPException, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from pydantic import ValidationError
from ray import serve
from ray.serve.handle import DeploymentHandle

from howeval.config import check_config
from reward_server.config import CPRConfig, PatternRMAppConfig, PatternRMConfig, RewardServerConfig, load_server_config
from reward_server.schemas import (
    OpenRLHFRequest,
    OpenRLHFResponse,
    RewardItem,
    RewardRequest,
    RewardResponse,
    RewardResult,
)

log = logging.getLogger("ray.serve")

DEFAULT_BATCH = {"max_batch_size": 32, "batch_wait_timeout_s": 0.01}

MODEL_AUTOSCALING = {"min_replicas": 1, "max_replicas": 2, "target_ongoing_requests": 8,
                     "upscale_delay_s": 2.0, "downscale_delay_s": 120.0}
"""Default ``autoscaling_config`` of PatternRMServer and StepScorer (issue 21: one replica never scaled and
its rows timed out). An ongoing request is one ingress request's ``label_many`` / ``f1_many`` call, so a
target of 8 adds a replica while more than 8 requests wait on one, seconds before ``patternrm_timeout_s``
(20 s) would degrade them. The Serve config (``configs/serve/reward.yaml``) overrides it."""

FAILOVER_S = 5.0
"""After a part fails for unavailability (dead replica, timeout, back-pressure), the ingress answers its rows
degraded at once for this many seconds instead of letting each request wait out ``patternrm_timeout_s``; the
first request after the window tries the part again (issue 21: after a kill every request waited 20 s)."""

SETTINGS: dict[str, Any] = {}
"""The ingress replica's ``token`` and ``max_body_bytes``, read by :class:`BodyLimit` and :func:`check_bearer`.

Set by ``RewardIngress.__init__`` on *this imported module*: Serve pickles the ingress class by value (its
globals are a copy) and the FastAPI app too (a frozen copy), so neither ``app.state`` nor a plain global
assignment in the class would reach the middleware."""


def _apply_batching(method: Any, user_config: dict | None, where: str) -> None:
    cfg = {**DEFAULT_BATCH, **(user_config or {})}
    unknown = set(cfg) - set(DEFAULT_BATCH)
    if unknown:
        raise ValueError(f"{where} user_config: unknown keys {sorted(unknown)}; allowed: {sorted(DEFAULT_BATCH)}")
    if int(cfg["max_batch_size"]) < 1 or float(cfg["batch_wait_timeout_s"]) < 0:
        raise ValueError(f"{where} user_config: max_batch_size >= 1 and batch_wait_timeout_s >= 0, got {cfg}")
    method.set_max_batch_size(int(cfg["max_batch_size"]))
    method.set_batch_wait_timeout_s(float(cfg["batch_wait_timeout_s"]))


# --------------------------------------------------------------------------------------------- PatternRM


@serve.deployment(name="PatternRMServer", max_ongoing_requests=256, max_queued_requests=1024,
                  ray_actor_options={"num_cpus": 0.5}, autoscaling_config=MODEL_AUTOSCALING)
class PatternRMServer:
    """Serve wrapper of ``howeval.judges.patternrm.model.PatternRM``: ``label(item)`` -> ``{labels, error, raw}``.

    Concurrent ``label`` calls (from every request the ingress replicas are serving) are gathered by
    ``@serve.batch`` into one ``label_batch`` call: one encoder forward pass for the whole batch.

    Args:
        patternrm: which PatternRM to load (``PatternRM.from_config``).

    Raises:
        TypeError: ``patternrm`` is not a ``PatternRMConfig`` (a dict is not re-validated here).
    """

    def __init__(self, patternrm: PatternRMConfig):
        from howeval.judges.patternrm.model import PatternRM

        check_config(patternrm, PatternRMConfig, "patternrm")
        self.rm = PatternRM.from_config(patternrm)
        self.batch_sizes: list[int] = []  # recent batch sizes (for tests and the benchmark)

    def reconfigure(self, user_config: dict) -> None:
        _apply_batching(self._label_batch, user_config, "PatternRMServer")

    async def label(self, item: dict) -> dict:
        """Label one ``{"question", "response"}`` item (batched with concurrent calls)."""
        return await self._label_batch(item)

    async def label_many(self, items: list[dict]) -> list[dict]:
        """Label a request's items in order: one handle call for all of them (the ingress's), each item
        still queued on its own, so ``max_batch_size`` counts items and batches mix requests."""
        return list(await asyncio.gather(*(self._label_batch(x) for x in items)))

    @serve.batch(**DEFAULT_BATCH)
    async def _label_batch(self, items: list[dict]) -> list[dict]:
        self.batch_sizes = (self.batch_sizes + [len(items)])[-1000:]
        return await asyncio.to_thread(self.rm.label_batch, items)

    def stats(self) -> dict:
        return {"version": self.rm.version, "batch_sizes": list(self.batch_sizes)}


# ----------------------------------------------------------------------------------------------- steps


@serve.deployment(name="StepScorer", max_ongoing_requests=256, max_queued_requests=1024,
                  ray_actor_options={"num_cpus": 0.5}, autoscaling_config=MODEL_AUTOSCALING)
class StepScorer:
    """Batched CRYSTAL step F1: ``f1({"pred": [...], "ref": [...]})`` -> float (SPEC section 3).

    Args:
        cpr: the reward app's ``cpr`` block (embedder, ``tau``, ``alpha``, ``order``, ``f1``).

    Raises:
        TypeError: ``cpr`` is not a ``CPRConfig`` (a dict is not re-validated here).
    """

    def __init__(self, cpr: CPRConfig):
        from howeval.embed import StepEmbedder

        check_config(cpr, CPRConfig, "cpr")
        self.cfg = cpr
        self.emb = StepEmbedder(self.cfg.embedder_path)

    def reconfigure(self, user_config: dict) -> None:
        _apply_batching(self._f1_batch, user_config, "StepScorer")

    async def f1(self, pair: dict) -> float:
        """Step F1 of one ``{"pred", "ref"}`` pair (batched with concurrent calls)."""
        return await self._f1_batch(pair)

    async def f1_many(self, pairs: list[dict]) -> list[float]:
        """Step F1 of a request's pairs in order; one handle call, pairs batched one by one as in ``f1``."""
        return list(await asyncio.gather(*(self._f1_batch(x) for x in pairs)))

    @serve.batch(**DEFAULT_BATCH)
    async def _f1_batch(self, pairs: list[dict]) -> list[float]:
        from howeval.rewards.pipeline import step_f1_batch

        return await asyncio.to_thread(step_f1_batch, self.emb, pairs, self.cfg)

    def ping(self) -> str:
        return "ok"


# ---------------------------------------------------------------------------------------------- ingress

app = FastAPI(
    title="howeval reward server",
    version="1",
    description="Verifier + PatternRM (PatternRL) and CRYSTAL CPR rewards for RL workers. "
    "Bearer token in `Authorization` for every route except /healthz and the OpenAPI pages "
    "(and /metrics when `metrics_public: true`). Overload: 503 with Retry-After.",
)


class BodyLimit:
    """ASGI middleware: 413 for a body over ``max_body_bytes``, by Content-Length or while a chunked body
    streams in (FastAPI has no body limit of its own). The limit is ``SETTINGS["max_body_bytes"]``."""

    def __init__(self, asgi_app: Any):
        self.app = asgi_app

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        limit = SETTINGS.get("max_body_bytes")
        if limit is None:
            return await _send_json(send, 503, {"detail": "server is starting"}, [(b"retry-after", b"1")])
        lengths = [v for k, v in scope.get("headers") or [] if k == b"content-length"]
        if any(not v.isdigit() or int(v) > limit for v in lengths):
            return await _send_json(send, 413, {"detail": f"body exceeds the limit of {limit} bytes"})
        # buffer the body (at most `limit` bytes) before the app sees it: a chunked body over the limit
        # is refused here, whatever the app's body parser would do with an error mid-stream
        chunks, seen = [], 0
        while True:
            msg = await receive()
            if msg["type"] != "http.request":
                return  # client went away
            seen += len(msg.get("body", b""))
            if seen > limit:
                return await _send_json(send, 413, {"detail": f"body exceeds the limit of {limit} bytes"})
            chunks.append(msg.get("body", b""))
            if not msg.get("more_body", False):
                break
        body = b"".join(chunks)
        sent = False

        async def replay() -> dict:
            nonlocal sent
            if not sent:
                sent = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        await self.app(scope, replay, send)


async def _send_json(send: Any, status: int, body: dict, extra_headers: list | None = None) -> None:
    data = json.dumps(body).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(data)).encode())]
    await send({"type": "http.response.start", "status": status, "headers": headers + (extra_headers or [])})
    await send({"type": "http.response.body", "body": data})


app.add_middleware(BodyLimit)


def check_bearer(request: Request) -> None:
    """FastAPI dependency: the bearer token, compared in constant time (``hmac.compare_digest``).

    400 when the request carries more than one ``Authorization`` header (ambiguous: never pick one);
    401 when it is missing or wrong. ``SETTINGS["token"]`` None = auth disabled (tests only).
    """
    if "token" not in SETTINGS:
        raise HTTPException(503, detail="server is starting", headers={"Retry-After": "1"})
    token = SETTINGS["token"]
    got = request.headers.getlist("authorization")
    if len(got) > 1:
        raise HTTPException(400, detail=f"{len(got)} Authorization headers; send exactly one")
    if token is None:
        return
    want = f"Bearer {token}".encode()
    if not got or not hmac.compare_digest(got[0].encode("latin-1", "replace"), want):
        raise HTTPException(401, detail="missing or wrong bearer token", headers={"WWW-Authenticate": "Bearer"})


@app.exception_handler(RequestValidationError)
async def _validation_error(request: Request, exc: RequestValidationError) -> JSONResponse:
    errs = [{"loc": list(e.get("loc", ())), "msg": e.get("msg", ""), "type": e.get("type", "")} for e in exc.errors()]
    msg = "; ".join(f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in errs[:10])
    return JSONResponse(status_code=422, content={"detail": errs, "message": msg})


class _Metrics:
    """Counters and latency through ``ray.serve.metrics`` (Ray's metrics agent sums them over replicas)."""

    def __init__(self) -> None:
        from ray.serve import metrics

        self.requests = metrics.Counter("howeval_reward_requests", description="HTTP requests by route and status",
                                        tag_keys=("route", "status"))
        self.rewards = metrics.Counter("howeval_rewards", description="Rewards computed by kind", tag_keys=("kind",))
        self.degraded = metrics.Counter("howeval_rewards_degraded", description="Rows answered without a model part (PatternRM or step scorer down)",
                                        tag_keys=("kind",))
        self.latency = metrics.Histogram("howeval_reward_request_seconds", description="Request latency (s)",
                                         boundaries=[0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
                                         tag_keys=("route",))


@serve.deployment(name="RewardIngress", max_ongoing_requests=32, max_queued_requests=64,
                  backpressure_config={"status_code": 503, "retry_after_s": 1},
                  ray_actor_options={"num_cpus": 0.5})
@serve.ingress(app)
class RewardIngress:
    """HTTP entry point; ``score(items)`` does the work (``howeval.rewards.pipeline`` + the model handles).

    Args:
        step_scorer: the handle of this application's ``StepScorer``.
        config: the reward app's config, validated by ``build_app``.

    Raises:
        TypeError: ``config`` is not a ``RewardServerConfig`` (a dict is not re-validated here).
        RuntimeError: ``auth.token_env`` is not set in the replica's environment.
    """

    def __init__(self, step_scorer: DeploymentHandle, config: RewardServerConfig):
        check_config(config, RewardServerConfig, "config")
        self.cfg = config
        token = None
        if self.cfg.auth.token_env is not None:
            token = os.environ.get(self.cfg.auth.token_env)
            if not token:
                raise RuntimeError(f"auth.token_env={self.cfg.auth.token_env!r} is not set in the replica's "
                                   "environment: export it (or set auth.token_env: null to disable auth)")
        import reward_server.app as this_module  # the imported module, not this class's pickled globals

        this_module.SETTINGS.update(token=token, max_body_bytes=self.cfg.limits.max_body_bytes)
        self.steps = step_scorer
        self._rm: DeploymentHandle | None = None
        self.metrics = _Metrics()
        self._down_until: dict[str, float] = {}  # part name -> monotonic time its fail-fast window ends
        self._down_reason: dict[str, str] = {}
        self.llm = None
        if self.cfg.on_unresolved == "llm":
            from howeval.rewards.llm_fallback import LLMFallback

            self.llm = LLMFallback(self.cfg.llm_verifier)

    @property
    def rm(self) -> DeploymentHandle:
        if self._rm is None:
            self._rm = serve.get_deployment_handle("PatternRMServer", app_name=self.cfg.patternrm_app)
        return self._rm

    # ------------------------------------------------------------------------------------------ routes

    @app.post("/v1/rewards", response_model=RewardResponse, dependencies=[Depends(check_bearer)])
    async def rewards(self, body: RewardRequest) -> RewardResponse:
        """Score rollouts; the answer has one reward per item, in order."""
        return RewardResponse(rewards=await self._timed("/v1/rewards", body.items))

    @app.post("/get_reward", response_model=OpenRLHFResponse, dependencies=[Depends(check_bearer)])
    async def get_reward(self, body: OpenRLHFRequest) -> OpenRLHFResponse:
        """OpenRLHF remote reward model: ``{query, prompts, labels}`` -> ``{rewards, scores, extra_logs}``."""
        items = [self._openrlhf_item(i, q, p, lab) for i, (q, p, lab) in enumerate(zip(body.query, body.prompts, body.labels))]
        res = await self._timed("/get_reward", items)
        rewards = [r.reward for r in res]
        return OpenRLHFResponse(rewards=rewards, scores=rewards, extra_logs={
            "s_ver": [r.s_ver for r in res], "degraded": [float(r.degraded) for r in res]})

    @app.get("/healthz")
    async def healthz(self) -> dict:
        """200 while the ingress is up; says whether PatternRM and the step scorer answer within 2 s.

        ``degraded: true`` when either is down: rewards are then answered without that part.
        """
        async def probe(call: Any) -> str:
            try:
                await asyncio.wait_for(call(), 2.0)
                return "up"
            except Exception as e:  # noqa: BLE001 - any failure reaching a part means "down" here, reported, not raised
                return f"down ({type(e).__name__})"

        patternrm, steps = await asyncio.gather(probe(lambda: self.rm.stats.remote()),
                                                probe(lambda: self.steps.ping.remote()))
        return {"status": "ok", "patternrm": patternrm, "step_scorer": steps,
                "degraded": patternrm != "up" or steps != "up"}

    @app.get("/metrics")
    async def metrics(self, request: Request) -> Response:
        """This node's Ray metrics agent text, filtered to ``howeval_*`` and ``ray_serve_*`` series.

        Behind the bearer token unless ``metrics_public: true``. 503 when the agent cannot be read.
        """
        if not self.cfg.metrics_public:
            check_bearer(request)
        import httpx
        import ray

        node_id = ray.get_runtime_context().get_node_id()
        port = next((n.get("MetricsExportPort") for n in ray.nodes() if n.get("NodeID") == node_id), None)
        if not port:
            raise HTTPException(503, detail="no Ray metrics export port on this node")
        try:
            async with httpx.AsyncClient(timeout=5.0) as c:
                text = (await c.get(f"http://127.0.0.1:{port}/metrics")).text
        except httpx.HTTPError as e:
            raise HTTPException(503, detail=f"Ray metrics agent on port {port} unreadable: {type(e).__name__}") from None
        keep = [ln for ln in text.splitlines() if "howeval_" in ln or "serve_" in ln]
        return Response("\n".join(keep) + "\n", media_type="text/plain; version=0.0.4")

    # ------------------------------------------------------------------------------------------ work

    def _openrlhf_item(self, i: int, query: str, prompt: str, label: str) -> RewardItem:
        response = query[len(prompt):] if query.startswith(prompt) else query
        fields: dict[str, Any] = {"answer": label, "answer_type": self.cfg.openrlhf.answer_type, "kind": self.cfg.openrlhf.kind}
        if label.lstrip().startswith("{"):
            try:
                obj = json.loads(label)
            except json.JSONDecodeError:
                obj = None
            if isinstance(obj, dict) and "answer" in obj:
                fields.update({k: obj[k] for k in ("answer", "answer_type", "kind", "reference_steps", "options") if k in obj})
        try:
            return RewardItem(prompt=prompt, response=response, **fields)
        except ValidationError as e:  # a bad label is the caller's error
            raise HTTPException(422, detail=f"labels.{i}: {e}") from None

    async def _timed(self, route: str, items: list[RewardItem]) -> list[RewardResult]:
        from howeval.rewards.pipeline import PatternRMUnavailable, RewardItemError

        t0 = time.perf_counter()
        status = "200"
        try:
            return await asyncio.wait_for(self.score(items), self.cfg.limits.request_timeout_s)
        except asyncio.TimeoutError:
            status = "504"
            raise HTTPException(504, detail=f"request took longer than {self.cfg.limits.request_timeout_s} s") from None
        except RewardItemError as e:
            status = "422"
            raise HTTPException(422, detail=f"body.{e}") from None
        except PatternRMUnavailable as e:
            status = "503"
            raise HTTPException(503, detail=str(e), headers={"Retry-After": str(self.cfg.limits.retry_after_s)}) from None
        except HTTPException as e:
            status = str(e.status_code)
            raise
        finally:
            self.metrics.requests.inc(tags={"route": route, "status": status})
            self.metrics.latency.observe(time.perf_counter() - t0, tags={"route": route})

    async def score(self, items: list[RewardItem]) -> list[RewardResult]:
        """Rewards for ``items`` in order: ``pipeline.prepare`` -> PatternRM and step F1 (concurrently,
        through the batched deployments) -> ``pipeline.assemble``."""
        from howeval.rewards.pipeline import RewardItemError, assemble, prepare

        if len(items) > self.cfg.limits.max_items:
            raise RewardItemError(0, f"{len(items)} items exceed limits.max_items={self.cfg.limits.max_items}")
        total = sum(len(it.response) for it in items)
        if total > self.cfg.limits.max_request_chars:
            raise RewardItemError(0, f"the responses hold {total} characters in all, over limits.max_request_chars="
                                     f"{self.cfg.limits.max_request_chars}: send fewer items per request")
        stop = threading.Event()  # set when this request's answer can no longer be used (timeout, client gone)
        try:
            plan = await asyncio.to_thread(prepare, [it.model_dump() for it in items], self.cfg.pattern,
                                           self.cfg.on_unresolved, stop, self.cfg.cpr)
        except asyncio.CancelledError:
            stop.set()  # the worker thread stops before its next item's verifier (no more math-verify children)
            raise
        rm, f1, llm = await asyncio.gather(  # one handle call per part and request (per-item calls cost more than the model)
            self._call("patternrm", lambda: self.rm.label_many.remote(plan.rm_requests()), len(plan.rm_index)),
            self._call("step scorer", lambda: self.steps.f1_many.remote(plan.step_requests()), len(plan.step_index)),
            self._llm(plan.llm_requests()),
        )
        rows = assemble(plan, rm, f1, self.cfg.pattern, self.cfg.cpr, self.cfg.on_failure, llm)
        for it, r in zip(items, rows):
            self.metrics.rewards.inc(tags={"kind": it.kind})
            if r["degraded"]:
                self.metrics.degraded.inc(tags={"kind": it.kind})
        return [RewardResult(**r) for r in rows]

    async def _llm(self, items: list) -> list | None:
        """The LLM fallback's verdicts for the unresolved items (each failure is its row's reason)."""
        if not items or self.llm is None:
            return None
        return await self.llm.verify(items)

    async def _call(self, name: str, make_call: Any, n: int) -> list | str:
        """Make and await the handle call that answers the part's ``n`` inputs; any failure (raised when the
        call is made or while it runs, or a wrong number of answers) becomes one reason string, and its rows
        degrade."""
        if not n:
            return []
        now = time.monotonic()
        if self._down_until.get(name, 0.0) > now:
            return f"failing over: {self._down_reason.get(name, 'unavailable')} (retried after {self._down_until[name] - now:.1f} s)"
        call = None
        try:
            call = make_call()

            async def answers() -> list:  # a coroutine: wait_for then owns a task it can cancel
                return await call

            out = list(await asyncio.wait_for(answers(), self.cfg.limits.patternrm_timeout_s))
            if len(out) != n:
                raise RuntimeError(f"{len(out)} answers for {n} inputs")
            return out
        except Exception as e:  # noqa: BLE001 - down, deleted, timed out, crashed, back-pressured: never a bare 500
            if call is not None:
                try:
                    call.cancel()
                except Exception:  # noqa: BLE001 - cancelling a call to a deleted deployment raises again
                    pass
            reason = f"unavailable: {type(e).__name__}: {str(e)[:200]}"
            log.warning("%s %s (%d rows)", name, reason, n)
            self._down_until[name] = time.monotonic() + FAILOVER_S
            self._down_reason[name] = reason
            return reason


# -------------------------------------------------------------------------------------------- builders


# The builders' `args` are annotated `dict`, not the config class: Serve would then validate them itself,
# without the project's error messages (unknown key -> closest accepted key, one line per bad key path).
def build_app(args: dict | None = None) -> serve.Application:
    """The ``reward`` application (``import_path: reward_server.app:build_app``).

    ``args`` (the application's ``args:`` mapping in the Serve config) is validated once, here, into a
    ``RewardServerConfig``; ``RewardIngress`` gets that object and ``StepScorer`` its ``cpr`` block.

    Raises:
        ConfigError: ``args`` does not validate (every bad key path named).
        ValueError: the auth token variable is not set (fails fast, before any replica starts).
    """
    cfg: RewardServerConfig = load_server_config(args)
    if cfg.auth.token_env is not None and not os.environ.get(cfg.auth.token_env):
        raise ValueError(f"auth.token_env={cfg.auth.token_env!r} is not set: export {cfg.auth.token_env}=<token> "
                         "before `serve run` (or set auth.token_env: null to disable auth, tests only)")
    return RewardIngress.bind(StepScorer.bind(cfg.cpr), cfg)


def build_patternrm_app(args: dict | None = None) -> serve.Application:
    """The ``patternrm`` application (``import_path: reward_server.app:build_patternrm_app``).

    ``args`` is validated once, here, into a ``PatternRMAppConfig``; ``PatternRMServer`` gets its
    ``patternrm`` block (a ``PatternRMConfig``).

    Raises:
        ConfigError: ``args`` does not validate.
    """
    cfg: PatternRMAppConfig = load_server_config(args, PatternRMAppConfig)
    return PatternRMServer.bind(cfg.patternrm)
