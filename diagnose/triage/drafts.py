"""Reply drafts a support engineer can send as they are, and the internal note that goes beside each.

The draft speaks to the customer: the diagnosis in plain words, the exact command, what to send back if it does
not work, in a shape that fits the ticket's kind (a question is not answered with a crash template). Rule ids,
confidence and fingerprints are for the team and go in the internal note only. Wordings are data
(`diagnose/data/triage_replies.yaml`). Both are Markdown: every field from the ticket or the log is sanitised and
escaped (report.markdown_text), so a subject or an id cannot bring HTML or a link into them.

>>> report = {"status": "nothing-found", "facts": {"phase": None}, "diagnoses": [], "unexplained": []}
>>> print(customer_reply(None, report, "nothing", ["Which vLLM version?"]))
Hello,
<BLANKLINE>
thank you for the details. We could not find an error in what you sent.
<BLANKLINE>
To find out what happens, could you send us:
<BLANKLINE>
- Which vLLM version?
<BLANKLINE>
Best regards,
<BLANKLINE>
"""

from __future__ import annotations

from typing import Any

from ..report.markdown_text import md_block, md_prose, md_text
from ..report.render import changes_text, shown
from ..util.datafiles import load_yaml
from ..util.redact import redact

_WORDS = load_yaml("triage_replies.yaml")["replies"]
MAX_SERVER_LINES = 3


def customer_reply(title: str | None, report: dict[str, Any], kind: str, questions: list[str],
                   topic: str = "howto", server_lines: list[str] | None = None) -> str:
    """The Markdown reply for the customer: no rule ids, no confidence.

    `server_lines` are the server's own lines about requests, which a reply to a client-side error quotes.
    """
    words = _WORDS
    # sanitised and redacted before they are escaped: an escaped `hf\_…` would no longer read as a token
    title, report, questions, server_lines = shown([title, report, questions, server_lines or []])
    out = [f"**Re: {md_text(title)}**\n" if title else "", words["greeting"] + "\n"]
    if kind == "request-error":
        out += _request_error(report, questions, words, server_lines)
    else:
        body = {"failure": _failure, "question": _question}.get(kind, _nothing)
        out += body(report, questions, words, topic)
    out.append(words["sign_off"] + "\n")
    return redact("\n".join(p for p in out if p), emails=True)


def _bullets(items: list[str]) -> list[str]:
    return ["\n".join(f"- {md_prose(q)}" for q in items) + "\n"] if items else []


def _failure(report: dict[str, Any], questions: list[str], words: dict, topic: str) -> list[str]:
    if not report["diagnoses"]:
        found = words["unexplained"]
        lines = [u["text"] for u in report["unexplained"][:MAX_SERVER_LINES]]
        out = [f"{words['thanks']} {found['found']}\n"]
        if lines:
            out.append(md_block("\n".join(lines)) + "\n")
        return out + ([found["next"] + "\n"] + _bullets(questions) if questions else [])
    top = report["diagnoses"][0]
    say = words["failure"]
    out = [f"{words['thanks']} {say['found']}\n", f"**{md_prose(top['title'])}.** {md_prose(top['summary'].strip())}\n"]
    if top["evidence"]:
        out.append(md_block(top["evidence"][-1]["text"]) + "\n")
    if top.get("why"):
        out.append(f"{say['why']} {md_prose(top['why'].strip())}\n")
    fix = top["fixes"][0] if top["fixes"] else None
    if fix:
        out.append(f"{say['do']} {md_prose(fix['title'].rstrip('.'))}."
                   + (f" {md_prose(fix['why'].strip())}" if fix.get("why") else "") + "\n")
        command = fix.get("command") or fix.get("step")
        if command:
            out.append(f"{say['run']}\n\n{md_block(command, 'bash')}\n")
        elif fix.get("command_not_shown") and fix.get("changes"):  # the change, to make in their own command
            out.append(f"{say['change']}\n\n{md_block(changes_text(fix['changes']))}\n")
    out.append(say["if_not"] + "\n")
    return out + _bullets(questions or [say["if_not_default"]])


def _request_error(report: dict[str, Any], questions: list[str], words: dict, server_lines: list[str]) -> list[str]:
    say = words["request_error"]
    out = [f"{words['thanks']} {say['found']}\n"]
    if server_lines:
        out.append(say["server_lines"] + "\n")
        out.append(md_block("\n".join(server_lines)) + "\n")
    else:
        out.append(say["no_server_lines"] + "\n")
    return out + [say["next"] + "\n"] + _bullets(questions)


def _question(report: dict[str, Any], questions: list[str], words: dict, topic: str) -> list[str]:
    say = words["question"]
    out = [say.get(topic, say["howto"]) + "\n", say["docs"] + "\n"]
    return out + ([say["next"] + "\n"] + _bullets(questions) if questions else [])


def _nothing(report: dict[str, Any], questions: list[str], words: dict, topic: str) -> list[str]:
    say = words["nothing"]
    return [f"{words['thanks']} {say['found']}\n", say["next"] + "\n"] + _bullets(questions)


def _text(value: Any) -> str:
    return md_text(str(value))


def internal_note(row: dict[str, Any], prose: dict[str, Any]) -> str:
    """What the team needs beside the draft: rule, confidence, kind, language, fingerprint, prose facts."""
    row, prose = shown([row, prose])
    lines = [f"# Internal note: {_text(row['id'])} (not for the customer)\n",
             f"- kind: {_text(row['kind'])}; language: {_text(row['language'])}; status: {_text(row['status'])}",
             f"- rule: {_text(row['rule'] or '-')}; category: {_text(row['category'] or '-')}; confidence: "
             + (f"{row['confidence']:.2f}" if row["confidence"] is not None else "-"),
             f"- fingerprint: {_text(row['fingerprint'] or '-')}"]
    if prose:
        stated = {k: ", ".join(v) if isinstance(v, list) else v for k, v in prose.items()}
        lines.append("- stated in the ticket: " + "; ".join(f"{_text(k)}: {_text(v)}" for k, v in sorted(stated.items())))
    lines += [f"- note: {md_prose(n)}" for n in row.get("notes") or []]
    return redact("\n".join(lines) + "\n", emails=True)
