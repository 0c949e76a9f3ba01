"""Where the CPU goes while the sweep generates (issue 43): one run of ``bench/peers_bench.py``'s pipeline contender at
N prompts while every process's CPU time is sampled each second (psutil); prints and writes the CPU seconds each
process used between the engine's first request and its last answer (``per_process``), and in each phase of the run
(``by_phase``: start-up to the first request, generation, after the last answer).

    RAY_worker_niceness=0 VLLM_CPU_KVCACHE_SPACE=4 nice -n 10 .venv-vllm/bin/python bench/peers_cpu_share.py 168 out.json

On a 2-core machine the CPU engine's OpenMP threads share the cores with Ray's own processes (the driver's
executor, Ray Data's and the sweep's small actors, the raylet, GCS and agents); this measures their share.
"""
import json
import os
import sys
import tempfile
import threading
import time
from pathlib import Path

import psutil

sys.path.insert(0, str(Path(__file__).resolve().parent))
import peers_bench as pb  # noqa: E402

from howeval.timing import read_marks  # noqa: E402


def sample(samples: list, stop: threading.Event) -> None:
    """Append ``(t, pid, command line, CPU seconds)`` for every process, once a second, until ``stop``."""
    while not stop.is_set():
        t = time.time()
        for p in psutil.process_iter(["pid", "cmdline", "name", "cpu_times"]):
            c = p.info["cpu_times"]
            if c is not None:
                samples.append((t, p.info["pid"], " ".join(p.info["cmdline"] or [p.info["name"] or ""])[:100],
                                c.user + c.system))
        stop.wait(1.0)


def cpu_used(samples: list, a: float, b: float) -> dict:
    """CPU seconds each process used between times ``a`` and ``b`` from :func:`sample`'s rows, keyed by pid (a
    Ray worker renames itself: ``ray::IDLE`` becomes ``ray::MapWorker...``; the last name seen is kept). A
    process first seen inside the window counts from 0 (it was born there). ``{"window_s", "cpu_s_available",
    "cpu_s_used", "per_process": [{"cpu_s", "process"}] (most first)}``."""
    before: dict = {}
    last: dict = {}
    name: dict = {}
    for t, pid, nm, cpu in samples:
        if t < a:
            before[pid] = cpu
        elif t <= b:
            last[pid] = cpu
            name[pid] = nm
    used = sorted(((round(last[p] - before.get(p, 0.0), 2), name[p]) for p in last if last[p] > before.get(p, 0.0)),
                  reverse=True)
    return {"window_s": round(b - a, 1), "cpu_s_available": round((os.cpu_count() or 1) * (b - a), 1),
            "cpu_s_used": round(sum(u for u, _ in used), 1), "per_process": [{"cpu_s": u, "process": k} for u, k in used]}


def main(argv: list[str]) -> int:
    n, out_path = int(argv[0]), Path(argv[1])
    os.environ.setdefault("VLLM_CPU_OMP_THREADS_BIND", f"0-{(os.cpu_count() or 1) - 1}")
    os.environ.setdefault("VLLM_CPU_KVCACHE_SPACE", "4")
    os.environ.setdefault("RAY_worker_niceness", "0")
    tmp = Path(tempfile.mkdtemp(prefix="cpu-share-"))
    _, m = pb.model_config()
    files = pb.prompt_files(n, tmp, m.model)
    samples: list = []
    stop = threading.Event()
    th = threading.Thread(target=sample, args=(samples, stop), daemon=True)
    th.start()
    run = pb.one_run("pipeline", n, files, tmp, "run")
    stop.set()
    th.join()
    marks = read_marks(str(tmp / "run" / "marks.jsonl"))
    t0 = min(x["t"] for x in marks if x["event"] == "first_request")
    t1 = max(x["t"] for x in marks if x["event"] == "answers")
    # processes alive at the first sample (this script, the machine's own) count from that sample, not from 0
    windows = {"start_up": (samples[0][0] + 1e-6, t0), "generation": (t0, t1), "after_last_answer": (t1, samples[-1][0])}
    phases = {k: cpu_used(samples, a, b) for k, (a, b) in windows.items()}
    res = {"prompts": n, **phases["generation"], "by_phase": phases, "run": {k: v for k, v in run.items() if k != "outputs"}}
    out_path.write_text(json.dumps(res, indent=1))
    print(json.dumps({k: v for k, v in res.items() if k not in ("per_process", "run", "by_phase")}))
    for k, ph in phases.items():
        print(f"{k}: {ph['cpu_s_used']} of {ph['cpu_s_available']} CPU-s in {ph['window_s']} s")
        for x in ph["per_process"][:12]:
            print(f"  {x['cpu_s']:7.2f}  {x['process']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
