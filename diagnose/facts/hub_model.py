"""The model a log names only in a Hugging Face Hub URL or message: a download that failed (`Cannot access gated
repo for url https://huggingface.co/meta-llama/Llama-3.1-8B-Instruct/resolve/main/config.json`, `Access to model
X is restricted`, `Repository Not Found for url: https://huggingface.co/api/models/X/...`).

Fills the model only where no launch and no vLLM line named it (Context.model_name); the held-out review found
fixes written with `<org/model>` while the URL in the log named the repository.

>>> from diagnose.facts.record import Facts
>>> facts = Facts(); hub = HubModelExtractor(facts)
>>> hub.feed(1, "Cannot access gated repo for url https://huggingface.co/meta-llama/Llama-3.1-8B/resolve/main/config.json.", [])
>>> facts.hub_model
'meta-llama/Llama-3.1-8B'
>>> facts = Facts(); HubModelExtractor(facts).feed(1, "See https://huggingface.co/docs/hub/security-tokens", [])
>>> facts.hub_model is None
True
"""

from __future__ import annotations

from typing import Sequence

from ..util.lazy_pattern import lazy
from .base import ExtractorBase

_REPO = r"(?P<repo>[A-Za-z0-9][\w.-]{0,95}/[\w.-]{1,95}?)"
# the Hub's own paths that are not a repository (huggingface.co/docs/…, /api/models/… holds one after it)
_NOT_REPOS = ("docs/", "datasets/", "spaces/", "settings/", "join", "login", "pricing", "blog/", "papers/", "api/")
_URL = lazy(r"https?://huggingface\.co/(?:api/models/)?" + _REPO + r"(?:/(?:resolve|tree|blob|raw|revision)/|\.git\b|[\s\"'`)]|/?$)")
_MESSAGE = lazy(r"Access to model " + _REPO + r" is restricted")


class HubModelExtractor(ExtractorBase):
    literals = ("huggingface.co/", "access to model ")

    def feed(self, line_no: int, message: str, following: Sequence[str]) -> None:
        if self.facts.hub_model is not None:
            return
        text = message[:4000]
        for match in (_MESSAGE.search(text), *_URL.finditer(text)):
            if match is None:
                continue
            repo = match.group("repo").rstrip(".")
            whole = text[match.start():match.end()]
            if "/api/models/" not in whole and repo.startswith(_NOT_REPOS):
                continue
            self.facts.hub_model = repo
            return


__all__ = ["HubModelExtractor"]
