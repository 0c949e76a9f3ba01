"""Tool-requiring variants of benchmark items (SPEC section 4): rotated or low-contrast copies of each
item's image, with evidence boxes carried through the transform, written as a new manifest.

    python -m howeval.benchmarks.adapt.variants --manifest datasets/demo/manifest.jsonl --out runs/variants \
        [--kinds rotate low_contrast] [--degrees 90] [--factor 0.3]

The variant manifest keeps the source format (``uid`` gets ``#rotate`` / ``#low_contrast``), adds
``variant_of``, ``variant`` and ``tool_required: true``, and can be swept like any benchmark.
"""
from __future__ import annotations

import argparse
import io
import json
import posixpath

import fsspec
from PIL import Image

from howeval.benchmarks.adapt.tools import make_variant, transform_boxes
from howeval.store import read_jsonl


def variant_record(row: dict, img: Image.Image, kind: str, degrees: float = 90, factor: float = 0.3
                   ) -> tuple[dict, Image.Image]:
    """One variant of a manifest row and its image.

    Returns ``(record, image)``; the record's ``image`` is ``images/<uid-safe>-<kind>.png`` (relative).
    A rotation maps the evidence boxes through :func:`transform_boxes`; contrast leaves them as they are.

    Raises:
        ValueError: unknown kind (lists the known ones) or a rotation that is not a multiple of 90 degrees.
    """
    if kind == "rotate":
        out = make_variant(img, "rotate", degrees=degrees)
        boxes = transform_boxes(row.get("evidence_boxes") or [], img.size, degrees)
    elif kind == "low_contrast":
        out, boxes = make_variant(img, "low_contrast", factor=factor), row.get("evidence_boxes") or []
    else:
        raise ValueError(f"unknown variant kind {kind!r}; known: ['low_contrast', 'rotate']")
    safe = row["uid"].replace(":", "-").replace("/", "-")
    rec = {**row, "uid": f"{row['uid']}#{kind}", "image": f"images/{safe}-{kind}.png", "evidence_boxes": boxes,
           "variant_of": row["uid"], "variant": kind, "tool_required": True}
    if "image_size" in rec:
        rec["image_size"] = list(out.size)
    return rec, out


def write_variants(manifest: str, out_dir: str, kinds=("rotate", "low_contrast"), degrees: float = 90,
                   factor: float = 0.3) -> str:
    """Write variants of every row with an image and evidence boxes; returns the new manifest path."""
    base = posixpath.dirname(manifest)
    fs, root = fsspec.core.url_to_fs(out_dir)
    fs.makedirs(posixpath.join(root, "images"), exist_ok=True)
    lines = []
    for row in read_jsonl(manifest):
        if not row.get("image") or not row.get("evidence_boxes"):
            continue
        with fsspec.open(posixpath.join(base, row["image"]), "rb") as fh:
            img = Image.open(io.BytesIO(fh.read()))
            img.load()
        for kind in kinds:
            rec, vimg = variant_record(row, img, kind, degrees, factor)
            buf = io.BytesIO()
            vimg.save(buf, format="PNG")
            with fs.open(posixpath.join(root, rec["image"]), "wb") as fh:
                fh.write(buf.getvalue())
            lines.append(json.dumps(rec, ensure_ascii=False))
    path = posixpath.join(root, "manifest.jsonl")
    with fs.open(path, "w") as fh:
        fh.write("\n".join(lines) + "\n")
    return path


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m howeval.benchmarks.adapt.variants", description=__doc__.split("\n")[0])
    p.add_argument("--manifest", required=True)
    p.add_argument("--out", required=True)
    p.add_argument("--kinds", nargs="+", default=["rotate", "low_contrast"])
    p.add_argument("--degrees", type=float, default=90)
    p.add_argument("--factor", type=float, default=0.3)
    a = p.parse_args(argv)
    print(write_variants(a.manifest, a.out, a.kinds, a.degrees, a.factor))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
