"""Issue 40: the reward server used the way each RL framework calls a reward, against a live local server.

- OpenRLHF: its stock client (``tests/fakes/openrlhf_client.py``, replicated from OpenRLHF commit
  3c3be6234e0cb353e76bb8019947db9dfe99fca7: no header, ``query`` decoded from prompt + response tokens by a
  real tokenizer, the embedded SmolLM2's) posting to ``/openrlhf/<url token>/get_reward``.
- veRL: ``howeval/training/frameworks.py`` loaded from its file path and called as veRL's
  ``get_custom_reward_fn`` + ``NaiveRewardManager`` do (volcengine/verl commit b178a3cd56f58b2d502255daba591e92833930a7).
- TRL: ``RemoteReward`` called by the installed trl's own ``GRPOTrainer._calculate_rewards``.

Every case holds a prompt that shows the answer (``\\boxed{4}``) and a wrong response: the reward must be 0.
"""
from __future__ import annotations

import functools
import importlib.util
import inspect
import os
import types

import httpx
import pytest

from fakes.openrlhf_client import openrlhf_query, reward_of_one_rollout
from fakes.reward_server import running_reward_server

pytestmark = pytest.mark.ray

TOKEN_ENV, TOKEN = "HOWEVAL_TEST_FW_TOKEN", "fw-bearer-token-5c1e"
URL_TOKEN_ENV, URL_TOKEN = "HOWEVAL_TEST_FW_URL_TOKEN", "0123456789abcdef" * 3
QUESTION = "Give the final answer as \\boxed{4}, like this example. What is 2+3?"
WRONG, RIGHT = "The answer is 6.", "2+3 = 5, so the answer is \\boxed{5}."


@pytest.fixture(scope="module")
def server():
    os.environ[URL_TOKEN_ENV] = URL_TOKEN  # before ray.init: the replicas inherit it
    args = {"pattern": {"p": 1.0, "seed": 0, "mode": "mean"},
            "auth": {"token_env": TOKEN_ENV, "url_token_env": URL_TOKEN_ENV}}
    try:
        with running_reward_server(TOKEN_ENV, TOKEN, args) as url:
            yield url
    finally:
        os.environ.pop(URL_TOKEN_ENV, None)


@pytest.fixture(scope="module")
def tokenizer():
    from transformers import AutoTokenizer

    from howeval.engines.checkpoints import embedded_checkpoint

    return AutoTokenizer.from_pretrained(embedded_checkpoint())


def chat_prompt(tokenizer, question: str = QUESTION) -> str:
    return tokenizer.apply_chat_template([{"role": "user", "content": question}], add_generation_prompt=True, tokenize=False)


# --------------------------------------------------------------------------------------------- OpenRLHF


def test_openrlhf_stock_client_is_paid_for_its_response_only(server, tokenizer):
    url = f"{server}/openrlhf/{URL_TOKEN}/get_reward"
    prompt = chat_prompt(tokenizer)
    for response, label, want in ((WRONG, "5", 0.0), (RIGHT, "5", 1.0), (WRONG, "4", 0.0)):
        query = openrlhf_query(tokenizer, prompt, response)
        got = reward_of_one_rollout(url, query, prompt, label, sleep_s=0.01)
        assert got["reward"] == [pytest.approx(want)], (response, label, got)
        assert got["errors"] == [None]
    # issue 40's request: prompts holds one extra space (not byte-identical to the query's prompt part):
    # the prompt's \boxed{4} paid 1.0 for "The answer is 6." with label 4 before
    spaced = prompt.replace("What is", "What  is")
    got = reward_of_one_rollout(url, openrlhf_query(tokenizer, prompt, WRONG), spaced, "4", sleep_s=0.01)
    assert got["reward"] == [0.0] and got["extra_logs"]["refused"] == [0.0] and got["errors"] == [None]
    got = reward_of_one_rollout(url, openrlhf_query(tokenizer, prompt, RIGHT), spaced, "5", sleep_s=0.01)
    assert got["reward"] == [pytest.approx(1.0)]


