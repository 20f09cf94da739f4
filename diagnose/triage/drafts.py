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
from .asks import gpu_state_only

_DATA = load_yaml("triage_replies.yaml")
_QUESTION_KEYS = {text: key for key, text in _DATA["questions"].items()}
MAX_SERVER_LINES = 3
HOLDER_SHARE = 0.5  # a process holding more of a GPU's memory than this is the lead a GPU-state-only reply names


def reply_words(language: str | None) -> tuple[dict[str, Any], dict[str, str]]:
    """The reply's wordings and the questions' in `language` (English for one without a translation)."""
    translated = _DATA["translations"].get(language or "en")
    if translated is None:
        return _DATA["replies"], {}
    return translated["replies"], {text: translated["questions"][key] for text, key in _QUESTION_KEYS.items()}


def customer_reply(title: str | None, report: dict[str, Any], kind: str, questions: list[str],
                   topic: str = "howto", server_lines: list[str] | None = None, language: str | None = None) -> str:
    """The Markdown reply for the customer, in the ticket's `language`: no rule ids, no confidence.

    `server_lines` are the server's own lines about requests, which a reply to a client-side error quotes.
    """
    words, asked = reply_words(language)
    questions = [asked.get(q, q) for q in questions]
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


def error_reply(title: str | None, error: str, places: tuple[str | None, ...], question: str,
                language: str | None = None) -> str:
    """The reply for a ticket whose attachment could not be read: why (`error`, empty where the reason is the
    team's own, an export read with the wrong fields), without the `places` it has on the triager's disk (its path,
    its id), which are not the customer's to see.

    >>> print(error_reply(None, "tickets/T-7.log: looks like binary data", ("tickets/T-7.log", "T-7.log"), "Paste it?"))
    Hello,
    <BLANKLINE>
    thank you for the details. We could not read what was attached (looks like binary data).
    <BLANKLINE>
    - Paste it?
    <BLANKLINE>
    Best regards,
    <BLANKLINE>
    """
    words, asked = reply_words(language)
    reason = error
    for place in sorted({p for p in places if p}, key=len, reverse=True):
        reason = reason.removeprefix(f"{place}: ").replace(place, words["error"]["attachment"])
    title, reason, question = shown([title, reason, asked.get(question, question)])
    parts = [f"**Re: {md_text(title)}**\n" if title else "", words["greeting"] + "\n",
             _then(words["thanks"], f"{words['error']['found']}" + (f" ({md_prose(reason)})." if reason else ".")) + "\n",
             f"- {md_prose(question)}\n", words["sign_off"] + "\n"]
    return redact("\n".join(p for p in parts if p), emails=True)


def _then(first: str, second: str) -> str:
    """Two pieces of a sentence: a space between them, but none after a full-width mark (Chinese, Japanese)."""
    return first + second if first.endswith(_FULL_WIDTH_MARKS) else f"{first} {second}"


_FULL_WIDTH_MARKS = ("。", "：", "、", "，", "！", "？")


def _in_english(say: dict) -> list[str]:
    """The note a reply in another language gives before the diagnosis, whose words (the rules') are English."""
    return [say["in_english"] + "\n"] if say["in_english"] else []


def _bullets(items: list[str]) -> list[str]:
    return ["\n".join(f"- {md_prose(q)}" for q in items) + "\n"] if items else []


def _failure(report: dict[str, Any], questions: list[str], words: dict, topic: str) -> list[str]:
    if not report["diagnoses"]:
        found = words["unexplained"]
        lines = [u["text"] for u in report["unexplained"][:MAX_SERVER_LINES]]
        out = [_then(words["thanks"], found["found"]) + "\n"]
        if lines:
            out.append(md_block("\n".join(lines)) + "\n")
        return out + ([found["next"] + "\n"] + _bullets(questions) if questions else [])
    top = report["diagnoses"][0]
    say = words["failure"]
    out = [_then(words["thanks"], say["found"]) + "\n", *_in_english(say),
           f"**{md_prose(top['title'])}.** {md_prose(top['summary'].strip())}\n"]
    if top["evidence"]:
        out.append(md_block(top["evidence"][-1]["text"]) + "\n")
    if top.get("why"):
        out.append(_then(say["why"], md_prose(top["why"].strip())) + "\n")
    fix = top["fixes"][0] if top["fixes"] else None
    if fix:
        out.append(_then(say["do"], f"{md_prose(fix['title'].rstrip('.'))}.")
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
    out = [_then(words["thanks"], say["found"]) + "\n"]
    if server_lines:
        out.append(say["server_lines"] + "\n")
        out.append(md_block("\n".join(server_lines)) + "\n")
    elif not report["diagnoses"]:  # a diagnosed request error is the server's own line: its side is shown
        out.append(say["no_server_lines"] + "\n")
    return out + _request_cause(report, words) + ([say["next"] + "\n"] + _bullets(questions) if questions else [])


def _request_cause(report: dict[str, Any], words: dict) -> list[str]:
    """What made the request fail, where a rule knows it (a model without a chat template), and its fix."""
    if not report["diagnoses"]:
        return []
    top, say = report["diagnoses"][0], words["failure"]
    out = [*_in_english(say), f"**{md_prose(top['title'])}.** {md_prose(top['summary'].strip())}\n"]
    if top["evidence"]:
        out.append(md_block(top["evidence"][-1]["text"]) + "\n")
    fix = top["fixes"][0] if top["fixes"] else None
    if fix:
        out.append(_then(say["do"], f"{md_prose(fix['title'].rstrip('.'))}.") + "\n")
        if command := fix.get("command") or fix.get("step"):
            out.append(f"{say['run']}\n\n{md_block(command, 'bash')}\n")
    return out


def _question(report: dict[str, Any], questions: list[str], words: dict, topic: str) -> list[str]:
    say = words["question"]
    out = [say.get(topic, say["howto"]) + "\n", say["docs"] + "\n"]
    return out + ([say["next"] + "\n"] + _bullets(questions) if questions else [])


def _nothing(report: dict[str, Any], questions: list[str], words: dict, topic: str) -> list[str]:
    say = words["nothing"]
    return [_then(words["thanks"], say["found"]) + "\n", *_gpu_state(report, say), say["next"] + "\n"] + _bullets(questions)


def _gpu_state(report: dict[str, Any], say: dict) -> list[str]:
    """What an `nvidia-smi` table in the ticket shows, and the process that holds most of a GPU, when one does."""
    if not gpu_state_only(report):
        return []
    gpus = report["facts"]["gpus"]
    rows = []
    for gpu in gpus:
        used = ", " + say["in_use"].format(used=f"{gpu['used_gib']:.1f}", total=f"{gpu['total_gib']:.1f}") \
            if gpu.get("used_gib") is not None and gpu.get("total_gib") else ""
        rows.append(f"GPU {gpu.get('index', '?')}: {md_text(str(gpu.get('name') or '?'))}{used}")
    largest_gib = max((gpu.get("total_gib") or 0 for gpu in gpus), default=0)
    holders = [p for p in report["facts"].get("gpu_processes") or []
               if largest_gib and (p.get("used_gib") or 0) > HOLDER_SHARE * largest_gib]
    rows += [f"pid {p['pid']} ({md_text(str(p.get('name') or '?'))}): {p['used_gib']:.1f} GiB" for p in holders]
    out = [say["gpus"] + "\n", "\n".join(f"- {row}" for row in rows) + "\n"]
    if holders:
        out.append(say["holder"].format(pid=holders[0]["pid"], name=md_text(str(holders[0].get("name") or "?"))) + "\n")
    return out


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
