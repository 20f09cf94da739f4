"""Build hook: the JSON copies of the YAML data files, made into the wheel (never committed).

A start with an empty cache then parses no YAML (`diagnose/util/datafiles.load_yaml` reads `NAME.yaml.json` while
it was made from the YAML text as it is). A checkout, an editable install or an sdist has no copies: it parses each
YAML once and caches it, as any edited data file is read. The copies are `scripts/build_data_json.py`'s.
"""

from __future__ import annotations

import importlib.util
import tempfile
from pathlib import Path

from hatchling.builders.hooks.plugin.interface import BuildHookInterface

ROOT = Path(__file__).resolve().parent


class DataCopiesHook(BuildHookInterface):
    PLUGIN_NAME = "custom"

    def initialize(self, version: str, build_data: dict) -> None:
        if self.target_name != "wheel" or version == "editable":
            return
        spec = importlib.util.spec_from_file_location("build_data_json", ROOT / "scripts" / "build_data_json.py")
        builder = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(builder)
        out = Path(tempfile.mkdtemp(prefix="vdiag-data-copies-"))
        for path in sorted((ROOT / "diagnose" / "data").glob("*.yaml")):
            target = out / f"{path.name}.json"
            target.write_text(builder.copy_text(path), encoding="utf-8")
            build_data["force_include"][str(target)] = f"diagnose/data/{target.name}"
