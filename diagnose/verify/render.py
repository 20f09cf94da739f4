"""`vdiag verify` output: text and Markdown views of a verification result.

The text is printed through report.terminal's Printer (which sanitises every line); the Markdown sanitises and
escapes every field (report.markdown_text): vLLM's own output and the launch are input.
"""

from __future__ import annotations

from ..report.markdown_text import md_block, md_code, md_prose, md_text
from ..report.render import shown


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


def text_lines(result: dict, plan_shown: bool = True) -> list[tuple[str, str | None, int | None]]:
    """The verify result as (text, style, hang) lines: what stdout gets, on a terminal or not.

    The transcript (the diagnosis, the failing command, each attempt's command, notes and outcome) is progress, on
    stderr (cli.verify); the result is its verdict, the command that served and the kept logs. `plan_shown`: the
    progress printed the run's notes (it does once a fix is about to be tried); otherwise the result carries them.
    `hang` is the hanging indent for prose wrapped on a terminal; None keeps a line whole, and a command (a line
    of `$ ` and the command) is folded at its options there (Printer.say_lines).
    """
    lines: list[tuple[str, str | None, int | None]] = []
    if not plan_shown:
        lines += [(f"  note: {note}", "dim", 6) for note in result["notes"]]
    if result["working_command"]:
        ran = result.get("working_ran") or result["working_command"]
        served = next((a for a in result["attempts"] if a["outcome"] == "served"), None)
        how = f" (attempt {served['attempt']}, completion {served['completion']!r})" if served else ""
        lines += [(f"✓ This command served a real completion{how}:", "bold green", 2), (f"  $ {ran}", "green", None)]
        if ran != result["working_command"]:
            lines += [("  The same fix in your launch's form (to deploy):", None, None),
                      (f"  $ {result['working_command']}", "green", None)]
    elif result["status"] == "nothing-to-verify":
        lines.append((f"– Nothing to verify: {result['reason']}; nothing was run.", "bold", 2))
    elif result["status"] == "declined":
        lines.append((f"– Not verified: {result['reason']}; the diagnosis stands as reported.", "bold", 2))
    else:
        lines.append((f"✗ No fix made vLLM serve: {result['reason']}", "bold red", 2))
    lines += [(f"  log of attempt {a['attempt']}: {a['log']}", "dim", None) for a in result["attempts"] if a.get("log")]
    return lines


def to_text(result: dict) -> str:
    """The verify result as plain text, as stdout gets it (already redacted by `VerifyResult.as_json`)."""
    return "\n".join(text for text, _, _ in text_lines(result, plan_shown=False)) + "\n"


def to_markdown(result: dict) -> str:
    """The verify result for a support reply."""
    result = shown(result)
    out = ["## vdiag verify", ""]
    if result["status"] == "nothing-to-verify":
        return "\n".join([*out, f"**Nothing to verify:** {md_prose(result['reason'])}; nothing was run."]) + "\n"
    diagnosis = result["diagnosis"]
    if diagnosis:
        out += [f"Diagnosis: **{md_prose(diagnosis['title'])}** ({md_code(str(diagnosis['rule']))})", ""]
    if result["original_command"]:
        out += ["Failing command:", "", md_block(result["original_command"]), ""]
    out += ["| # | fix | outcome | ready (s) | completion |", "|---|---|---|---|---|"]
    for attempt in result["attempts"]:
        completion = "" if attempt["completion"] is None else md_code(repr(attempt["completion"]), table=True)
        outcome = md_text(_outcome_line({**attempt, "seconds_to_ready": None, "completion": None}))
        ready = "" if attempt["seconds_to_ready"] is None else attempt["seconds_to_ready"]
        fix = md_prose(attempt["fix"], table=True)
        out.append(f"| {attempt['attempt']} | {fix} | {outcome} | {ready} | {completion} |")
    out.append("")
    if result["working_command"]:
        out += ["**Working command** (served a real completion, then stopped):", "",
                md_block(result["working_command"])]
    elif result["status"] == "declined":
        out.append(f"**Not verified:** {result['reason']}.")
    else:
        out.append(f"**No fix made vLLM serve:** {md_prose(result['reason'])}")
    return "\n".join(out) + "\n"
