"""One worker of tests/cpu/training/test_pcgrad.py's two-process PCGrad check (gloo, CPU): a module of its own
so that ``torch.multiprocessing.spawn`` can import it (the test modules are loaded by pytest's importlib mode).

Each rank holds a DDP-wrapped ``Linear(4, 1, bias=False)`` and half of a 4-row batch; task k's loss is the local
mean of ``a_k[i] · (w · x_i)`` (a policy-gradient surrogate: per-row advantage times a score), so its gradient is
the local mean of ``a_k[i] · x_i``. The rank takes the PCGrad update as the trainer does (component losses under
``no_sync()``, :func:`howeval.training.pcgrad.all_reduce_mean` before the projection, the surrogate's backward
outside ``no_sync()``) and saves its ``.grad``, its local component gradients, its stats and how many buckets
DDP all-reduced (a counting comm hook).
"""
from __future__ import annotations

import torch

X = torch.tensor([[1.0, 0.0, 0.0, 2.0], [0.0, 1.0, 0.0, -1.0], [1.0, 1.0, 1.0, 0.0], [0.0, -1.0, 2.0, 1.0]])
A = torch.tensor([[1.0, 1.0, 2.0, -1.0],     # task 0's advantage per row
                  [1.0, -1.0, -3.0, 1.0]])   # task 1's
W0 = torch.tensor([[0.5, -0.25, 0.125, 1.0]])


def component_grads(rows: slice) -> list[torch.Tensor]:
    """Task k's gradient on ``X[rows]``: mean_i a_k[i]·x_i (flat, (4,))."""
    return [(A[k, rows, None] * X[rows]).mean(dim=0) for k in range(A.shape[0])]


def exit_without_finalizing() -> None:
    """End a rank that finished (its results saved, its process group destroyed) with ``os._exit(0)``, skipping
    the interpreter's finalization. A Gloo worker thread may still release its last finished work there (the
    barrier of ``destroy_process_group``, an all-reduce), and that work's destructor takes the GIL to drop a
    Python reference: during finalization the thread is unwound inside a noexcept destructor and the rank dies of
    SIGABRT ("terminate called without an active exception") after its results are on disk, about 1 run in 10 on
    a loaded 2-core machine (a core dump showed ``ProcessGroupGloo::runLoop`` -> ``~AsyncWork`` -> ``take_gil`` ->
    ``pthread_exit``; pytorch/pytorch#179291 describes the same race). Only on the success path: a rank that
    raised still ends through ``torch.multiprocessing.spawn``'s error handling."""
    import os
    import sys

    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


def worker(rank: int, world: int, init_file: str, out_dir: str) -> None:
    import torch.distributed as dist
    from torch.distributed.algorithms.ddp_comm_hooks.default_hooks import allreduce_hook
    from torch.nn.parallel import DistributedDataParallel as DDP

    from howeval.training.pcgrad import all_reduce_mean, projected_gradient, surrogate_loss

    dist.init_process_group("gloo", init_method=f"file://{init_file}", rank=rank, world_size=world)
    try:
        lin = torch.nn.Linear(4, 1, bias=False)
        with torch.no_grad():
            lin.weight.copy_(W0)
        model = DDP(lin)
        buckets = []

        def counting_hook(state, bucket):
            buckets.append(bucket.index())
            return allreduce_hook(state, bucket)

        model.register_comm_hook(None, counting_hook)
        per = X.shape[0] // world
        rows = slice(rank * per, (rank + 1) * per)
        params = [p for p in model.parameters() if p.requires_grad]

        def losses():
            for k in range(A.shape[0]):
                yield (A[k, rows] * model(X[rows]).squeeze(1)).mean()

        with model.no_sync():  # as PCGradGRPOTrainer.compute_loss: several forwards, no armed reducer
            total, stats, values = projected_gradient(losses(), params, reduce=all_reduce_mean)
        surrogate_loss(torch.stack(values).sum(), total, params).backward()  # outside no_sync, as Trainer's backward
        torch.save({"grad": lin.weight.grad.detach().clone().reshape(-1), "total": total,
                    "local": component_grads(rows), "stats": (stats.conflicts, stats.cos_before, stats.cos_after),
                    "buckets_after_pcgrad": len(buckets)}, f"{out_dir}/rank{rank}.pt")
        lin.weight.grad = None  # then a plain DDP step: the reducer works as usual and the hook counts its buckets
        model(X[rows]).sum().backward()
        torch.save({"buckets_after_plain": len(buckets)}, f"{out_dir}/rank{rank}.plain.pt")
    finally:
        dist.destroy_process_group()
    exit_without_finalizing()


