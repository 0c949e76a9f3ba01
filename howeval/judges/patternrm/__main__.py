"""``python -m howeval.judges.patternrm`` (``make patternrm``): train the served PatternRM head v5 on every
human label (``howeval.judges.patternrm.recipe.build_served``) and rewrite the shipped head in the package."""
from __future__ import annotations

import argparse
from pathlib import Path

from howeval.judges.patternrm.head import shipped_head_path
from howeval.judges.patternrm.labelsets import LabelSourceMissing
from howeval.judges.patternrm.recipe import build_served


def main(argv: list[str] | None = None) -> None:
    """Parse ``argv`` and train; exits with a message naming the missing label source (needs ``../shared/data``)."""
    ap = argparse.ArgumentParser(prog="python -m howeval.judges.patternrm",
                                 description="Train the served PatternRM head v5 on every human label and rewrite the "
                                             "shipped head in the package (needs ../shared/data)")
    ap.add_argument("--out", default=None, help="output folder (default: the shipped folder, howeval/judges/patternrm/weights/)")
    ap.add_argument("--all-sources", action="store_true", help="train on every source, share-alike and non-commercial ones too")
    ap.add_argument("--force", action="store_true", help="(kept for `make patternrm FORCE=1`; the head is always retrained)")
    a = ap.parse_args(argv)
    target = Path(a.out) if a.out else shipped_head_path()
    try:
        build_served(target, permissive_only=not a.all_sources)
    except LabelSourceMissing as e:
        raise SystemExit(f"[patternrm] cannot train: {e}") from None
    print(f"[patternrm] -> {target}")


if __name__ == "__main__":
    main()
