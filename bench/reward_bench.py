"""Reward server benchmark: rewards/s and p50/p99 latency at N concurrent clients, batched vs unbatched.

    python bench/reward_bench.py [--kind pattern|cpr|base] [--patternrm trained|rules|checkpoint --path DIR]
                                 [--concurrency 32] [--duration 15] [--items-per-request 8]
                                 [--out bench/results/reward_bench.md] [--json bench/results/reward_bench.json]

One run starts Ray and Serve on 127.0.0.1 (a free port), then for each mode deploys both applications
with ``user_config`` ``max_batch_size`` = 64 (batched: concurrent ``label`` calls from every request
share one forward pass; wait 10 ms) or 1 (unbatched: one forward pass per item) on PatternRMServer and
StepScorer, and drives ``POST /v1/rewards`` from N asyncio clients (each sends its next request when the
previous answer arrives) for ``--duration`` seconds per cell. Every answer must be 200 and not degraded
(errors counted). ``pattern`` items use p = 1 (every item goes to PatternRM), so the PatternRM path is
measured. Item texts vary per request (no cache can answer them).
"""
from __future__ import annotations

import argparse
import asyncio
import os
import platform
import socket
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

CONCURRENCY = (1, 8, 32, 64)
TOKEN_ENV = "HOWEVAL_BENCH_TOKEN"
REF = ["Read the two numbers from the table", "Add the two numbers", "The total is the answer"]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def make_item(k: int, kind: str) -> dict:
    resp = (f"Step 1: Read the numbers {k} and {k + 1} from the table.\nStep 2: Add them: {k} + {k + 1} = {2 * k + 1}.\n"
            f"Step 3: The total is {2 * k + 1}, so the answer is \\boxed{{{2 * k + 1}}}.")
    if k % 3 == 0:
        resp = "Wait, let me re-check the table first.\n" + resp
    if k % 4 == 0:
        resp += f"\nSo the answer is {2 * k + 1}. The answer is {2 * k + 1}."
    it = {"prompt": f"What is {k} + {k + 1}? (bench)", "response": resp, "answer": str(2 * k + 1),
          "answer_type": "free_form", "kind": kind}
    if kind == "cpr":
        it["reference_steps"] = REF
    return it


def deploy(mode_batch: int, args) -> None:
    from ray import serve

    from howeval.reward_server.app import PatternRMServer, RewardIngress, StepScorer
    from howeval.reward_server.config import PatternRMConfig, RewardServerConfig

    uc = {"max_batch_size": mode_batch, "batch_wait_timeout_s": 0.01 if mode_batch > 1 else 0.0}
    rm_cfg = PatternRMConfig(kind=args.patternrm, path=args.path)
    one = {"min_replicas": 1, "max_replicas": 1}  # one replica in both modes: batching is what is compared
    serve.run(PatternRMServer.options(user_config=uc, autoscaling_config=one).bind(rm_cfg), name="patternrm", route_prefix=None)
    cfg = RewardServerConfig.model_validate({"pattern": {"p": 1.0}, "auth": {"token_env": TOKEN_ENV},
                                             "limits": {"patternrm_timeout_s": 120, "request_timeout_s": 300}})
    serve.run(RewardIngress.options(max_ongoing_requests=256, max_queued_requests=-1).bind(
        StepScorer.options(user_config=uc, autoscaling_config=one).bind(cfg.cpr), cfg),
              name="reward", route_prefix="/")


async def drive(url: str, clients: int, duration: float, kind: str, per_req: int) -> dict:
    import httpx

    lat: list[float] = []
    errors = 0
    done_items = 0
    headers = {"Authorization": f"Bearer {os.environ[TOKEN_ENV]}"}
    stop = time.perf_counter() + duration
    counter = [0]

    async def one(c: httpx.AsyncClient) -> None:
        nonlocal errors, done_items
        while time.perf_counter() < stop:
            counter[0] += 1
            body = {"items": [make_item(counter[0] * per_req + j, kind) for j in range(per_req)]}
            t0 = time.perf_counter()
            try:
                r = await c.post(url + "/v1/rewards", json=body, headers=headers)
                ok = r.status_code == 200 and not any(x["degraded"] for x in r.json()["rewards"])
            except httpx.HTTPError:
                ok = False
            lat.append(time.perf_counter() - t0)
            if ok:
                done_items += per_req
            else:
                errors += 1

    limits = httpx.Limits(max_connections=clients, max_keepalive_connections=clients)
    async with httpx.AsyncClient(timeout=300, limits=limits) as c:
        t0 = time.perf_counter()
        await asyncio.gather(*[one(c) for _ in range(clients)])
        wall = time.perf_counter() - t0
    lat.sort()
    q = lambda p: lat[min(len(lat) - 1, int(p * len(lat)))] * 1000 if lat else float("nan")  # noqa: E731
    return {"rewards_s": done_items / wall, "p50_ms": q(0.50), "p99_ms": q(0.99), "requests": len(lat),
            "errors": errors, "wall_s": wall}


