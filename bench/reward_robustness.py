"""Reward server under a bad day (issue 35): slow clients, a hung verifier, a 2 MB cpr request, a killed
step-scorer replica, autoscaling, and what listens on the network.

    python bench/reward_robustness.py [--seconds 20] [--out bench/results/reward_robustness.md]
                                      [--json bench/results/reward_robustness.json]

One run starts the server the way ``make serve`` does (``python -m howeval.reward_server.serve_local CONFIG``, its
own session, Ray on 127.0.0.1, rules PatternRM) with three applications: ``patternrm``, ``reward`` on ``/``
and ``reward-llm`` on ``/llm`` (``on_unresolved: llm`` against a verifier on 127.0.0.1 that accepts
connections and never answers, ``timeout_s`` 5). Then, each phase bounded by ``--seconds``:

1. ``baseline``: one normal client, requests one after another (3 items: pattern, base, cpr): p50/p99;
2. ``slow_bodies``: the same client while 100 connections (50 with the token, 50 without) send headers and
   part of a body, wait to be answered, and reconnect a second later (from a process of their own): p99
   against the baseline's (goal:
   <= 2x; the baseline is measured again after the attack, ``baseline_after``, and the goal uses the mean);
3. ``hung_verifier``: 32 clients on ``/llm`` (2 unresolved + 2 resolved items each): statuses (goal: no
   504), every unresolved row degraded with a reason, latency against the failover window;
4. ``big_cpr``: 8 clients sending small cpr requests while one ~1.9 MB cpr request (accepted: under
   ``max_request_chars``) and one ~2.1 MB one (refused 422) arrive: the small clients' degraded rows
   (goal: 0) and p99;
5. ``kill_step_scorer``: 16 cpr clients; the StepScorer replica process is SIGKILLed: every request
   answered (goal: 200, each answered after the kill within FAILOVER_S of the p99 before it), degraded
   rows named;
6. ``autoscale``: the most ``RewardIngress`` replica processes seen during phases 3-5 (goal: 2);
7. ``listeners``: ``ss -ltnp`` of the server's processes: what is bound beyond 127.0.0.1.

Writes the figures to ``--json`` and a table to ``--out``; exits 1 when a goal is missed.
"""
from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx
import yaml

ROOT = Path(__file__).resolve().parents[1]
TOKEN = "bench-robustness-token"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
REF = ["Read the two numbers from the table", "Add the two numbers", "The total is the answer"]
FAILOVER_S = 5.0  # howeval.reward_server.app.FAILOVER_S
LLM_TIMEOUT_S = 5.0
REOPEN_S = 1.0  # a slow-body connection that was answered is reopened this long after


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def item(k: int, kind: str, tag: str = "") -> dict:
    resp = (f"Step 1: Read the numbers {k} and {k + 1} from the table.\nStep 2: Add them: {k} + {k + 1} = {2 * k + 1}.\n"
            f"Step 3: The total is {2 * k + 1}, so the answer is \\boxed{{{2 * k + 1}}}. {tag}")
    it = {"prompt": f"What is {k} + {k + 1}?", "response": resp, "answer": str(2 * k + 1),
          "answer_type": "free_form", "kind": kind}
    if kind == "cpr":
        it["reference_steps"] = REF
    return it


def unresolved(k: int) -> dict:
    return {"prompt": f"Which stick is in the middle? ({k})", "response": f"Stick {k} lays exactly in the middle.",
            "answer": "3", "answer_type": "free_form", "kind": "base"}


class HungVerifier:
    """A TCP server on 127.0.0.1 that accepts and reads, and never answers (a hung LLM verifier)."""

    def __enter__(self) -> HungVerifier:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(512)
        self.port = self.sock.getsockname()[1]
        self.conns: list[socket.socket] = []
        self.stop = False
        threading.Thread(target=self._accept, daemon=True).start()
        return self

    def _accept(self) -> None:
        while not self.stop:
            try:
                c, _ = self.sock.accept()
            except OSError:
                return
            self.conns.append(c)  # never read past the kernel buffer, never answered

    def __exit__(self, *exc) -> None:
        self.stop = True
        self.sock.close()
        for c in self.conns:
            c.close()


