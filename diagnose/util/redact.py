"""Remove secrets and e-mail addresses from everything vdiag prints or writes.

Redaction works on fields, before anything is serialised: `redact_tree` walks a
report (dicts, lists, strings) and masks each string, and a value held under a
secret-looking key (`"token"`, `env:HF_TOKEN`) whatever it looks like. A launch
is masked before it is rendered (`masked_launch`), so re-quoting a value cannot
reveal it. What counts as a secret is data (`diagnose/data/secrets.yaml`).

Every pattern has bounded quantifiers and a guarded start, so a line costs time
linear in its length, whatever it holds. Most strings hold nothing a pattern needs
(`redact_screen`) and pass through after a few substring tests; a report's repeated
strings (its keys, above all) are redacted once per tree.

>>> redact("HF_TOKEN=hf_abcdefghijklmnopqrstuvwxyz0123 vllm serve m --api-key s3cret")
'HF_TOKEN=[REDACTED] vllm serve m --api-key [REDACTED]'
>>> redact('{"apiKey": "abc 123", "max_tokens": 16} mail ops@example.com')
'{"apiKey": "[REDACTED]", "max_tokens": 16} mail [EMAIL]'
>>> redact_tree({"changes": {"env:MY_TOKEN": "short"}, "lines": ["https://:pw/x@host/simple"]})
{'changes': {'env:MY_TOKEN': '[REDACTED]'}, 'lines': ['https://:[REDACTED]@host/simple']}
"""

from __future__ import annotations

import base64
import binascii
import re
from dataclasses import replace
from typing import Any

from .lazy_pattern import lazy
from .redact_blocks import mask_block_lines, mask_yaml_blocks
from .redact_tools import mask_tool_options
from .redact_names import (MASK, is_placeholder, is_secret_name, mask_encoded_values, mask_keyed_values,
                           mask_name_value_pairs, mask_xml_elements, looks_like_token, secret_table)

EMAIL_MASK = "[EMAIL]"

_URL_USERINFO = lazy(r"(?i)(?<![a-z0-9+.\-])([a-z][a-z0-9+.\-]{0,20}://[^\s/@:]{0,128}:)([^\s@]{1,256})(?=@)")
# a URL's user name that is a token (`https://TOKEN@github.com`, `https://TOKEN:x-oauth-basic@…`)
_URL_USER = lazy(r"(?i)(?<![a-z0-9+.\-])([a-z][a-z0-9+.\-]{0,20}://)([^\s/@:]{16,256})(?=(?::[^\s@/]{0,256})?@)")
_BEARER = lazy(r"(?i)(?<![\w\-])(bearer[ \t]{1,3})([A-Za-z0-9_\-.=+/~]{12,4096})")
_HIGH_ENTROPY = lazy(r"(?<![\w\-./+=@%])[A-Za-z0-9+/]{16,4096}={0,2}(?![\w\-./+=@%])")
_EMAIL = lazy(r"(?<![\w.%+\-])[A-Za-z0-9._%+\-]{1,64}@[A-Za-z0-9\-]{1,63}(?:\.[A-Za-z0-9\-]{1,63}){0,8}\.[A-Za-z]{2,24}(?![\w\-])")
_WRAPPED = lazy(r"(\[REDACTED\]\\?[ \t]{0,2}\n)([A-Za-z0-9+/=_\-]{1,512})(?=\s|$)")
_LINE_START = lazy(r"^()([A-Za-z0-9+/=_\-]{1,512})(?=\s|$)")
# base64 (standard or URL-safe) long enough to hold a token: `?t=<base64 of "Bearer hf_…">`, HF_TOKEN_B64=…
_BASE64_RUN = lazy(r"(?<![A-Za-z0-9+/_\-])[A-Za-z0-9+/_\-]{24,4096}={0,2}(?![A-Za-z0-9+/=_\-])")
_URL_SAFE = str.maketrans("-_", "+/")


