"""Issue 31: the RL verifier fallback (PatternRL: "unresolved cases are evaluated by GPT-oss-120B") has one
config shape, the same block under the sweep's judges.verifier.llm_fallback and the reward server's llm_verifier."""
from __future__ import annotations

import pytest

from howeval.config.sweep import JudgeEngineConfig, VerifierConfig
from howeval.reward_server.config import load_server_config

NESTED = {"model": "openai/gpt-oss-120b", "max_tokens": 256,
          "options": {"base_url": "http://verifier-vllm:8000/v1", "api_key_env": "VERIFIER_KEY",
                      "max_concurrency": 16, "timeout_s": 20}}
FLAT = {"base_url": "http://verifier-vllm:8000/v1", "model": "openai/gpt-oss-120b", "max_concurrency": 16,
        "timeout_s": 20, "api_key_env": "VERIFIER_KEY"}  # the spelling of k8s/base/rayservice-reward.yaml


def test_one_block_validates_the_same_in_the_sweep_and_the_reward_server():
    sweep = VerifierConfig.model_validate({"llm_fallback": NESTED}).llm_fallback
    server = load_server_config({"on_unresolved": "llm", "llm_verifier": NESTED}).llm_verifier
    assert isinstance(sweep, JudgeEngineConfig) and type(server) is type(sweep) and server == sweep
    # the server's flat spelling is the same object, in both places
    assert load_server_config({"on_unresolved": "llm", "llm_verifier": FLAT}).llm_verifier == sweep
    assert VerifierConfig.model_validate({"llm_fallback": FLAT}).llm_fallback.options == NESTED["options"]


def test_the_server_runs_its_fallback_from_the_shared_block(monkeypatch):
    monkeypatch.delenv("VERIFIER_KEY", raising=False)
    cfg = load_server_config({"on_unresolved": "llm", "llm_verifier": {**FLAT, "cache_size": 0}})
    fb = cfg.llm_fallback_config()
    assert (fb.base_url, fb.model, fb.max_concurrency, fb.timeout_s, fb.max_tokens, fb.cache_size) == (
        "http://verifier-vllm:8000/v1", "openai/gpt-oss-120b", 16, 20.0, 256, 0)
    assert fb.api_key_env is None  # unset: no key sent (a local vLLM takes any), as the sweep's openai engine
    monkeypatch.setenv("VERIFIER_KEY", "k")
    assert cfg.llm_fallback_config().api_key_env == "VERIFIER_KEY"
    # a flat block without budgets keeps the server's (20 s, 256 tokens), not the sweep engine's 120 s
    short = load_server_config({"llm_verifier": {"base_url": "http://v/v1", "model": "m"}}).llm_fallback_config()
    assert (short.timeout_s, short.max_tokens, short.cache_size) == (20.0, 256, 50_000)


def test_bad_verifier_blocks_name_the_fix():
    with pytest.raises(ValueError, match=r"give \['base_url'\] inside options"):
        load_server_config({"llm_verifier": {"model": "m", "base_url": "http://v/v1", "options": {}}})
    with pytest.raises(ValueError, match="llm_verifier.options.base_url .* is required"):
        load_server_config({"on_unresolved": "llm", "llm_verifier": {"model": "m"}})
    with pytest.raises(ValueError, match="on_unresolved='llm' needs llm_verifier"):
        load_server_config({"on_unresolved": "llm"})


def test_the_trainer_in_process_takes_the_same_block_and_asks_it_about_unresolved_answers():
    from howeval.engines.base import Completion
    from howeval.training.config import RewardSpec
    from howeval.training.rewards import InProcessScorer

    spec = RewardSpec(source="inprocess", kind="base", on_unresolved="llm", llm_verifier=FLAT)
    assert spec.llm_verifier == VerifierConfig.model_validate({"llm_fallback": NESTED}).llm_fallback
    asked = []

    class Judge:  # the OpenAI-compatible verifier, answering "correct"
        def generate(self, reqs):
            asked.extend(reqs)
            return [Completion(text='{"correct": true, "reason": "4 is roughly 4"}') for _ in reqs]

    built = []
    scorer = InProcessScorer(spec, engine_builder=lambda model, options: built.append((model, options)) or Judge())
    vague = {"prompt": "2+2?", "response": "I think it is roughly 4 or 5", "answer": "4",
             "answer_type": "integer_number", "kind": "base"}  # the rules: "no final-answer marker", unresolved
    rows = scorer([vague, {**vague, "response": "The answer is \\boxed{4}."}])
    assert [(r["reward"], r["verify_method"]) for r in rows] == [(1.0, "llm"), (1.0, "rule")]
    assert len(asked) == 1 and built == [("openai/gpt-oss-120b", NESTED["options"])]
    zero = InProcessScorer(RewardSpec(source="inprocess", kind="base"))([vague])  # no fallback: s_ver 0, flagged
    assert (zero[0]["reward"], zero[0]["verify_method"]) == (0.0, "unresolved")
    with pytest.raises(ValueError, match="apply to source=inprocess"):
        RewardSpec(source="server", kind="base", on_unresolved="llm", llm_verifier=FLAT)
