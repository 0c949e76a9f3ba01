"""The sweep on a Ray cluster that is already running, against lmms-eval (issue 43): ``ray.init`` only connects.

    HOWEVAL_TIMINGS=/tmp/warm-marks.jsonl RAY_worker_niceness=0 VLLM_CPU_OMP_THREADS_BIND=0-1 VLLM_CPU_KVCACHE_SPACE=4 \\
        .venv-vllm/bin/ray start --head --num-cpus 2 --include-dashboard=false --temp-dir /tmp/rt-warm --port 6399
    .venv-vllm/bin/python bench/peers_warm_cluster.py 168 /tmp/warm-marks.jsonl lmms_eval,pipeline,pipeline,lmms_eval \\
        <node ip>:6399 out.json
    # then stop that cluster's processes (those with /tmp/rt-warm in their command line)

The project's own deployment (``ray job submit``, KubeRay) runs a sweep on a running cluster; ``make bench-peers``
starts Ray inside the sweep. Same prompts, model, engine arguments and contenders' code as
``bench/peers_bench.py`` (its functions); the cluster's workers inherit ``HOWEVAL_TIMINGS`` from ``ray start``,
so one marks file serves every run (each run reads the marks after its own start). The driver sets
``RAY_AUTH_MODE=token`` (Ray 2.60's token auth, the token in ``~/.ray/auth_token``). Prints one line per run and
whether the outputs are the same text per prompt; writes the runs (outputs left out) to the last argument.
"""
import json
import os
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
os.environ.setdefault("VLLM_CPU_OMP_THREADS_BIND", f"0-{os.cpu_count() - 1}")
os.environ.setdefault("VLLM_CPU_KVCACHE_SPACE", "4")
os.environ.setdefault("RAY_worker_niceness", "0")

import peers_bench as pb  # noqa: E402


def main(argv: list[str]) -> int:
    n, marks_file, order, address, out_path = int(argv[0]), argv[1], argv[2].split(","), argv[3], argv[4]
    tmp = Path(tempfile.mkdtemp(prefix="warm-"))
    _, m = pb.model_config()
    files = pb.prompt_files(n, tmp, m.model)
    out = []
    for i, c in enumerate(order):
        if c == "lmms_eval":
            r = pb.one_run("lmms_eval", n, files, tmp, f"l{i}")
        else:
            r = pb.one_run("pipeline", n, files, tmp, f"p{i}", marks_file=Path(marks_file),
                           env_extra={"RAY_ADDRESS": address, "RAY_TMPDIR": "/tmp/rt-warm", "RAY_AUTH_MODE": "token"})
            r["contender"] = "pipeline_warm_cluster"
        out.append(r)
        print(r["contender"], r["wall_s"], r["generation_s"],
              {k: (round(v, 2) if v is not None else None) for k, v in r["phases"].items()}, flush=True)
    print("identical", all(o["outputs"] == out[0]["outputs"] for o in out))
    Path(out_path).write_text(json.dumps([{k: v for k, v in o.items() if k != "outputs"} for o in out], indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
