"""PCGrad (Projected Conflicting Gradients; Yu et al., "Gradient Surgery for Multi-Task Learning", NeurIPS 2020)
for GRPO over a reward's components.

CRYSTAL (arXiv 2603.13099, "Loss function / training strategy"): "PCGrad (Projected Conflicting Gradients)
detects and projects conflicting gradients, so that the accuracy objective and the reasoning-quality
objective do not interfere". Here each reward component (``howeval.rewards.functions.reward_components``:
``accuracy`` and ``reasoning`` for cpr / composite, ``accuracy`` and ``pattern`` for pattern) is one task:

- :func:`project_conflicting`: the surgery on flat gradient vectors (pure; no trainer);
- :func:`component_advantages`: one GRPO advantage per component, normalized within each prompt's group as
  TRL normalizes the summed reward;
- :func:`projected_gradient`: the per-component gradients of a set of losses, averaged over the data-parallel
  processes (``reduce``), projected, summed; :func:`surrogate_loss` turns that vector into a loss whose
  gradient it is; :func:`all_reduce_mean` is the ``reduce`` of a ``torch.distributed`` process group;
- :class:`PCGradGRPOTrainer` (built by :func:`pcgrad_trainer_class`, TRL imported lazily): TRL's
  ``GRPOTrainer`` whose loss gradient is the sum of the projected per-component policy gradients, in one
  process or several (DDP).

Several processes (DDP: Ray Train's ``TorchTrainer`` workers, set up by accelerate inside TRL): PCGrad's
projection is not linear, so projecting each process's local gradients and letting DDP average the results is
not PCGrad of the batch. Here each component's flat gradient is averaged over the processes first (one
``all_reduce`` per component), every process projects the same global vectors and gets the same update, the
one a single process would compute on the whole batch. The component forwards run under DDP's ``no_sync`` and
the gradients are taken with ``torch.autograd.grad``, so DDP's reducer never arms: the surrogate's backward is
a local one and nothing is averaged twice.

Pure of Ray (``howeval/ray_jobs/train_grpo.py`` builds the trainer).
"""
from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import torch

__all__ = ["PCGradStats", "project_conflicting", "component_advantages", "projected_gradient", "surrogate_loss",
           "all_reduce_mean", "pcgrad_trainer_class"]


@dataclass(frozen=True)
class PCGradStats:
    """What one projection did: ``conflicts`` = ordered pairs (i, j) with g_i·g_j < 0 met while projecting;
    ``cos_before`` / ``cos_after`` = the smallest pairwise cosine among the task gradients before and after
    (0.0 when a gradient is zero; 1.0 with fewer than two tasks)."""

    conflicts: int
    cos_before: float
    cos_after: float


def _min_cos(grads: Sequence[torch.Tensor]) -> float:
    out = 1.0
    for i in range(len(grads)):
        for j in range(i + 1, len(grads)):
            ni, nj = grads[i].norm(), grads[j].norm()
            c = 0.0 if ni == 0 or nj == 0 else float(torch.dot(grads[i], grads[j]) / (ni * nj))
            out = min(out, c)
    return out