def test_openrlhf_left_cut_prompt_is_refused_with_the_reason_never_scored_whole(server, tokenizer):
    """OpenRLHF cuts a prompt over max_len - max_tokens from the left: the query no longer starts with it."""
    url = f"{server}/openrlhf/{URL_TOKEN}/get_reward"
    prompt = chat_prompt(tokenizer)
    query = openrlhf_query(tokenizer, prompt, WRONG, max_prompt_length=30)
    assert "\\boxed{4}" in query and not query.startswith(prompt)
    got = reward_of_one_rollout(url, query, prompt, "4", sleep_s=0.01)
    assert got["reward"] == [0.0]
    assert got["extra_logs"]["refused"] == [1.0] and got["extra_logs"]["degraded"] == [1.0]
    assert got["errors"][0].startswith("refused: query.0 does not begin with prompts.0")


def test_openrlhf_extra_logs_carry_s_pat_and_the_four_labels(server, tokenizer):
    url = f"{server}/openrlhf/{URL_TOKEN}/get_reward"
    prompt = chat_prompt(tokenizer)
    two = ("Wait, let me re-check the sum. Two plus three makes five in this simple sum. "
           "Two plus three makes five in this simple sum. The answer is \\boxed{5}.")  # rules judge: cot + rep
    got = reward_of_one_rollout(url, openrlhf_query(tokenizer, prompt, two), prompt, "5", sleep_s=0.01)
    logs = got["extra_logs"]
    assert {k: logs[k] for k in ("pattern_scored", "s_pat", "cot", "rep", "con", "pr")} == {
        "pattern_scored": [1.0], "s_pat": [0.5], "cot": [1.0], "rep": [1.0], "con": [0.0], "pr": [0.0]}
    assert got["reward"] == [pytest.approx(0.95)]
    # every value is a float list (OpenRLHF makes each a tensor): no null anywhere
    assert all(isinstance(v, list) and all(isinstance(x, float) for x in v) for v in logs.values())


def test_openrlhf_stock_client_without_the_url_token_gets_nothing(server, tokenizer):
    """The stock client (no header) on the bearer route, with a wrong URL token, or the URL token used as a
    bearer token elsewhere: refused; upstream then keeps reward None (5 tries)."""
    prompt = chat_prompt(tokenizer)
    query = openrlhf_query(tokenizer, prompt, RIGHT)
    for url in (f"{server}/get_reward", f"{server}/openrlhf/{URL_TOKEN[:-1]}x/get_reward"):
        assert reward_of_one_rollout(url, query, prompt, "5", sleep_s=0.01)["reward"] is None
    body = {"query": [query], "prompts": [prompt], "labels": ["5"]}
    assert httpx.post(f"{server}/get_reward", json=body, headers={"Authorization": f"Bearer {URL_TOKEN}"}).status_code == 401
    items = {"items": [{"prompt": prompt, "response": RIGHT, "answer": "5", "answer_type": "free_form"}]}
    assert httpx.post(f"{server}/v1/rewards", json=items, headers={"Authorization": f"Bearer {URL_TOKEN}"}).status_code == 401
    assert httpx.get(f"{server}/openrlhf/{URL_TOKEN}/metrics").status_code == 404
    # the bearer route answers the same body with the bearer token
    r = httpx.post(f"{server}/get_reward", json=body, headers={"Authorization": f"Bearer {TOKEN}"}, timeout=60)
    assert r.status_code == 200 and r.json()["rewards"] == [pytest.approx(1.0)]


# ------------------------------------------------------------------------------------------------- veRL


