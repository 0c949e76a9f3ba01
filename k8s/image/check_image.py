"""Inside the built image: prepare the embedded models once, then check that everything the variant promises works.

``python3 k8s/image/check_image.py --variant cpu|gpu [--prepare]`` is the Dockerfile's last build step (so an
image that cannot import its own code is never built) and can be run again on a built image::

    podman run --rm IMAGE python3 k8s/image/check_image.py --variant cpu

Checks, one line each (``ok`` / ``FAIL``), exit status = number of failures:

- every module of ``howeval`` (the jobs, the runtime, the plug-ins, the actors and the reward server included) imports
  (``pkgutil.walk_packages``);
- the libraries of the variant import: cpu = torch (a CPU build), Ray 2.60.0, transformers, TRL,
  sentence-transformers, ``cv2`` and the OCR engine (run on a rendered line of text); gpu = those plus vLLM,
  DeepSpeed, Triton over a CUDA build of torch, and a C compiler that builds a Python extension the way Triton builds its launcher;
- ``cv2`` has one owner (opencv-python-headless; ``k8s/image/one_cv2.sh``) and ``pip check`` reports nothing
  else than rapidocr-onnxruntime's opencv-python requirement that this replaces;
- ``wget`` exists (KubeRay's probes call it); the embedded SmolLM2 GGUF and its converted copies are in
  ``$HOWEVAL_CACHE``; the default PatternRM loads from the package with no ``../shared`` beside it.

``--prepare`` first builds the converted checkpoints into ``$HOWEVAL_CACHE`` (SmolLM2's fp32 copy, the tiny test
policies), which each pod would otherwise make on first use. Standard library plus the image's packages.
"""
from __future__ import annotations

import argparse
import importlib
import io
import os
import pkgutil
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import traceback
from collections.abc import Callable

PACKAGES = ("howeval",)  # the one top-level package: the house (jobs, runtime, plug-ins, actors, reward server) is under it
# rapidocr-onnxruntime asks for opencv-python; the image gives it opencv-python-headless's identical cv2
ALLOWED_PIP_CHECK = ("rapidocr-onnxruntime 1.4.4 requires opencv-python, which is not installed.",)


def prepare() -> list[str]:
    """Build the converted embedded checkpoints into ``$HOWEVAL_CACHE`` once; returns their folders."""
    from howeval.engines.checkpoints import embedded_checkpoint
    from howeval.engines.tiny_vlm import tiny_lm_checkpoint, tiny_vlm_checkpoint

    return [embedded_checkpoint(), tiny_lm_checkpoint(), tiny_vlm_checkpoint()]


def import_all() -> str:
    """Import every module of the project's packages; raises on the first that fails, naming it."""
    n = 0
    for pkg_name in PACKAGES:
        pkg = importlib.import_module(pkg_name)
        n += 1
        for info in pkgutil.walk_packages(pkg.__path__, prefix=f"{pkg_name}."):
            try:
                importlib.import_module(info.name)
            except Exception as e:  # noqa: BLE001 - re-raised with the module's name
                raise ImportError(f"{info.name}: {type(e).__name__}: {e}") from e
            n += 1
    return f"{n} modules"


def cpu_libraries() -> str:
    """The CPU image's libraries: torch (CPU build), Ray 2.60.0, transformers, TRL, sentence-transformers."""
    import ray
    import sentence_transformers
    import torch
    import transformers
    import trl

    assert ray.__version__ == "2.60.0", f"ray {ray.__version__}, the image pins 2.60.0 (pyproject.toml)"
    return (f"torch {torch.__version__}, ray {ray.__version__}, transformers {transformers.__version__}, "
            f"trl {trl.__version__}, sentence-transformers {sentence_transformers.__version__}")


def ocr() -> str:
    """``cv2`` imports and the OCR engine reads a rendered line of text (the ``vision: ocr`` path)."""
    import cv2
    from PIL import Image, ImageDraw, ImageFont

    from howeval.engines.ocr import ocr_lines

    img = Image.new("RGB", (480, 90), "white")
    ImageDraw.Draw(img).text((20, 20), "TOTAL 1234", fill="black", font=ImageFont.load_default(size=40))
    buf = io.BytesIO()
    img.save(buf, format="PNG")
    lines = ocr_lines(buf.getvalue())
    assert any("1234" in ln for ln in lines), f"OCR read {lines!r} from an image saying 'TOTAL 1234'"
    return f"cv2 {cv2.__version__}, OCR read {lines!r}"


def cv2_owner() -> str:
    """Exactly one installed distribution owns ``cv2`` (and it is the headless build)."""
    from importlib.metadata import distributions

    owners = sorted({d.metadata["Name"] for d in distributions()
                     if any(str(f).startswith("cv2/") for f in (d.files or []))})
    assert owners == ["opencv-python-headless"], f"cv2 owned by {owners}; want only opencv-python-headless"
    return "opencv-python-headless only"


