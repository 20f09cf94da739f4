"""Every reply draft comes out in the ticket's language (issue #27, item 8): each kind of reply (a diagnosed failure,
an unexplained one, a how-to and a performance question, a client-side error, a diagnosed request error, nothing
to go on, a ticket of only `nvidia-smi`, an attachment that cannot be read) holds none of the English wordings
when the ticket is written in German, Spanish, Chinese or Japanese, and no path of the triager's disk."""

import json
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from diagnose.cli.main import main

from .conftest import ROOT
from .test_triage_customer_facts import KV_ERROR, SMI

PROSE = {
    "de": "Hallo, wir haben leider ein Problem mit dem Server und es funktioniert nicht.\n",
    "es": "Hola, tenemos un problema con el servidor y no funciona, gracias.\n",
    "zh": "您好，我们的服务器启动失败了，请帮忙看一下。\n",
    "ja": "お世話になります。サーバーが起動しません。\n",
}
ASKS = {"de": "Wie kann ich prefix caching aktivieren?\n", "es": "¿Cómo puedo activar el prefix caching?\n",
        "zh": "如何开启 prefix caching？\n", "ja": "prefix caching を有効にする方法は？\n"}
SLOW = {"de": "Der Durchsatz ist zu langsam, nur 40 tok/s.\n", "es": "El throughput es muy lento, 40 tok/s.\n",
        "zh": "吞吐太慢了，只有 40 tok/s。\n", "ja": "スループットが遅いです。40 tok/s の速度です。\n"}
KINDS = {  # the ticket's body after its prose, and the kind of reply it gets
    "failure": (KV_ERROR, "failure"),
    "unexplained": ("ERROR 01-01 10:00:00 [core.py:1] RuntimeError: zorgle blorp quux happened\n", "failure"),
    "howto": (ASKS, "question"),
    "performance": (SLOW, "question"),
    "client-error": ("openai.APITimeoutError: Request timed out.\n"
                     'INFO:     10.0.3.17:51234 - "POST /v1/chat/completions HTTP/1.1" 200 OK\n', "request-error"),
    "request-failed": ("ERROR 10-02 14:11:09 [serving_chat.py:187] Error in preprocessing prompt inputs\n"
                       "ValueError: As of transformers v4.44, default chat template is no longer allowed, so you must "
                       "provide a chat template if the tokenizer does not define one.\n", "request-error"),
    "nothing": ("\n", "nothing"),
    "nvidia-smi-only": (SMI, "nothing"),
}


def _english_wordings() -> list[str]:
    data = yaml.safe_load((ROOT / "diagnose" / "data" / "triage_replies.yaml").read_text())

    def strings(tree):
        for value in tree.values():
            yield from strings(value) if isinstance(value, dict) else [value]

    # each wording's fixed text up to its first placeholder: what a translated draft must not hold
    return [s.split("{")[0].strip() for s in strings({"r": data["replies"], "q": data["questions"]}) if s.strip()]


@pytest.fixture(scope="module")
def drafts(tmp_path_factory) -> tuple[dict[str, dict], Path]:
    root = tmp_path_factory.mktemp("languages")
    folder = root / "tickets"
    folder.mkdir()
    for language, prose in PROSE.items():
        for kind, (body, _) in KINDS.items():
            text = body[language] if isinstance(body, dict) else body
            (folder / f"{language}-{kind}.txt").write_text(prose + text)
    result = CliRunner().invoke(main, ["triage", str(folder), "--format", "json", "--replies", str(root / "drafts")])
    assert result.exit_code == 0, result.output
    return {row["id"]: row for row in json.loads(result.stdout)["tickets"]}, root


@pytest.mark.parametrize("kind", sorted(KINDS))
@pytest.mark.parametrize("language", sorted(PROSE))
def test_every_kind_of_reply_is_written_in_the_tickets_language(drafts, language, kind):
    rows, root = drafts
    name = f"{language}-{kind}.txt"
    assert rows[name]["language"] == language and rows[name]["kind"] == KINDS[kind][1]
    draft = (root / "drafts" / f"{name}.md").read_text()
    prose = "\n".join(part for i, part in enumerate(draft.split("```")) if i % 2 == 0)  # quoted lines stay as they are
    english = [w for w in [*_english_wordings(), " in use", "the attachment"] if len(w) > 3 and w in prose]
    assert not english, english
    assert str(root) not in draft and "tickets/" not in draft


def test_a_translated_failure_says_the_diagnosis_itself_is_in_english(drafts):
    _, root = drafts
    draft = (root / "drafts" / "de-failure.txt.md").read_text()
    assert "(Die Diagnose selbst folgt auf Englisch" in draft
    assert "Diagnose selbst" not in (root / "drafts" / "de-howto.txt.md").read_text()


def test_an_unreadable_record_is_answered_in_the_language_of_its_subject(tmp_path):
    export = tmp_path / "export.jsonl"
    records = [{"id": "7", "subject": "Der Server startet nicht, leider", "text": "x" * 10},
               {"id": "8", "subject": "Der Server startet nicht, leider"}]
    export.write_text("".join(json.dumps(r) + "\n" for r in records))
    result = CliRunner().invoke(main, ["triage", str(export), "--id-field", "id", "--title-field", "subject",
                                       "--replies", str(tmp_path / "drafts")])
    assert result.exit_code == 0, result.output
    draft = (tmp_path / "drafts" / "8.md").read_text()
    assert draft.startswith("**Re: Der Server startet nicht, leider**") and "Hallo," in draft
    assert "We could not read" not in draft and str(tmp_path) not in draft
