"""What a report says about its run: the configs and how images reached each, the judges, the data, dates.

How images reached a config (its "vision mode") comes from the config's ``vision`` setting and the
``images_seen`` column of its response rows (the number of images the engine actually received):

- ``sent``: the config sends images and its engine received at least one (``images_seen`` > 0);
- ``OCR text``: the config sends the images' OCR text instead of the images (``vision: ocr``);
- ``none``: no image reached the model (``vision: false``, or an engine that cannot take images).

Only a config whose vision mode is ``none`` is called text-only.
"""
from __future__ import annotations

import datetime as _dt

from howeval.report.provenance import relative_to_run

VISION_MODES = ("sent", "OCR text", "none")


def vision_mode(vision_setting, images_seen: list[int | None]) -> str:
    """How images reached a config: one of :data:`VISION_MODES`.

    Args:
        vision_setting: the config's ``vision`` value (True, False, ``"ocr"``, ``"none"``, ``"images"``;
            None when the run config is unknown: then ``images_seen`` alone decides).
        images_seen: ``images_seen`` of the config's responses without engine error (None = not recorded).

    >>> vision_mode(True, [1, 2, 0]), vision_mode(False, [0, 0]), vision_mode("ocr", [0]), vision_mode(True, [0, 0])
    ('sent', 'none', 'OCR text', 'none')
    """
    if isinstance(vision_setting, str) and vision_setting.lower() == "ocr":
        return "OCR text"
    if any((n or 0) > 0 for n in images_seen):
        return "sent"
    return "none"


def vision_modes(cfg, responses: list[dict]) -> dict[str, str]:
    """Config name -> vision mode for every config of ``cfg`` (a SweepConfig, or None) or of ``responses``."""
    settings = {m.name: m.vision for m in cfg.models} if cfg is not None else {}
    seen: dict[str, list] = {name: [] for name in settings}
    for r in responses:
        if not r.get("error"):
            seen.setdefault(r["config"], []).append(r.get("images_seen"))
    return {name: vision_mode(settings.get(name), vals) for name, vals in sorted(seen.items())}


def images_summary(responses: list[dict]) -> dict[str, dict]:
    """Config -> ``{"responses", "with_images", "images"}``: rows without engine error, rows whose engine
    received at least one image, images received in all."""
    out: dict[str, dict] = {}
    for r in responses:
        if r.get("error"):
            continue
        s = out.setdefault(r["config"], {"responses": 0, "with_images": 0, "images": 0})
        n = r.get("images_seen") or 0
        s["responses"] += 1
        s["with_images"] += n > 0
        s["images"] += n
    return out


def _mtimes(uri: str) -> list[float]:
    from howeval.store import fs_and_path

    fs, root = fs_and_path(uri)
    if not fs.exists(root):
        return []
    out = []
    for f in fs.find(root):
        if f.endswith(".parquet"):
            t = fs.info(f).get("mtime") or fs.info(f).get("created")
            if isinstance(t, _dt.datetime):
                t = t.timestamp()
            if isinstance(t, (int, float)):
                out.append(float(t))
    return out


def _iso(t: float) -> str:
    return _dt.datetime.fromtimestamp(t, _dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")


def run_metadata(cfg, responses: list[dict], n_samples: int | None = None, now: _dt.datetime | None = None) -> dict:
    """The run's metadata for the report header.

    Local paths are relative to the run folder (``output_uri`` is ``.`` for a local run; URLs are kept).
    Returns ``{"name", "output_uri", "configs": [{"name", "engine", "model", "vision", "images",
    "max_tokens": {mode: n}, "modes"}], "judges": {"pattern": [...], "primary", "verifier"},
    "data": {"benchmarks": [...], "n_samples"}, "dates": {"responses_from", "responses_to", "report"}}``.
    ``now`` is injectable for tests (default: the current UTC time).
    """
    from howeval.store import join

    out = cfg.output_uri
    vis = vision_modes(cfg, responses)
    imgs = images_summary(responses)
    configs = []
    for m in cfg.models:
        configs.append({"name": m.name, "engine": m.engine,
                        "model": relative_to_run(m.model, out) or ("embedded default" if m.engine == "hf" else "–"),
                        "vision": vis.get(m.name, "none"), "images": imgs.get(m.name),
                        "modes": sorted(m.modes),
                        "max_tokens": {k: (mc.max_tokens or m.sampling.max_tokens) for k, mc in sorted(m.modes.items())}})
    times = _mtimes(join(cfg.output_uri, "responses"))
    now = now or _dt.datetime.now(_dt.timezone.utc)
    fallback = "with LLM fallback" if cfg.judges.verifier.llm_fallback else "rules only"
    return {
        "name": cfg.name, "output_uri": out if "://" in out else ".", "configs": configs,
        "judges": {"pattern": [f"{j.name}@{j.version} ({j.kind})" for j in cfg.judges.pattern],
                   "primary": cfg.judges.primary_name, "verifier": f"rule-based per answer type, {fallback}"},
        "data": {"benchmarks": [f"{b.name or rel} ({rel}{', limit ' + str(b.limit) if b.limit else ''})"
                                for b in cfg.benchmarks for rel in [relative_to_run(b.path, out)]],
                 "n_samples": n_samples if n_samples is not None else len({r["sample_id"] for r in responses})},
        "dates": {"responses_from": _iso(min(times)) if times else None,
                  "responses_to": _iso(max(times)) if times else None,
                  "report": now.strftime("%Y-%m-%d %H:%M UTC")},
    }