def batch_sizes() -> list[int]:
    from ray import serve

    h = serve.get_deployment_handle("PatternRMServer", app_name="patternrm")
    return h.stats.remote().result()["batch_sizes"]


def model_only(args, n: int = 64) -> dict:
    """The PatternRM alone, in this process: one ``label_batch`` of ``n`` items vs ``n`` calls of one item."""
    from howeval.judges.patternrm.model import PatternRM

    rm = PatternRM(args.patternrm, **({"path": args.path} if args.path else {}))
    items = [{"question": make_item(k, "pattern")["prompt"], "response": make_item(k, "pattern")["response"]} for k in range(n)]
    rm.label_batch(items[:4])  # warm-up
    t0 = time.perf_counter()
    batched = rm.label_batch(items)
    tb = time.perf_counter() - t0
    t0 = time.perf_counter()
    singles = [rm.label_batch([it])[0] for it in items]
    ts = time.perf_counter() - t0
    same = sum(a["labels"] == b["labels"] for a, b in zip(batched, singles))
    return {"items": n, "batched_s": round(tb, 3), "one_by_one_s": round(ts, 3), "speedup": round(ts / tb, 2),
            "same_labels": same}


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--kind", choices=["cpr", "pattern", "base"], default="pattern")
    p.add_argument("--patternrm", choices=["trained", "rules", "checkpoint"], default="trained")
    p.add_argument("--path", default=None, help="checkpoint folder for --patternrm checkpoint ('embedded' = untrained SmolLM2)")
    p.add_argument("--duration", type=float, default=15.0)
    p.add_argument("--items-per-request", type=int, default=8)
    p.add_argument("--concurrency", type=int, nargs="+", default=[32])
    p.add_argument("--batch", type=int, default=64, help="max_batch_size of the batched mode")
    p.add_argument("--json", default=None, help="also write the figures as JSON here")
    p.add_argument("--port", type=int, default=None, help="Serve HTTP port on 127.0.0.1 (default: a free one)")
    p.add_argument("--num-cpus", type=int, default=4, help="logical CPUs for the local Ray cluster")
    p.add_argument("--out", default="bench/results/reward_bench.md")
    a = p.parse_args()
    os.environ.setdefault(TOKEN_ENV, "bench-token")
    model = model_only(a) if a.kind == "pattern" else None
    if model:
        print(f"PatternRM alone: {model}", flush=True)

    import ray
    from ray import serve

    ray.init(num_cpus=a.num_cpus, include_dashboard=False, log_to_driver=False)
    port = a.port or _free_port()
    serve.start(http_options={"host": "127.0.0.1", "port": port})
    url = f"http://127.0.0.1:{port}"
    results: dict[tuple[str, int], dict] = {}
    mean_batch: dict[str, float] = {}
    try:
        for mode, mbs in (("batched", a.batch), ("unbatched", 1)):
            deploy(mbs, a)
            asyncio.run(drive(url, 8, 2.0, a.kind, a.items_per_request))  # warm-up (model loads, caches)
            for c in a.concurrency:
                results[(mode, c)] = r = asyncio.run(drive(url, c, a.duration, a.kind, a.items_per_request))
                print(f"{mode:9s} clients={c:3d} rewards/s={r['rewards_s']:8.1f} p50={r['p50_ms']:8.1f} ms "
                      f"p99={r['p99_ms']:8.1f} ms requests={r['requests']} errors={r['errors']}", flush=True)
            if a.kind == "pattern":
                bs = batch_sizes()
                mean_batch[mode] = statistics.mean(bs) if bs else float("nan")
                serve.delete("patternrm")  # a fresh replica (and batch-size log) for the next mode
    finally:
        serve.shutdown()
        ray.shutdown()

    lines = [
        "# Reward server benchmark",
        "",
        f"`python bench/reward_bench.py --kind {a.kind} --patternrm {a.patternrm}"
        f"{' --path ' + a.path if a.path else ''} --duration {a.duration} --items-per-request {a.items_per_request}`",
        "",
        f"Machine: {platform.machine()}, {os.cpu_count()} CPUs visible, {platform.python_version()}; "
        f"1-minute load average at the end {os.getloadavg()[0]:.1f}"
        + (" (above the CPU count: other work shared the cores)." if os.getloadavg()[0] > (os.cpu_count() or 1) else "."),
        f"Workload: `{a.kind}` items ({a.items_per_request} per request), HTTP on 127.0.0.1, each client sends its next "
        f"request when the previous answer arrives, {a.duration:.0f} s per cell. Batched: `max_batch_size={a.batch}`, "
        "`batch_wait_timeout_s=0.01`; unbatched: `max_batch_size=1`. Errors = non-200 or degraded answers.",
        "",
        "| clients | mode | rewards/s | p50 ms | p99 ms | requests | errors |",
        "|---:|---|---:|---:|---:|---:|---:|",
    ]
    for c in a.concurrency:
        for mode in ("batched", "unbatched"):
            r = results[(mode, c)]
            lines.append(f"| {c} | {mode} | {r['rewards_s']:.1f} | {r['p50_ms']:.0f} | {r['p99_ms']:.0f} | {r['requests']} | {r['errors']} |")
    lines.append("")
    for c in a.concurrency:
        b, u = results[("batched", c)]["rewards_s"], results[("unbatched", c)]["rewards_s"]
        lines.append(f"- {c} clients: batched / unbatched throughput = {b / u:.2f}x" if u else f"- {c} clients: unbatched 0")
    if mean_batch:
        lines.append("- mean PatternRM batch size: " + ", ".join(f"{k} {v:.1f}" for k, v in mean_batch.items()))
    if model:
        lines.append(f"- PatternRM alone, {model['items']} items in this process: one batch {model['batched_s']} s, "
                     f"one item at a time {model['one_by_one_s']} s: {model['speedup']}x (same labels: {model['same_labels']})")
        c = max(a.concurrency)
        u = results[("unbatched", c)]["rewards_s"]
        if u and model["speedup"]:
            ratio = results[("batched", c)]["rewards_s"] / u / model["speedup"]
            lines.append(f"- how close the server comes to the model-alone ceiling: (server speed-up) / (model-alone speed-up) "
                         f"= {ratio:.2f} (goal >= 0.8 on CPU; 4x batched/unbatched stays the GPU goal)")
    if a.json:
        import json

        c = max(a.concurrency)
        b, u = results[("batched", c)], results[("unbatched", c)]
        doc = {"patternrm": a.patternrm if a.patternrm != "checkpoint" else f"checkpoint:{a.path}", "kind": a.kind,
               "clients": c, "items_per_request": a.items_per_request, "duration_s": a.duration,
               "speedup_batched_vs_unbatched": round(b["rewards_s"] / u["rewards_s"], 2) if u["rewards_s"] else None,
               "batched": {k: round(v, 2) for k, v in b.items()}, "unbatched": {k: round(v, 2) for k, v in u.items()},
               "mean_patternrm_batch": {k: round(v, 1) for k, v in mean_batch.items()},
               "patternrm_alone": model,
               "patternrm_alone_ceiling": model["speedup"] if model else None,
               "ratio_server_vs_model_alone": (round(b["rewards_s"] / u["rewards_s"] / model["speedup"], 2)
                                               if model and u["rewards_s"] and model["speedup"] else None),
               "goals": {"ratio_cpu": 0.8, "speedup_gpu": 4.0},
               "machine": f"{platform.machine()}, {os.cpu_count()} CPUs, load average at the end {os.getloadavg()[0]:.1f}",
               "modes": f"batched: max_batch_size={a.batch}, batch_wait_timeout_s=0.01; unbatched: max_batch_size=1 (one forward pass per item)"}
        Path(a.json).write_text(json.dumps(doc, indent=1) + "\n")
    Path(a.out).parent.mkdir(parents=True, exist_ok=True)
    Path(a.out).write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
