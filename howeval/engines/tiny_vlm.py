"""A tiny vision-language model built offline: the test vehicle that proves pixels reach a model.

No small VLM's weights ship in a PyPI package, so this one is assembled in code (issue 16):

- architecture: Idefics3 (the SmolVLM family, ``Idefics3ForConditionalGeneration``), whose text backbone
  is a Llama model -- here the embedded SmolLM2-135M-Instruct, weights copied from its fp32 copy
  (:func:`howeval.engines.hf.embedded_checkpoint`);
- vision encoder and connector: a small SigLIP-style tower (64x64 input, 16x16 patches, 2 layers of
  width 64) and Idefics3's pixel-shuffle connector, randomly initialised with a fixed seed;
- processor: ``Idefics3Processor`` with the PIL image processor built in code (no image splitting,
  longest edge 64, so each image becomes 4 ``<image>`` tokens) and SmolLM2's tokenizer with the image
  tokens added; a ChatML chat template that places ``<image>`` where a message has an image part.

Its answers are meaningless (the vision side is untrained); its point is that an image's pixels change
the logits, which the tests check. Saved once under ``$HOWEVAL_CACHE`` (``~/.cache/howeval``) like the
fp32 SmolLM2 copy; ~520 MB, built in ~10 s.
"""
from __future__ import annotations

import os
import shutil
import tempfile
from dataclasses import asdict, dataclass
from pathlib import Path

TINY_VLM = "embedded:tiny-vlm"
"""The model name that selects this vehicle in a config (``model: embedded:tiny-vlm``)."""

IMAGE_TOKENS = ("<fake_token_around_image>", "<image>", "<end_of_utterance>", "<global-img>")
"""Special tokens Idefics3's processor uses around and for an image (added to SmolLM2's tokenizer)."""

CHAT_TEMPLATE = (
    "{% for m in messages %}"
    "{{ '<|im_start|>' + m['role'] + '\\n' }}"
    "{% if m['content'] is string %}{{ m['content'] }}"
    "{% else %}{% for p in m['content'] %}"
    "{% if p['type'] == 'image' %}{{ '<image>' }}"
    "{% elif p['type'] == 'text' %}{{ p['text'] }}{% endif %}"
    "{% endfor %}{% endif %}"
    "{{ '<|im_end|>\\n' }}"
    "{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}"
)
"""ChatML (SmolLM2's format) with an ``<image>`` placeholder for each ``{"type": "image"}`` part, in place."""