def write_config(path: Path, port: int, verifier_port: int) -> None:
    cfg = yaml.safe_load((ROOT / "configs/serve/reward.yaml").read_text())
    cfg["http_options"]["port"] = port
    pat, reward = cfg["applications"]
    pat["args"]["patternrm"] = {"kind": "rules"}
    reward["args"]["auth"] = {"token_env": "HOWEVAL_REWARD_TOKEN"}
    llm = json.loads(json.dumps(reward))
    llm["name"], llm["route_prefix"] = "reward-llm", "/llm"
    llm["args"]["on_unresolved"] = "llm"
    llm["args"]["llm_verifier"] = {"base_url": f"http://127.0.0.1:{verifier_port}/v1", "model": "hung",
                                   "max_concurrency": 8, "timeout_s": LLM_TIMEOUT_S}
    for d in llm["deployments"]:
        d.pop("autoscaling_config", None)
        d["num_replicas"] = 1
    cfg["applications"] = [pat, reward, llm]
    path.write_text(yaml.safe_dump(cfg, sort_keys=False))


def session_pids(sid: int) -> dict[int, str]:
    out = subprocess.run(["ps", "-eo", "pid=,sid=,args="], capture_output=True, text=True).stdout
    pids = {}
    for line in out.splitlines():
        parts = line.split(None, 2)
        if len(parts) == 3 and int(parts[1]) == sid:
            pids[int(parts[0])] = parts[2]
    return pids


def listeners(sid: int) -> list[dict]:
    pids = session_pids(sid)
    out = subprocess.run(["ss", "-ltnpH"], capture_output=True, text=True).stdout
    rows = []
    for line in out.splitlines():
        f = line.split()
        if len(f) < 6:
            continue
        for pid, cmd in pids.items():
            if f"pid={pid}," in f[5]:
                rows.append({"local": f[3], "pid": pid, "process": cmd.split()[0][:40]})
    return sorted(rows, key=lambda r: r["local"])


def pct(xs: list[float], q: float) -> float:
    if not xs:
        return float("nan")
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(q * (len(xs) - 1))))]


async def normal_client(url: str, seconds: float, kinds=("pattern", "base", "cpr"), path: str = "/v1/rewards",
                        start: int = 0) -> dict:
    lat, codes, degraded, no_reason, reasons, starts = [], {}, 0, 0, {}, []
    stop = time.monotonic() + seconds
    k = start
    async with httpx.AsyncClient(timeout=120) as c:
        while time.monotonic() < stop:
            body = {"items": [item(k, kd, tag=f"n{k}") for kd in kinds]}
            t = time.monotonic()
            r = await c.post(url + path, json=body, headers=AUTH)
            lat.append(time.monotonic() - t)
            starts.append(t)
            codes[r.status_code] = codes.get(r.status_code, 0) + 1
            if r.status_code == 200:
                for row in r.json()["rewards"]:
                    degraded += row["degraded"]
                    no_reason += row["degraded"] and not row["error"]
                    if row["degraded"] and row["error"]:
                        key = row["error"][:70]
                        reasons[key] = reasons.get(key, 0) + 1
            k += 1
    return {"latency": lat, "codes": codes, "degraded_rows": degraded, "degraded_without_reason": no_reason,
            "reasons": reasons, "starts": starts}


def merge(parts: list[dict]) -> dict:
    out = {"latency": [], "codes": {}, "degraded_rows": 0, "degraded_without_reason": 0, "reasons": {}, "starts": []}
    for p in parts:
        out["latency"] += p["latency"]
        out["starts"] += p["starts"]
        for k, v in p["reasons"].items():
            out["reasons"][k] = out["reasons"].get(k, 0) + v
        for k, v in p["codes"].items():
            out["codes"][k] = out["codes"].get(k, 0) + v
        out["degraded_rows"] += p["degraded_rows"]
        out["degraded_without_reason"] += p["degraded_without_reason"]
    return out


