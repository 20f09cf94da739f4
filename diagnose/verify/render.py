"""`vdiag verify` output: text and Markdown views of a verification result."""

from __future__ import annotations


def _outcome_line(attempt: dict) -> str:
    parts = [attempt["outcome"]]
    if attempt["seconds_to_ready"] is not None:
        parts.append(f"ready in {attempt['seconds_to_ready']} s")
    if attempt["completion"] is not None:
        parts.append(f"completion {attempt['completion']!r}")
    parts.append(attempt["detail"])
    diagnosis = attempt.get("diagnosis")
    if diagnosis:
        parts.append(f"new diagnosis: {diagnosis['rule']} ({diagnosis['category']})" if diagnosis.get("rule")
                     else f"unexplained error: {diagnosis.get('line', '')}")
    return " · ".join(p for p in parts if p)


def to_text(result: dict) -> str:
    """The verify result for a terminal (already redacted by `VerifyResult.as_json`)."""
    lines = []
    diagnosis = result["diagnosis"]
    if diagnosis:
        lines.append(f"Verifying fixes for: {diagnosis['title']} ({diagnosis['rule']})")
    if result["original_command"]:
        lines.append(f"  failing command: {result['original_command']}")
    for attempt in result["attempts"]:
        lines.append(f"  attempt {attempt['attempt']} · {attempt['origin']} · {attempt['fix']}")
        lines.append(f"    $ {attempt['ran'] or attempt['command']}")
        lines.append(f"    {_outcome_line(attempt)}")
        lines += [f"    note: {note}" for note in attempt["notes"]]
        if attempt.get("log"):
            lines.append(f"    log: {attempt['log']}")
    lines += [f"  note: {note}" for note in result["notes"]]
    if result["working_command"]:
        lines += ["✓ This command served a real completion:", f"  $ {result['working_command']}"]
    else:
        lines.append(f"✗ No fix made vLLM serve: {result['reason']}")
    return "\n".join(lines) + "\n"


def to_markdown(result: dict) -> str:
    """The verify result for a support reply."""
    out = ["## vdiag verify", ""]
    diagnosis = result["diagnosis"]
    if diagnosis:
        out += [f"Diagnosis: **{diagnosis['title']}** (`{diagnosis['rule']}`)", ""]
    if result["original_command"]:
        out += ["Failing command:", "", "```", result["original_command"], "```", ""]
    out += ["| # | fix | outcome | ready (s) | completion |", "|---|---|---|---|---|"]
    for attempt in result["attempts"]:
        completion = "" if attempt["completion"] is None else f"`{attempt['completion']!r}`"
        outcome = _outcome_line({**attempt, "seconds_to_ready": None, "completion": None}).replace("|", "\\|")
        ready = "" if attempt["seconds_to_ready"] is None else attempt["seconds_to_ready"]
        out.append(f"| {attempt['attempt']} | {attempt['fix'].replace('|', '/')} | {outcome} | {ready} | {completion} |")
    out.append("")
    if result["working_command"]:
        out += ["**Working command** (served a real completion, then stopped):", "", "```", result["working_command"], "```"]
    else:
        out.append(f"**No fix made vLLM serve:** {result['reason']}")
    return "\n".join(out) + "\n"
