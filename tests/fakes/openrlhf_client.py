"""OpenRLHF's stock remote reward-model client, replicated line for line (OpenRLHF is not installed here: it
pulls CUDA builds of torch, vLLM and DeepSpeed).

Source: OpenRLHF/OpenRLHF commit 3c3be6234e0cb353e76bb8019947db9dfe99fca7, ``openrlhf/utils/agent.py``,
``SingleTurnAgentExecutor``:

- ``execute``: ``prompt_token_ids = hf_tokenizer(text=prompt, add_special_tokens=False)["input_ids"]``, cut from
  the left to ``max_prompt_length`` when longer; the engine's ``action_token_ids`` appended;
  ``query = hf_tokenizer.decode(prompt_token_ids + action_token_ids, skip_special_tokens=False)``; the reward
  request is ``([query], [prompt], [label])``; any exception is logged and the rollout keeps ``reward=None``.
- ``_fetch_rewards_via_http``: ``aiohttp.ClientSession(timeout=ClientTimeout(total=180))``,
  ``session.post(url, json={"query", "prompts", "labels"})`` with no header, ``raise_for_status()``, five tries
  one second apart, then ``RuntimeError``.
"""
from __future__ import annotations

import asyncio
import logging

log = logging.getLogger(__name__)


def openrlhf_query(tokenizer, prompt: str, response: str, max_prompt_length: int | None = None) -> str:
    """``query`` as ``SingleTurnAgentExecutor.execute`` builds it; ``response``'s own token ids stand for the
    engine's ``action_token_ids``; ``max_prompt_length`` replays its left cut of a long prompt."""
    prompt_token_ids = tokenizer(text=prompt, add_special_tokens=False, return_tensors="pt")["input_ids"][0].tolist()
    if max_prompt_length is not None and len(prompt_token_ids) > max_prompt_length:
        prompt_token_ids = prompt_token_ids[-max_prompt_length:]
    action_token_ids = tokenizer(text=response, add_special_tokens=False)["input_ids"]
    return tokenizer.decode(prompt_token_ids + action_token_ids, skip_special_tokens=False)


async def fetch_rewards_via_http(reward_endpoints: list[str], queries_list, prompts_list, labels_list,
                                 sleep_s: float = 1.0):
    """``SingleTurnAgentExecutor._fetch_rewards_via_http`` (``sleep_s``: its ``asyncio.sleep(1)``)."""
    import aiohttp

    num_servers = len(reward_endpoints)
    batch_size = (len(queries_list) + num_servers - 1) // num_servers
    timeout = aiohttp.ClientTimeout(total=180)

    tasks = []
    for i, rm in enumerate(reward_endpoints):
        start_idx = i * batch_size
        end_idx = min((i + 1) * batch_size, len(queries_list))
        payload = {
            "query": queries_list[start_idx:end_idx],
            "prompts": prompts_list[start_idx:end_idx],
            "labels": labels_list[start_idx:end_idx],
        }

        async def _post_request(url, data, try_max_times=5):
            for _ in range(try_max_times):
                try:
                    async with aiohttp.ClientSession(timeout=timeout) as session:
                        async with session.post(url, json=data) as response:
                            response.raise_for_status()
                            return await response.json()
                except aiohttp.ClientError as e:
                    log.info(f"Request error, please check: {e}")
                except Exception as e:  # noqa: BLE001 - as upstream
                    log.info(f"Unexpected error, please check: {e}")
                await asyncio.sleep(sleep_s)

            raise RuntimeError(
                f"Request error for {try_max_times} times, returning None. Please check the API server."
            )

        tasks.append(asyncio.create_task(_post_request(rm, payload)))
    return await asyncio.gather(*tasks)


def reward_of_one_rollout(url: str, query: str, prompt: str, label: str, sleep_s: float = 1.0) -> dict:
    """What ``execute`` keeps of one rollout: ``{"reward", "scores", "extra_logs"}`` from the first server's
    answer, or ``reward=None`` when the request failed (upstream logs the error and trains on)."""
    out = {"reward": None, "scores": None, "extra_logs": {}}
    try:
        rewards_info = asyncio.run(fetch_rewards_via_http([url], [query], [prompt], [label], sleep_s))[0]
        score_value = rewards_info.get("scores")
        if score_value is None:
            score_value = rewards_info.get("rewards")
        out.update(reward=rewards_info.get("rewards"), scores=score_value,
                   extra_logs=rewards_info.get("extra_logs") or {}, errors=rewards_info.get("errors"))
    except Exception as e:  # noqa: BLE001 - upstream: logger.info and reward None
        log.info(f"[SingleTurnExecutor] Failed to fetch reward from remote RM: {e}")
    return out