SEEN_PROMPTS: list[str] = []  # the prompts this rank's reward functions scored


def _length(completions, prompts=None, **_):
    SEEN_PROMPTS.extend(p[-1]["content"] for p in prompts or [])
    return [float(len(c[0]["content"])) for c in completions]


def _neg_half_length(completions, **_):
    return [-x / 2 for x in [float(len(c[0]["content"])) for c in completions]]


def _half_length(completions, **_):
    return [x / 2 for x in [float(len(c[0]["content"])) for c in completions]]


def trainer_worker(rank: int, world: int, init_file: str, out_dir: str) -> None:
    """One rank of a real TRL GRPO step with ``PCGradGRPOTrainer`` on the tiny LM, DDP over gloo as accelerate
    sets it up (``MULTI_CPU``, the process group already initialized as Ray Train leaves it). Two runs, each one
    step: components opposed (B = −A/2) with β = 0, then aligned (B = A/2) with β = 0.04. Saves, per run, the
    PCGrad log line, the wrapper's class, accelerate's distributed type and the flat parameters after the step.
    Each rank gets its own prompt: the step takes both rows, TRL's sampler gives each rank one (4 generations)."""
    import os
    import warnings

    import torch.distributed as dist

    torch.set_num_threads(1)
    os.environ.update(RANK=str(rank), WORLD_SIZE=str(world), LOCAL_RANK=str(rank), LOCAL_WORLD_SIZE=str(world),
                      MASTER_ADDR="127.0.0.1", OMP_NUM_THREADS="1")
    dist.init_process_group("gloo", init_method=f"file://{init_file}", rank=rank, world_size=world)
    try:
        from transformers import AutoModelForCausalLM

        from datasets import Dataset
        from howeval.engines.tiny_vlm import tiny_lm_checkpoint
        from howeval.training.config import build_grpo_args
        from howeval.training.pcgrad import pcgrad_trainer_class

        out = {}
        for name, funcs, beta in (("opposed", [_length, _neg_half_length], 0.0), ("aligned", [_length, _half_length], 0.04)):
            args = build_grpo_args(dict(max_steps=1, per_device_train_batch_size=4, num_generations=4,
                                        max_completion_length=8, learning_rate=1e-2, beta=beta, logging_steps=1,
                                        save_strategy="no", use_cpu=True, report_to="none", disable_tqdm=True, seed=0,
                                        dataloader_num_workers=0), f"{out_dir}/r{rank}-{name}")
            data = Dataset.from_list([{"prompt": [{"role": "user", "content": q}]}
                                      for q in ("What is 2+2?", "Name a colour.")])  # 2 prompts: one per rank
            SEEN_PROMPTS.clear()
            model = AutoModelForCausalLM.from_pretrained(tiny_lm_checkpoint())
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                tr = pcgrad_trainer_class()(model=model, reward_funcs=funcs, args=args, train_dataset=data)
                tr.train()
            out[name] = {"log": next(h for h in tr.state.log_history if "pcgrad/conflicts" in h),
                         "wrapper": type(tr.model_wrapped).__name__, "distributed": tr.accelerator.distributed_type.value,
                         "processes": tr.accelerator.num_processes, "prompts": sorted(set(SEEN_PROMPTS)),
                         "params": torch.cat([p.detach().reshape(-1) for p in tr.model.parameters()])}
        torch.save(out, f"{out_dir}/trainer.rank{rank}.pt")
    finally:
        dist.destroy_process_group()
    exit_without_finalizing()
