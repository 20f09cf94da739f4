"""E-mail tickets: the subject without its reply prefixes, the newest message without the quoted history.

>>> clean_subject("Re: AW: RE: Fwd: vLLM startet nicht")
'vLLM startet nicht'
>>> clean_subject("回复: Re: 启动失败")
'启动失败'
>>> latest_message("Still broken, see attached.\\n\\nOn Mon, 3 Mar 2025 Bob wrote:\\n> older text\\n")
'Still broken, see attached.'
"""

from __future__ import annotations

import email
import email.policy
import re

from ..util.errors import InputError
from ..util.lazy_pattern import lazy
from ..util.safeio import open_regular

ATTACHMENT_SUFFIXES = (".txt", ".log", ".md")
_REPLY_PREFIX = lazy(r"^\s*(?:(?:re|fwd?|aw|wg|antw|sv|vs|tr)\s*(?:\[\d+\])?\s*[:：]|(?:回复|答复|转发)\s*[:：])\s*",
                     re.IGNORECASE)
# Where the quoted history of a reply begins, in the mail clients' own wordings (English, German, Chinese).
_HISTORY_START = lazy(
    r"^(?:On .{1,200} wrote:\s*$|Am .{1,200} schrieb .{0,200}:\s*$|在 .{1,200}写道[:：]\s*$|"
    r"-{2,}\s*(?:Original Message|Ursprüngliche Nachricht|原始邮件)\s*-{2,}|From: .{1,200}$|Von: .{1,200}$)",
    re.MULTILINE)


def clean_subject(subject: str | None) -> str | None:
    """The subject without any run of Re:/Fwd:/AW:/WG:/回复: prefixes."""
    if not subject:
        return None
    text = " ".join(str(subject).split())
    while True:
        shorter = _REPLY_PREFIX.sub("", text, count=1)
        if shorter == text:
            return text or None
        text = shorter


def latest_message(body: str) -> str:
    """The newest message of a reply: up to where the quoted history starts, '>' lines dropped."""
    start = _HISTORY_START.search(body)
    if start:
        body = body[: start.start()]
    kept = [line for line in body.splitlines() if not line.lstrip().startswith(">")]
    return "\n".join(kept).strip()


def read_eml(path: str) -> tuple[str | None, str]:
    """An e-mail's clean subject and its text: each text/plain part's newest message, plus attached .log/.txt files."""
    try:
        with open_regular(path, "e-mail file") as handle:
            message = email.message_from_binary_file(handle, policy=email.policy.default)
    except OSError as exc:
        raise InputError(f"{path}: cannot open ({exc.strerror or exc})") from None
    parts: list[str] = []
    for part in message.walk():
        if part.is_multipart():
            continue
        filename = (part.get_filename() or "").lower()
        if filename.endswith(ATTACHMENT_SUFFIXES):
            parts.append(_part_text(part))
        elif part.get_content_type() == "text/plain" and not filename:
            parts.append(latest_message(_part_text(part)))
    if not parts:
        raise InputError(f"{path}: the e-mail has no text/plain part to diagnose")
    return clean_subject(message.get("subject")), "\n".join(parts)


def _part_text(part) -> str:
    payload = part.get_payload(decode=True) or b""
    charset = part.get_content_charset() or "utf-8"
    try:
        return payload.decode(charset, "replace")
    except LookupError:
        return payload.decode("utf-8", "replace")
