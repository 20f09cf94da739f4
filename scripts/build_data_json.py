#!/usr/bin/env python3
"""JSON copies of the bundled YAML data files, so that a run with an empty cache parses no YAML.

Each `diagnose/data/NAME.yaml` is the file people edit; `NAME.yaml.json` holds the same value and the sha256 of
the YAML text it was made from. `load_yaml` reads a copy only while that digest matches the YAML as it is now: a
YAML file edited after its copy is read as edited (parsed, then cached), never from a stale copy. Parsing the YAML
(engine_args.yaml and models.yaml above all) was ~0.1 s of a start with an empty cache.

The copies are never committed (one copy of each fact): the wheel's build hook (hatch_build.py) makes them with
`copy_text`; a checkout parses each YAML once and caches it. To make them in a checkout as well (ignored by git):

    python scripts/build_data_json.py          # write the copies that are missing or out of date
    python scripts/build_data_json.py --check  # exit 1 when one is missing or out of date
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from diagnose.util.datafiles import DATA_DIR, safe_yaml_loader  # noqa: E402


def parsed(path: Path):
    """The value `load_yaml` parses from a YAML file (the same loader)."""
    import yaml

    return yaml.load(path.read_bytes().decode("utf-8"), Loader=safe_yaml_loader())


def copy_text(path: Path) -> str:
    """The JSON copy of one YAML file, an entry of its tables per line, so a regenerated copy diffs by entry."""
    value = parsed(path)
    if json.loads(json.dumps(value)) != value:
        raise SystemExit(f"{path.name}: holds values JSON cannot carry (int keys, dates); load_yaml parses it instead")
    copy = {"generated_by": "scripts/build_data_json.py", "source": path.name,
            "sha256": hashlib.sha256(path.read_bytes()).hexdigest(), "data": value}
    return _lines(copy, depth=3) + "\n"


def _lines(value, depth: int, indent: str = "") -> str:
    """`value` as JSON, its containers opened one entry per line down to `depth` levels, compact below."""
    if depth == 0 or not isinstance(value, (dict, list)) or not value:
        return json.dumps(value, ensure_ascii=False)
    inner = indent + " "
    if isinstance(value, dict):
        items = [f"{inner}{json.dumps(k, ensure_ascii=False)}: {_lines(v, depth - 1, inner)}" for k, v in value.items()]
        return "{\n" + ",\n".join(items) + f"\n{indent}}}"
    return "[\n" + ",\n".join(inner + _lines(v, depth - 1, inner) for v in value) + f"\n{indent}]"


def out_of_date(data_dir: Path = DATA_DIR) -> dict[Path, str]:
    """Each copy that is missing or differs from what the YAML makes now, with the text it should hold."""
    stale = {}
    for path in sorted(data_dir.glob("*.yaml")):
        target = path.with_name(path.name + ".json")
        text = copy_text(path)
        if not target.exists() or target.read_text(encoding="utf-8") != text:
            stale[target] = text
    return stale


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--check", action="store_true", help="only report copies that are missing or out of date")
    args = parser.parse_args()
    stale = out_of_date()
    for target, text in stale.items():
        if args.check:
            print(f"{target.relative_to(ROOT)}: out of date; run scripts/build_data_json.py")
        else:
            target.write_text(text, encoding="utf-8")
            print(f"wrote {target.relative_to(ROOT)}")
    orphans = [p for p in DATA_DIR.glob("*.yaml.json") if not p.with_suffix("").exists()]
    for orphan in orphans:
        print(f"{orphan.relative_to(ROOT)}: no YAML file of that name; delete it")
    return 1 if (args.check and stale) or orphans else 0


if __name__ == "__main__":
    sys.exit(main())
