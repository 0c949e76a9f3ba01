"""The ``hf`` engine's options reach ``from_pretrained`` and the processor, checked against their names."""
from __future__ import annotations

import pytest

from howeval.config import ConfigError, validate
from howeval.config.engines import HFOptions
from howeval.config.hf_known_args import FROM_PRETRAINED_ARGS, RECORDED_VERSION


def test_recorded_from_pretrained_args_match_the_installed_transformers():
    import transformers

    from howeval.engines.hf import from_pretrained_arg_names

    live = from_pretrained_arg_names()
    assert {"trust_remote_code", "attn_implementation", "device_map", "revision", "dtype"} <= live
    # on a difference, regenerate howeval/config/hf_known_args.py from from_pretrained_arg_names()
    assert FROM_PRETRAINED_ARGS == live, (f"recorded for transformers {RECORDED_VERSION}, installed "
                                          f"{transformers.__version__}: only recorded {sorted(FROM_PRETRAINED_ARGS - live)}, "
                                          f"only installed {sorted(live - FROM_PRETRAINED_ARGS)}")


def test_options_map_to_from_pretrained_and_processor_kwargs():
    o = HFOptions.model_validate({"trust_remote_code": True, "attn_implementation": "sdpa", "torch_dtype": "bfloat16",
                                  "device_map": "auto", "revision": "v1", "max_memory": {"0": "10GiB"},
                                  "processor_kwargs": {"min_pixels": 3136, "max_pixels": 12845056}})
    assert o.dtype == "bfloat16"  # torch_dtype is read as dtype
    assert o.model_kwargs() == {"dtype": "bfloat16", "attn_implementation": "sdpa", "device_map": "auto",
                                "revision": "v1", "trust_remote_code": True, "max_memory": {"0": "10GiB"}}
    assert o.processor_load_kwargs() == {"trust_remote_code": True, "revision": "v1", "min_pixels": 3136,
                                         "max_pixels": 12845056}
    assert HFOptions().model_kwargs() == {"dtype": "float32"} and HFOptions().processor_load_kwargs() == {}


def test_unknown_option_names_the_options_path_the_closest_key_and_the_accepted_ones():
    raw = {"output_uri": "o", "benchmarks": [{"path": "m.jsonl"}],
           "models": [{"name": "a", "engine": "hf", "modes": {"NT": {}}, "options": {"attn_impl": "sdpa"}}]}
    from howeval.config import SweepConfig

    with pytest.raises(ConfigError) as e:
        validate(SweepConfig, raw, "c.yaml")
    line = str(e.value).splitlines()[1]
    assert line.startswith("  models.0.options.attn_impl: unknown hf option; did you mean 'attn_implementation'? ")
    assert "processor arguments (min_pixels, ...) go under processor_kwargs" in line
    assert "Accepted: adapter_kwargs, " in line and ", trust_remote_code, " in line and line.endswith("(got 'sdpa')")
    with pytest.raises(ConfigError, match=r"give dtype or torch_dtype, not both"):
        validate(HFOptions, {"dtype": "float32", "torch_dtype": "float16"}, "o")
    with pytest.raises(ConfigError, match=r"give device \('cuda'\) or device_map \('auto'\), not both"):
        validate(HFOptions, {"device": "cuda", "device_map": "auto"}, "o")
    with pytest.raises(ConfigError, match=r"output_loading_info: a from_pretrained argument a config cannot give"):
        validate(HFOptions, {"output_loading_info": True}, "o")


@pytest.mark.slow
def test_trust_remote_code_and_sdpa_reach_from_pretrained_of_the_tiny_vlm(monkeypatch):
    import transformers

    from howeval.engines.registry import build_engine
    from howeval.engines.tiny_vlm import TINY_VLM

    calls: dict[str, dict] = {}
    for cls in (transformers.AutoModelForImageTextToText, transformers.AutoProcessor):
        real = cls.from_pretrained.__func__

        def spy(klass, path, *a, _real=real, _name=cls.__name__, **kw):
            calls[_name] = kw
            return _real(klass, path, *a, **kw)

        monkeypatch.setattr(cls, "from_pretrained", classmethod(spy))
    eng = build_engine("hf", TINY_VLM, {"trust_remote_code": True, "attn_implementation": "sdpa", "batch_size": 2,
                                        "processor_kwargs": {"do_normalize": False}})
    m = calls["AutoModelForImageTextToText"]
    assert (m["trust_remote_code"], m["attn_implementation"], str(m["dtype"])) == (True, "sdpa", "torch.float32")
    assert calls["AutoProcessor"] == {"trust_remote_code": True, "do_normalize": False}
    assert eng.model.config._attn_implementation == "sdpa"
    assert eng.processor.image_processor.do_normalize is False and eng.supports_images
    assert str(eng.device) == "cpu"


@pytest.mark.slow
def test_a_processor_kwarg_the_processor_does_not_take_is_refused_with_the_closest_name():
    from howeval.engines.registry import build_engine
    from howeval.engines.tiny_vlm import TINY_VLM

    with pytest.raises(ValueError) as e:
        build_engine("hf", TINY_VLM, {"processor_kwargs": {"do_normalise": False, "max_pixels": 10}})
    msg = str(e.value)
    assert msg.startswith("options.processor_kwargs: 'do_normalise' (did you mean 'do_normalize'?), 'max_pixels' "
                          "not taken by this model's processor (Idefics3Processor / Idefics3ImageProcessorPil). Accepted: ")
    assert "image_seq_len" in msg and "do_image_splitting" in msg
