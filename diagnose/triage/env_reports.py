"""The setup facts in an environment report a ticket pastes: vLLM's `python collect_env.py`, `nvidia-smi -L`.

`collect_env.py` (vLLM's copy of PyTorch's) prints `Key: value` lines; since mid-2025 they are padded into columns
(`vLLM Version                 : 0.9.1`) under `=====` section headers (System Info, PyTorch Info, CUDA / GPU Info,
vLLM Info, …). Its GPUs come one a line under `GPU models and configuration`, as `nvidia-smi -L` prints them
(`GPU 0: NVIDIA A100-SXM4-80GB (UUID: GPU-…)`), or inline after the key when there is one. The keys are data
(`env_reports` in data/triage_prose.yaml); the GPUs are counted, so eight lines of one card read `8x <card>`.

>>> report = ("Collecting environment information...\\nvLLM Version                 : 0.10.1.1\\n"
...           "GPU models and configuration :\\nGPU 0: NVIDIA H100 80GB HBM3\\nGPU 1: NVIDIA H100 80GB HBM3\\n\\n"
...           "Nvidia driver version        : 550.54.15\\nCUDA runtime version         : 12.8.93\\n")
>>> facts = env_report_facts(report)
>>> facts["vllm_version"], facts["gpus"], facts["driver"], facts["cuda"]
('0.10.1.1', ['2x NVIDIA H100 80GB HBM3'], '550.54.15', '12.8')
>>> env_report_facts("GPU 0: NVIDIA GeForce RTX 4090 (UUID: GPU-5e1c…)\\n")["gpus"]
['NVIDIA GeForce RTX 4090']
>>> env_report_facts("we saw GPU 0: hang and then nothing")
{}
"""

from __future__ import annotations

import re
from collections import Counter
from functools import lru_cache
from typing import Any

from ..util.datafiles import load_yaml
from ..util.lazy_pattern import lazy

# `GPU 0: NVIDIA A100-SXM4-80GB` with an optional `(UUID: …)`: a card's name starts with a vendor or a family word
_GPU_LINE = lazy(r"(?:^|:\s*)GPU\s+\d{1,2}:\s*(?P<name>(?:NVIDIA|Tesla|Quadro|GeForce|AMD|Instinct|Radeon)\b[^()\n]{1,60}?)"
                 r"\s*(?:\(UUID:[^)\n]*\)?)?\s*$", re.MULTILINE)
MAX_GPU_LINES = 64


@lru_cache(maxsize=1)
def _keys() -> dict[str, Any]:
    data = load_yaml("triage_prose.yaml")["env_reports"]
    field = r"^[ \t]*(?P<key>{keys})[ \t]*:[ \t]*(?P<value>[^\n]*)$"
    return {
        "fields": {fact: re.compile(field.format(keys="|".join(re.escape(k) for k in keys)), re.MULTILINE | re.IGNORECASE)
                   for fact, keys in data["fields"].items()},
        "values": {fact: re.compile(pattern) for fact, pattern in data["values"].items()},
    }


def env_report_facts(text: str) -> dict[str, Any]:
    """vLLM version, GPUs, driver and CUDA an environment report in `text` states (only those it states)."""
    keys = _keys()
    facts: dict[str, Any] = {}
    for fact, pattern in keys["fields"].items():
        for found in pattern.finditer(text):
            value = keys["values"][fact].search(found.group("value"))
            if value:
                facts[fact] = value.group(0)
                break
    gpus = Counter(" ".join(m.group("name").split()) for m in _GPU_LINE.finditer(text, 0) if m)
    if gpus:
        facts["gpus"] = [f"{count}x {name}" if count > 1 else name for name, count in list(gpus.items())[:MAX_GPU_LINES]]
    return facts
