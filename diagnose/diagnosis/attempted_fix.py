"""A paste that also shows the user's try of the fix in a spelling vLLM refused (`trust_remote_code=True` given to
`vllm serve`): one failure and a retry, not two failures. The refusal becomes a sentence of the fix's Why."""

from __future__ import annotations

from .diagnoses import Diagnosis

REFUSED_CATEGORY = "invalid-cli-argument"


def _as_flag(token: str) -> str | None:
    """`trust_remote_code=True`, `--trust_remote_code`, `trust-remote-code` → `--trust-remote-code` (the flag a name
    in a message means: fixes.advice.flag_for), its value and quotes left out.

    >>> _as_flag("trust_remote_code=True"), _as_flag("--max_model_len=4096"), _as_flag("/models/x")
    ('--trust-remote-code', '--max-model-len', None)
    """
    from ..fixes.advice import flag_for

    name = token.strip("'\"`,").split("=", 1)[0]
    return flag_for(name) if name[:1].isalpha() or name.startswith("-") else None


def fold_attempted_spellings(fired: list[Diagnosis]) -> list[Diagnosis]:
    """Drop a refused-argument diagnosis whose every refused token is a flag the top diagnosis's fixes set, and say
    so in that diagnosis's Why; anything else stays as it was."""
    if len(fired) < 2 or not fired[0].fixes:
        return fired
    top = fired[0]
    proposed = {key for ranked in top.fixes for key in ranked.fix.changes if key.startswith("--")}
    kept = [top]
    for other in fired[1:]:
        rejected = (other.captures.get("rejected") or "").split()
        flags = [_as_flag(token) for token in rejected]
        if other.rule.category == REFUSED_CATEGORY and rejected and all(f in proposed for f in flags):
            said = " ".join(rejected)
            top.why += (f" The paste also shows `{said}` refused: the same setting tried in a spelling this vLLM's "
                        f"command line does not take; the flag is {', '.join(dict.fromkeys(f for f in flags if f))}.")
            seen = {m.line for m in top.evidence}
            top.evidence += [m for m in other.evidence if m.line not in seen]  # the refusal is explained: it is shown
            continue
        kept.append(other)
    return kept
