"""Read each row's images (``image_paths``, any fsspec URL) into ``images`` (bytes), in the stage actor.

Stages declared with ``read_images`` (``howeval.plugins.pipeline``) call it on each batch before their own work, so
images go from storage to the engine and the driver never holds one. A file that cannot be read
or is not an image puts its reason in ``input_error`` (the policy then records it on the row's
``error``; a rerun retries it), never a dropped row.
"""
from __future__ import annotations

import fsspec
import pyarrow as pa

from howeval.actors.policy import INPUT_ERROR
from howeval.judges.images import BadImage, check_image
from howeval.records import check_columns

REQUIRED_COLUMNS = {"image_paths": "list[str]: each image's path or URL (null/empty = no image)"}

def read_image(path: str) -> bytes:
    """The bytes of one image file. Raises OSError when unreadable, BadImage when empty or not an image."""
    with fsspec.open(path, "rb") as f:
        data = f.read()
    check_image(data, path)
    return data


class ReadImages:
    """``batch -> batch`` with ``images`` (list of bytes per row) and ``input_error`` columns set."""

    def __call__(self, batch: pa.Table) -> pa.Table:
        check_columns(batch.column_names, REQUIRED_COLUMNS, "ReadImages")
        images, errors = [], []
        for paths in batch.column("image_paths").to_pylist():
            got, err = [], None
            for p in paths or []:
                try:
                    got.append(read_image(p))
                except (OSError, BadImage) as e:
                    err = f"image: cannot read {p} ({type(e).__name__}: {e})"
                    break
            images.append(got if err is None else [])
            errors.append(err)
        for name, col in (("images", pa.array(images, pa.list_(pa.binary()))), (INPUT_ERROR, pa.array(errors, pa.string()))):
            if name in batch.column_names:
                batch = batch.set_column(batch.column_names.index(name), name, col)
            else:
                batch = batch.append_column(name, col)
        return batch
