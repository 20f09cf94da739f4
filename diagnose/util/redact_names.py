"""Secrets found by the name they are written under: `name=value`, `--flag value`, `"name": "value"`, vLLM's
`'api_key': ['KEY']`, and a Kubernetes `name: HF_TOKEN` with its `value:` on the next line.

Which names hold secrets is data (diagnose/data/secrets.yaml), read once into `secret_table()` with the shapes
`redact` looks for; this module masks the values, `redact` calls it on texts `redact_screen` lets through.

>>> mask_keyed_values("non-default args: {'model': 'm', 'api_key': ['sk123', 'sk456'], 'port': 8000}")
"non-default args: {'model': 'm', 'api_key': [REDACTED], 'port': 8000}"
>>> mask_name_value_pairs('env:\\n- name: HF_TOKEN\\n  value: plain-token-1\\n- name: PORT\\n  value: "8000"')
'env:\\n- name: HF_TOKEN\\n  value: [REDACTED]\\n- name: PORT\\n  value: "8000"'
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

from .lazy_pattern import LazyPattern, lazy
from .redact_screen import literal_search, name_words, required_literals

MASK = "[REDACTED]"

# The separator after a name: `=`, `:`, blanks; after a quoted name also a subscript's `]` (`os.environ["HF_TOKEN"]
# = …`) and a call's comma before a quoted value (`os.environ.setdefault("HF_TOKEN", "…")`, `os.putenv('HF_TOKEN',
# '…')`: mask_keyed_values takes the comma only after the call's opening parenthesis).
_KEY_SEP = lazy(
    r"(?<![\w.\-])(?P<key>-{0,2}[A-Za-z_][A-Za-z0-9_.\-]{0,63})(?P<close>\\?[\"']?)"
    r"(?P<sep>(?<=[\"'])\][ \t]{0,3}=(?!=)[ \t]{0,3}|(?<=[\"'])[ \t]{0,3},[ \t]{0,3}(?=\\?[\"'])|[ \t]{0,3}[:=][ \t]{0,3}|[ \t]{1,3})"
)
_BARE = r"[^\s\"'`&<>|]{1,1024}"  # a value written without quotes: up to a blank, a quote or a shell operator
_VALUE = lazy(
    r"(?P<scheme>(?i:bearer|basic|token|digest|negotiate|apikey|api-key)[ \t]{1,3})?"
    r"(?:\\\"(?P<escaped>[^\"\\\n]{0,1024})\\\"|\"(?P<double>(?:[^\"\\\n]|\\.){0,1024})\"|'(?P<single>[^'\n]{0,1024})'"
    r"|\[(?P<list>[^\[\]\n]{0,1024})(?:\](?![^\s,;)}\]\"'])|(?=\n)|\Z)|(?P<bare>" + _BARE + "))"
)
# `- name: HF_TOKEN` then `value: …` (a Kubernetes env entry), `{"name": "HF_TOKEN", "value": …}`, `name = "X"`.
_NAME_VALUE = lazy(
    r"(?<![\w\-])(?P<nq>[\"']?)name(?P=nq)[ \t]{0,3}[:=][ \t]{0,3}(?P<q>[\"']?)(?P<name>[A-Za-z_][A-Za-z0-9_.\-]{0,127})"
    r"(?P=q)[ \t]{0,16},?[ \t]{0,16}(?:\n[ \t]{0,64})?(?P<vq>[\"']?)value(?P=vq)[ \t]{0,3}[:=][ \t]{0,3}"
)
# `api_key%3D…` (`%253D` encoded twice): a pair URL-encoded inside another URL's parameter (a redirect, a state),
# its name after a separator or an encoded character (`%3Fapi_key`, `%26token`); the value up to an encoded
# separator, quote, space or comma
_ENCODED_KEY_SEP = lazy(r"(?:(?<=%[0-9A-Fa-f]{2})|(?<=%25[0-9A-Fa-f]{2})|(?<![\w.\-%]))(?P<key>[A-Za-z_][A-Za-z0-9_.\-]{0,63})%(?:25)?3[Dd]")
_ENCODED_VALUE = lazy(r"(?:[^\s%\"'`&<>|#]|%(?!(?:25)?(?:2[0236Cc]|3[Bb]))[0-9A-Fa-f]{2}){1,1024}")
# Inside a quoted word, what says it is more than one value: a line break, a flag, another NAME= assignment.
_MORE_IN_WORD = lazy(r"\n|\s(?:-|[A-Za-z_][A-Za-z0-9_]*=)")
_PLACEHOLDER = lazy(r"^(?:<[^>]*>|\$\{?\w+\}?|\$\(.*|\[REDACTED\]|\[EMAIL\]|XX+|xx+|\*+|\.\.\.|…|None|null|none|)$")
_TRAILING = ",;:.)]}"
# A value written after a secret's name and a space only (`ngrok config add-authtoken VALUE`, `token VALUE`):
# taken for the secret only when it looks like one, so that prose after the word (`the token was rejected`) stays.
_BARE_VALUE = lazy(_BARE)
_TOKENISH = lazy(r"(?=[^\s]{0,1023}[0-9])(?=[^\s]{0,1023}[A-Za-z])[A-Za-z0-9_\-+/=.~]{16,1024}")
_ENV_NAME = lazy(r"[A-Z][A-Z0-9_]*")
# `<password>VALUE</password>`, `<ns:apiKey a="b">VALUE</ns:apiKey>`: an XML element named as a secret
_XML_ELEMENT = lazy(r"<(?P<tag>[A-Za-z_][\w.\-:]{0,63})(?:[ \t][^<>\n]{0,256})?>(?P<value>[^<\n]{1,1024})</(?P=tag)>")
_SHORTEST_ABBREVIATION = 4  # characters of a secret flag's name (`--hf-t`) read as that flag; shorter ones are not


@dataclass(frozen=True)
class SecretTable:
    """diagnose/data/secrets.yaml, with the screens derived from it."""

    endings: tuple[str, ...]
    parts: frozenset[str]
    substrings: tuple[str, ...]
    env_endings: frozenset[str]
    env_qualifiers: frozenset[str]  # and env_providers: a last part that leaves the secret name before it
    not_secret: frozenset[str]
    flags: frozenset[str]
    shapes: tuple[tuple[LazyPattern, bool], ...]  # each shape, and whether it masks only its `secret…` groups
    unscreened: tuple[tuple[LazyPattern, bool], ...]  # those `shape_literals` does not screen: run on every text
    shape_literals: LazyPattern | None  # finds what some screened shape's match holds; None: no shape is screened
    name_words: LazyPattern | None  # finds what a secret name holds, in lower case; None: names always looked for


@lru_cache(maxsize=1)
def secret_table() -> SecretTable:
    from .datafiles import load_yaml

    data = load_yaml("secrets.yaml")
    flags = frozenset(_normal(f) for f in data["flags"])
    shapes = tuple((lazy(p), "(?P<secret" in p) for p in data["shapes"])
    literals = [required_literals(p) for p in data["shapes"]]
    found = [x for held in literals if held for x in held]
    return SecretTable(tuple(data["name_endings"]), frozenset(data["name_parts"]), tuple(data["name_substrings"]),
                       frozenset(data["env_endings"]), frozenset(data["env_qualifiers"] + data["env_providers"]),
                       frozenset(data["not_secret"]), flags, shapes,
                       tuple(shape for shape, held in zip(shapes, literals) if held is None),
                       literal_search(found) if found else None,
                       name_words((*data["name_endings"], *flags), data["name_parts"], data["env_endings"],
                                  [f"--{flag[:_SHORTEST_ABBREVIATION]}".replace("_", dash) for flag in flags
                                   for dash in "-_"]))


def _normal(name: str) -> str:
    """`--api-key`, `apiKey`, `X-Api-Key`, `API_KEY` → `api_key`-like: what the secret tables are written in."""
    name = re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", name.lstrip("-"))
    return re.sub(r"[-.]", "_", name).lower()


def is_secret_name(name: str) -> bool:
    """Whether a value under this name (flag, env variable, JSON key, header) is a secret.

    >>> [is_secret_name(n) for n in ("--hf-token", "AWS_SECRET_ACCESS_KEY", "apiKey", "x-api-key", "NGC_API_KEY")]
    [True, True, True, True, True]
    >>> [is_secret_name(n) for n in ("max_tokens", "token_ids", "tokenizer", "TOKENIZERS_PARALLELISM", "pad_token", "cache_key")]
    [False, False, False, False, False, False]
    """
    return _is_secret_name(name)


@lru_cache(maxsize=4096)  # a report asks about the same few names thousands of times
def _is_secret_name(name: str) -> bool:
    table = secret_table()
    bare = name.split(":", 1)[1] if name.startswith(("env:", "docker:")) else name
    normal = _normal(bare)
    if not normal or normal in table.not_secret:
        return False
    if normal in table.flags or any(normal == e or normal.endswith("_" + e) for e in table.endings):
        return True
    if bare.startswith("--") and _abbreviates_a_secret_flag(normal, table.flags):
        return True
    parts = normal.split("_")
    if table.parts.intersection(parts) or any(word in normal for word in table.substrings):
        return True
    if not _ENV_NAME.fullmatch(bare.lstrip("-")):
        return False
    if len(parts) > 1 and (parts[-1].isdigit() or parts[-1].upper() in table.env_qualifiers):  # HF_TOKEN_PROD, TOKEN_HF
        return _is_secret_name(bare.lstrip("-").rsplit("_", 1)[0])
    return parts[-1].upper() in table.env_endings


def _abbreviates_a_secret_flag(normal: str, flags: frozenset[str]) -> bool:
    """`--api-k`, `--hf-tok`: vLLM's argparse reads a unique prefix as the whole flag, so its value is the secret.

    A prefix that is itself a flag of some release (`--ssl-keyfile`) is that flag, not an abbreviation.
    """
    if len(normal) < _SHORTEST_ABBREVIATION or not any(flag.startswith(normal) for flag in flags):
        return False
    from .datafiles import load_yaml

    return normal not in {_normal(flag) for flag in (load_yaml("engine_args.yaml") or {}).get("flags") or {}}


def is_placeholder(value: str) -> bool:
    """`<your-token>`, `$HF_TOKEN`, `None`, `[REDACTED]`, `***`: text standing for a secret, shown as it is."""
    return bool(_PLACEHOLDER.match(value.strip()))


def mask_keyed_values(text: str) -> str:
    """`name=value`, `name: value`, `"name": "value"`, `--flag value`: the value masked when the name is a secret's;
    `name value` too when the value has a token's shape (`ngrok config add-authtoken 2Ng1…_6Ab7…`).

    >>> mask_keyed_values("ngrok config add-authtoken 2Ng1Rr2Oo3Kk4Tt5_6Ab7Cd8 ok; the token was rejected")
    'ngrok config add-authtoken [REDACTED] ok; the token was rejected'
    """
    out: list[str] = []
    done = 0
    for match in _KEY_SEP.finditer(text):
        if match.start() < done:
            continue
        key, sep = match.group("key"), match.group("sep")
        is_flag = key.startswith("-")
        if not is_secret_name(key):
            continue
        if "," in sep and not text[:max(match.start() - 1, 0)].rstrip(" \t").endswith("("):
            continue  # `, ` only after a call's first argument (`setdefault("HF_TOKEN", …)`), not in a list or object
        if not (is_flag or sep.strip() or "\t" in sep):  # `name VALUE`: only a value of a secret's own shape
            # (a tab is a column separator, as `=` is: `HF_TOKEN<TAB>value` in a table of variables)
            bare = _BARE_VALUE.match(text, match.end())
            if bare is None or not _TOKENISH.fullmatch(bare.group(0).rstrip(_TRAILING)):
                continue
        word = _quoted_word_value(text, match)
        if word is not None:  # a shell word '--api-key=a b': the value runs up to its closing quote
            if not is_placeholder(text[match.end():word]):
                out += [text[done:match.end()], MASK]
                done = word
            continue
        done = _mask_value_at(text, match.end(), done, out)
    return "".join(out) + text[done:] if out else text


def looks_like_token(word: str) -> bool:
    """16 or more characters of a token's alphabet holding a digit and a letter (`2Ng1Rr2…_6Ab7`), not prose."""
    return bool(_TOKENISH.fullmatch(word))


