"""The miner of diagnose/data/engine_args.yaml (diagnose/authoring/release_mining: class_index, field_defaults,
field_types, flag_specs, flag_scan, env_names, engine_args_table; scripts/build_engine_args.py writes the table), on
tiny made-up vLLM source trees: which flags a release registers, their value types, choices and defaults, and how
they change over releases."""

from __future__ import annotations

import io
import sys
import tarfile
import textwrap
from pathlib import Path

import yaml

from diagnose.authoring.release_mining.class_index import ClassIndex
from diagnose.authoring.release_mining.engine_args_table import assemble
from diagnose.authoring.release_mining.env_names import env_names
from diagnose.authoring.release_mining.flag_scan import scan_flags
from diagnose.authoring.release_mining.sources import ReleaseSources

from .conftest import ROOT

sys.path.insert(0, str(ROOT / "scripts"))

import build_engine_args  # noqa: E402

CONFIG = '''
from dataclasses import dataclass, field
from typing import Literal, Optional

GiB = 1 << 30
DEFAULT_SWAP = 4

DType = Literal["auto", "half", "bfloat16"]

@dataclass
class ModelConfig:
    max_model_len: Optional[int] = None
    dtype: DType = "auto"
    enforce_eager: bool = False
    served_model_name: Optional[list[str]] = None
    hf_overrides: dict = field(default_factory=dict)
    swap_space: float = DEFAULT_SWAP * 1.0
    seed: int = field(default=0)
'''

ARG_UTILS = '''
from vllm.config import ModelConfig

MAX_LORAS = 1

@dataclass
class EngineArgs:
    model: str = "facebook/opt-125m"

    @staticmethod
    def add_cli_args(parser):
        model_kwargs = get_kwargs(ModelConfig)
        parser.add_argument("--max-model-len", **model_kwargs["max_model_len"])
        parser.add_argument("--dtype", **model_kwargs["dtype"])
        parser.add_argument("--enforce-eager", **model_kwargs["enforce_eager"])
        parser.add_argument("--served-model-name", **model_kwargs["served_model_name"])
        parser.add_argument("--hf-overrides", **model_kwargs["hf_overrides"])
        parser.add_argument("--swap-space", **model_kwargs["swap_space"])
        parser.add_argument("--seed", **model_kwargs["seed"])
        parser.add_argument("--model", type=str, default=EngineArgs.model, help="name or path")
        parser.add_argument("--tensor-parallel-size", "-tp", type=int, default=1)
        parser.add_argument("--max-loras", type=int, default=MAX_LORAS)
        parser.add_argument("--kv-cache-dtype", type=str, choices=["auto", "fp8"], default="auto")
        parser.add_argument("--disable-log-stats", action="store_true")
        parser.add_argument("--middleware", type=str, action="append", default=[])
        parser.add_argument("--download-dir", default=os.environ.get("HF_HOME"))
        return parser
'''

CLI_ARGS = '''
@dataclass
class FrontendArgs:
    host: Optional[str] = None
    port: int = 8000
    disable_fastapi_docs: bool = False

def make_arg_parser(parser):
    frontend_kwargs = get_kwargs(FrontendArgs)
    for key, value in frontend_kwargs.items():
        parser.add_argument(f"--{key.replace('_', '-')}", **value)
    return parser
'''

CHAT = '''
def subparser_init(parser):
    parser.add_argument("--system-prompt", type=str, default=None)
'''

ENVS = '''
environment_variables = {
    "VLLM_HOST_IP": lambda: os.getenv("VLLM_HOST_IP", ""),
    "VLLM_USE_V1": lambda: bool(int(os.getenv("VLLM_USE_V1", "1"))),
}
'''


def release(version: str, files: dict[str, str]) -> ReleaseSources:
    return ReleaseSources(version, {path: textwrap.dedent(text) for path, text in files.items()})


def tree(version: str, **changes: str) -> ReleaseSources:
    """The made-up release, with files replaced (a `__` in a keyword is a `/`, `_py` ends it in `.py`)."""
    files = {"vllm/config.py": CONFIG, "vllm/engine/arg_utils.py": ARG_UTILS,
             "vllm/entrypoints/openai/cli_args.py": CLI_ARGS, "vllm/entrypoints/cli/chat.py": CHAT,
             "vllm/envs.py": ENVS}
    for key, text in changes.items():
        files[key.replace("__", "/").removesuffix("_py") + ".py"] = text
    return release(version, files)


def flags_of(sources: ReleaseSources) -> dict[str, dict]:
    warnings: list[str] = []
    flags = scan_flags(sources, ClassIndex(sources), warnings)
    assert warnings == []
    return flags


