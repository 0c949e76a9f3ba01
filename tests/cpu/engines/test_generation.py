"""howeval.engines.generation: the model's own generation defaults under the config's overrides (issue 25)."""
from __future__ import annotations

import json

import pytest

from howeval.config import ModelConfig
from howeval.engines.base import ChatRequest
from howeval.engines.generation import generation_settings, read_generation_config
from howeval.engines.hf import hf_sampling_kwargs

QWEN_LIKE = {"do_sample": True, "temperature": 0.7, "top_p": 0.8, "top_k": 20, "repetition_penalty": 1.05,
             "bos_token_id": 1, "eos_token_id": [2, 3]}


def _model(tmp_path, engine="vllm", **sampling):
    folder = tmp_path / "model"
    folder.mkdir(exist_ok=True)
    (folder / "generation_config.json").write_text(json.dumps(QWEN_LIKE))
    return ModelConfig(name="q", engine=engine, model=str(folder) if engine != "openai" else "qwen",
                       modes={"NT": {}}, sampling=sampling)


def test_run_config_records_model_defaults_overrides_and_what_applies(tmp_path):
    g = generation_settings(_model(tmp_path, temperature=0.0))
    assert g["overrides"] == {"temperature": 0.0}
    assert g["model_defaults"] == {"temperature": 0.7, "top_p": 0.8, "top_k": 20, "repetition_penalty": 1.05,
                                   "do_sample": True}
    assert g["applied"] == {"temperature": 0.0, "top_p": 0.8, "top_k": 20, "repetition_penalty": 1.05}
    assert g["model_defaults_source"].endswith("model/generation_config.json")
    unset = generation_settings(_model(tmp_path))
    assert unset["overrides"] == {} and unset["applied"]["temperature"] == 0.7  # nothing set: the model's own


def test_openai_fields_left_to_the_server_and_hub_ids_not_read(tmp_path):
    g = generation_settings(_model(tmp_path, engine="openai", top_k=5))
    assert g["applied"]["top_k"] == 5 and g["applied"]["temperature"] == "server default"
    assert read_generation_config("Qwen/Qwen3-VL-8B-Instruct") is None  # not a local folder: never downloaded
    hub = generation_settings(ModelConfig(name="h", engine="hf", model="Qwen/Qwen3-VL-8B", modes={"NT": {}}))
    assert hub["model_defaults"] is None and "not a local folder" in hub["model_defaults_source"]


@pytest.mark.parametrize("req,expected", [
    (ChatRequest(messages=[], temperature=None, top_p=None),  # nothing set: the model samples as it says
     {"do_sample": True, "temperature": 0.7, "top_p": 0.8, "top_k": 20, "repetition_penalty": 1.05}),
    (ChatRequest(messages=[], temperature=0.0, top_p=None),  # greedy override; the penalty still applies
     {"do_sample": False, "temperature": None, "top_p": None, "top_k": None, "repetition_penalty": 1.05}),
    (ChatRequest(messages=[], temperature=1.0, top_p=None, top_k=50),
     {"do_sample": True, "temperature": 1.0, "top_p": 0.8, "top_k": 50, "repetition_penalty": 1.05}),
])
def test_hf_applies_the_models_generation_config_unless_overridden(req, expected):
    defaults = {k: v for k, v in QWEN_LIKE.items() if k in ("do_sample", "temperature", "top_p", "top_k",
                                                             "repetition_penalty")}
    assert hf_sampling_kwargs(req, defaults) == expected
    assert hf_sampling_kwargs(ChatRequest(messages=[], temperature=None, top_p=None), {}) == {
        "do_sample": False, "temperature": None, "top_p": None, "top_k": None}  # a greedy model stays greedy