def mask_xml_elements(text: str) -> str:
    """`<password>VALUE</password>`: the text of an element whose tag is a secret's name.

    >>> mask_xml_elements("<user>bot</user><password>Hunter 2</password><token>${T}</token>")
    '<user>bot</user><password>[REDACTED]</password><token>${T}</token>'
    """
    def masked(match: re.Match) -> str:
        tag, value = match.group("tag"), match.group("value")
        if not is_secret_name(tag.rsplit(":", 1)[-1]) or is_placeholder(value):
            return match.group(0)
        return match.group(0)[:match.start("value") - match.start()] + MASK + f"</{tag}>"
    return _XML_ELEMENT.sub(masked, text)


def mask_name_value_pairs(text: str) -> str:
    """A value whose name is given beside it, `name: HF_TOKEN` then `value: …` (also on the next line)."""
    out: list[str] = []
    done = 0
    for match in _NAME_VALUE.finditer(text):
        if match.start() >= done and is_secret_name(match.group("name")):
            done = _mask_value_at(text, match.end(), done, out)
    return "".join(out) + text[done:] if out else text


def mask_encoded_values(text: str) -> str:
    """`…%3Fapi_key%3DVALUE%26…`: the value of a URL-encoded pair masked when its name is a secret's.

    >>> mask_encoded_values("next=https%3A%2F%2Fh%2Fcb%3Fapi_key%3DZq8vW3xR%26n%3D1 token%253D%2524HF_TOKEN")
    'next=https%3A%2F%2Fh%2Fcb%3Fapi_key%3D[REDACTED]%26n%3D1 token%253D%2524HF_TOKEN'
    """
    from urllib.parse import unquote

    out: list[str] = []
    done = 0
    for match in _ENCODED_KEY_SEP.finditer(text):
        if match.start() < done or not is_secret_name(match.group("key")):
            continue
        value = _ENCODED_VALUE.match(text, match.end())
        if value is not None and not is_placeholder(unquote(unquote(value.group(0)))):
            out += [text[done:value.start()], MASK]
            done = value.end()
    return "".join(out) + text[done:] if out else text