@dataclass(frozen=True)
class TinyVLMSpec:
    """Sizes of the vision side. ``image_seq_len = (image_size // patch_size)**2 // scale_factor**2`` tokens
    per image (4 with the defaults). Changing any field changes the cache folder's name."""

    image_size: int = 64      # pixels, longest edge after resizing (no tiling)
    patch_size: int = 16      # pixels per patch side
    hidden_size: int = 64     # vision width
    intermediate_size: int = 128
    num_hidden_layers: int = 2
    num_attention_heads: int = 2
    scale_factor: int = 2     # Idefics3 pixel shuffle: (scale_factor**2) patches -> one token
    seed: int = 0             # torch seed for the random vision tower and connector
    init_std: float = 0.2     # weights' init std (larger than transformers' 0.02, so images move logits clearly)

    @property
    def image_seq_len(self) -> int:
        return (self.image_size // self.patch_size) ** 2 // self.scale_factor ** 2

    def folder_name(self) -> str:
        return "tiny-vlm-" + "-".join(f"{v}" for v in asdict(self).values())


def build_tiny_vlm(out: str | Path, lm_path: str, spec: TinyVLMSpec = TinyVLMSpec()) -> None:
    """Assemble the tiny VLM from a Llama checkpoint ``lm_path`` and save model + processor to ``out``.

    Raises:
        ValueError: ``lm_path`` is not a Llama-family causal LM (the Idefics3 text backbone).
    """
    import torch
    from transformers import (AutoModelForCausalLM, AutoTokenizer, Idefics3Config,
                              Idefics3ForConditionalGeneration, Idefics3Processor)
    from transformers.models.idefics3.configuration_idefics3 import Idefics3VisionConfig
    from transformers.models.idefics3.image_processing_pil_idefics3 import Idefics3ImageProcessorPil

    tok = AutoTokenizer.from_pretrained(lm_path)
    tok.add_special_tokens({"additional_special_tokens": list(IMAGE_TOKENS)})
    tok.padding_side = "left"
    if tok.pad_token is None:
        tok.pad_token = tok.eos_token
    llm = AutoModelForCausalLM.from_pretrained(lm_path, dtype=torch.float32)
    if llm.config.model_type != "llama":
        raise ValueError(f"lm_path={lm_path!r}: model_type {llm.config.model_type!r}, need 'llama' (Idefics3's text backbone)")
    llm.resize_token_embeddings(len(tok), mean_resizing=False)

    text_cfg = llm.config.to_dict()
    vision_cfg = Idefics3VisionConfig(
        hidden_size=spec.hidden_size, intermediate_size=spec.intermediate_size, num_hidden_layers=spec.num_hidden_layers,
        num_attention_heads=spec.num_attention_heads, image_size=spec.image_size, patch_size=spec.patch_size,
        initializer_range=spec.init_std,
    )
    cfg = Idefics3Config(vision_config=vision_cfg.to_dict(), text_config=text_cfg, scale_factor=spec.scale_factor,
                         image_token_id=tok.convert_tokens_to_ids("<image>"), tie_word_embeddings=True,
                         pad_token_id=tok.pad_token_id)
    torch.manual_seed(spec.seed)
    vlm = Idefics3ForConditionalGeneration(cfg).eval()
    with torch.no_grad():  # vision tower and connector: fixed-seed normal init at init_std (biases 0)
        for name, p in list(vlm.model.vision_model.named_parameters()) + list(vlm.model.connector.named_parameters()):
            if "layernorm" in name or "layer_norm" in name:
                continue
            p.copy_(torch.randn_like(p) * spec.init_std if p.dim() > 1 else torch.zeros_like(p))
    vlm.model.text_model.load_state_dict(llm.model.state_dict(), strict=True)  # raises on any mismatch
    vlm.lm_head.weight = vlm.model.text_model.embed_tokens.weight  # SmolLM2 ties its head to the embeddings
    vlm.generation_config.pad_token_id = tok.pad_token_id
    vlm.generation_config.eos_token_id = llm.generation_config.eos_token_id

    improc = Idefics3ImageProcessorPil(
        do_image_splitting=False, size={"longest_edge": spec.image_size},
        max_image_size={"longest_edge": spec.image_size}, resample=2,  # bilinear: fast, deterministic
    )
    proc = Idefics3Processor(image_processor=improc, tokenizer=tok, image_seq_len=spec.image_seq_len,
                             chat_template=CHAT_TEMPLATE)
    out = Path(out)
    vlm.save_pretrained(out)
    proc.save_pretrained(out)


def tiny_vlm_checkpoint(spec: TinyVLMSpec = TinyVLMSpec()) -> str:
    """The tiny VLM's folder under the cache, built once (atomically: temp folder, then rename).

    Returns the folder path (load it with ``AutoProcessor`` / ``AutoModelForImageTextToText``).
    """
    from howeval.engines.hf import cache_dir, embedded_checkpoint

    out = cache_dir() / spec.folder_name()
    if (out / "config.json").exists():
        return str(out)
    lm = embedded_checkpoint()
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=".tiny-vlm-", dir=out.parent))
    try:
        build_tiny_vlm(tmp, lm, spec)
        os.replace(tmp, out)
    except OSError:  # another process won the race
        shutil.rmtree(tmp, ignore_errors=True)
        if not (out / "config.json").exists():
            raise
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return str(out)