def project_conflicting(grads: Sequence[torch.Tensor], order: Sequence[Sequence[int]] | None = None,
                        ) -> tuple[list[torch.Tensor], PCGradStats]:
    """PCGrad's projection (Yu et al. 2020, Algorithm 1) of K task gradients.

    For each task i, over the other tasks j (in ``order[i]``, default ascending index):
    when g_i^PC · g_j < 0, g_i^PC ← g_i^PC − (g_i^PC · g_j) / ‖g_j‖² · g_j, with g_j the *original* gradient of
    task j. A task whose gradient conflicts with no other is returned unchanged. With two tasks the result
    satisfies g_1^PC · g_2 ≥ 0 and g_2^PC · g_1 ≥ 0 (= 0 up to rounding where they conflicted). The update is
    then the sum of the projected gradients (the caller sums).

    Args:
        grads: K 1-D tensors of one shape (K >= 1), the flattened per-task gradients.
        order: per task, the other tasks' indices in the order to project against (the paper shuffles them
            each step; a deterministic order keeps runs reproducible). None = ascending.

    Returns:
        (the K projected gradients, new tensors; :class:`PCGradStats`).

    Raises:
        ValueError: no gradients, a gradient not 1-D, shapes differ, or ``order`` names a bad index.

    >>> g, s = project_conflicting([torch.tensor([1.0, 0.0]), torch.tensor([-1.0, 1.0])])
    >>> g[0].tolist(), g[1].tolist(), s.conflicts
    ([0.5, 0.5], [0.0, 1.0], 2)
    """
    if not grads:
        raise ValueError("project_conflicting: no gradients given (need one per task)")
    shape = grads[0].shape
    for k, g in enumerate(grads):
        if g.dim() != 1 or g.shape != shape:
            raise ValueError(f"grads[{k}]: shape {tuple(g.shape)}; every task gradient must be 1-D of shape {tuple(shape)}")
    n = len(grads)
    if order is None:
        order = [[j for j in range(n) if j != i] for i in range(n)]
    if len(order) != n:
        raise ValueError(f"order: {len(order)} lists for {n} tasks")
    sq = [torch.dot(g, g) for g in grads]
    out, conflicts = [], 0
    for i in range(n):
        gi = grads[i].clone()
        for j in order[i]:
            if j == i or not 0 <= j < n:
                raise ValueError(f"order[{i}]: {j} is not another task's index (0..{n - 1})")
            d = torch.dot(gi, grads[j])
            if d < 0 and sq[j] > 0:
                gi = gi - (d / sq[j]) * grads[j]
                conflicts += 1
        out.append(gi)
    return out, PCGradStats(conflicts, _min_cos(grads), _min_cos(out))


def all_reduce_mean(flat: torch.Tensor) -> torch.Tensor:
    """The mean of ``flat`` over the processes of ``torch.distributed``'s default group, in place (sum
    ``all_reduce``, then divided by the world size: gloo has no AVG); ``flat`` unchanged when no group is
    initialized or it has one process. Every process must call it, in the same order, with the same shape.

    Returns:
        ``flat`` itself (reduced).
    """
    import torch.distributed as dist

    if dist.is_available() and dist.is_initialized() and dist.get_world_size() > 1:
        dist.all_reduce(flat, op=dist.ReduceOp.SUM)
        flat.div_(dist.get_world_size())
    return flat


def projected_gradient(losses: Iterable[torch.Tensor], params: Sequence[torch.Tensor], *,
                       reduce: Callable[[torch.Tensor], torch.Tensor] | None = None,
                       regularizer: Callable[[], torch.Tensor] | None = None,
                       order: Sequence[Sequence[int]] | None = None,
                       ) -> tuple[torch.Tensor, PCGradStats, list[torch.Tensor]]:
    """The PCGrad update of K task losses over ``params``: Σ_k PCGrad(ḡ_k) + ḡ_reg, flat.

    ḡ_k = ``reduce``(∇ loss_k), the gradient of task k averaged over the data-parallel processes (each
    process's loss being its local mean, as DDP assumes), so that the projection (:func:`project_conflicting`)
    acts on the global gradients and gives every process the same vector; ḡ_reg = ``reduce``(∇ regularizer()),
    added unprojected (the KL term). Each loss is differentiated with ``torch.autograd.grad`` as soon as it is
    drawn from ``losses`` (a generator keeps one graph alive at a time); ``.grad`` is not touched. With a DDP
    model, draw the losses under its ``no_sync()``: the reducer then expects no backward.

    Args:
        losses: K scalar losses (K >= 1), each depending on ``params``.
        params: the trained parameters (a parameter a loss does not reach gets a zero gradient).
        reduce: the mean over processes of a flat gradient (:func:`all_reduce_mean`; it may work in place);
            None = one process.
        regularizer: a callable returning a scalar loss whose gradient is added after the projection; None =
            none.
        order: as in :func:`project_conflicting`.

    Returns:
        (the flat update, a 1-D tensor of Σ numel(params) elements; :class:`PCGradStats` of the projection of the
        global gradients; the detached loss values, the K task losses then the regularizer's, local).

    Raises:
        ValueError: ``losses`` is empty.
    """
    grads, values = [], []
    for loss in losses:
        grads.append(_flat(torch.autograd.grad(loss, params, allow_unused=True), params))
        values.append(loss.detach())
    if reduce is not None:
        grads = [reduce(g) for g in grads]
    projected, stats = project_conflicting(grads, order)
    total = torch.stack(projected).sum(dim=0)
    del grads, projected
    if regularizer is not None:
        reg = regularizer()
        g = _flat(torch.autograd.grad(reg, params, allow_unused=True), params)
        total = total + (g if reduce is None else reduce(g))
        values.append(reg.detach())
    return total, stats, values