# ---------------------------------------------------------------- one release's flags


def test_a_config_field_gives_its_flag_the_fields_type_and_default():
    flags = flags_of(tree("0.10.1"))
    assert flags["--max-model-len"] == {"default": ("lit", None), "kind": "value", "type": "int", "serve": True}
    assert flags["--dtype"]["choices"] == ["auto", "half", "bfloat16"]  # through the type alias
    assert flags["--dtype"]["default"] == ("lit", "auto")
    assert flags["--served-model-name"]["type"] == "str" and flags["--served-model-name"]["nargs"] == "+"
    assert flags["--hf-overrides"]["type"] == "json" and flags["--hf-overrides"]["default"] == ("lit", {})
    assert flags["--swap-space"]["default"] == ("lit", 4.0)  # a constant times a literal, worked out
    assert flags["--seed"]["default"] == ("lit", 0)  # field(default=…)


def test_a_bool_field_is_a_switch_with_its_no_form():
    flags = flags_of(tree("0.10.1"))
    assert flags["--enforce-eager"]["kind"] == "switch"
    assert flags["--no-enforce-eager"] == {"kind": "switch", "negates": "--enforce-eager", "serve": True}


def test_explicit_keywords_give_type_choices_default_and_aliases():
    flags = flags_of(tree("0.10.1"))
    assert flags["--tensor-parallel-size"]["type"] == "int"
    assert flags["-tp"]["alias_of"] == "--tensor-parallel-size"
    assert flags["--max-loras"]["default"] == ("lit", 1)  # the module constant
    assert flags["--model"]["default"] == ("lit", "facebook/opt-125m")  # another class's field
    assert flags["--kv-cache-dtype"]["choices"] == ["auto", "fp8"]
    assert flags["--disable-log-stats"] == {"kind": "switch", "default": ("lit", False), "serve": True}
    assert flags["--middleware"]["nargs"] == "append"
    assert flags["--download-dir"]["default"] == ("expr", "os.environ.get('HF_HOME')")  # not a literal: its source


def test_a_loop_over_a_dataclass_makes_a_flag_of_every_field():
    flags = flags_of(tree("0.10.1"))
    assert flags["--port"]["type"] == "int" and flags["--port"]["default"] == ("lit", 8000)
    assert flags["--host"]["type"] == "str"
    assert flags["--no-disable-fastapi-docs"]["negates"] == "--disable-fastapi-docs"


def test_flags_of_other_commands_are_not_serve_flags():
    flags = flags_of(tree("0.10.1"))
    assert flags["--system-prompt"]["serve"] is False
    assert flags["--port"]["serve"] is True


def test_a_loop_over_fields_it_cannot_name_is_a_warning_not_a_flag():
    sources = tree("0.10.1", vllm__entrypoints__cli__chat_py='''
        def subparser_init(parser, kw):
            for key, value in kw.items():
                parser.add_argument(f"--{key}", **value)
        ''')
    warnings: list[str] = []
    scan_flags(sources, ClassIndex(sources), warnings)
    assert warnings == ["0.10.1: vllm/entrypoints/cli/chat.py:3: dynamic add_argument over unknown fields"]


def test_the_parsers_own_dash_o_is_an_alias_of_the_compilation_config():
    sources = tree("0.10.1", vllm__engine__arg_utils_py=ARG_UTILS.replace(
        'parser.add_argument("--seed"', 'parser.add_argument("--compilation-config", type=json.loads)\n'
        '        parser.add_argument("--seed"'),
        vllm__utils_py='def parse(args):\n    if arg.startswith("-O"):\n        return ["--compilation-config", arg[2:]]\n')
    flags = flags_of(sources)
    assert flags["-O"] == {"kind": "value", "type": "json", "serve": True, "alias_of": "--compilation-config"}


# ---------------------------------------------------------------- environment variables


def test_env_names_are_the_keys_of_environment_variables():
    assert env_names(tree("0.10.1"), []) == {"VLLM_HOST_IP", "VLLM_USE_V1"}


def test_a_release_before_the_dict_is_read_for_getenv_calls():
    sources = release("0.3.3", {"vllm/envs.py": "X = 1\n", "vllm/worker/worker.py":
                                'a = os.getenv("VLLM_NCCL_SO_PATH")\nb = os.environ["VLLM_PORT"]\nc = os.getenv("HOME")\n'})
    warnings: list[str] = []
    assert env_names(sources, warnings) == {"VLLM_NCCL_SO_PATH", "VLLM_PORT"}
    assert warnings == ["0.3.3: vllm/envs.py has no environment_variables dict; scanning os.getenv"]