def redact(text: str, emails: bool = True, screen: bool = True, encoded: bool = True) -> str:
    """Mask tokens, keys, passwords and e-mail addresses in one string (`emails=False` keeps addresses).

    Each pattern runs only on a text holding what it needs to match (`://` for a URL's password, a word every
    secret name holds for `name=value`); `screen=False` runs every pattern on every text, the slow reference.
    A base64 word whose decoded text holds a secret is masked whole (`encoded=False`: not looked into).

    >>> redact("https://x.example/cb?t=QmVhcmVyIGhmX1F3RXJUeVVpT3BBc0RmR2hKa0x6WGNWYk5tMTIzNDU2Nzg=")
    'https://x.example/cb?t=[REDACTED]'
    """
    if not text or not isinstance(text, str):
        return text
    table = secret_table()
    found = not screen or table.shape_literals is None or table.shape_literals.search(text)
    for shape, masks_group in table.shapes if found else table.unscreened:  # the others need one of their literals
        text = shape.sub(_mask_secret_group if masks_group else MASK, text)
    if not screen or "://" in text:
        text = _URL_USERINFO.sub(lambda m: m.group(1) + (m.group(2) if is_placeholder(m.group(2)) else MASK), text)
        text = _URL_USER.sub(lambda m: m.group(1) + (MASK if looks_like_token(m.group(2)) else m.group(2)), text)
    lower = text.lower()  # the names are ASCII, and no other letter matches `(?i)bearer`
    if not screen or table.name_words is None or table.name_words.search(lower):
        # a YAML block under a secret key first: `token: |` would lose its `|` to mask_keyed_values
        masked = mask_yaml_blocks(text) if "\n" in text else text
        masked = mask_keyed_values(masked)
        if not screen or "%3d" in lower or "%253d" in lower:  # `api_key%3D…`, a pair URL-encoded in a URL
            masked = mask_encoded_values(masked)
        if not screen or "</" in text:
            masked = mask_xml_elements(masked)
        if not screen or ("value" in lower and "name" in lower):
            masked = mask_name_value_pairs(masked)
        if masked is not text:
            text, lower = masked, masked.lower()
    text = mask_tool_options(text)
    if not screen or "bearer" in lower:
        text = _BEARER.sub(lambda m: m.group(1) + MASK, text)
    text = _HIGH_ENTROPY.sub(_mask_high_entropy, text)
    if encoded:
        text = _BASE64_RUN.sub(_mask_encoded_secret, text)
    if "\n" in text and (not screen or MASK in text):
        text = _WRAPPED.sub(_mask_wrapped_rest, text)
    if emails and (not screen or "@" in text):
        text = _EMAIL.sub(EMAIL_MASK, text)
    return text


def _mask_secret_group(match: re.Match) -> str:
    """A shape with `secret…` groups masks those only (`curl -u admin:[REDACTED]`), and none that is a placeholder."""
    spans = sorted(match.span(name) for name, found in match.groupdict().items()
                   if name.startswith("secret") and found is not None and not is_placeholder(found))
    whole, base = match.group(0), match.start()
    out, done = [], 0
    for start, end in spans:
        out += [whole[done:start - base], MASK]
        done = end - base
    return "".join(out) + whole[done:]


def _mask_high_entropy(match: re.Match) -> str:
    """A long run of letters and digits mixing both cases and digits, the shape of a key with no known prefix."""
    word = match.group(0)
    if word.startswith("/"):
        return word
    upper = sum(c.isupper() for c in word)
    lower = sum(c.islower() for c in word)
    digits = sum(c.isdigit() for c in word)
    return MASK if upper >= 2 and lower >= 2 and digits >= 2 else word


def _mask_encoded_secret(match: re.Match) -> str:
    """A base64 word that decodes to printable text holding a secret (found by `redact` itself, one level deep)."""
    word = match.group(0)
    core = word.rstrip("=").translate(_URL_SAFE)
    try:
        decoded = base64.b64decode(core + "=" * (-len(core) % 4), validate=True)
        text = decoded.decode("ascii")
    except (binascii.Error, ValueError):  # not base64, or not text (a hash, a path read as base64)
        return word
    if not text.isprintable():
        return word
    return MASK if redact(text, emails=False, encoded=False) != text else word


def _mask_wrapped_rest(match: re.Match) -> str:
    """The rest of a secret cut by a line wrap: a token-like first word on the line after a masked value."""
    rest = match.group(2)
    tokenish = any(c.isdigit() for c in rest) or any(c.isupper() for c in rest[1:])
    return match.group(1) + (MASK if tokenish else rest)


def redact_tree(node: Any, emails: bool = True, key: str | None = None) -> Any:
    """A copy of a report-like tree with every string redacted; a string under a secret's key is masked whole.

    >>> redact_tree({"token": "abc", "captures": {"max_len": "4096"}, "n": [1, "x@y.org"]})
    {'token': '[REDACTED]', 'captures': {'max_len': '4096'}, 'n': [1, '[EMAIL]']}
    """
    return _redact_node(node, emails, key, {})