def surrogate_loss(value: torch.Tensor, update: torch.Tensor, params: Sequence[torch.Tensor]) -> torch.Tensor:
    """A scalar equal to ``value`` whose gradient with respect to ``params`` is ``update`` (flat, as from
    :func:`projected_gradient`): ``value + Σ p·u − (Σ p·u).detach()``. Its backward only adds ``update`` into
    each ``.grad`` (no forward to redo); under DDP it triggers no gradient sync when the last forward ran
    under ``no_sync()``."""
    lin = sum((p * u).sum() for p, u in zip(params, _unflat(update, params)))
    return value.detach() + lin - lin.detach()


def component_advantages(rewards: torch.Tensor, num_generations: int, scale: str = "group") -> torch.Tensor:
    """GRPO advantages of each reward component: ``(r_k − mean of its group) / (std of its group + 1e-4)``.

    The normalization of TRL's ``GRPOTrainer`` (``scale_rewards``: ``group`` divides by the group's std,
    ``batch`` by the whole batch's, ``none`` not at all), applied to each component column instead of the
    summed reward, so each task's policy gradient is a GRPO gradient of its own. NaN rewards (unscorable
    rows) get advantage 0.

    Args:
        rewards: (N, K) float tensor, N = prompts × num_generations, the rows of one prompt consecutive.
        num_generations: G, rows per prompt (N must be a multiple of it).

    Returns:
        (N, K) advantages.

    >>> component_advantages(torch.tensor([[1.0, 0.0], [0.0, 0.0]]), 2, scale="none").tolist()
    [[0.5, 0.0], [-0.5, 0.0]]
    """
    if rewards.dim() != 2 or rewards.shape[0] % num_generations:
        raise ValueError(f"rewards: shape {tuple(rewards.shape)}; need (N, K) with N a multiple of num_generations={num_generations}")
    if scale not in ("group", "batch", "none"):
        raise ValueError(f"scale={scale!r} must be 'group', 'batch' or 'none' (TRL's scale_rewards)")
    n, k = rewards.shape
    grouped = rewards.view(-1, num_generations, k)
    mean = torch.nanmean(grouped, dim=1, keepdim=True)
    adv = (grouped - mean).view(n, k)
    if scale == "group" and num_generations > 1:
        std = _nanstd(grouped, dim=1).repeat_interleave(num_generations, dim=0)
        adv = adv / (std + 1e-4)
    elif scale == "batch" and n > 1:
        adv = adv / (_nanstd(rewards, dim=0).unsqueeze(0) + 1e-4)
    return torch.nan_to_num(adv, nan=0.0)


def _nanstd(x: torch.Tensor, dim: int) -> torch.Tensor:
    """Sample std (Bessel) ignoring NaN, as TRL's ``nanstd``."""
    mean = torch.nanmean(x, dim=dim, keepdim=True)
    var = torch.nanmean((x - mean) ** 2, dim=dim)
    count = (~torch.isnan(x)).sum(dim=dim)
    return torch.sqrt(var * count / (count - 1).clamp(min=1))


