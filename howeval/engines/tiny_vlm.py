"""Offline test vehicles: a tiny vision-language model that proves pixels reach a model, and a tiny text policy.

No small VLM's weights ship in a PyPI package, so this one is assembled in code (issue 16):

- architecture: Idefics3 (the SmolVLM family, ``Idefics3ForConditionalGeneration``), whose text backbone
  is a Llama model -- here the embedded SmolLM2-135M-Instruct, weights copied from its fp32 copy
  (:func:`howeval.engines.checkpoints.embedded_checkpoint`);
- vision encoder and connector: a small SigLIP-style tower (64x64 input, 16x16 patches, 2 layers of
  width 64) and Idefics3's pixel-shuffle connector, randomly initialised with a fixed seed;
- processor: ``Idefics3Processor`` with the PIL image processor built in code (no image splitting,
  longest edge 64, so each image becomes 4 ``<image>`` tokens) and SmolLM2's tokenizer with the image
  tokens added; a ChatML chat template that places ``<image>`` where a message has an image part.

Its answers are meaningless (the vision side is untrained); its point is that an image's pixels change
the logits, which the tests check. Saved once under ``$HOWEVAL_CACHE`` (``~/.cache/howeval``) like the
fp32 SmolLM2 copy; ~520 MB, built in ~10 s.

The tiny text policy (``embedded:tiny-lm``, :func:`tiny_lm_checkpoint`) is a 3.2 M-parameter Llama with
SmolLM2's tokenizer and chat template, randomly initialised: the GRPO tests train it, so that checkpoints,
resumes and elastic resizes run the real Ray Train + TRL code with ~40 MB checkpoints (16 MB on disk in
the cache, built in ~2 s).
"""
from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path

from howeval.engines.checkpoints import save_model_here

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
    from transformers import (
        AutoModelForCausalLM,
        AutoTokenizer,
        Idefics3Config,
        Idefics3ForConditionalGeneration,
        Idefics3Processor,
    )
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
    save_model_here(vlm, out)
    proc.save_pretrained(out)


def tiny_vlm_checkpoint(spec: TinyVLMSpec = TinyVLMSpec()) -> str:
    """The tiny VLM's folder under the cache, built once (atomically: temp folder, then rename).

    Returns the folder path (load it with ``AutoProcessor`` / ``AutoModelForImageTextToText``).
    """
    from howeval.engines.checkpoints import cached_build, embedded_checkpoint

    lm = embedded_checkpoint()
    return cached_build(spec.folder_name(), lambda tmp: build_tiny_vlm(tmp, lm, spec))


# ------------------------------------------------------------------------------------ tiny text policy

TINY_LM = "embedded:tiny-lm"
"""The model name that selects the tiny text policy (``model: embedded:tiny-lm``)."""


@dataclass(frozen=True)
class TinyLMSpec:
    """Sizes of the tiny text policy: a Llama with SmolLM2's tokenizer (vocab 49,152) and chat template.

    With the defaults it has ~3.2 M parameters (the 49,152 x 64 tied embedding is most of them): a GRPO
    checkpoint with Adam's state is ~40 MB instead of SmolLM2-135M's ~1.6 GB. Changing any field changes
    the cache folder's name."""

    hidden_size: int = 64
    intermediate_size: int = 128
    num_hidden_layers: int = 2
    num_attention_heads: int = 2
    num_key_value_heads: int = 1
    seed: int = 0

    def folder_name(self) -> str:
        return "tiny-lm-" + "-".join(f"{v}" for v in asdict(self).values())


def build_tiny_lm(out: str | Path, lm_path: str, spec: TinyLMSpec = TinyLMSpec()) -> None:
    """Save a randomly initialised (fixed seed) Llama of ``spec``'s sizes with ``lm_path``'s tokenizer,
    chat template and generation config to ``out``.

    The training test vehicle: GRPO, checkpoints, resume and elastic resizes run through exactly the code a
    real policy uses, at a size whose checkpoints do not fill a CI disk. Its text is meaningless.
    Raises:
        ValueError: ``lm_path`` is not a Llama-family causal LM.
    """
    import torch
    from transformers import AutoConfig, AutoTokenizer, GenerationConfig, LlamaConfig, LlamaForCausalLM

    base = AutoConfig.from_pretrained(lm_path)
    if base.model_type != "llama":
        raise ValueError(f"lm_path={lm_path!r}: model_type {base.model_type!r}, need 'llama'")
    tok = AutoTokenizer.from_pretrained(lm_path)
    cfg = LlamaConfig(
        vocab_size=base.vocab_size, hidden_size=spec.hidden_size, intermediate_size=spec.intermediate_size,
        num_hidden_layers=spec.num_hidden_layers, num_attention_heads=spec.num_attention_heads,
        num_key_value_heads=spec.num_key_value_heads, max_position_embeddings=base.max_position_embeddings,
        bos_token_id=base.bos_token_id, eos_token_id=base.eos_token_id, pad_token_id=base.pad_token_id,
        tie_word_embeddings=True,
    )
    torch.manual_seed(spec.seed)
    model = LlamaForCausalLM(cfg).eval()
    model.generation_config = GenerationConfig.from_pretrained(lm_path)
    save_model_here(model, out)
    tok.save_pretrained(out)


def tiny_lm_checkpoint(spec: TinyLMSpec = TinyLMSpec()) -> str:
    """The tiny text policy's folder under the cache, built once from the embedded SmolLM2's tokenizer.

    Returns the folder path (load it with ``AutoModelForCausalLM`` / ``AutoTokenizer``).
    """
    from howeval.engines.checkpoints import cached_build, embedded_checkpoint

    lm = embedded_checkpoint()
    return cached_build(spec.folder_name(), lambda tmp: build_tiny_lm(tmp, lm, spec))
