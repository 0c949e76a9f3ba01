"""Print the project's dependencies from pyproject.toml, one per line, for the image's dependency layer.

``python3 k8s/image/requirements.py [--extra gpu]``: ``[project].dependencies`` plus the named extras, so the
Dockerfile installs them before copying the code (a layer that survives code edits). Standard library only
(Python >= 3.11 for tomllib): it runs in the bare base image before anything is installed.
"""
from __future__ import annotations

import argparse
import pathlib

import tomllib


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pyproject", default=str(pathlib.Path(__file__).resolve().parents[2] / "pyproject.toml"))
    ap.add_argument("--extra", action="append", default=[], help="an optional-dependencies group to add (repeatable)")
    args = ap.parse_args()
    project = tomllib.loads(pathlib.Path(args.pyproject).read_text())["project"]
    deps = list(project["dependencies"])
    for extra in args.extra:
        if extra not in project.get("optional-dependencies", {}):
            raise SystemExit(f"--extra {extra}: not in [project.optional-dependencies] "
                             f"({sorted(project.get('optional-dependencies', {}))})")
        deps += project["optional-dependencies"][extra]
    print("\n".join(deps))


if __name__ == "__main__":
    main()
