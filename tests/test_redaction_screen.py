"""The screen in front of redact's patterns (issue #16) lets no secret through.

`redact` runs a pattern only on a text that holds what the pattern needs (a shape's literal start, `://`, a word
every secret name holds); `redact(..., screen=False)` runs every pattern on every text. On every input here (each
secret form, its case and quoting variants, a sample of every shape, every secret name spelled every way, every
line of the bundled logs) the two give the same text.
"""

from __future__ import annotations

import json
import re

import pytest

from diagnose.util.datafiles import load_yaml
from diagnose.util.redact import MASK, redact, redact_tree
from diagnose.util.redact_names import is_secret_name, secret_table

from .conftest import FIXTURES, ROOT
from .redaction_forms import FORMS, NEAR_MISSES, log_for

# One real-looking secret per shape in diagnose/data/secrets.yaml (a shape without a sample fails the test below).
SHAPE_SAMPLES = [
    "glrt-Zq8vW3xR7tY2uP5sabcdEFGH12", "GR1348941Zq8vW3xR7tY2uP5sabcd", "xapp-1-A0123456789-Zq8vW3xR7tY2uP5s",
    "xoxe.xoxp-1-Zq8vW3xR7tY2uP5sabcdef", "api_org_Zq8vW3xR7tY2uP5sabcdEFGHijkl",
    "1//0gZq8vW3xR7tY2uP5sabcdEFGHijklMNOPqrstUV", "?Signature=Zq8vW3xR7tY2uP5s",
    "SignedHeaders=host, Signature=9a8b7c6d5e4f3a2b1c0d9e8f7a6b5c4d3e2f1a0b9c8d7e6f5a4b3c2d1e0f9a8b",
    "--from-literal=hf=Zq8vW3xR7tY2uP5s",
    "hf_QzXwVuTsRqPoNmLkJiHgFeDcBa987654", "sk-ant-api03-QwErTyUiOpAsDfGhJkLzXcVbNm1234",
    "sk-proj-ZyXwVuTsRqPoNmLkJiHgFeDcBa9876543210", "sk-svcacct-Ab12Cd34Ef56Gh78Ij90Kl", "sk-Ab12Cd34Ef56Gh78Ij90Kl12",
    "github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyzABCD", "ghp_aBcDeFgHiJkLmNoPqRsTuVwXyZ0123456789",
    "gho_aBcDeFgHiJkLmNoPqRsTuVwXyZ0123456789", "ghs_aBcDeFgHiJkLmNoPqRsTuVwXyZ0123456789",
    "glpat-Ab12Cd34Ef56Gh78Ij90", "xoxb-1234567890-abcdefghij", "xoxp-12345-67890-AbCdEf",
    "nvapi-AbCdEfGhIjKlMnOpQrStUvWxYz012345", "AIzaSyA1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q",
    "AKIAIOSFODNN7EXAMPLE", "ASIAIOSFODNN7EXAMPLE",
    # vendors' prefixes (round-5 campaign)
    "npm_Ab12Cd34Ef56Gh78Ij90Kl12Mn34Op56Qr78", "pypi-AgEIcHlwaS5vcmcAb12Cd34Ef56Gh78Ij90", "hvs.Ab12Cd34Ef56Gh78Ij90Kl12",
    "ya29.a0Ab12Cd34Ef56Gh78Ij90Kl12", "gsk_Ab12Cd34Ef56Gh78Ij90Kl12", "dckr_pat_Ab12Cd34Ef56Gh78Ij90Kl",
    "r8_Ab12Cd34Ef56Gh78Ij90Kl12Mn34Op56", "lsv2_pt_Ab12Cd34Ef56Gh78Ij90Kl12_0123456789",
    "xai-Ab12Cd34Ef56Gh78Ij90Kl12Mn34Op56Qr78St90Uv12", "pplx-Ab12Cd34Ef56Gh78Ij90Kl12Mn34Op56",
    "dapi0123456789abcdef0123456789abcdef", "glc_Ab12Cd34Ef56Gh78Ij90Kl12Mn34Op56", "shpat_0123456789abcdef0123456789abcdef",
    "AGE-SECRET-KEY-1AB12CD34EF56GH78IJ90KL12MN34OP56QR78ST90UV12", "pcsk_Ab12Cd34Ef56Gh78Ij90Kl12Mn34Op56",
    "tvly-Ab12Cd34Ef56Gh78Ij90Kl", "dop_v1_" + "0123456789abcdef" * 4, "sqp_0123456789abcdef0123456789abcdef01234567",
    "dp.st.dev.Ab12Cd34Ef56Gh78Ij90Kl", "sk.eyJ1IjoiQWIxMiJ9.Ab12Cd34Ef56Gh78", "lin_api_Ab12Cd34Ef56Gh78Ij90Kl12Mn34Op56",
    "HRKU-Ab12Cd34Ef56Gh78Ij90Kl12Mn34Op56", "fw_Ab12Cd34Ef56Gh78Ij90Kl", "tgp_v1_Ab12Cd34Ef56Gh78Ij90Kl12Mn34Op56",
    "as-Ab12Cd34Ef56Gh78Ij90Kl", '{"username": "me", "key": "0123456789abcdef0123456789abcdef"}',
    "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",
    "AC0123456789abcdef0123456789abcdef:fedcba9876543210fedcba9876543210",
    "https://maps.example/api?key=Zq9XvB7kLm2Np4Rt", "https://blob.example/x?sv=1&sig=Zq9XvB7kLm2Np4Rt",
    "mysql -u root -pZq9XvB7kLm2Np4Rt db", "sshpass -p Zq9XvB7kLm2Np4Rt ssh host", "$6$Zq9XvB7k$Lm2Np4RtWy8Ac1Ed3Fg5",
    "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
    "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmU\n-----END OPENSSH PRIVATE KEY-----",
    "-----END EC PRIVATE KEY-----",
    "hf_Ab3dE\n", "sk_live_51AbCdEfGhIjKlMnOpQrStUv", "rk_test_51AbCdEfGhIjKlMnOpQrStUv", "whsec_AbCdEfGhIjKlMnOpQrStUvWxYz0123",
    "GOCSPX-AbCdEfGhIjKlMnOpQrStUvWxYz12", "https://hooks.slack.com/services/T0A1B2C3D/B4E5F6G7H/aBcDeFgHiJkLmNoPqRsTuVwX",
    "https://discord.com/api/webhooks/123456789012345678/AbCdEfGhIjKlMnOp",
    "https://a.blob.core.windows.net/c/b?sv=2022-11-02&sig=AbCd%2Bef%3D", "Cookie: a=1; csrftoken=Abc123",
    "curl -u admin:CurlPassw0rd42 http://x/", "docker login -u bot -p DockerLoginPw3 registry",
    "wandb login 9f8e7d6c5b4a39281706f5e4d3c2b1a098765432", 'wandb.login(key="9f8e7d6c5b4a39281706f5e4d3c2b1a098765432")',
    "machine h login u password NetrcPw1", "\npassword NetrcLinePw2\n", "\n  value: K8sPlainTokenVal\n",
    "db.internal:5432:metrics:vllm:PgPassFileVal1",
]
ODD_TEXTS = [
    "Authorization: BEARER AbCdEfGh12345678", "authorization: bearer abcdefgh12345678", "x-auth-token: Tok3nVal",
    "API_\u212aEY=Kelvin5ignValue", "\u017fecret=LongS5Value", "\u0130 HF_TOKEN=after1WideLower", "\u01c5 apiKey: v9",
    f"RuntimeError: --api-key {MASK}\nAbc123 (retrying)", f"{MASK} \\\nWrapRest99", "--api-key WrapFirst12\nWrapRest34",
    "user@example.com wrote HF_TOKEN=<your-token>", "https://user:pa55@host/x and https://:$PW@host/y",
]


