"""What a release's own sources say about its settings: each flag's help, each environment variable's comment, and
the deprecation notes ("X is deprecated and will be removed in v0.13. Please use --Y instead").

A note names settings as `--flag`, `env:VLLM_NAME` or `field:config_field` (a config field, mapped to a flag later
by the release's flag table); its text is kept as the release printed it.

>>> note = parse_note("`--disable-mm-preprocessor-cache` is deprecated and will be removed in v0.13. "
...                   "Please use `--mm-processor-cache-gb 0` instead.")
>>> note.old, note.new, note.value, note.removed_in
('--disable-mm-preprocessor-cache', '--mm-processor-cache-gb', '0', '0.13')
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass

from ...util.lazy_pattern import lazy
from .sources import ReleaseSources, string_value

# files whose strings describe `vllm serve` settings: the engine's arguments, the config classes, the servers'
# own flags and vLLM's environment variables
NOTE_FILES = ["vllm/engine/arg_utils.py", "vllm/envs.py", "vllm/config.py", "vllm/config/*.py",
              "vllm/entrypoints/openai/cli_args.py", "vllm/entrypoints/cli/*.py", "vllm/entrypoints/openai/api_server.py",
              "vllm/utils/argparse_utils.py"]
FLAG_FILES = ["vllm/engine/arg_utils.py", "vllm/entrypoints/openai/cli_args.py", "vllm/entrypoints/cli/serve.py",
              "vllm/entrypoints/openai/api_server.py"]
MAX_HELP_CHARS = 200
NO_EFFECT = lazy(r"(?:has|have) no effect|no longer (?:has any effect|used|needed)|is ignored", re.I)
_DEPRECATED_TAG = lazy(r"^\s*(?:[\[(]\s*deprecated[^\])]*[\])]|deprecated\s*[:.,-])\s*:?\s*", re.I)

_DEPRECATION = lazy(r"deprecat|will be removed|(?:has been|is|was) (?:replaced|removed)|removed in v?\d", re.I)
_REPLACEMENT = lazy(r"\b(?:[Uu]se|replaced (?:with|by)|in favou?r of|superseded by)\b")
_FOLLOW_UP = lazy(r"\b(?:[Uu]se|instead|removed in|replaced)\b")
_SENTENCE = lazy(r"(?<=[a-z0-9`)'\]][.!?])(?<!i\.e\.)(?<!e\.g\.)\s+(?=[^\s\d])")
_REMOVED_IN = lazy(r"removed in v?(\d+\.\d+(?:\.\d+)?)")
_NAME = lazy(r"`(?P<quoted>[^`]{1,120})`|(?P<flag>--[a-z][\w.-]*[a-z0-9_])(?:=(?P<flag_value>[\w.-]+))?"
                   r"|(?P<env>\bVLLM_[A-Z0-9_]*[A-Z0-9])\b|'(?P<single>[a-z][\w.-]*)'"
                   r"|(?P<field>\b[a-z][a-z0-9]*(?:_[a-z0-9]+)+(?:\.[a-z0-9_]+)?)(?:=(?P<field_value>\w+))?")


@dataclass(frozen=True)
class Note:
    """One deprecation note: `old` is going (or gone), `new` (with a fixed `value`, if the note gives one) replaces it."""

    old: str
    new: str | None
    value: str | None
    removed_in: str | None
    text: str


def setting_name(token: str) -> str | None:
    """'--x' → '--x', 'VLLM_X' → 'env:VLLM_X', 'eplb_config.window_size' → 'field:eplb_config.window_size'.

    >>> setting_name("VLLM_ALL2ALL_BACKEND"), setting_name("enable_log_requests"), setting_name("bfloat16")
    ('env:VLLM_ALL2ALL_BACKEND', 'field:enable_log_requests', None)
    """
    if re.fullmatch(r"--[a-z][\w.-]*", token):
        return token
    if re.fullmatch(r"VLLM_[A-Z0-9_]+", token):
        return f"env:{token}"
    if re.fullmatch(r"[a-z][a-z0-9]*(?:_[a-z0-9]+)*(?:\.[a-z0-9_]+)?", token) and ("_" in token or "." in token):
        return f"field:{token}"
    return None


def _names(text: str) -> list[tuple[int, int, str, str | None]]:
    """(start, end, setting, value) for every setting named in `text`, in order; a value keeps its placeholder
    (`'{}'`), which says the value changes shape."""
    found = []
    for match in _NAME.finditer(text):
        value = match.group("flag_value") or match.group("field_value")
        token = match.group("flag") or match.group("env") or match.group("field") or match.group("single")
        if match.group("quoted"):
            token, _, rest = match.group("quoted").strip().partition(" ")
            token, _, assigned = token.partition("=")
            value = (assigned or rest).strip() or None
        name = setting_name(token or "")
        if name:
            found.append((match.start(), match.end(), name, value.rstrip(".,;:") if value else None))
    return found


def _note_window(text: str) -> str | None:
    """The sentence that deprecates something, with the one or two after it that say what instead or when."""
    sentences = _SENTENCE.split(text)
    first = next((i for i, sentence in enumerate(sentences) if _DEPRECATION.search(sentence)), None)
    if first is None:
        return None
    window = [sentences[first]]
    for sentence in sentences[first + 1:first + 3]:
        if not _FOLLOW_UP.search(sentence):
            break
        window.append(sentence)
    return " ".join(window)


def parse_note(text: str, subject: str | None = None) -> Note | None:
    """The deprecation note in `text`, or None when it deprecates nothing it names.

    `subject` is the setting the text documents (the flag of a help text), for notes that do not name what they
    deprecate ("[DEPRECATED] Use `pooler_config` instead.").
    >>> parse_note("VLLM_ALL2ALL_BACKEND environment variable is deprecated and will be removed in a future "
    ...            "release. Please use the --all2all-backend command-line argument instead.").new
    '--all2all-backend'
    >>> note = parse_note("Deprecated: Use logit_mean instead.", subject="field:logit_bias"); note.old, note.new
    ('field:logit_bias', 'field:logit_mean')
    >>> parse_note("Use expert parallelism instead of tensor parallelism for MoE layers.") is None
    True
    """
    window = _note_window(text)
    if window is None:
        return None
    tag = _DEPRECATED_TAG.match(window)  # "[DEPRECATED] The `--x` flag is deprecated …": the tag names nothing
    deprecation = _DEPRECATION.search(window, tag.end() if tag else 0) or _DEPRECATION.search(window)
    names = _names(window)
    replacement = _REPLACEMENT.search(window)
    new = next((n for n in names if replacement and replacement.end() <= n[0] <= replacement.end() + 40), None)
    before = [n for n in names if n[1] <= deprecation.start() and (new is None or n[0] < new[0])]
    old = before[-1][2] if before else subject
    if old is None or (new is not None and _plain(new[2]) == _plain(old)):
        return None
    removed = _REMOVED_IN.search(window)
    return Note(old=old, new=new[2] if new else None, value=new[3] if new else None,
                removed_in=removed.group(1) if removed else None, text=window)


def _plain(name: str) -> str:
    """A setting's name without its kind: 'field:max_model_len' and '--max-model-len' are one name."""
    return name.split(":", 1)[-1].lstrip("-").replace("_", "-")


