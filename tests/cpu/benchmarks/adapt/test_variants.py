"""Tool-requiring variants of the demo items: pixels and evidence boxes follow the transform."""
from __future__ import annotations

import json

import numpy as np
from PIL import Image

from howeval.benchmarks.adapt.variants import write_variants
from howeval.benchmarks.loaders import load_benchmark


def test_variants_of_demo_items(tmp_path, repo_root):
    src = repo_root / "datasets" / "demo" / "manifest.jsonl"
    path = write_variants(str(src), str(tmp_path / "v"))
    rows = {json.loads(line)["uid"]: json.loads(line) for line in open(path)}
    orig = {json.loads(line)["uid"]: json.loads(line) for line in src.open()}
    with_boxes = [u for u, r in orig.items() if r.get("evidence_boxes")]
    assert len(rows) == 2 * len(with_boxes)
    uid = with_boxes[0]
    r, c = rows[f"{uid}#rotate"], rows[f"{uid}#low_contrast"]
    o_img = np.asarray(Image.open(src.parent / orig[uid]["image"]).convert("RGB"))
    r_img = np.asarray(Image.open(tmp_path / "v" / r["image"]).convert("RGB"))
    assert np.array_equal(r_img, np.rot90(o_img))  # 90 degrees counter-clockwise
    x0, y0, x1, y1 = orig[uid]["evidence_boxes"][0]
    rx0, ry0, rx1, ry1 = r["evidence_boxes"][0]
    assert np.array_equal(r_img[ry0:ry1, rx0:rx1], np.rot90(o_img[y0:y1, x0:x1]))
    c_img = np.asarray(Image.open(tmp_path / "v" / c["image"]).convert("L"), dtype=float)
    assert c_img.std() < np.asarray(Image.open(src.parent / orig[uid]["image"]).convert("L"), dtype=float).std()
    assert r["tool_required"] and r["variant_of"] == uid and c["evidence_boxes"] == orig[uid]["evidence_boxes"]
    # the variant manifest loads like any benchmark
    assert len(load_benchmark(path).samples) == len(rows)
