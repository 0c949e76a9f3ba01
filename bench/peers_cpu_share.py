"""Where the CPU goes while the sweep generates (issue 43): one run of ``bench/peers_bench.py``'s pipeline contender at
N prompts while every process's CPU time is sampled each second (psutil); prints and writes the CPU seconds each
process used between the engine's first request and its last answer.

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

sys.path.insert(0, str(Path(__file__).resolve().parent))
os.environ.setdefault("VLLM_CPU_OMP_THREADS_BIND", f"0-{os.cpu_count() - 1}")
os.environ.setdefault("VLLM_CPU_KVCACHE_SPACE", "4")
os.environ.setdefault("RAY_worker_niceness", "0")

import peers_bench as pb  # noqa: E402
import psutil  # noqa: E402

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


def main(argv: list[str]) -> int:
    n, out_path = int(argv[0]), Path(argv[1])
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
    first: dict = {}
    last: dict = {}
    for t, pid, name, cpu in samples:
        if t0 <= t <= t1:
            first.setdefault((pid, name), cpu)
            last[(pid, name)] = cpu
    used = sorted(((round(last[k] - first[k], 2), k[1]) for k in first if last[k] > first[k]), reverse=True)
    res = {"prompts": n, "window_s": round(t1 - t0, 1), "cpu_s_available": round(os.cpu_count() * (t1 - t0), 1),
           "cpu_s_used": round(sum(u for u, _ in used), 1), "per_process": [{"cpu_s": u, "process": k} for u, k in used],
           "run": {k: v for k, v in run.items() if k != "outputs"}}
    out_path.write_text(json.dumps(res, indent=1))
    print(json.dumps({k: v for k, v in res.items() if k not in ("per_process", "run")}))
    for u, k in used[:20]:
        print(f"{u:7.2f}  {k}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