def deprecation_notes(release: ReleaseSources) -> list[Note]:
    """Every deprecation note in the release's setting files, once each."""
    subjects = _documented_strings(release)
    notes: dict[tuple, Note] = {}
    for rel in release.matching(NOTE_FILES):
        tree = release.tree(rel)
        if tree is None:
            continue
        for node in ast.walk(tree):
            text = string_value(node)
            if text and (note := parse_note(text, subjects.get(id(node)))):
                notes.setdefault((note.old, note.new, note.value, note.removed_in), note)
    return list(notes.values())


def _documented_strings(release: ReleaseSources) -> dict[int, str]:
    """id(string node) → the setting it documents: an add_argument's help, a config field's docstring."""
    out: dict[int, str] = {}
    for rel in release.matching(NOTE_FILES):
        tree = release.tree(rel)
        if tree is None:
            continue
        for node in ast.walk(tree):
            if _is_add_argument(node):
                flag = next((a.value for a in node.args if isinstance(a, ast.Constant) and str(a.value).startswith("--")), None)
                help_node = next((k.value for k in node.keywords if k.arg == "help"), None)
                if flag and help_node is not None:
                    out[id(help_node)] = flag
            elif isinstance(node, ast.ClassDef):
                for field, doc in _field_docstrings(node):
                    out[id(doc)] = f"field:{field}"
    return out


def _is_add_argument(node: ast.AST) -> bool:
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "add_argument"


def _field_docstrings(cls: ast.ClassDef):
    """(field, docstring node) for each annotated field followed by a string, as vLLM documents config fields."""
    for stmt, following in zip(cls.body, cls.body[1:]):
        if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name) and isinstance(following, ast.Expr) \
                and string_value(following.value):
            yield stmt.target.id, following.value