# ---------------------------------------------------------------- timelines over releases


def _table(*sources: ReleaseSources) -> dict:
    return assemble([(s.version, flags_of(s), env_names(s, [])) for s in sources])


def test_a_flag_dropped_by_a_release_has_a_last_and_one_readded_a_gap():
    without_loras = ARG_UTILS.replace('        parser.add_argument("--max-loras", type=int, default=MAX_LORAS)\n', "")
    without_seed = ARG_UTILS.replace('        parser.add_argument("--seed", **model_kwargs["seed"])\n', "")
    table = _table(tree("0.8.5"), tree("0.9.2", vllm__engine__arg_utils_py=without_loras),
                   tree("0.10.1", vllm__engine__arg_utils_py=without_seed))
    assert table["releases"] == ["0.8.5", "0.9.2", "0.10.1"]
    assert table["flags"]["--seed"] == {"first": "0.8.5", "last": "0.9.2", "value": "int",
                                        "defaults": [{"since": "0.8.5", "value": 0}]}
    assert table["flags"]["--max-loras"]["missing_in"] == ["0.9.2"]
    assert table["flags"]["--max-loras"]["last"] is None


def test_a_changed_default_and_value_type_are_recorded_since_the_release_that_changed_them():
    newer = CONFIG.replace("DEFAULT_SWAP = 4", "DEFAULT_SWAP = 8").replace(
        "max_model_len: Optional[int] = None", "max_model_len: Optional[str] = None")
    table = _table(tree("0.8.5"), tree("0.9.2", vllm__config_py=newer))
    assert table["flags"]["--swap-space"]["defaults"] == [{"since": "0.8.5", "value": 4.0},
                                                         {"since": "0.9.2", "value": 8.0}]
    assert table["flags"]["--max-model-len"]["value_changes"] == [{"since": "0.8.5", "value": "int"},
                                                                 {"since": "0.9.2", "value": "str"}]
    assert "defaults" not in table["flags"]["--max-model-len"]  # None throughout says nothing
    assert table["flags"]["--dtype"]["choices"] == ["auto", "half", "bfloat16"]
    assert table["flags"]["--system-prompt"]["serve"] is False
    assert table["env"]["VLLM_USE_V1"] == {"first": "0.8.5", "last": None}


# ---------------------------------------------------------------- the script, end to end


def _sdist(folder: Path, sources: ReleaseSources) -> Path:
    path = folder / f"vllm-{sources.version}.tar.gz"
    with tarfile.open(path, "w:gz") as archive:
        for rel, text in sources.files.items():
            data = text.encode()
            info = tarfile.TarInfo(f"vllm-{sources.version}/{rel}")
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))
    return path


def test_the_script_writes_the_table_from_the_newest_patch_of_each_minor(tmp_path):
    for sources in (tree("0.9.1"), tree("0.9.2", vllm__envs_py='environment_variables = {"VLLM_NEW": None}\n'),
                    tree("0.10.1"), release("0.12.0", {"vllm/envs.py": "X = 1\n"})):
        _sdist(tmp_path, sources)
    (tmp_path / "vllm-0.11.0.tar.gz").write_bytes(b"not a tarball")
    out = tmp_path / "engine_args.yaml"
    assert build_engine_args.main(["--sdist-dir", str(tmp_path), "--out", str(out), "--quiet"]) == 0
    text = out.read_text()
    assert "# Releases read: 0.9.2, 0.10.1\n" in text
    assert "# Not read: vllm-0.11.0.tar.gz (ReadError), 0.12.0 (no vllm/engine/arg_utils.py)\n" in text
    table = yaml.safe_load(text)
    assert table["releases"] == ["0.9.2", "0.10.1"]
    assert table["flags"]["--dtype"] == {"first": "0.9.2", "last": None, "value": "str",
                                         "choices": ["auto", "half", "bfloat16"],
                                         "defaults": [{"since": "0.9.2", "value": "auto"}]}
    assert table["env"]["VLLM_NEW"] == {"first": "0.9.2", "last": "0.9.2"}
    assert '  "--tensor-parallel-size": {"first": "0.9.2", "last": null, "value": "int", ' in text


def test_the_script_says_so_when_the_folder_has_no_sdist(tmp_path, capsys):
    assert build_engine_args.main(["--sdist-dir", str(tmp_path), "--out", str(tmp_path / "x.yaml")]) == 2
    assert "no vllm-*.tar.gz in" in capsys.readouterr().err
