"""The reward server: a Ray Serve application that scores rollouts for RL workers (SPEC sections 2 and 3).

Two Serve applications, started together by ``serve run configs/serve/reward.yaml``:

- ``patternrm`` (``build_patternrm_app``): ``PatternRMServer``, a batched wrapper of
  ``actors.patternrm.PatternRM`` (no HTTP route). Deployed apart so it can be scaled, upgraded or stopped
  alone; the reward app keeps answering while it is down (degraded rewards).
- ``reward`` (``build_app``): ``RewardIngress`` (FastAPI: ``POST /v1/rewards``, ``POST /get_reward``,
  ``GET /healthz``, ``GET /metrics``, ``/openapi.json``, ``/docs``) and ``StepScorer`` (batched step
  embeddings for CPR).

Reward formulas come from ``howeval.rewards.functions`` (the GRPO trainer imports the same functions); the gate is
``bernoulli_gate(rollout_key(prompt, response), p, seed)``. Routes only parse, authorize and delegate to
``RewardIngress.score``.

Batching (STYLE rule 4): each batched deployment has a per-request method (``label``, ``f1``) that
awaits a separate ``@serve.batch`` list method; ``reconfigure(user_config)`` sets ``max_batch_size`` and
``batch_wait_timeout_s`` from the Serve config.
"""
# no `from __future__ import annotations`: FastAPI reads the route annotations of the ingress class at runtime
import asyncio
import json
import logging
import os
import time
from typing import Any

from fastapi import FastAPI, HTTPException, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from ray import serve
from ray.serve.handle import DeploymentHandle

from reward_server.config import PatternRMAppConfig, RewardServerConfig, load_server_config
from reward_server.schemas import (
    OpenRLHFRequest,
    OpenRLHFResponse,
    RewardItem,
    RewardRequest,
    RewardResponse,
    RewardResult,
)

log = logging.getLogger("ray.serve")

OPEN_PATHS = frozenset({"/healthz", "/metrics", "/openapi.json", "/docs", "/docs/oauth2-redirect", "/redoc"})
"""Paths served without the bearer token."""

DEFAULT_BATCH = {"max_batch_size": 32, "batch_wait_timeout_s": 0.01}


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


@serve.deployment(name="PatternRMServer", max_ongoing_requests=256, ray_actor_options={"num_cpus": 0.5})
class PatternRMServer:
    """Serve wrapper of ``actors.patternrm.PatternRM``: ``label(item)`` -> ``{labels, error, raw}``."""

    def __init__(self, patternrm: dict):
        from actors.patternrm import PatternRM

        self.rm = PatternRM(**patternrm)
        self.batch_sizes: list[int] = []  # recent batch sizes (for tests and the benchmark)

    def reconfigure(self, user_config: dict) -> None:
        _apply_batching(self._label_batch, user_config, "PatternRMServer")

    async def label(self, item: dict) -> dict:
        """Label one ``{"question", "response"}`` item (batched with concurrent calls)."""
        return await self._label_batch(item)

    @serve.batch(**DEFAULT_BATCH)
    async def _label_batch(self, items: list[dict]) -> list[dict]:
        self.batch_sizes = (self.batch_sizes + [len(items)])[-1000:]
        return await asyncio.to_thread(self.rm.label_batch, items)

    def stats(self) -> dict:
        return {"version": self.rm.version, "batch_sizes": list(self.batch_sizes)}


# ----------------------------------------------------------------------------------------------- steps


@serve.deployment(name="StepScorer", max_ongoing_requests=256, ray_actor_options={"num_cpus": 0.5})
class StepScorer:
    """Batched CRYSTAL step F1: ``f1({"pred": [...], "ref": [...]})`` -> float (SPEC section 3)."""

    def __init__(self, cpr: dict):
        from howeval.embed import StepEmbedder
        from reward_server.config import CPRConfig

        self.cfg = CPRConfig.model_validate(cpr)
        self.emb = StepEmbedder(self.cfg.embedder_path)

    def reconfigure(self, user_config: dict) -> None:
        _apply_batching(self._f1_batch, user_config, "StepScorer")

    async def f1(self, pair: dict) -> float:
        return await self._f1_batch(pair)

    @serve.batch(**DEFAULT_BATCH)
    async def _f1_batch(self, pairs: list[dict]) -> list[float]:
        return await asyncio.to_thread(self._score, pairs)

    def _score(self, pairs: list[dict]) -> list[float]:
        from howeval.benchmarks.crystal import step_scores

        self.emb.add(s for p in pairs for s in (*p["pred"], *p["ref"]))  # one encoder pass for the batch
        out = []
        for p in pairs:
            s = step_scores(self.emb.similarity(p["pred"], p["ref"]), tau=self.cfg.tau, alpha=self.cfg.alpha,
                            order=self.cfg.order)
            out.append(s.f1 if self.cfg.f1 == "match" else s.ordered_f1)
        return out


