"""The reward server from other RL frameworks, each in its own calling convention (issue 40).

- **veRL**: :func:`compute_score`, a custom reward function. veRL loads it by
  ``custom_reward_function.path=<this file>`` and ``custom_reward_function.name=compute_score`` and calls it
  per rollout as ``compute_score(data_source=..., solution_str=..., ground_truth=..., extra_info=...,
  **custom_reward_function.reward_kwargs)`` (volcengine/verl commit b178a3cd56f58b2d502255daba591e92833930a7:
  ``verl/trainer/ppo/reward.py`` ``get_custom_reward_fn``, ``verl/workers/reward_manager/naive.py``);
  ``solution_str`` is the response decoded alone, so no prompt text reaches the verifier. A returned dict's
  ``score`` is the reward and its other keys go to veRL's ``reward_extra_info`` (logged).
- **TRL**: :class:`RemoteReward`, a ``reward_funcs`` entry: TRL calls it as ``f(prompts=..., completions=...,
  completion_ids=..., <every dataset column>=..., trainer_state=..., log_extra=..., log_metric=...)``
  (``GRPOTrainer._calculate_rewards`` of the installed trl 1.16.0) and wants one float per completion.
- **OpenRLHF** needs no client here: its stock remote reward model client posts ``{query, prompts, labels}``
  with no header to ``--reward.remote_url``; point that at ``/openrlhf/<url token>/get_reward``
  (``docs/reward_server.md``, "OpenRLHF").

Each goes through ``howeval.rewards.client.RewardClient`` (bearer token from ``HOWEVAL_REWARD_TOKEN``,
retries within a deadline, then an exception: never a made-up reward).
"""
from __future__ import annotations

import functools
import os
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from howeval.rewards.client import RewardClient
from howeval.rewards.logs import log_fields
from howeval.training.rewards import GRPOReward

URL_ENV = "HOWEVAL_REWARD_URL"
"""Where :func:`compute_score` finds the server when ``reward_kwargs`` give no ``url``."""

TRL_ARGS = frozenset({"trainer_state", "log_extra", "log_metric", "completion_ids", "environments"})
"""Keyword arguments TRL adds beside the dataset's columns (trl 1.16.0, ``GRPOTrainer._calculate_rewards``)."""


@functools.lru_cache(maxsize=8)
def _client(url: str, token_env: str) -> RewardClient:
    """One client per server and token per process (veRL calls :func:`compute_score` once per rollout)."""
    return RewardClient(url, token_env=token_env)


def compute_score(data_source: str, solution_str: str, ground_truth: Any, extra_info: Mapping[str, Any] | None = None,
                  url: str | None = None, kind: str = "pattern", answer_type: str = "free_form",
                  token_env: str = "HOWEVAL_REWARD_TOKEN", **_: Any) -> dict[str, float]:
    """veRL custom reward function: one rollout scored by the reward server (``POST /v1/rewards``).

    Configure veRL with ``custom_reward_function.path=<path of this file>``,
    ``custom_reward_function.name=compute_score`` and, optionally, ``+custom_reward_function.reward_kwargs.url=
    http://host:8000`` (else ``$HOWEVAL_REWARD_URL``), ``.kind``, ``.answer_type``; the bearer token comes from
    ``$HOWEVAL_REWARD_TOKEN`` (``token_env``) in the reward workers' environment.

    Args:
        data_source: the dataset's name (veRL's ``reward_fn_key`` column; not used for scoring).
        solution_str: the response, decoded without the prompt (the only text verified).
        ground_truth: the reference answer (``reward_model.ground_truth``): a string or number, or a mapping
            with ``answer`` and optionally ``answer_type``, ``kind``, ``reference_steps``, ``options``.
        extra_info: the row's ``extra_info``; ``question`` (or ``prompt``) is the prompt PatternRM reads and the
            gate key (empty when absent); ``answer_type``, ``reference_steps``, ``options`` per row.
        url, kind, answer_type, token_env: from ``custom_reward_function.reward_kwargs``.

    Returns:
        ``{"score": reward, **howeval.rewards.logs.log_fields(row)}``: the reward (range of the kind: [0, 1]
        for base and pattern, [0, a_w + s_w] for cpr) and the row's figures, every key on every row.

    Raises:
        ValueError: no ``url`` and no ``$HOWEVAL_REWARD_URL``, or an unusable ``ground_truth``.
        howeval.rewards.client.RewardRequestError: the server refused the item (4xx, the field named).
        howeval.rewards.client.RewardServiceError: the server could not answer within the client's deadline.
    """
    url = url or os.environ.get(URL_ENV)
    if not url:
        raise ValueError(f"compute_score: no reward server: give custom_reward_function.reward_kwargs.url "
                         f"(e.g. http://127.0.0.1:8000) or set {URL_ENV}")
    info = dict(extra_info or {})
    item: dict[str, Any] = {"kind": kind, "answer_type": info.get("answer_type") or answer_type}
    if isinstance(ground_truth, Mapping):
        if "answer" not in ground_truth:
            raise ValueError(f"compute_score: ground_truth is a mapping without 'answer' (keys {sorted(ground_truth)})")
        item.update({k: ground_truth[k] for k in ("answer", "answer_type", "kind", "reference_steps", "options")
                     if ground_truth.get(k) is not None})
        item["answer"] = str(item["answer"])
    elif isinstance(ground_truth, str | int | float):
        item["answer"] = str(ground_truth)
    else:
        raise ValueError(f"compute_score: ground_truth must be a string, a number or a mapping with 'answer', "
                         f"got {type(ground_truth).__name__}")
    for k in ("reference_steps", "options"):
        if info.get(k) is not None and k not in item:
            item[k] = list(info[k])
    item["prompt"] = str(info.get("question") or info.get("prompt") or "")
    item["response"] = solution_str
    row = _client(url.rstrip("/"), token_env).score([item])[0]
    return {"score": float(row["reward"]), **log_fields(row)}