def flag_help(release: ReleaseSources) -> dict[str, str]:
    """flag → its help text: an add_argument's own `help=`, else the docstring of the config field its keywords come
    from (`**model_kwargs["max_model_len"]` with `model_kwargs = get_kwargs(ModelConfig)`), else, for flags made
    from every field of a class, that field's docstring."""
    docs = _field_docs(release)
    helps: dict[str, str] = {}
    for rel in release.matching(FLAG_FILES):
        tree = release.tree(rel)
        if tree is None:
            continue
        kwargs_of = {n.targets[0].id: n.value.args[0].id for n in ast.walk(tree) if isinstance(n, ast.Assign)
                     and len(n.targets) == 1 and isinstance(n.targets[0], ast.Name) and isinstance(n.value, ast.Call)
                     and ast.unparse(n.value.func).endswith("get_kwargs") and n.value.args
                     and isinstance(n.value.args[0], ast.Name)}
        for node in ast.walk(tree):
            if not _is_add_argument(node):
                continue
            help_text = next((string_value(k.value) for k in node.keywords if k.arg == "help"), None)
            for splat in (k.value for k in node.keywords if k.arg is None and help_text is None):
                if isinstance(splat, ast.Subscript) and isinstance(splat.value, ast.Name) \
                        and isinstance(splat.slice, ast.Constant):
                    help_text = docs.get(kwargs_of.get(splat.value.id, ""), {}).get(splat.slice.value)
            for arg in node.args:
                if isinstance(arg, ast.Constant) and str(arg.value).startswith("--") and help_text:
                    helps.setdefault(arg.value, help_text)
    for fields in docs.values():
        for field, text in fields.items():
            helps.setdefault("--" + field.replace("_", "-"), text)
    return helps


def _field_docs(release: ReleaseSources) -> dict[str, dict[str, str]]:
    """class → field → docstring, for the config classes arg_utils turns into flags (`get_kwargs(SomeConfig)`)."""
    tree = release.tree("vllm/engine/arg_utils.py")
    calls = [node for node in ast.walk(tree) if isinstance(node, ast.Call)] if tree is not None else []
    wanted = {node.args[0].id for node in calls if ast.unparse(node.func).endswith("get_kwargs")
              and node.args and isinstance(node.args[0], ast.Name)}
    docs: dict[str, dict[str, str]] = {}
    for rel in release.matching(["vllm/config.py", "vllm/config/*.py", *FLAG_FILES]):
        module = release.tree(rel)
        for cls in (module.body if module is not None else []):
            if isinstance(cls, ast.ClassDef) and cls.name in wanted:
                docs.setdefault(cls.name, {f: string_value(d) or "" for f, d in _field_docstrings(cls)})
    return docs


def env_help(release: ReleaseSources) -> dict[str, str]:
    """VLLM_X → the comment above its entry in vllm/envs.py (comments are not in the ast)."""
    helps: dict[str, str] = {}
    comment: list[str] = []
    for line in release.files.get("vllm/envs.py", "").splitlines():
        stripped = line.strip()
        if stripped.startswith("#"):
            comment.append(stripped.lstrip("# "))
            continue
        match = re.match(r'"(VLLM_[A-Z0-9_]+)"\s*:', stripped)
        if match and comment:
            helps.setdefault(match.group(1), " ".join(comment))
        if stripped:
            comment = []
    return helps


def first_sentence(text: str) -> str:
    """The first sentence, at most MAX_HELP_CHARS characters, cut at a word; a leading "[DEPRECATED …]" tag dropped.

    >>> first_sentence("All2All backend for MoE expert parallel communication. If not set, uses the env.")
    'All2All backend for MoE expert parallel communication.'
    >>> first_sentence("[DEPRECATED - will be removed in v0.15.0] all2all backend Available options: - naive")
    'all2all backend.'
    """
    text = _DEPRECATED_TAG.sub("", " ".join(text.split()))
    sentence = re.split(r"(?<=[a-z0-9)`])\.\s|:? (?=- |Available options|Options:)", text, maxsplit=1)[0]
    sentence = sentence if sentence.endswith(".") else sentence + "."
    if len(sentence) > MAX_HELP_CHARS:
        sentence = sentence[:MAX_HELP_CHARS].rsplit(" ", 1)[0] + " …"
    return sentence if len(sentence) > 1 else ""


def option_help(text: str) -> dict[str, str]:
    """The values a help text lists with what each does (`- "pplx": Use pplx kernels`), as vLLM's docstrings do.

    >>> option_help('Available options: - "naive": Naive all2all - "deepep_low_latency": Use deepep low-latency kernels')
    {'naive': 'Naive all2all', 'deepep_low_latency': 'Use deepep low-latency kernels'}
    """
    found = re.findall(r'-\s+"([\w.-]+)"\s*[:,]\s*(.+?)(?=\s+-\s+"[\w.-]+"\s*[:,]|$)', " ".join(text.split()))
    return {value: description.rstrip(". ") for value, description in found if len(description) <= MAX_HELP_CHARS}


def describes(text: str) -> bool:
    """Whether a help text starts by saying what the setting does, not that it is deprecated or has no effect.

    >>> describes("Size of the CPU swap space per GPU (in GiB)."), describes("[DEPRECATED] Use `pooler_config` instead.")
    (True, False)
    """
    sentence = first_sentence(text)
    return bool(sentence) and not _DEPRECATION.search(sentence) and not NO_EFFECT.search(sentence) \
        and not re.search(r"\binstead\b", sentence)