# ---------------------------------------------------------------------------------------------- ingress

app = FastAPI(
    title="howeval reward server",
    version="1",
    description="Verifier + PatternRM (PatternRL) and CRYSTAL CPR rewards for RL workers. "
    "Bearer token in `Authorization` for every route except /healthz, /metrics and the OpenAPI pages.",
)


class Guard:
    """ASGI middleware: bearer auth (401) and body size limit (413) before any parsing.

    Settings live on ``app.state.guard`` (set by the ingress replica at start): ``token`` (None = no auth)
    and ``max_body_bytes``.
    """

    def __init__(self, asgi_app: Any):
        self.app = asgi_app

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        cfg = getattr(scope["app"].state, "guard", None) if "app" in scope else None
        cfg = cfg or getattr(app.state, "guard", None)
        if cfg is None:
            return await _send_json(send, 503, {"detail": "server is starting"})
        if scope["path"] not in OPEN_PATHS and cfg["token"] is not None:
            headers = dict(scope.get("headers") or [])
            got = headers.get(b"authorization", b"").decode("latin-1")
            if got != f"Bearer {cfg['token']}":
                return await _send_json(send, 401, {"detail": "missing or wrong bearer token"},
                                        [(b"www-authenticate", b"Bearer")])
        limit = cfg["max_body_bytes"]
        headers = dict(scope.get("headers") or [])
        cl = headers.get(b"content-length")
        if cl is not None and cl.isdigit() and int(cl) > limit:
            return await _send_json(send, 413, {"detail": f"body of {int(cl)} bytes exceeds the limit of {limit}"})
        seen = 0

        async def limited_receive() -> dict:
            nonlocal seen
            msg = await receive()
            if msg["type"] == "http.request":
                seen += len(msg.get("body", b""))
                if seen > limit:
                    raise _TooLarge()
            return msg

        try:
            await self.app(scope, limited_receive, send)
        except _TooLarge:
            await _send_json(send, 413, {"detail": f"body exceeds the limit of {limit} bytes"})


class _TooLarge(Exception):
    pass


async def _send_json(send: Any, status: int, body: dict, extra_headers: list | None = None) -> None:
    data = json.dumps(body).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(data)).encode())]
    await send({"type": "http.response.start", "status": status, "headers": headers + (extra_headers or [])})
    await send({"type": "http.response.body", "body": data})


app.add_middleware(Guard)


@app.exception_handler(RequestValidationError)
async def _validation_error(request: Request, exc: RequestValidationError) -> JSONResponse:
    errs = [{"loc": list(e.get("loc", ())), "msg": e.get("msg", ""), "type": e.get("type", "")} for e in exc.errors()]
    msg = "; ".join(f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in errs[:10])
    return JSONResponse(status_code=422, content={"detail": errs, "message": msg})


class _Metrics:
    """Per-replica Prometheus metrics (``GET /metrics``). Serve's own metrics are on Ray's metrics port."""

    def __init__(self) -> None:
        from prometheus_client import CollectorRegistry, Counter, Histogram

        self.registry = CollectorRegistry()
        self.requests = Counter("howeval_reward_requests", "HTTP requests by route and status", ["route", "status"],
                                registry=self.registry)
        self.rewards = Counter("howeval_rewards", "Rewards computed by kind", ["kind"], registry=self.registry)
        self.degraded = Counter("howeval_rewards_degraded", "Rewards answered verifier-only (PatternRM failed)",
                                registry=self.registry)
        self.latency = Histogram("howeval_reward_request_seconds", "Request latency", ["route"], registry=self.registry,
                                 buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30))