def pip_check() -> str:
    """``pip check`` reports nothing but the allowed opencv line."""
    out = subprocess.run([sys.executable, "-m", "pip", "check"], capture_output=True, text=True).stdout
    extra = [ln for ln in out.splitlines() if ln.strip() and ln.strip() not in ALLOWED_PIP_CHECK
             and not ln.startswith("No broken requirements")]
    assert not extra, "pip check: " + " | ".join(extra)
    return "clean but the allowed opencv-python line" if out.strip() not in ("", "No broken requirements found.") \
        else "clean"


def tools() -> str:
    """``wget`` for KubeRay's probes."""
    assert shutil.which("wget"), "wget is missing (KubeRay's readiness and liveness probes call it)"
    return shutil.which("wget")


def embedded() -> str:
    """The GGUF, its converted copies already in ``$HOWEVAL_CACHE``, and the default PatternRM from the package."""
    from howeval.engines.checkpoints import cache_dir, default_model_dir

    made = sorted(p.name for p in cache_dir().iterdir() if (p / "config.json").exists())
    assert "smollm2-135m-instruct-fp32" in made, f"{cache_dir()} holds {made}: run with --prepare"
    return f"GGUF in {default_model_dir()}; converted: {', '.join(made)}"


def gpu_libraries() -> str:
    """The GPU image's engines: vLLM, DeepSpeed, Triton (imported, not started: no GPU is needed here), over a
    CUDA build of torch (``torch.version.cuda`` set; a ``+cpu`` torch would import as well and fail on a GPU)."""
    import deepspeed
    import torch
    import triton
    import vllm

    assert torch.version.cuda and "+cpu" not in torch.__version__, \
        f"torch {torch.__version__} is a CPU build (torch.version.cuda={torch.version.cuda}): the GPU image needs CUDA's"
    return (f"vllm {vllm.__version__}, deepspeed {deepspeed.__version__}, triton {triton.__version__}, "
            f"torch {torch.__version__} (CUDA {torch.version.cuda})")


def c_toolchain() -> str:
    """``cc`` builds a Python extension module the way Triton builds its CUDA launcher at run time."""
    cc = shutil.which("cc") or shutil.which("gcc")
    assert cc, "no C compiler: Triton compiles its launcher with cc on first use (vLLM, TRL's colocated vLLM)"
    with tempfile.TemporaryDirectory() as d:
        src = os.path.join(d, "launcher.c")
        with open(src, "w") as f:
            f.write('#include <Python.h>\nstatic struct PyModuleDef m = {PyModuleDef_HEAD_INIT, "launcher"};\n'
                    "PyMODINIT_FUNC PyInit_launcher(void) { return PyModule_Create(&m); }\n")
        so = os.path.join(d, "launcher" + sysconfig.get_config_var("EXT_SUFFIX"))
        subprocess.run([cc, "-O1", "-shared", "-fPIC", "-I", sysconfig.get_paths()["include"], src, "-o", so],
                       check=True, capture_output=True, text=True)
        sys.path.insert(0, d)
        importlib.import_module("launcher")
    return f"{cc} built and imported a Python extension"


def run(checks: list[tuple[str, Callable[[], str]]]) -> int:
    """Run each check, print one line each; returns the number of failures."""
    failures = 0
    for name, fn in checks:
        try:
            print(f"image check: {name:<14} ok    {fn()}", flush=True)
        except Exception as e:  # noqa: BLE001 - every check reports, then the count decides
            failures += 1
            print(f"image check: {name:<14} FAIL  {type(e).__name__}: {e}", flush=True)
            traceback.print_exc(limit=3)
    return failures


def main() -> None:
    ap = argparse.ArgumentParser(description="Check (and with --prepare, first finish) the built image.")
    ap.add_argument("--variant", choices=("cpu", "gpu"), required=True)
    ap.add_argument("--prepare", action="store_true", help="build the converted embedded checkpoints first")
    args = ap.parse_args()
    if args.prepare:
        print("image prepare: " + ", ".join(prepare()), flush=True)
    checks = [("modules", import_all), ("libraries", cpu_libraries), ("cv2 owner", cv2_owner),
              ("ocr", ocr), ("pip check", pip_check), ("wget", tools), ("embedded", embedded)]
    if args.variant == "gpu":
        checks += [("gpu engines", gpu_libraries), ("c toolchain", c_toolchain)]
    failures = run(checks)
    print(f"image check: {len(checks) - failures}/{len(checks)} passed ({args.variant} variant)", flush=True)
    sys.exit(failures)


if __name__ == "__main__":
    main()
