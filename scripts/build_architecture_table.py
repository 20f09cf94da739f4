#!/usr/bin/env python3
"""Build diagnose/data/generated/architectures.json from vLLM's sdists: for each model architecture, the runs of
releases whose registry has it (read with ast, never imported; diagnose/authoring/release_mining/architectures.py),
the releases read, and the first release with the Transformers backend (which may build an architecture the
registry lacks).

Every sdist given is read, patches included, so a release inside the table is answered exactly. A post release
counts as its release (an architecture in either counts as present).

Usage:
    python scripts/build_architecture_table.py --sdist-dir /tmp/vllm-sdists
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import tarfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from diagnose.authoring.release_mining.architectures import REGISTRY_FILES, registry_architectures  # noqa: E402
from diagnose.authoring.release_mining.sources import ReleaseSources, version_key  # noqa: E402

OUT = Path(__file__).resolve().parent.parent / "diagnose" / "data" / "generated" / "architectures.json"
FALLBACK = "TransformersForCausalLM"


def registry_sources(path: Path) -> ReleaseSources:
    """Only the registry files of one sdist (reading every module of 90 sdists would take minutes)."""
    version = re.match(r"vllm-(.+)\.tar\.gz$", path.name).group(1)
    files = {}
    with tarfile.open(path) as archive:
        for member in archive:
            rel = member.name.split("/", 1)[-1]
            if member.isfile() and rel in REGISTRY_FILES:
                files[rel] = archive.extractfile(member).read().decode("utf-8", "replace")
    return ReleaseSources(version, files)


def release_of(version: str) -> str:
    return ".".join(str(p) for p in version_key(version))


def build(sdists: list[Path]) -> dict:
    present: dict[str, set[str]] = {}
    for path in sdists:
        release = release_of(re.match(r"vllm-(.+)\.tar\.gz$", path.name).group(1))
        archs = registry_architectures(registry_sources(path))
        if archs:
            present.setdefault(release, set()).update(archs)
    releases = sorted(present, key=version_key)
    runs: dict[str, list[list[str]]] = {}
    for arch in sorted(set().union(*present.values())):
        spans: list[list[str]] = []
        for i, release in enumerate(releases):
            if arch not in present[release]:
                continue
            if spans and spans[-1][1] == releases[i - 1]:
                spans[-1][1] = release
            else:
                spans.append([release, release])
        runs[arch] = spans
    fallback = next((r for r in releases if FALLBACK in present[r]), None)
    return {"source": "the model registry of each vLLM sdist (scripts/build_architecture_table.py)",
            "releases": releases, "transformers_fallback_since": fallback, "architectures": runs}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sdist-dir", type=Path, required=True, help="folder with vllm-X.Y.Z.tar.gz sdists")
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args()
    sdists = sorted(args.sdist_dir.glob("vllm-*.tar.gz"), key=lambda p: version_key(p.name))
    if not sdists:
        print(f"no vllm-*.tar.gz in {args.sdist_dir}", file=sys.stderr)
        return 2
    table = build(sdists)
    args.out.write_text(json.dumps(table, indent=None, separators=(",", ":")) + "\n")
    print(f"{len(table['architectures'])} architectures over {len(table['releases'])} releases "
          f"({table['releases'][0]}–{table['releases'][-1]}); Transformers backend from {table['transformers_fallback_since']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