class _RowError(Exception):
    """An item the verifier refuses (bad input): answered 422 naming the item."""


@serve.deployment(name="RewardIngress", max_ongoing_requests=128, ray_actor_options={"num_cpus": 0.5})
@serve.ingress(app)
class RewardIngress:
    """HTTP entry point; ``score(items)`` does the work (verifier, gate, PatternRM, step F1, formula)."""

    def __init__(self, step_scorer: DeploymentHandle, config: dict):
        self.cfg: RewardServerConfig = load_server_config(config)
        token = None
        if self.cfg.auth.token_env is not None:
            token = os.environ.get(self.cfg.auth.token_env)
            if not token:
                raise RuntimeError(f"auth.token_env={self.cfg.auth.token_env!r} is not set in the replica's "
                                   "environment: export it (or set auth.token_env: null to disable auth)")
        app.state.guard = {"token": token, "max_body_bytes": self.cfg.limits.max_body_bytes}
        self.steps = step_scorer
        self._rm: DeploymentHandle | None = None
        self.metrics = _Metrics()

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
        """OpenRLHF remote reward model: ``{query, prompts, labels}`` -> ``{rewards, scores, extra_logs}``."""
        items = [self._openrlhf_item(i, q, p, lab) for i, (q, p, lab) in enumerate(zip(body.query, body.prompts, body.labels))]
        res = await self._timed("/get_reward", items)
        rewards = [r.reward for r in res]
        return OpenRLHFResponse(rewards=rewards, scores=rewards, extra_logs={
            "s_ver": [r.s_ver for r in res], "degraded": [float(r.degraded) for r in res]})

    @app.get("/healthz")
    async def healthz(self) -> dict:
        """200 while the ingress is up; says whether PatternRM answers within 2 s."""
        try:
            await asyncio.wait_for(self.rm.stats.remote(), 2.0)
            patternrm = "up"
        except Exception as e:  # any failure reaching PatternRM means "down" here, reported, not raised
            patternrm = f"down ({type(e).__name__})"
        return {"status": "ok", "patternrm": patternrm}

    @app.get("/metrics")
    async def metrics(self) -> Response:
        from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

        return Response(generate_latest(self.metrics.registry), media_type=CONTENT_TYPE_LATEST)

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
        except Exception as e:  # pydantic ValidationError: a bad label is the caller's error
            raise HTTPException(422, detail=f"labels.{i}: {e}") from None

    async def _timed(self, route: str, items: list[RewardItem]) -> list[RewardResult]:
        t0 = time.perf_counter()
        status = "200"
        try:
            return await asyncio.wait_for(self.score(items), self.cfg.limits.request_timeout_s)
        except asyncio.TimeoutError:
            status = "504"
            raise HTTPException(504, detail=f"request took longer than {self.cfg.limits.request_timeout_s} s") from None
        except _RowError as e:
            status = "422"
            raise HTTPException(422, detail=str(e)) from None
        except HTTPException as e:
            status = str(e.status_code)
            raise
        finally:
            self.metrics.requests.labels(route, status).inc()
            self.metrics.latency.labels(route).observe(time.perf_counter() - t0)

    async def score(self, items: list[RewardItem]) -> list[RewardResult]:
        """Rewards for ``items`` in order (base: s_ver; pattern: PatternRL; cpr: CPR)."""
        from howeval.rewards.patternrm import rollout_key
        from howeval.rewards.functions import bernoulli_gate, cpr_reward, pattern_reward, pattern_score
        from howeval.parsing.steps import response_steps

        if len(items) > self.cfg.limits.max_items:
            raise _RowError(f"body.items: {len(items)} items exceed limits.max_items={self.cfg.limits.max_items}")
        verdicts = await asyncio.to_thread(self._verify_all, items)
        pc, cc = self.cfg.pattern, self.cfg.cpr

        z = {i: bernoulli_gate(rollout_key(it.prompt, it.response), pc.p, pc.seed)
             for i, it in enumerate(items) if it.kind == "pattern"}
        rm_idx = [i for i, g in z.items() if g == 1]
        step_idx, steps = [], {}
        for i, it in enumerate(items):
            if it.kind == "cpr":
                steps[i] = response_steps(it.response)
                if steps[i]:
                    step_idx.append(i)
        rm_res, f1_res = await asyncio.gather(
            self._patternrm([items[i] for i in rm_idx]),
            asyncio.gather(*[self.steps.f1.remote({"pred": steps[i], "ref": items[i].reference_steps}) for i in step_idx]),
        )
        rm_by = dict(zip(rm_idx, rm_res))
        f1_by = dict(zip(step_idx, f1_res))

        out = []
        for i, it in enumerate(items):
            correct, method = verdicts[i]
            s_ver = 1.0 if correct else 0.0
            row: dict[str, Any] = {"s_ver": s_ver, "verify_method": method}
            if it.kind == "base":
                row["reward"] = s_ver
            elif it.kind == "pattern":
                row["z"] = z[i]
                labels, s_pat, err = None, None, None
                if z[i] == 1:
                    r = rm_by[i]
                    labels, err = r.get("labels"), r.get("error")
                    if labels is not None and err is None:
                        s_pat = pattern_score(labels, pc.mode)
                if z[i] == 1 and s_pat is None:  # PatternRM needed but failed: verifier-only (a = 1)
                    row.update(degraded=True, error=err or "patternrm returned no labels", reward=pattern_reward(s_ver, None, 0))
                    self.metrics.degraded.inc()
                else:
                    row.update(labels=labels, s_pat=s_pat, reward=pattern_reward(s_ver, s_pat, z[i]))
            else:
                f1 = float(f1_by.get(i, 0.0))  # no predicted steps: F1 = 0 (SPEC section 3)
                row.update(step_f1=f1, reward=cpr_reward(bool(correct), f1, cc.a_w, cc.s_w, cc.lam))
            self.metrics.rewards.labels(it.kind).inc()
            out.append(RewardResult(**row))
        return out

    def _verify_all(self, items: list[RewardItem]) -> list[tuple[bool, str]]:
        from howeval.judges.verify import verify

        out = []
        for i, it in enumerate(items):
            try:
                v = verify(it.response, it.answer, it.answer_type, options=it.options)
            except (ValueError, TypeError) as e:
                raise _RowError(f"body.items.{i}: the verifier refused this item: {e}") from None
            if v.correct is None:
                if self.cfg.on_unresolved == "error":
                    raise _RowError(f"body.items.{i}: verifier could not decide ({v.reason}) and on_unresolved=error")
                out.append((False, "unresolved"))
            else:
                out.append((bool(v.correct), "rule"))
        return out

    async def _patternrm(self, items: list[RewardItem]) -> list[dict]:
        """PatternRM results for ``items``; a failure of the whole call becomes an error on each row."""
        if not items:
            return []
        try:
            calls = [self.rm.label.remote({"question": it.prompt, "response": it.response}) for it in items]
            return list(await asyncio.wait_for(asyncio.gather(*calls), self.cfg.limits.patternrm_timeout_s))
        except Exception as e:  # down, deleted, timed out, crashed: the policy decides (never a bare 500)
            reason = f"patternrm unavailable: {type(e).__name__}: {str(e)[:200]}"
            log.warning("%s (%d rows)", reason, len(items))
            if self.cfg.on_patternrm_failure == "error":
                raise HTTPException(503, detail=reason) from None
            return [{"labels": None, "error": reason} for _ in items]


# -------------------------------------------------------------------------------------------- builders


def build_app(args: dict | None = None) -> serve.Application:
    """The ``reward`` application (``import_path: reward_server.app:build_app``); ``args`` = RewardServerConfig.

    Fails fast when the auth token variable is not set, before any replica starts.
    """
    cfg: RewardServerConfig = load_server_config(args)
    if cfg.auth.token_env is not None and not os.environ.get(cfg.auth.token_env):
        raise ValueError(f"auth.token_env={cfg.auth.token_env!r} is not set: export {cfg.auth.token_env}=<token> "
                         "before `serve run` (or set auth.token_env: null to disable auth, tests only)")
    return RewardIngress.bind(StepScorer.bind(cfg.cpr.model_dump()), cfg.model_dump())


def build_patternrm_app(args: dict | None = None) -> serve.Application:
    """The ``patternrm`` application (``import_path: reward_server.app:build_patternrm_app``)."""
    cfg: PatternRMAppConfig = load_server_config(args, PatternRMAppConfig)
    return PatternRMServer.bind(cfg.patternrm.model_dump())
