"""Pixels reach the model: the tiny VLM (Idefics3 with SmolLM2 as its LM) behind the ``hf`` engine.

The vehicle's answers are meaningless; what these tests show is that an image's pixels change the
model's next-token logits through the engine's own prompt path, with several images per prompt.
"""
from __future__ import annotations

import io

import pytest
from PIL import Image

from howeval.engines.base import ChatRequest
from howeval.engines.prompts import image_data_url
from howeval.engines.tiny_vlm import TinyVLMSpec


def _png(color: tuple[int, int, int], size=(96, 64)) -> bytes:
    buf = io.BytesIO()
    Image.new("RGB", size, color).save(buf, format="PNG")
    return buf.getvalue()


RED, BLUE = _png((220, 20, 20)), _png((20, 20, 220))


def _req(images: list[bytes], text: str = "What colour is the picture?", max_tokens: int = 4) -> ChatRequest:
    parts = [{"type": "image_url", "image_url": {"url": image_data_url(b)}} for b in images]
    return ChatRequest(messages=[{"role": "user", "content": parts + [{"type": "text", "text": text}]}],
                       max_tokens=max_tokens)


def test_spec_image_seq_len():
    assert TinyVLMSpec().image_seq_len == 4  # (64 // 16)**2 patches / 2**2 pixel shuffle
    assert TinyVLMSpec(image_size=128).image_seq_len == 16


@pytest.fixture(scope="module")
def vlm(tiny_vlm_engine):
    return tiny_vlm_engine  # tests/conftest.py: one load per session


@pytest.mark.slow
def test_two_images_give_different_logits_and_same_image_same_logits(vlm):
    red, blue, red2 = (vlm.next_token_logits(_req([b])) for b in (RED, BLUE, RED))
    assert (red - blue).abs().max().item() > 0.1
    assert (red - red2).abs().max().item() == 0.0


@pytest.mark.slow
def test_dropping_an_image_changes_logits(vlm):
    both, first = vlm.next_token_logits(_req([RED, BLUE])), vlm.next_token_logits(_req([RED]))
    none = vlm.next_token_logits(_req([]))
    assert (both - first).abs().max().item() > 0.1
    assert (first - none).abs().max().item() > 0.1


@pytest.mark.slow
def test_generate_mixed_batch_counts_image_tokens(vlm):
    out = vlm.generate([_req([RED, BLUE]), _req([]), _req([BLUE])])
    assert [c.error for c in out] == [None, None, None]
    # each image: <fake_token_around_image> <global-img> 4 x <image> <fake_token_around_image> = 7 tokens
    assert out[0].prompt_tokens - out[1].prompt_tokens == 14
    assert out[2].prompt_tokens - out[1].prompt_tokens == 7
    assert all(1 <= c.completion_tokens <= 4 for c in out)


@pytest.mark.slow
def test_bad_image_fails_only_its_request(vlm):
    bad = ChatRequest(messages=[{"role": "user", "content": [
        {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}}, {"type": "text", "text": "q"}]}],
        max_tokens=2)
    out = vlm.generate([bad, _req([RED], max_tokens=2)])
    assert out[0].finish_reason == "error" and "hf prompt failed" in out[0].error
    assert out[1].error is None


@pytest.mark.slow
def test_tiny_lm_policy_is_small_and_speaks_smollm2s_chat_format():
    """The GRPO test policy: 3,219,776 parameters (a 49,152 x 64 tied embedding, 2 layers of width 64),
    SmolLM2's tokenizer and chat template, and the hf engine generates with it to the token budget."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from howeval.engines.checkpoints import embedded_checkpoint
    from howeval.engines.registry import build_engine
    from howeval.engines.tiny_vlm import TINY_LM, tiny_lm_checkpoint

    path = tiny_lm_checkpoint()
    model = AutoModelForCausalLM.from_pretrained(path)
    assert sum(p.numel() for p in model.parameters()) == 3_219_776
    assert model.config.hidden_size == 64 and model.config.num_hidden_layers == 2 and model.config.tie_word_embeddings
    tok, ref = AutoTokenizer.from_pretrained(path), AutoTokenizer.from_pretrained(embedded_checkpoint())
    msgs = [{"role": "user", "content": "hi"}]
    assert tok.apply_chat_template(msgs, tokenize=False) == ref.apply_chat_template(msgs, tokenize=False)
    assert len(tok) == len(ref) == model.config.vocab_size
    out = build_engine("hf", TINY_LM, {"batch_size": 2}).generate(
        [ChatRequest(messages=msgs, max_tokens=5, temperature=0.0), ChatRequest(messages=msgs, max_tokens=2)])
    assert [c.error for c in out] == [None, None]
    assert out[0].completion_tokens <= 5 and out[1].completion_tokens <= 2
