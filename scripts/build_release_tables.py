#!/usr/bin/env python3
"""Build the release tables in diagnose/data/generated/ from vLLM's sdists (read with ast, never imported):

* setting_history.json: removed `vllm serve` flags, and the flags and environment variables that replaced each
  other (`--all2all-backend` ↔ `VLLM_ALL2ALL_BACKEND`), with the feature each one controls and vLLM's own notes;
* quantization_capability.json: each quantization method, the releases that have it, and the compute capability
  its config class asks for in each release (mxfp4 from 8.0 in 0.10.2, …);
* value_forms.json: the spellings a flag's number takes per release (`--max-model-len 32k`, `auto` from 0.16).

The flag and environment timelines come from diagnose/data/engine_args.yaml (scripts/build_engine_args.py), built
from the same sdists. The mining itself is diagnose/authoring/release_mining/.

Usage:
    python scripts/build_release_tables.py --sdist-dir /tmp/vllm-sdists
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import yaml  # noqa: E402

from diagnose.authoring.release_mining.notes import deprecation_notes, describes, env_help, flag_help  # noqa: E402
from diagnose.authoring.release_mining.quantization import assemble_quantization, quantization_methods  # noqa: E402
from diagnose.authoring.release_mining.settings import assemble_settings  # noqa: E402
from diagnose.authoring.release_mining.sources import ReleaseSources, newest_per_minor  # noqa: E402
from diagnose.authoring.release_mining.values import assemble_value_forms, value_forms  # noqa: E402

DATA = Path(__file__).resolve().parent.parent / "diagnose" / "data"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sdist-dir", type=Path, required=True, help="folder with vllm-X.Y.Z.tar.gz sdists")
    parser.add_argument("--engine-args", type=Path, default=DATA / "engine_args.yaml")
    parser.add_argument("--out-dir", type=Path, default=DATA / "generated")
    args = parser.parse_args(argv)
    sdists = newest_per_minor(list(args.sdist_dir.glob("vllm-*.tar.gz")))
    if not sdists:
        print(f"no vllm-*.tar.gz in {args.sdist_dir}", file=sys.stderr)
        return 2
    engine_args = yaml.safe_load(args.engine_args.read_text(encoding="utf-8"))
    notes, quantization, values, read = [], [], [], []
    flag_helps: dict[str, str] = {}  # the newest help that says what the setting does, not that it is deprecated
    env_helps: dict[str, str] = {}
    any_helps: dict[str, str] = {}
    for path in sdists:
        release = ReleaseSources.from_sdist(path)
        if release.version not in (engine_args.get("releases") or []):
            print(f"skipped {release.version}: not in {args.engine_args.name}", file=sys.stderr)
            continue
        read.append(release.version)
        notes += [(release.version, note) for note in deprecation_notes(release)]
        for helps, found in ((flag_helps, flag_help(release)), (env_helps, env_help(release))):
            any_helps.update(found)
            helps.update({name: text for name, text in found.items() if describes(text)})
        quantization.append((release.version, quantization_methods(release)))
        values.append((release.version, value_forms(release)))
        print(f"{release.version}: {len(quantization[-1][1])} quantization methods", file=sys.stderr)
    header = {"generated_by": "scripts/build_release_tables.py", "releases": read}
    tables = {
        "setting_history.json": {**header, "settings": assemble_settings(
            engine_args, notes, {**any_helps, **flag_helps}, {**any_helps, **env_helps})},
        "quantization_capability.json": {**header, "methods": assemble_quantization(quantization)},
        "value_forms.json": {**header, "flags": assemble_value_forms(values)},
    }
    args.out_dir.mkdir(parents=True, exist_ok=True)
    for name, table in tables.items():
        text = json.dumps(table, indent=1, ensure_ascii=False, sort_keys=False) + "\n"
        (args.out_dir / name).write_text(text, encoding="utf-8")
        print(f"wrote {args.out_dir / name}: {len(text.encode())} bytes", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
