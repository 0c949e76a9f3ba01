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