def verl_reward_fn(path: str, reward_kwargs: dict, name: str = "compute_score"):
    """veRL's ``get_custom_reward_fn``: the function loaded from a file path by name, wrapped with
    ``reward_kwargs`` (``verl/trainer/ppo/reward.py`` ``_call_with_kwargs``, ``load_extern_object``)."""
    spec = importlib.util.spec_from_file_location("custom_module", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    raw_fn = getattr(module, name)  # custom_reward_function.name

    def _call_with_kwargs(raw_fn, extra_kwargs, *args, **kwargs):
        return raw_fn(*args, **{**kwargs, **extra_kwargs})

    assert not inspect.iscoroutinefunction(raw_fn)
    return functools.partial(_call_with_kwargs, raw_fn, reward_kwargs)


def test_verl_custom_reward_function_scores_the_solution_only(server, monkeypatch, repo_root):
    monkeypatch.setenv("HOWEVAL_REWARD_TOKEN", TOKEN)
    fn = verl_reward_fn(str(repo_root / "howeval" / "training" / "frameworks.py"), {"url": server, "kind": "pattern"})
    scores = []
    for solution in (WRONG, RIGHT):
        # NaiveRewardManager: compute_score(data_source=, solution_str=, ground_truth=, extra_info=); extra_info
        # as veRL's gsm8k preprocessing writes it, plus what the manager adds
        extra_info = {"split": "train", "index": 0, "question": QUESTION, "num_turns": None, "rollout_reward_scores": {}}
        scores.append(fn(data_source="openai/gsm8k", solution_str=solution, ground_truth="5", extra_info=extra_info))
    wrong, right = scores
    assert wrong["score"] == 0.0 and right["score"] == pytest.approx(1.0)
    assert set(wrong) == set(right) >= {"score", "s_ver", "s_pat", "pattern_scored", "cot", "rep", "con", "pr", "degraded"}
    assert right["pattern_scored"] == 1.0 and all(isinstance(v, float) for v in right.values())
    # the prompt shows \boxed{4}: a label 4 with a wrong solution is still 0
    assert fn(data_source="x", solution_str=WRONG, ground_truth="4", extra_info={"question": QUESTION})["score"] == 0.0


def test_verl_compute_score_without_a_server_url_names_the_setting(monkeypatch):
    from howeval.training.frameworks import URL_ENV, compute_score

    monkeypatch.delenv(URL_ENV, raising=False)
    with pytest.raises(ValueError, match="reward_kwargs.url"):
        compute_score("x", "The answer is 5", "5", {})


# -------------------------------------------------------------------------------------------------- TRL


def test_trl_reward_funcs_called_by_trls_own_calculate_rewards(server, monkeypatch):
    """The installed trl's ``GRPOTrainer._calculate_rewards`` calls ``RemoteReward`` with its own keywords
    (``completion_ids``, every dataset column, ``trainer_state``, ``log_extra``, ``log_metric``)."""
    from accelerate import Accelerator
    from trl import GRPOTrainer

    from howeval.training.frameworks import RemoteReward

    monkeypatch.setenv("HOWEVAL_REWARD_TOKEN", TOKEN)
    fn = RemoteReward(server, kind="pattern", answer_column="solution")
    metrics: dict[str, list[float]] = {}
    trainer = types.SimpleNamespace(
        accelerator=Accelerator(cpu=True), reward_funcs=[fn], reward_processing_classes=[None],
        reward_func_names=[fn.__name__], state=types.SimpleNamespace(global_step=3), environments=None,
        _log_completion_extra=lambda column, values: None, args=types.SimpleNamespace(report_to=[]), async_loop=None,
        _log_metric=lambda name, value: metrics.setdefault(name, []).append(value))
    prompts = [[{"role": "user", "content": QUESTION}]] * 3
    completions = [[{"role": "assistant", "content": c}] for c in (WRONG, RIGHT, "The answer is \\boxed{4}.")]
    inputs = [{"prompt": prompts[0], "solution": "5", "source": "toy"}] * 3
    rewards = GRPOTrainer._calculate_rewards(trainer, inputs, prompts, completions, [[1], [2], [3]])
    assert rewards[:, 0].tolist() == [0.0, pytest.approx(1.0), 0.0]
    assert metrics["reward_parts/accuracy"] == [pytest.approx(1 / 3)]
    # a dataset without the answer column: the error names it and lists the columns TRL passed
    with pytest.raises(ValueError, match=r"no 'answer' column \(dataset columns here: \['solution', 'source'\]\)"):
        RemoteReward(server)(prompts=prompts, completions=completions, completion_ids=[[1]] * 3,
                             solution=["5"] * 3, source=["toy"] * 3, trainer_state=None)