def _quoted_word_value(text: str, key: re.Match) -> int | None:
    """Where the value of a quoted `'NAME=value'` word ends (its closing quote), as shlex quotes `--api-key=a b`;
    None when the name is not the start of such a word, or the quotes hold more (`"HF_TOKEN=x vllm serve --y"`)."""
    start = key.start()
    opener = text[start - 1:start]
    if opener not in ("'", '"') or text[start - 2:start - 1] == "\\" or "=" not in key.group("sep") or key.group("close"):
        return None
    closer = text.find(opener, key.end())
    if closer == -1 or _MORE_IN_WORD.search(text, key.end(), closer):
        return None
    return closer


def _mask_value_at(text: str, at: int, done: int, out: list[str]) -> int:
    """Mask the value that starts at `at` (adding to `out` what comes before it); the end of what is now done."""
    value = _VALUE.match(text, at)
    if value is None:
        return done
    start, end = _secret_span(value)
    if start is None:
        return done
    out += [text[done:start], MASK]
    return end


def _secret_span(value: re.Match) -> tuple[int | None, int]:
    """Where the secret lies in a value; None for a placeholder, or for the next option (`--api-key --port 1`)."""
    for group in ("escaped", "double", "single"):
        if value.group(group) is not None:
            inner = value.group(group)
            return (None, 0) if is_placeholder(inner) else (value.start(group), value.end(group))
    if value.group("list") is not None:  # vLLM's own `'api_key': ['KEY']`: the whole list, brackets and all
        start = value.start("list") - 1
        items = [item.strip(" \t'\"") for item in value.group("list").split(",")]
        shown = is_placeholder(value.string[start:value.end()]) or all(map(is_placeholder, items))
        return (None, 0) if shown else (start, value.end())
    bare = value.group("bare")
    trimmed = bare.rstrip(_TRAILING)
    if is_placeholder(bare) or is_placeholder(trimmed) or (bare.startswith("-") and not value.group("scheme")):
        return None, 0
    start = value.start("bare")
    return start, start + len(trimmed)