class RemoteReward:
    """TRL ``reward_funcs`` entry scoring on the reward server: ``(prompts, completions, **kwargs) -> list[float]``.

    The answer comes from the dataset column ``answer_column`` (TRL passes every column as a keyword); the
    answer type from a column ``answer_type`` when the dataset has one, else ``answer_type``; ``reference_steps``
    and ``options`` columns when present. Scoring, curriculum-free logging (``reward_parts/*`` through TRL's
    ``log_metric``) and the never-None rule are :class:`howeval.training.rewards.GRPOReward`'s; the text
    scored is each completion's (its last assistant message), never the prompt.

    Args:
        url: the reward server's root, e.g. ``http://127.0.0.1:8000``.
        kind: ``base`` | ``pattern`` | ``cpr`` | ``composite``.
        answer_column: the dataset column holding the reference answer.
        answer_type: the verifier answer type when the dataset has no ``answer_type`` column.
        token_env: the env var holding the bearer token.
        scorer: ``list[item] -> list[result]`` instead of the HTTP client (tests).

    Raises (when called):
        ValueError: TRL passed no ``answer_column`` column (the message lists the columns it passed), or a
            column's length differs from the completions'.
    """

    def __init__(self, url: str, kind: str = "pattern", answer_column: str = "answer", answer_type: str = "free_form",
                 token_env: str = "HOWEVAL_REWARD_TOKEN",
                 scorer: Callable[[list[dict]], list[Mapping[str, Any]]] | None = None):
        self.answer_column, self.answer_type = answer_column, answer_type
        self.reward = GRPOReward(scorer or RewardClient(url, token_env=token_env).score, kind)
        self.__name__ = self.reward.__name__  # TRL logs rewards/<__name__>/mean

    def __call__(self, prompts: Sequence[Any], completions: Sequence[Any], **kwargs: Any) -> list[float]:
        if self.answer_column not in kwargs:
            columns = sorted(k for k in kwargs if k not in TRL_ARGS)
            raise ValueError(f"RemoteReward: TRL passed no {self.answer_column!r} column (dataset columns here: {columns}); "
                             "name the answer column with answer_column=")
        n = len(completions)
        types = kwargs.get("answer_type") or [self.answer_type] * n
        return self.reward(prompts, completions, answer=kwargs[self.answer_column], answer_type=types,
                           reference_steps=kwargs.get("reference_steps"), options=kwargs.get("options"),
                           trainer_state=kwargs.get("trainer_state"), log_metric=kwargs.get("log_metric"))
