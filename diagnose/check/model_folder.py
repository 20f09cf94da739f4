"""The model's local folder, where the launch names one that is on the machine: vLLM reads a folder as the model
only when it holds a config.json (or a Mistral params.json), and loads the tokenizer from it (or from
`--tokenizer`) unless `--skip-tokenizer-init`. A folder that is there without them fails at start; a name that is
no folder here (a hub id, a path on another machine or in a container) is not judged, nor a relative name where
the GPU facts are not this machine's (the launch's working directory is then unknown).

>>> import tempfile; from pathlib import Path
>>> from diagnose.check.target import target_for
>>> from diagnose.foresight.gpus import gpus_from_table
>>> from diagnose.model.files import ModelFiles
>>> root = Path(tempfile.mkdtemp()); (root / "m").mkdir(); _ = (root / "m" / "model.safetensors").write_text("")
>>> host = FolderHost(ModelFiles(root=root, environ={}, cwd="/"))
>>> [(f.outcome, f.category) for f in folder_findings(target_for("vllm serve /m", gpus_from_table("L4", 1), "0.10.0",
...                                                               host=host))]
[('fail', 'hf-auth-or-missing-model')]
"""

from __future__ import annotations

from dataclasses import dataclass

from ..foresight.findings import Finding, check, passed, skipped
from ..model.files import ModelFiles
from ..util.lazy_pattern import lazy

# What transformers' AutoTokenizer and vLLM's Mistral tokenizer load: tokenizer.json / tokenizer_config.json,
# sentencepiece (tokenizer.model, spiece.model, *.model), BPE vocab.json + merges.txt, vocab.txt, tiktoken files,
# tekken.json.
_TOKENIZER_FILE = lazy(r"(?i)^(?:tokenizer.*|.*\.model(?:\.v\d+)?|vocab\.(?:json|txt)|merges\.txt|.*\.tiktoken|"
                       r"tekken\.json|qwen\.tiktoken)$")
_CONFIG_FILES = ("config.json", "params.json")


@check("model-files")
def folder_findings(target) -> list[Finding]:
    launch = target.launch
    files = target.host.model_files
    if files is None or not launch.model or launch.image:
        return [skipped("model-files", "the model's folder (not on this machine, or inside a container)")]
    relative = not launch.model.startswith(("/", "~"))
    names = None if relative and not target.gpu.here else files.folder_names(launch.model)
    if names is None:
        return [skipped("model-files", f"{launch.model} is no folder here (a hub id, or a path on another machine)")]
    if "model_index.json" in names:  # a diffusers pipeline (vLLM-Omni): its parts sit in subfolders
        return [skipped("model-files", f"{launch.model} is a diffusion pipeline folder (model_index.json)")]
    if launch.get("--hf-config-path"):
        return [passed("model-files", f"the config is read from --hf-config-path {launch.get('--hf-config-path')}"),
                *_tokenizer(target, files, names)]
    if not any(name in names for name in _CONFIG_FILES):
        return [Finding("model-files", "fail", f"{launch.model} holds no config.json", category="hf-auth-or-missing-model",
                        rule="model-path-missing-config", captures={"path": launch.model},
                        detail=f"The folder {launch.model} is here but holds no config.json (nor a Mistral params.json)"
                               f"; vLLM then takes the name as a hub repo id and stops with `Invalid repository ID or "
                               f"local directory specified: '{launch.model}'`.")]
    found = [passed("model-files", f"{launch.model} holds {next(n for n in _CONFIG_FILES if n in names)}")]
    return found + _tokenizer(target, files, names)


def _tokenizer(target, files: ModelFiles, names: frozenset[str]) -> list[Finding]:
    launch = target.launch
    if launch.get("--skip-tokenizer-init") not in (None, "false", "False"):
        return [passed("tokenizer", "--skip-tokenizer-init: no tokenizer is loaded")]
    where = launch.get("--tokenizer")
    if where and where != launch.model:
        elsewhere = files.folder_names(where)
        if elsewhere is None:
            return [skipped("tokenizer", f"--tokenizer {where} is no folder here")]
        names = elsewhere
    where = where or launch.model
    if any(_TOKENIZER_FILE.match(name) for name in names):
        return [passed("tokenizer", f"{where} holds tokenizer files")]
    return [Finding("tokenizer", "fail", f"{where} holds no tokenizer files", category="tokenizer-or-chat-template",
                    rule="tokenizer-or-chat-template", captures={"path": where},
                    changes={"--skip-tokenizer-init": True}, fix_title="Skip the tokenizer (token ids in, token ids out)",
                    detail=f"The folder {where} has a config.json but no tokenizer.json, tokenizer.model, vocab or "
                           "tiktoken file: vLLM's tokenizer load stops (`Couldn't instantiate the backend tokenizer` / "
                           "`Can't load tokenizer`). Give --tokenizer a folder or repo that has one, or "
                           "--skip-tokenizer-init where requests send token ids.")]


@dataclass(frozen=True)
class FolderHost:
    """A machine with only model folders (for the examples and tests): no NVML, no port probe."""

    model_files: ModelFiles

    def live_gpus(self):
        return None

    def free_port_near(self, start: int) -> int:
        return start


__all__ = ["FolderHost", "folder_findings"]