def summary(d: dict) -> dict:
    lat = d["latency"]
    return {"requests": len(lat), "p50_s": round(pct(lat, 0.5), 3), "p99_s": round(pct(lat, 0.99), 3),
            "max_s": round(max(lat), 3) if lat else None, "codes": {str(k): v for k, v in sorted(d["codes"].items())},
            "degraded_rows": d["degraded_rows"], "degraded_without_reason": d["degraded_without_reason"],
            "reasons": dict(sorted(d["reasons"].items(), key=lambda kv: -kv[1])[:4])}


async def slow_body(port: int, with_token: bool, stop: float, counts: dict) -> None:
    """Send headers and part of a body, wait for the server's answer, reconnect, until ``stop``."""
    while time.monotonic() < stop:
        try:
            r, w = await asyncio.open_connection("127.0.0.1", port)
            head = ("POST /v1/rewards HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                    "Content-Length: 100000\r\n" + (f"Authorization: Bearer {TOKEN}\r\n" if with_token else "") + "\r\n")
            w.write(head.encode() + b'{"items": [')
            await w.drain()
            line = await asyncio.wait_for(r.readline(), max(0.1, stop - time.monotonic() + 10))
            code = line.split(b" ")[1].decode() if line.count(b" ") >= 1 else "closed"
            counts[code] = counts.get(code, 0) + 1
            w.close()
            await asyncio.sleep(REOPEN_S)  # answered and closed: open the next one
        except (OSError, asyncio.TimeoutError, IndexError):
            counts["error"] = counts.get("error", 0) + 1
            await asyncio.sleep(0.1)


async def attack(port: int, seconds: float) -> dict:
    """100 slow-body connections (every other one with the token) for ``seconds``; the answers they got."""
    counts: dict[str, int] = {}
    stop = time.monotonic() + seconds
    await asyncio.gather(*(slow_body(port, i % 2 == 0, stop, counts) for i in range(100)))
    return counts


async def phase_slow_bodies(url: str, port: int, seconds: float) -> dict:
    # the attackers run in their own process (an attacker is not in the measuring client's event loop)
    proc = await asyncio.create_subprocess_exec(sys.executable, __file__, "--attack", str(port), str(seconds + 2),
                                                stdout=subprocess.PIPE)
    await asyncio.sleep(2.0)  # all 100 connected and waiting
    normal = await normal_client(url, seconds, start=10_000)
    out, _ = await proc.communicate()
    return {"normal": summary(normal), "slow_connection_answers": json.loads(out.decode().strip().splitlines()[-1])}


async def phase_hung_verifier(url: str, seconds: float) -> dict:
    lat, codes, unresolved_rows, named, not_degraded, resolved_ok = [], {}, 0, 0, 0, 0
    stop = time.monotonic() + seconds

    async def client(c: httpx.AsyncClient, n: int) -> None:
        nonlocal unresolved_rows, named, not_degraded, resolved_ok
        k = 0
        while time.monotonic() < stop:
            body = {"items": [unresolved(n * 100_000 + 2 * k), unresolved(n * 100_000 + 2 * k + 1),
                              item(n * 1000 + k, "base"), item(n * 1000 + k + 1, "base")]}
            t = time.monotonic()
            r = await c.post(url + "/llm/v1/rewards", json=body, headers=AUTH)
            lat.append(time.monotonic() - t)
            codes[r.status_code] = codes.get(r.status_code, 0) + 1
            if r.status_code == 200:
                rows = r.json()["rewards"]
                for row in rows[:2]:
                    unresolved_rows += 1
                    named += bool(row["degraded"] and (row["error"] or "").startswith("llm verifier"))
                    not_degraded += not row["degraded"]
                resolved_ok += sum(row["reward"] == 1.0 and not row["degraded"] for row in rows[2:])
            k += 1

    async with httpx.AsyncClient(timeout=120, limits=httpx.Limits(max_connections=64)) as c:
        await asyncio.gather(*(client(c, n) for n in range(32)))
    return {"requests": len(lat), "codes": {str(k): v for k, v in sorted(codes.items())},
            "p50_s": round(pct(lat, 0.5), 3), "p99_s": round(pct(lat, 0.99), 3), "max_s": round(max(lat), 3),
            "unresolved_rows": unresolved_rows, "unresolved_rows_named_llm_verifier": named,
            "unresolved_rows_not_degraded": not_degraded, "resolved_rows_correct": resolved_ok}


def big_cpr_item(chars: int) -> dict:
    n = chars // 3_900
    refs = [f"Reference step {i}: " + ("the table lists two numbers that are added " * 100)[:3_870] for i in range(n)]
    resp = " ".join(f"Sentence {i} restates the sum of two and two." for i in range(4_000))[:150_000] + " \\boxed{4}"
    return {"prompt": "What is 2+2? (big)", "response": resp, "answer": "4", "answer_type": "free_form",
            "kind": "cpr", "reference_steps": refs[:512]}


async def phase_big_cpr(url: str, seconds: float) -> dict:
    async def big(chars: int, delay: float) -> dict:
        await asyncio.sleep(delay)
        body = {"items": [big_cpr_item(chars)]}
        size = len(json.dumps(body))
        t = time.monotonic()
        async with httpx.AsyncClient(timeout=120) as c:
            r = await c.post(url + "/v1/rewards", json=body, headers=AUTH)
        row = r.json()["rewards"][0] if r.status_code == 200 else None
        return {"body_bytes": size, "status": r.status_code, "took_s": round(time.monotonic() - t, 2),
                "degraded": row["degraded"] if row else None, "error": (row or {}).get("error") or (r.text[:160] if not row else None)}

    small = [normal_client(url, seconds, kinds=("cpr", "cpr"), start=20_000 + 1000 * n) for n in range(8)]
    res = await asyncio.gather(big(1_750_000, 3.0), big(2_100_000, 5.0), *small)
    return {"accepted_big": res[0], "refused_big": res[1], "small_clients": summary(merge(list(res[2:])))}


async def phase_kill(url: str, sid: int, seconds: float) -> dict:
    killed = {}

    async def killer() -> None:
        await asyncio.sleep(min(6.0, seconds / 3))
        for pid, cmd in session_pids(sid).items():
            if "ServeReplica:reward:StepScorer" in cmd:
                os.kill(pid, signal.SIGKILL)
                killed[pid] = time.monotonic()

    parts = await asyncio.gather(killer(), *(normal_client(url, seconds, kinds=("cpr", "base"), start=40_000 + 1000 * n)
                                             for n in range(16)))
    m = merge(list(parts[1:]))
    t_kill = min(killed.values()) if killed else float("inf")
    before = [lt for lt, st in zip(m["latency"], m["starts"]) if st + lt < t_kill]
    after = [lt for lt, st in zip(m["latency"], m["starts"]) if st + lt >= t_kill]
    return {"killed_pids": list(killed), "p99_before_kill_s": round(pct(before, 0.99), 3),
            "max_after_kill_s": round(max(after), 3) if after else None, "answered_after_kill": len(after), **summary(m)}


def ingress_replicas(sid: int) -> int:
    return sum("ServeReplica:reward:RewardIngress" in c for c in session_pids(sid).values())


async def watch_replicas(sid: int, stop: asyncio.Event, seen: list[int]) -> None:
    while not stop.is_set():
        seen.append(ingress_replicas(sid))
        await asyncio.sleep(1.0)


def wait_ready(url: str, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            ok = all(httpx.get(url + p, timeout=5).json().get("degraded") is False for p in ("/healthz", "/llm/healthz"))
            if ok:
                return
        except (httpx.HTTPError, ValueError):
            pass
        time.sleep(2)
    raise TimeoutError(f"the server at {url} was not ready within {timeout} s")


async def run_phases(url: str, port: int, sid: int, seconds: float) -> dict:
    out: dict = {}
    out["baseline"] = summary(await normal_client(url, seconds))
    out["slow_bodies"] = await phase_slow_bodies(url, port, seconds)
    out["baseline_after"] = summary(await normal_client(url, seconds / 2, start=5_000))
    stop, seen = asyncio.Event(), []
    watcher = asyncio.ensure_future(watch_replicas(sid, stop, seen))
    out["hung_verifier"] = await phase_hung_verifier(url, seconds)
    out["big_cpr"] = await phase_big_cpr(url, seconds * 1.5)
    out["kill_step_scorer"] = await phase_kill(url, sid, seconds * 1.5)
    stop.set()
    await watcher
    out["autoscale"] = {"ingress_replicas_max": max(seen), "ingress_replicas_samples": len(seen)}
    return out


def goals(r: dict) -> dict[str, bool]:
    base_p99 = (r["baseline"]["p99_s"] + r["baseline_after"]["p99_s"]) / 2
    sb = r["slow_bodies"]["normal"]
    hv = r["hung_verifier"]
    kill = r["kill_step_scorer"]
    return {
        "slow bodies: normal p99 <= 2x baseline p99 (mean of before and after)": sb["p99_s"] <= 2 * base_p99
            and set(sb["codes"]) == {"200"},
        "hung verifier: 0 of its requests 504": hv["codes"].get("504", 0) == 0,
        "hung verifier: every unresolved row degraded with an llm verifier reason":
            hv["unresolved_rows"] > 0 and hv["unresolved_rows_named_llm_verifier"] == hv["unresolved_rows"],
        "big cpr: the 2.1 MB request refused, the others' rows not degraded":
            r["big_cpr"]["refused_big"]["status"] in (413, 422) and r["big_cpr"]["small_clients"]["degraded_rows"] == 0,
        "kill: every request answered 200, each within the failover window of its usual time":
            set(kill["codes"]) == {"200"} and kill["max_after_kill_s"] is not None
            and kill["max_after_kill_s"] <= FAILOVER_S + kill["p99_before_kill_s"],
        "every degraded row names its reason": all(x["degraded_without_reason"] == 0 for x in
                                                   (r["baseline"], sb, r["big_cpr"]["small_clients"], kill)),
        "autoscale: a second ingress replica": r["autoscale"]["ingress_replicas_max"] >= 2,
        "listeners: nothing but Serve replicas' gRPC beyond 127.0.0.1": all(
            x["local"].startswith(("127.0.0.1:", "[::ffff:127.0.0.1]:", "[::1]:")) or "ServeReplica" in x["process"]
            for x in r["listeners"]),
    }


def write_md(path: Path, r: dict, ok: dict[str, bool]) -> None:
    b, sb, hv, bc, k = r["baseline"], r["slow_bodies"], r["hung_verifier"], r["big_cpr"], r["kill_step_scorer"]
    lines = [
        "# Reward server robustness (issue 35)", "",
        f"`make bench-reward-robust` ({r['when']}, {r['machine']}, load average at start {r['load_avg']}; "
        f"{r['seconds']} s per phase; server = `howeval.reward_server.serve_local`, rules PatternRM, Ray on {r['num_cpus']} CPUs).", "",
        "| phase | figures |", "|---|---|",
        f"| baseline (1 client, pattern+base+cpr) | {b['requests']} requests, p50 {b['p50_s']} s, p99 {b['p99_s']} s; "
        f"after the attack: {r['baseline_after']['requests']} requests, p50 {r['baseline_after']['p50_s']} s, "
        f"p99 {r['baseline_after']['p99_s']} s |",
        f"| 100 slow-body connections (50 with token; reopened {REOPEN_S} s after each answer) | normal client: {sb['normal']['requests']} requests, p50 {sb['normal']['p50_s']} s, "
        f"p99 {sb['normal']['p99_s']} s ({sb['normal']['p99_s'] / max((b['p99_s'] + r['baseline_after']['p99_s']) / 2, 1e-9):.2f}x baseline), codes {sb['normal']['codes']}; "
        f"slow connections answered {sb['slow_connection_answers']} |",
        f"| hung LLM verifier, 32 clients | {hv['requests']} requests, codes {hv['codes']}, p50 {hv['p50_s']} s, p99 {hv['p99_s']} s, "
        f"max {hv['max_s']} s (verifier timeout_s {LLM_TIMEOUT_S}, failover {FAILOVER_S} s); unresolved rows {hv['unresolved_rows']}, "
        f"named `llm verifier: ...` {hv['unresolved_rows_named_llm_verifier']}; resolved rows correct {hv['resolved_rows_correct']} |",
        f"| 1.9 MB + 2.1 MB cpr requests beside 8 cpr clients | accepted: {bc['accepted_big']}; refused: {bc['refused_big']}; "
        f"small clients: {bc['small_clients']} |",
        f"| StepScorer replica SIGKILLed under 16 cpr clients | {k} |",
        f"| autoscaling | most RewardIngress replicas seen: {r['autoscale']['ingress_replicas_max']} |",
        f"| listeners beyond 127.0.0.1 | {[x for x in r['listeners'] if not x['local'].startswith(('127.0.0.1:', '[::ffff:127.0.0.1]:'))]} |",
        "", "Goals:", "",
    ] + [f"- {'met' if v else 'MISSED'}: {k_}" for k_, v in ok.items()] + [""]
    path.write_text("\n".join(lines))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=20.0)
    ap.add_argument("--num-cpus", type=int, default=4)
    ap.add_argument("--out", default="bench/results/reward_robustness.md")
    ap.add_argument("--json", default="bench/results/reward_robustness.json")
    ap.add_argument("--attack", nargs=2, metavar=("PORT", "SECONDS"), help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.attack:  # the slow-body attackers' process (phase 2)
        print(json.dumps(asyncio.run(attack(int(args.attack[0]), float(args.attack[1])))))
        return 0
    port = free_port()
    run_dir = ROOT / "runs" / "bench_robustness"
    run_dir.mkdir(parents=True, exist_ok=True)
    with HungVerifier() as hung:
        cfg = run_dir / "serve.yaml"
        write_config(cfg, port, hung.port)
        env = {**os.environ, "HOWEVAL_REWARD_TOKEN": TOKEN}
        log = open(run_dir / "serve.log", "w")
        proc = subprocess.Popen([sys.executable, "-m", "howeval.reward_server.serve_local", str(cfg), "--num-cpus", str(args.num_cpus)],
                                cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        url = f"http://127.0.0.1:{port}"
        try:
            wait_ready(url, 600)
            result = {"when": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "machine": f"{platform.machine()}, "
                      f"{os.cpu_count()} cores", "load_avg": round(os.getloadavg()[0], 1), "seconds": args.seconds,
                      "num_cpus": args.num_cpus, "listeners": listeners(proc.pid)}
            result.update(asyncio.run(run_phases(url, port, proc.pid, args.seconds)))
        finally:
            proc.send_signal(signal.SIGINT)
            try:
                proc.wait(60)
            except subprocess.TimeoutExpired:
                proc.terminate()
                proc.wait(30)
            log.close()
    ok = goals(result)
    result["goals"] = ok
    Path(args.json).write_text(json.dumps(result, indent=1, default=str))
    write_md(Path(args.out), result, ok)
    print(Path(args.out).read_text())
    return 0 if all(ok.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