def pcgrad_trainer_class() -> type:
    """``PCGradGRPOTrainer``: TRL's ``GRPOTrainer`` with PCGrad over the reward functions as tasks.

    Built lazily (TRL is imported here). Give it one reward function per component
    (``howeval.training.rewards.ComponentRewards.functions``): TRL's summed reward, its logged ``reward`` and its
    advantages stay as they are; in training, each micro-batch's loss gradient is replaced by

        Σ_k PCGrad(g_k) + g_KL,

    g_k = ∇ of TRL's GRPO loss with the advantages of component k (:func:`component_advantages`) and β = 0,
    g_KL = ∇ of the β·KL term alone (present when ``beta`` > 0): the KL to the reference is a regularizer,
    not a task, and is never projected. The returned loss *value* is the sum of the component losses plus the
    KL loss (what Trainer logs as ``loss``). Per step it logs ``pcgrad/conflicts`` (pairs projected, summed
    over micro-batches and averaged over the log window), ``pcgrad/cos_before`` and ``pcgrad/cos_after``
    (smallest pairwise cosine of the component gradients).

    Several processes (DDP, as accelerate sets it up for TRL): the component forwards run under
    ``accelerator.no_sync(model)`` and each component's gradient is averaged over the processes
    (:func:`all_reduce_mean`) before the projection (:func:`projected_gradient`), so every process applies the
    update one process would compute on the whole batch and DDP's own sync never runs (its reducer is armed
    only by a forward outside ``no_sync``). The logged figures are those of the global gradients, the same on
    every process. Not DeepSpeed / FSDP (the parameters and gradients are sharded inside the engine);
    ``howeval.training.config`` refuses them at load.
    """
    from trl import GRPOTrainer

    class PCGradGRPOTrainer(GRPOTrainer):
        def _calculate_rewards(self, inputs, prompts, completions, completion_ids_list):
            rewards_per_func = super()._calculate_rewards(inputs, prompts, completions, completion_ids_list)
            self._pcgrad_rewards = rewards_per_func  # gathered (N, K), all processes
            return rewards_per_func

        def _generate_and_score_completions(self, inputs):
            out = super()._generate_and_score_completions(inputs)
            if self.model.training:
                mode_g = self.num_generations
                adv = component_advantages(self._pcgrad_rewards, mode_g, self.scale_rewards)
                n = len(out["advantages"])
                start = self.accelerator.process_index * n
                out["component_advantages"] = adv[start:start + n].to(out["advantages"].device)
            return out

        def compute_loss(self, model, inputs, return_outputs=False, num_items_in_batch=None):
            if not model.training or "component_advantages" not in inputs:
                return super().compute_loss(model, inputs, return_outputs, num_items_in_batch)
            params = [p for p in model.parameters() if p.requires_grad]
            comp = inputs["component_advantages"]
            beta = self.beta

            def component_losses():
                try:
                    self.beta = 0.0  # the component losses are policy terms only
                    for k in range(comp.shape[1]):
                        yield super(PCGradGRPOTrainer, self).compute_loss(model, {**inputs, "advantages": comp[:, k]})
                finally:
                    self.beta = beta

            def kl_loss():  # the KL term alone: zero advantages, the configured beta
                return super(PCGradGRPOTrainer, self).compute_loss(
                    model, {**inputs, "advantages": torch.zeros_like(comp[:, 0])})

            reduce = all_reduce_mean if self.accelerator.num_processes > 1 else None
            # no_sync: DDP's reducer stays unarmed, so several forwards before one backward are allowed and the
            # surrogate's backward below adds the (already global) update to .grad without a second average
            with self.accelerator.no_sync(model):
                total, stats, losses = projected_gradient(component_losses(), params, reduce=reduce,
                                                          regularizer=kl_loss if beta != 0.0 else None)
            m = self._metrics["train"]
            m["pcgrad/conflicts"].append(float(stats.conflicts))
            m["pcgrad/cos_before"].append(stats.cos_before)
            m["pcgrad/cos_after"].append(stats.cos_after)
            # a surrogate whose gradient is `total` and whose value is the summed loss: Trainer's backward and
            # its loss logging stay TRL's own
            return surrogate_loss(torch.stack(losses).sum(), total, params)

    return PCGradGRPOTrainer


def _flat(grads: Sequence[Any], params: Sequence[torch.Tensor]) -> torch.Tensor:
    return torch.cat([(torch.zeros_like(p) if g is None else g).reshape(-1) for g, p in zip(grads, params)])


def _unflat(flat: torch.Tensor, params: Sequence[torch.Tensor]) -> list[torch.Tensor]:
    out, i = [], 0
    for p in params:
        out.append(flat[i:i + p.numel()].view_as(p))
        i += p.numel()
    return out
