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

Load shedding: each ingress replica scores ``limits.max_concurrent_requests`` (32) requests at once and lets
``limits.max_waiting_requests`` (64) wait, the rest get ``503`` with ``Retry-After``. Serve's own
``max_ongoing_requests`` is higher (256) because it also counts requests whose body is still arriving
(:class:`Guard`: at most ``limits.body_timeout_s``, after the bearer check); past it and
``max_queued_requests`` the proxy answers ``503`` and ``Retry-After`` (``backpressure_config``), so
clients back off instead of queueing without limit (issue 35).

Failover (issues 21, 35): PatternRM, the step scorer and the LLM verifier each fail over for
:data:`FAILOVER_S` after a failure for unavailability: their rows degrade at once, named, and every call
then waiting on the part is answered too; a call that waits past :data:`PING_AFTER_S` pings its part, so a
part with no live replica fails over in seconds instead of after ``patternrm_timeout_s``.

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

from fastapi import FastAPI, HTTPException, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from pydantic import ValidationError
from ray import serve
from ray.serve.handle import DeploymentHandle

from howeval.config import check_config
from howeval.reward_server.config import (
    CPRConfig,
    PatternRMAppConfig,
    PatternRMConfig,
    RewardServerConfig,
    load_server_config,
)
from howeval.reward_server.schemas import (
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

PING_AFTER_S = 2.0
"""A part's call that has not answered after this many seconds starts a liveness ping of the part (a plain
method, not batched); a ping that fails or takes over :data:`PING_TIMEOUT_S` fails the part over at once, with
every call waiting on it (issue 35: after the step-scorer replica was killed, each request waited the full
``patternrm_timeout_s`` for the replacement to load)."""

PING_TIMEOUT_S = 3.0

STEP_CHUNK = 16
"""StepScorer: a request with more uncached step texts than this embeds them in chunks of at most this many
steps and :data:`STEP_CHUNK_CHARS` characters, taking turns with the batches of other requests (issue 35: one
0.5-1.5 MB cpr request held the scorer 50-75 s and degraded every other client's cpr rows)."""

STEP_CHUNK_CHARS = 8_000

SETTINGS: dict[str, Any] = {}
"""The ingress replica's ``token``, ``url_token``, ``max_body_bytes``, ``body_timeout_s`` and ``metrics_public``, read by :class:`Guard`.

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

    async def ping(self) -> str:
        """Liveness (the ingress's watchdog): answered on the replica's event loop, beside any batch."""
        return "ok"


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
        self._lock: asyncio.Lock | None = None  # one encoder: batches and big requests' chunks take turns
        self.chunked = 0  # requests embedded in chunks (for tests)

    def reconfigure(self, user_config: dict) -> None:
        _apply_batching(self._f1_batch, user_config, "StepScorer")

    async def f1(self, pair: dict) -> float:
        """Step F1 of one ``{"pred", "ref"}`` pair (batched with concurrent calls)."""
        return await self._f1_batch(pair)

    async def f1_many(self, pairs: list[dict]) -> list[float]:
        """Step F1 of a request's pairs in order; one handle call, pairs batched one by one as in ``f1``.

        A request whose uncached step texts (predicted steps after ``max_pred_steps``, reference steps, each
        cut to ``max_step_chars``) number over :data:`STEP_CHUNK` or hold over :data:`STEP_CHUNK_CHARS`
        characters embeds them first, in chunks of at most that many, each chunk taking its turn on the
        encoder with the other requests' batches (one FIFO lock):
        a big request costs its own time, and the others wait for one chunk, not for all of it.
        """
        cut, cap = self.cfg.max_step_chars, self.cfg.max_pred_steps
        texts = list(dict.fromkeys(t[:cut] for p in pairs for t in (*list(p["pred"])[:cap], *p["ref"])))
        new = [t for t in texts if t not in self.emb._index]  # the cache's keys: cached texts cost nothing
        if len(new) > STEP_CHUNK or sum(map(len, new)) > STEP_CHUNK_CHARS:
            self.chunked += 1
            chunk: list[str] = []
            for t in new:
                if chunk and (len(chunk) >= STEP_CHUNK or sum(map(len, chunk)) + len(t) > STEP_CHUNK_CHARS):
                    await self._on_encoder(self.emb.add, chunk)
                    chunk = []
                chunk.append(t)
            await self._on_encoder(self.emb.add, chunk)
        return list(await asyncio.gather(*(self._f1_batch(x) for x in pairs)))

    async def _on_encoder(self, fn: Any, *args: Any) -> Any:
        """Run ``fn(*args)`` in a worker thread, alone on the encoder and its cache (FIFO turns). If the
        caller is cancelled (the ingress gave up), the turn is held until the thread is done: the cache is
        never written by two threads at once."""
        if self._lock is None:
            self._lock = asyncio.Lock()  # made on the replica's event loop
        async with self._lock:
            work = asyncio.ensure_future(asyncio.to_thread(fn, *args))
            try:
                return await asyncio.shield(work)
            except asyncio.CancelledError:
                await asyncio.wait({work})
                raise

    @serve.batch(**DEFAULT_BATCH)
    async def _f1_batch(self, pairs: list[dict]) -> list[float]:
        from howeval.rewards.pipeline import step_f1_batch

        return await self._on_encoder(step_f1_batch, self.emb, pairs, self.cfg)

    async def ping(self) -> str:
        """Liveness (the ingress's watchdog): answered on the replica's event loop, beside any embedding."""
        return "ok"

    def stats(self) -> dict:
        return {"chunked_requests": self.chunked, "cached_steps": len(self.emb)}


# ---------------------------------------------------------------------------------------------- ingress

app = FastAPI(
    title="howeval reward server",
    version="1",
    description="Verifier + PatternRM (PatternRL) and CRYSTAL CPR rewards for RL workers. "
    "Bearer token in `Authorization` for every route except /healthz and the OpenAPI pages "
    "(and /metrics when `metrics_public: true`). Overload: 503 with Retry-After.",
)


OPEN_PATHS = frozenset({"/healthz", "/openapi.json", "/docs", "/docs/oauth2-redirect", "/redoc"})
"""Routes served without the bearer token (``/metrics`` too when ``metrics_public: true``)."""

URL_TOKEN_PREFIX = "/openrlhf/"
"""``POST /openrlhf/<url token>/get_reward``: OpenRLHF's stock client, which sends no header (issue 40). The
path's secret (``auth.url_token_env``) is checked by :func:`url_token_error` instead of the bearer token, for
this one route only."""

URL_TOKEN_ROUTE = "get_reward"


class Guard:
    """Pure ASGI middleware in front of every route (issue 35: slow bodies held the replica's slots).

    In this order, for each HTTP request:

    1. the bearer token, from the headers alone, before a byte of the body is read (:func:`auth_error`):
       400 for two ``Authorization`` headers, 401 for a missing or wrong token, except on
       :data:`OPEN_PATHS`; a request without the token never waits for its body;
    2. 413 when ``Content-Length`` is over ``limits.max_body_bytes``;
    3. the body, read whole under ``limits.body_timeout_s`` (408 when it has not all arrived by then,
       whatever the client still sends: a trickling or stalled body holds its slot for seconds, not for
       Serve's 120 s ``request_timeout_s``) and the byte cap (413 while a chunked body streams in);
    4. the app, which reads the buffered body at once.

    Settings come from ``SETTINGS`` (``token``, ``max_body_bytes``, ``body_timeout_s``, ``metrics_public``).
    """

    def __init__(self, asgi_app: Any):
        self.app = asgi_app

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        if "token" not in SETTINGS:
            return await _send_json(send, 503, {"detail": "server is starting"}, [(b"retry-after", b"1")])
        headers = scope.get("headers") or []
        path, root = scope.get("path", ""), scope.get("root_path", "")
        if root and path.startswith(root):
            path = path[len(root):] or "/"
        needs_token = path not in OPEN_PATHS and not (path == "/metrics" and SETTINGS.get("metrics_public"))
        denied = None
        if path.startswith(URL_TOKEN_PREFIX):  # the URL token replaces the bearer token here, and only here
            denied = url_token_error(path)
            needs_token = False
        denied = denied or auth_error(headers, needs_token)
        if denied is not None:
            status, detail, extra = denied
            return await _send_json(send, status, {"detail": detail}, extra)
        limit = SETTINGS["max_body_bytes"]
        lengths = [v for k, v in headers if k == b"content-length"]
        if any(not v.isdigit() or int(v) > limit for v in lengths):
            return await _send_json(send, 413, {"detail": f"body exceeds the limit of {limit} bytes"})
        timeout = SETTINGS["body_timeout_s"]
        try:
            body = await asyncio.wait_for(_read_body(receive, limit), timeout)
        except asyncio.TimeoutError:
            return await _send_json(send, 408, {"detail": f"the request body did not arrive within {timeout} s "
                                                          "(limits.body_timeout_s)"}, [(b"connection", b"close")])
        if body is None:
            return  # the client went away
        if len(body) > limit:
            return await _send_json(send, 413, {"detail": f"body exceeds the limit of {limit} bytes"})
        sent = False

        async def replay() -> dict:
            nonlocal sent
            if not sent:
                sent = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        await self.app(scope, replay, send)


async def _read_body(receive: Any, limit: int) -> bytes | None:
    """The whole body, or its first ``limit + 1`` bytes once it is over ``limit``; None if the client left."""
    chunks, seen = [], 0
    while True:
        msg = await receive()
        if msg["type"] != "http.request":
            return None
        chunk = msg.get("body", b"")
        seen += len(chunk)
        chunks.append(chunk)
        if seen > limit:
            return b"".join(chunks)[: limit + 1]
        if not msg.get("more_body", False):
            return b"".join(chunks)


async def _send_json(send: Any, status: int, body: dict, extra_headers: list | None = None) -> None:
    data = json.dumps(body).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(data)).encode())]
    await send({"type": "http.response.start", "status": status, "headers": headers + (extra_headers or [])})
    await send({"type": "http.response.body", "body": data})


app.add_middleware(Guard)


def auth_error(headers: list[tuple[bytes, bytes]], needs_token: bool = True) -> tuple[int, str, list] | None:
    """The bearer check on raw ASGI headers: None when the request may go on, else ``(status, detail,
    extra headers)``. The token is compared in constant time (``hmac.compare_digest``).

    400 when the request carries more than one ``Authorization`` header (ambiguous: never pick one), on
    every route; 401 when ``needs_token`` and it is missing or wrong. ``SETTINGS["token"]`` None = auth
    disabled (tests only).
    """
    got = [v for k, v in headers if k == b"authorization"]
    if len(got) > 1:
        return 400, f"{len(got)} Authorization headers; send exactly one", []
    token = SETTINGS.get("token")
    if not needs_token or token is None:
        return None
    if not got or not hmac.compare_digest(got[0], f"Bearer {token}".encode()):
        return 401, "missing or wrong bearer token", [(b"www-authenticate", b"Bearer")]
    return None


def url_token_error(path: str) -> tuple[int, str, list] | None:
    """The check of ``POST /openrlhf/<url token>/get_reward`` (:data:`URL_TOKEN_PREFIX`): None when ``path``
    names that route with the configured URL token, else ``(status, detail, extra headers)``.

    404 for another path under the prefix or when no URL token is configured (``auth.url_token_env`` null:
    the route does not exist); 401 for a wrong token. Compared in constant time (``hmac.compare_digest``),
    from the path alone, before the body is read. The token never reaches a log line of Serve's: its access
    log names the route pattern ``/openrlhf/{url_token}/get_reward``.
    """
    token_part, _, rest = path[len(URL_TOKEN_PREFIX):].partition("/")
    url_token = SETTINGS.get("url_token")
    if rest != URL_TOKEN_ROUTE or url_token is None:
        why = "auth.url_token_env is not set on this server" if url_token is None else \
            f"the only route under {URL_TOKEN_PREFIX}<url token>/ is {URL_TOKEN_ROUTE}"
        return 404, f"not found ({why})", []
    if not hmac.compare_digest(token_part.encode(), url_token.encode()):
        return 401, "wrong URL token", []
    return None


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


# (module helpers the ingress calls are defined above it: @serve.ingress pickles the class with the globals
# defined so far)
async def _awaited(x: Any) -> Any:
    return await x


def item_chars(it: RewardItem) -> int:
    """Characters of every text of an item that costs the server work: prompt (gate key, PatternRM), response,
    answer, options and reference steps (embedded for cpr). ``limits.max_request_chars`` bounds their sum."""
    return (len(it.prompt) + len(it.response) + len(it.answer) + sum(len(o) for o in it.options or ())
            + sum(len(s) for s in it.reference_steps or ()))


def openrlhf_logs(results: list[RewardResult]) -> dict[str, list[float]]:
    """OpenRLHF's ``extra_logs``: ``howeval.rewards.logs.log_columns`` of the rows (one float per row for each
    key: ``s_ver``, ``degraded``, ``refused``, ``pattern_scored``, ``s_pat``, ``cot``, ``rep``, ``con``, ``pr``;
    OpenRLHF makes each a tensor, so none is null)."""
    from howeval.rewards.logs import log_columns

    return log_columns([r.model_dump() for r in results])


@serve.deployment(name="RewardIngress", max_ongoing_requests=256, max_queued_requests=64,
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
        try:
            url_token = self.cfg.auth.url_token()
        except ValueError as e:
            raise RuntimeError(f"in the replica's environment: {e}") from None
        import howeval.reward_server.app as this_module  # the imported module, not this class's pickled globals

        this_module.SETTINGS.update(token=token, url_token=url_token, max_body_bytes=self.cfg.limits.max_body_bytes,
                                   body_timeout_s=self.cfg.limits.body_timeout_s, metrics_public=self.cfg.metrics_public)
        self.steps = step_scorer
        self._rm: DeploymentHandle | None = None
        self.metrics = _Metrics()
        self._down_until: dict[str, float] = {}  # part name -> monotonic time its fail-fast window ends
        self._down_reason: dict[str, str] = {}
        self._gates: dict[str, asyncio.Event] = {}  # part name -> set when the part fails (releases every waiting call)
        self._probing: dict[str, asyncio.Task] = {}  # part name -> the background ping of a failed-over part
        self._last_ok: dict[str, float] = {}  # part name -> monotonic time of its last complete answer
        self._work: asyncio.Semaphore | None = None  # limits.max_concurrent_requests (made on the replica's loop)
        self._waiting = 0
        self.llm = None
        if self.cfg.on_unresolved == "llm":
            from howeval.rewards.llm_fallback import LLMFallback

            self.llm = LLMFallback(self.cfg.llm_fallback_config(), failover_s=FAILOVER_S)

    @property
    def rm(self) -> DeploymentHandle:
        if self._rm is None:
            self._rm = serve.get_deployment_handle("PatternRMServer", app_name=self.cfg.patternrm_app)
        return self._rm

    # ------------------------------------------------------------------------------------------ routes

    @app.post("/v1/rewards", response_model=RewardResponse)
    async def rewards(self, body: RewardRequest) -> RewardResponse:
        """Score rollouts; the answer has one reward per item, in order."""
        return RewardResponse(rewards=await self._timed("/v1/rewards", body.items))

    @app.post("/get_reward", response_model=OpenRLHFResponse)
    async def get_reward(self, body: OpenRLHFRequest) -> OpenRLHFResponse:
        """OpenRLHF remote reward model: ``{query, prompts, labels}`` -> ``{rewards, scores, extra_logs, errors}``
        (bearer token). The response is found in ``query`` by ``howeval.rewards.query.response_in_query``; a
        row where it cannot be is refused with its reason, never scored whole."""
        return await self._openrlhf("/get_reward", body)

    @app.post("/openrlhf/{url_token}/get_reward", response_model=OpenRLHFResponse)
    async def get_reward_url_token(self, url_token: str, body: OpenRLHFRequest) -> OpenRLHFResponse:
        """``/get_reward`` for OpenRLHF's stock client, which sends no header: authorised by the URL token
        (``auth.url_token_env``; checked by :class:`Guard` before the body, and here again). 404 when none is set."""
        denied = url_token_error(f"{URL_TOKEN_PREFIX}{url_token}/{URL_TOKEN_ROUTE}")
        if denied is not None:
            raise HTTPException(denied[0], detail=denied[1])
        return await self._openrlhf("/openrlhf/{url_token}/get_reward", body)

    @app.get("/healthz")
    async def healthz(self) -> JSONResponse:
        """Readiness: 200 once PatternRM and the step scorer each answer within 2 s, else 503 (``Retry-After``)
        naming what is down. Body: ``{"status": "ok" | "not ready", "ready", "patternrm", "step_scorer",
        "degraded"}`` (each part ``up`` or ``down (<error type>)``).

        A not-ready server still answers reward requests (rows degraded, with why); a load balancer or a
        Kubernetes readiness probe sends them elsewhere meanwhile. Liveness is not this route's business:
        a PatternRM still loading must not get a pod killed (KubeRay's raylet liveness check stays).
        """
        async def probe(call: Any) -> str:
            try:
                await asyncio.wait_for(call(), 2.0)
                return "up"
            except Exception as e:  # noqa: BLE001 - any failure reaching a part means "down" here, reported, not raised
                return f"down ({type(e).__name__})"

        patternrm, steps = await asyncio.gather(probe(lambda: self.rm.stats.remote()),
                                                probe(lambda: self.steps.ping.remote()))
        ready = patternrm == "up" and steps == "up"
        body = {"status": "ok" if ready else "not ready", "ready": ready, "patternrm": patternrm,
                "step_scorer": steps, "degraded": not ready}
        return JSONResponse(body, status_code=200 if ready else 503,
                            headers=None if ready else {"Retry-After": str(int(FAILOVER_S))})

    @app.get("/metrics")
    async def metrics(self, request: Request) -> Response:
        """This node's Ray metrics agent text, filtered to ``howeval_*`` and ``ray_serve_*`` series.

        Behind the bearer token unless ``metrics_public: true``. 503 when the agent cannot be read.
        """
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

    async def _openrlhf(self, route: str, body: OpenRLHFRequest) -> OpenRLHFResponse:
        """Both OpenRLHF routes: each row's response found in its query (``response_in_query``); rows where it
        cannot be are refused (reward 0.0, ``degraded``, ``verify_method: refused``, the reason in ``errors``
        and ``extra_logs.refused`` = 1), the others scored as ``/v1/rewards`` items. Every label is checked
        (422 naming ``labels.<i>``) whether or not its row is refused."""
        from howeval.rewards.query import PromptNotInQuery, response_in_query

        items: list[RewardItem] = []
        refused: dict[int, str] = {}
        for i, (q, p, lab) in enumerate(zip(body.query, body.prompts, body.labels)):
            try:
                response = response_in_query(q, p)
            except PromptNotInQuery as e:
                refused[i] = (f"refused: query.{i} does not begin with prompts.{i}: {e}; the response cannot be told "
                              "from the prompt, so the row is not scored (OpenRLHF cuts prompts longer than "
                              "max_len - max_tokens from the left)")
                response = ""
            items.append(self._openrlhf_item(i, response, p, lab))
        scored = [it for i, it in enumerate(items) if i not in refused]
        if not scored:  # every row refused: nothing to score, the request still counted
            self.metrics.requests.inc(tags={"route": route, "status": "200"})
        got = iter(await self._timed(route, scored) if scored else [])
        if refused:
            log.warning("%s: %d of %d rows refused (e.g. %s)", route, len(refused), len(items), next(iter(refused.values())))
            for i in refused:
                self.metrics.degraded.inc(tags={"kind": items[i].kind})
        res = [RewardResult(reward=0.0, s_ver=0.0, degraded=True, verify_method="refused", error=refused[i])
               if i in refused else next(got) for i in range(len(items))]
        rewards = [r.reward for r in res]
        return OpenRLHFResponse(rewards=rewards, scores=rewards, extra_logs=openrlhf_logs(res),
                                errors=[r.error for r in res])

    def _openrlhf_item(self, i: int, response: str, prompt: str, label: str) -> RewardItem:
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
        lim = self.cfg.limits
        if self._work is None:
            self._work = asyncio.Semaphore(lim.max_concurrent_requests)
        if self._work.locked() and self._waiting >= lim.max_waiting_requests:
            self.metrics.requests.inc(tags={"route": route, "status": "503"})
            raise HTTPException(503, detail=f"{lim.max_concurrent_requests} requests in work and {self._waiting} waiting "
                                            "(limits.max_concurrent_requests, max_waiting_requests): retry later",
                                headers={"Retry-After": str(lim.retry_after_s)})
        self._waiting += 1
        try:
            await self._work.acquire()
        finally:
            self._waiting -= 1
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
            self._work.release()
            self.metrics.requests.inc(tags={"route": route, "status": status})
            self.metrics.latency.observe(time.perf_counter() - t0, tags={"route": route})

    async def score(self, items: list[RewardItem]) -> list[RewardResult]:
        """Rewards for ``items`` in order: ``pipeline.prepare`` -> PatternRM and step F1 (concurrently,
        through the batched deployments) -> ``pipeline.assemble``."""
        from howeval.rewards.pipeline import RewardItemError, assemble, prepare

        if len(items) > self.cfg.limits.max_items:
            raise RewardItemError(0, f"{len(items)} items exceed limits.max_items={self.cfg.limits.max_items}")
        total = sum(item_chars(it) for it in items)
        if total > self.cfg.limits.max_request_chars:
            raise RewardItemError(0, f"the items hold {total:,} characters in all (prompts, responses, answers, options and "
                                     f"reference steps), over limits.max_request_chars={self.cfg.limits.max_request_chars:,}: "
                                     "send fewer items per request")
        stop = threading.Event()  # set when this request's answer can no longer be used (timeout, client gone)
        try:
            plan = await asyncio.to_thread(prepare, [it.model_dump() for it in items], self.cfg.pattern,
                                           self.cfg.on_unresolved, stop, self.cfg.cpr)
        except asyncio.CancelledError:
            stop.set()  # the worker thread stops before its next item's verifier (no more math-verify children)
            raise
        rm, f1, llm = await asyncio.gather(  # one handle call per part and request (per-item calls cost more than the model)
            self._call("patternrm", lambda: self.rm.label_many.remote(plan.rm_requests()), len(plan.rm_index),
                       lambda: self.rm.ping.remote()),
            self._call("step scorer", lambda: self.steps.f1_many.remote(plan.step_requests()), len(plan.step_index),
                       lambda: self.steps.ping.remote()),
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

    async def _call(self, name: str, make_call: Any, n: int, ping: Any) -> list | str:
        """Make and await the handle call that answers the part's ``n`` inputs; any failure (raised when the
        call is made or while it runs, a wrong number of answers, no answer within ``patternrm_timeout_s``, a
        failed liveness ping) becomes one reason string, and its rows degrade.

        Failover: a failure opens the part's :data:`FAILOVER_S` window (its rows degrade at once, no call) and
        answers every call then waiting on the part with the same reason; a call still waiting after
        :data:`PING_AFTER_S` pings the part (``ping()``, :data:`PING_TIMEOUT_S`), so a part with no live
        replica (killed, its replacement still loading) fails over in seconds, not after the timeout. After
        the window one background ping (:meth:`_probe`) decides: answered, calls go to the part again; not,
        a new window. Requests never wait on a part known to be down. A call past ``patternrm_timeout_s``
        while the part answered other calls meanwhile (one big request, issue 35) degrades its own rows
        only: no failover for the others.
        """
        if not n:
            return []
        now = time.monotonic()
        if name in self._down_reason:  # failed over: answered now; past the window one background ping decides
            left = self._down_until[name] - now
            if left <= 0 and name not in self._probing:
                self._probing[name] = asyncio.ensure_future(self._probe(name, ping))
            return f"failing over: {self._down_reason[name]} " + (f"(next try in {left:.1f} s)" if left > 0 else "(a ping is trying it)")
        gate = self._gates.get(name)
        if gate is None or gate.is_set():
            gate = self._gates[name] = asyncio.Event()
        call = work = None
        watch = down = None
        try:
            call = make_call()

            async def answers() -> list:  # a coroutine: a task we can cancel
                return await call

            work = asyncio.ensure_future(answers())
            down = asyncio.ensure_future(gate.wait())
            watch = asyncio.ensure_future(self._watch(name, ping, gate))
            done, _ = await asyncio.wait({work, down}, timeout=self.cfg.limits.patternrm_timeout_s,
                                         return_when=asyncio.FIRST_COMPLETED)
            if work in done:
                out = list(work.result())
                if len(out) != n:
                    raise RuntimeError(f"{len(out)} answers for {n} inputs")
                self._last_ok[name] = time.monotonic()
                return out
            if down in done:  # another call or a ping found the part down: its reason, at once
                return f"failing over: {self._down_reason.get(name, 'unavailable')}"
            timeout = self.cfg.limits.patternrm_timeout_s
            if self._last_ok.get(name, 0.0) > now:  # the part answered other calls meanwhile: this request's own cost
                return (f"no answer within patternrm_timeout_s={timeout} s for this request's {n} inputs "
                        f"(the {name} answers other requests: no failover)")
            raise TimeoutError(f"no answer within patternrm_timeout_s={timeout} s")
        except Exception as e:  # noqa: BLE001 - down, deleted, timed out, crashed, back-pressured: never a bare 500
            reason = f"unavailable: {type(e).__name__}: {str(e)[:200]}"
            self._fail(name, reason, n)
            return reason
        finally:
            for t in (down, watch):
                if t is not None:
                    t.cancel()
            if work is not None and not work.done():
                work.cancel()
            if call is not None and (work is None or not work.done() or work.cancelled()):
                try:
                    call.cancel()
                except Exception:  # noqa: BLE001 - cancelling a call to a deleted deployment raises again
                    pass

    async def _watch(self, name: str, ping: Any, gate: asyncio.Event) -> None:
        """While a call to ``name`` waits: every :data:`PING_AFTER_S`, a liveness ping; a failed one fails the part over."""
        while not gate.is_set():
            await asyncio.sleep(PING_AFTER_S)
            try:
                await asyncio.wait_for(_awaited(ping()), PING_TIMEOUT_S)
            except asyncio.CancelledError:
                raise
            except Exception as e:  # noqa: BLE001 - no live replica answers: the part is down, whatever the error
                what = f"no answer to a ping within {PING_TIMEOUT_S} s" if isinstance(e, asyncio.TimeoutError) else \
                    f"ping failed: {type(e).__name__}: {str(e)[:200]}"
                self._fail(name, f"unavailable: {what}", 0)
                return

    async def _probe(self, name: str, ping: Any) -> None:
        """After the failover window: one ping, in the background (no request waits on it). An answer closes
        the failover (the next calls go to the part); none opens a new window."""
        try:
            await asyncio.wait_for(_awaited(ping()), PING_TIMEOUT_S)
        except Exception as e:  # noqa: BLE001 - still no live replica, whatever the error
            what = f"no answer to a ping within {PING_TIMEOUT_S} s" if isinstance(e, asyncio.TimeoutError) else \
                f"ping failed: {type(e).__name__}: {str(e)[:200]}"
            self._fail(name, f"unavailable: {what}", 0)
        else:
            log.warning("%s answers its ping again: failover closed", name)
            self._down_reason.pop(name, None)
            self._down_until.pop(name, None)
        finally:
            self._probing.pop(name, None)

    def _fail(self, name: str, reason: str, n: int) -> None:
        """Open ``name``'s failover window and answer every call waiting on it (their rows degrade now)."""
        log.warning("%s %s (%d rows); failing over for %.0f s", name, reason, n, FAILOVER_S)
        self._down_until[name] = time.monotonic() + FAILOVER_S
        self._down_reason[name] = reason
        gate = self._gates.get(name)
        if gate is not None:
            gate.set()


# -------------------------------------------------------------------------------------------- builders


# The builders' `args` are annotated `dict`, not the config class: Serve would then validate them itself,
# without the project's error messages (unknown key -> closest accepted key, one line per bad key path).
def build_app(args: dict | None = None) -> serve.Application:
    """The ``reward`` application (``import_path: howeval.reward_server.app:build_app``).

    ``args`` (the application's ``args:`` mapping in the Serve config) is validated once, here, into a
    ``RewardServerConfig``; ``RewardIngress`` gets that object and ``StepScorer`` its ``cpr`` block.

    Raises:
        ConfigError: ``args`` does not validate (every bad key path named).
        ValueError: the auth token variable is not set, or ``auth.url_token_env`` is set and its variable is
            unset, short, not URL-safe or the bearer token (fails fast, before any replica starts).
    """
    cfg: RewardServerConfig = load_server_config(args)
    if cfg.auth.token_env is not None and not os.environ.get(cfg.auth.token_env):
        raise ValueError(f"auth.token_env={cfg.auth.token_env!r} is not set: export {cfg.auth.token_env}=<token> "
                         "before `serve run` (or set auth.token_env: null to disable auth, tests only)")
    cfg.auth.url_token()  # ValueError naming auth.url_token_env when set but unusable
    return RewardIngress.bind(StepScorer.bind(cfg.cpr), cfg)


def build_patternrm_app(args: dict | None = None) -> serve.Application:
    """The ``patternrm`` application (``import_path: howeval.reward_server.app:build_patternrm_app``).

    ``args`` is validated once, here, into a ``PatternRMAppConfig``; ``PatternRMServer`` gets its
    ``patternrm`` block (a ``PatternRMConfig``).

    Raises:
        ConfigError: ``args`` does not validate.
    """
    cfg: PatternRMAppConfig = load_server_config(args, PatternRMAppConfig)
    return PatternRMServer.bind(cfg.patternrm)
