"""The reinstall of a broken install in the way the log's platform or build installs vLLM (launch.install_guides:
macOS's release wheel or a source build, a nightly's own index), where `pip install vllm` would be wrong."""

from __future__ import annotations

from ..context.context import Context
from ..context.install_predicates import install_guide as guide_of
from .base import Declined, Fix, strategy


@strategy("install-guide", params={})
def install_guide(ctx: Context, params: dict) -> Fix | None:
    """The platform's or build's own install command in a fresh environment; declined where pip's is the guide."""
    guide = guide_of(ctx)
    if guide is None:
        raise Declined("the log's platform and build install vLLM with pip (no entry of data/install_guides.yaml)")
    why = " ".join(guide["why"].split())
    if not ctx.facts.vllm_version and guide.get("default_version"):
        why += (f" The log does not show the release: {guide['default_version']} is the newest with such a wheel "
                "that vdiag's table knows; use the release you run where it has one.")
    return Fix(title=guide["title"], step_command=" ".join(guide["command"].split()), why=why, cost="downtime",
               cost_note=guide["cost"], will_start=None)