def _variants(text: str) -> list[str]:
    return [text, text.upper(), text.lower(), text.swapcase(), json.dumps(text), f"x {text}, y", f"({text})"]


def _spellings(normal: str) -> list[str]:
    """`secret_key` as a flag, an env variable, camelCase, a header, a dotted key, with prefixes."""
    pieces = [p for p in normal.split("_") if p]
    camel = pieces[0] + "".join(p.title() for p in pieces[1:])
    return [normal, normal.upper(), "-".join(pieces), "--" + "-".join(pieces), camel, "X-" + "-".join(p.title() for p in pieces),
            "my_" + normal, "MY_" + normal.upper(), "x." + ".".join(pieces), "env:" + normal.upper()]


def _name_texts() -> list[str]:
    table = secret_table()
    names = [*table.endings, *table.flags, *(f"my_{p}_file" for p in table.parts), *(f"SMTP_{e}" for e in table.env_endings)]
    return [form.format(name) for normal in names for name in _spellings(normal) for form in (
        "{}=Sample9Value1", "{}: Sample9Value1", '"{}": "sample value 9"', "{} = 'q r 9'", "{} Sample9Value1",
        '{{\\"{}\\": \\"Esc9Value\\"}}', "{}=Bearer Sample9Value1xyz")]


CORPUS = sorted({*(v for form in FORMS for v in _variants(form[2])), *(log_for(form) for form in FORMS), *NEAR_MISSES,
                 *(v for sample in SHAPE_SAMPLES for v in _variants(sample)), *ODD_TEXTS, *_name_texts()})