def _redact_node(node: Any, emails: bool, key: str | None, done: dict[str, str]) -> Any:
    """`redact_tree`, with `done` holding each string already redacted in this tree (keys repeat thousands of times)."""
    if isinstance(node, str):
        if key is not None and is_secret_name(key) and not is_placeholder(node):
            return MASK
        if node not in done:
            done[node] = redact(node, emails)
        return done[node]
    if isinstance(node, dict):
        return {(_redact_node(k, emails, None, done) if isinstance(k, str) else k):
                _redact_node(v, emails, k if isinstance(k, str) else None, done) for k, v in node.items()}
    if isinstance(node, (list, tuple)):
        lines = bool(node) and all(_is_line(item) for item in node)
        blocks = _block_masks(node) if lines else {}  # read on the lines as written, before each is masked alone
        items = [_redact_node(item, emails, None, done) for item in node]
        for at, text in blocks.items():
            items[at]["text"] = text
        return _mask_wrapped_lines(items) if lines else items
    return node


def _is_line(item: Any) -> bool:
    return isinstance(item, dict) and isinstance(item.get("text"), str) and isinstance(item.get("line"), int)


def _block_masks(items: list | tuple) -> dict[int, str]:
    """Evidence lines: index → masked text for the lines of a YAML block under a secret key (`password:` then
    `  - value`), found in each run of consecutive lines of one source."""
    out: dict[int, str] = {}
    start = 0
    for at in range(1, len(items) + 1):
        if at < len(items) and items[at]["line"] == items[at - 1]["line"] + 1 \
                and items[at].get("source") == items[at - 1].get("source"):
            continue
        if at - start > 1:
            masked = mask_block_lines([item["text"] for item in items[start:at]])
            for offset, text in enumerate(masked or []):
                if text is not items[start + offset]["text"]:
                    out[start + offset] = text
        start = at
    return out


def _mask_wrapped_lines(items: list[dict]) -> list[dict]:
    """Evidence lines: a line right after one that ends in a masked secret may start with the secret's rest, and a
    `value:` line right after a `name: HF_TOKEN` line holds that secret."""
    for before, after in zip(items, items[1:]):
        if after["line"] != before["line"] + 1 or after.get("source") != before.get("source"):
            continue
        if before["text"].rstrip(" \t\\").endswith(MASK):
            after["text"] = _LINE_START.sub(_mask_wrapped_rest, after["text"], count=1)
        if "value" in after["text"].lower() and "name" in before["text"].lower():
            joined = before["text"] + "\n" + after["text"]
            masked = mask_name_value_pairs(joined)
            if masked is not joined and masked.startswith(before["text"] + "\n"):
                after["text"] = masked[len(before["text"]) + 1:]
    return items


def masked_launch(launch: Any) -> Any:
    """A copy of a parsed launch (diagnose.command.Launch) whose secret values read MASK, for rendering only.

    A value masked under its secret name, and any word `redact` would change (a token by its shape, a URL's
    password, an e-mail address), loses its raw spelling: rendering quotes it again, so a printed command holds
    `'[REDACTED]'`, never a bare `[REDACTED]` (to bash a glob character class). The real values stay in the
    launch itself: `vdiag verify` passes them to vLLM.
    """
    env = [(k, MASK if is_secret_name(k) and not is_placeholder(v) else redact(v)) for k, v in launch.env]
    kwargs = {k: (MASK if isinstance(v, str) and is_secret_name(k) and not is_placeholder(v) else _redacted(v))
              for k, v in launch.python_kwargs.items()}
    return replace(launch, env=env, args=_masked_args(launch.args), docker_opts=_masked_args(launch.docker_opts),
                   python_kwargs=kwargs, head=[redact(w) for w in launch.head], model=_redacted(launch.model),
                   image=_redacted(launch.image))


def _redacted(value: Any) -> Any:
    return redact(value) if isinstance(value, str) else value


def _masked_args(args: list) -> list:
    out = []
    after_secret = False
    for arg in args:
        value = arg.value
        if value is not None and is_secret_name(arg.spelled) and not is_placeholder(value):
            arg = replace(arg, value=MASK, raw_value=None)
            after_secret = True
            out.append(arg)
            continue
        if value is not None and arg.spelled in ("-e", "--env") and "=" in value:
            name, _, env_value = value.partition("=")
            if is_secret_name(name) and not is_placeholder(env_value):
                arg = replace(arg, value=f"{name}={MASK}", raw_value=None)
        elif after_secret and value is None and not arg.spelled.startswith("-"):
            arg = replace(arg, spelled=MASK)  # the rest of a secret cut by a line wrap, parsed as a stray word
            out.append(arg)
            continue
        after_secret = False
        out.append(_shown_arg(arg))
    return out


def _shown_arg(arg: Any) -> Any:
    """An argument with what `redact` masks in its value masked now, before rendering quotes it."""
    if arg.value is None or redact(arg.value) == arg.value:
        return arg
    return replace(arg, value=redact(arg.value), raw_value=None)