def test_the_screen_is_on():
    """Every shape has a literal start and every secret name a word: otherwise the tests below test nothing."""
    table = secret_table()
    assert table.shape_literals is not None and table.name_words is not None
    assert not table.shape_literals.search("INFO 05-01 [worker.py:2] # GPU blocks: 2730, # CPU blocks: 512")


def test_a_shape_the_screen_lets_through_starts_with_a_literal():
    """A shape with no literal of 3 characters runs on every printed line: the engine must find its start fast."""
    from re import _constants, _parser

    table = secret_table()
    assert len(table.unscreened) * 4 < len(table.shapes)
    for shape, _ in table.unscreened:
        assert _parser.parse(shape.pattern).data[0][0] is _constants.LITERAL, shape.pattern


def test_every_shape_has_a_sample_and_masks_it():
    for shape in load_yaml("secrets.yaml")["shapes"]:
        assert any(re.search(shape, sample) for sample in SHAPE_SAMPLES), f"add a sample for the shape {shape!r}"
    for sample in SHAPE_SAMPLES:
        assert sample not in redact(f"leaked {sample} here")


def test_the_names_in_the_corpus_are_secret_names_and_masked():
    """The name texts test the screen on real secrets: each spelling is a secret name, and its value is masked."""
    table = secret_table()
    for normal in (*table.endings, *table.flags):
        for name in _spellings(normal):
            assert is_secret_name(name), name
            assert "Sample9Value1" not in redact(f"{name}=Sample9Value1"), name


@pytest.mark.parametrize("emails", [True, False])
def test_the_screen_masks_what_every_pattern_masks(emails):
    differ = [text for text in CORPUS if redact(text, emails) != redact(text, emails, screen=False)]
    assert not differ, differ[:5]
    twice = [text for text in CORPUS if redact(redact(text, emails), emails) != redact(redact(text, emails), emails, screen=False)]
    assert not twice, twice[:5]


def test_the_screen_on_every_line_of_the_bundled_logs():
    lines = {line for folder in (FIXTURES, ROOT / "examples") for path in folder.rglob("*") if path.is_file()
             for line in path.read_text(encoding="utf-8", errors="replace").splitlines()}
    assert len(lines) > 1000
    differ = [line for line in lines if redact(line) != redact(line, screen=False)]
    assert not differ, differ[:5]


def test_a_string_repeated_in_a_tree_is_masked_under_a_secret_key_only():
    tree = {"token": "abc", "name": "abc", "rows": [{"apiKey": "abc"}, "abc", {"abc": "HF_TOKEN=hf_QzXwVuTsRqPoNmLkJiHgFeDcBa987654"}],
            "again": "HF_TOKEN=hf_QzXwVuTsRqPoNmLkJiHgFeDcBa987654"}
    assert redact_tree(tree) == {"token": MASK, "name": "abc", "rows": [{"apiKey": MASK}, "abc", {"abc": f"HF_TOKEN={MASK}"}],
                                 "again": f"HF_TOKEN={MASK}"}
