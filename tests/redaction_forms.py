"""The secret forms attackers planted in logs and tickets (issues #15 and #25), and a realistic log that carries one.

Each form is (id, where, fragment, secrets): `where` says how the fragment joins the launch line ("env" before
`vllm serve`, "arg" after it, "launch" replaces it, "text" only in error lines), and `secrets` are the values
that must never appear in any output.
"""

from __future__ import annotations

PEM = ("-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEAu1SU1LfVLPHCozMxH2Mo4lgOEePzNm0tRgeLezV6ffAt0gun\n"
       "VTLw7onLRnrq0/IzW7yWR7QkrmBL7jTKEn5u+qKhbwKfBstIs+bMY2Zkp18gnTxK\n-----END RSA PRIVATE KEY-----")
MODEL = "meta-llama/Llama-3.1-8B-Instruct"
AZURE_KEY = "Zm9vYmFyYmF6cXV4MTIzNDU2Nzg5MGFiY2RlZmdoaWprbG1ub3BxcnN0dXZ3eHl6QUJDREVGR0g0NTY3ODkwYWJjZA=="
AMZ_SIG = "5d672d79c15b13162d9279b0855cfba6789a8edb4c82c400e06b5924a6f2b5d7"
AMZ_TOKEN = "IQoJb3JpZ2luX2VjEHoaCXVzLWVhc3QtMSJHMEUCIQDc2NzE4ZTQ4"
WANDB_HEX = "9f8e7d6c5b4a39281706f5e4d3c2b1a098765432"

FORMS = [
    ("hf-token-env", "env", "HF_TOKEN=hf_QzXwVuTsRqPoNmLkJiHgFeDcBa987654", ["hf_QzXwVuTsRqPoNmLkJiHgFeDcBa987654"]),
    ("hf-token-env-quoted", "env", 'HF_TOKEN="hf_PlMoKnIjBuHvGyCtFxRdZe1234567890"', ["hf_PlMoKnIjBuHvGyCtFxRdZe1234567890"]),
    ("api-key-bare", "arg", "--api-key s3cr3tBareKey77", ["s3cr3tBareKey77"]),
    ("api-key-double-quoted", "arg", '--api-key "Quoted Secret Value 42"', ["Quoted Secret Value 42", "Secret Value"]),
    ("api-key-single-quoted", "arg", "--api-key 'single quoted pass 9'", ["single quoted pass 9", "quoted pass"]),
    ("api-key-equals", "arg", "--api-key=EqualsKey-556677", ["EqualsKey-556677"]),
    ("api-key-equals-quoted", "arg", '--api-key="eq quoted 8812"', ["eq quoted 8812", "quoted 8812"]),
    ("api-key-underscore", "arg", "--api_key underscoreKey4242", ["underscoreKey4242"]),
    ("hf-token-flag", "arg", "--hf-token plainHfTokenValue99", ["plainHfTokenValue99"]),
    ("hf-token-flag-hf", "arg", "--hf-token hf_FlagTokenAbCdEfGhIjKlMnOp12", ["hf_FlagTokenAbCdEfGhIjKlMnOp12"]),
    ("aws-secret-quoted", "env", 'AWS_SECRET_ACCESS_KEY="wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"',
     ["wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", "K7MDENG"]),
    ("aws-access-key-id", "env", "AWS_ACCESS_KEY_ID=AKIAIOSFODNN7EXAMPLE", ["AKIAIOSFODNN7EXAMPLE"]),
    ("github-pat", "env", "GH=github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyzABCD",
     ["github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyzABCD", "abcdefghijklmnop"]),
    ("github-ghp", "env", "GH_CRED=ghp_aBcDeFgHiJkLmNoPqRsTuVwXyZ0123456789", ["ghp_aBcDeFgHiJkLmNoPqRsTuVwXyZ0123456789"]),
    ("openai-sk-proj", "env", "OPENAI_API_KEY=sk-proj-ZyXwVuTsRqPoNmLkJiHgFeDcBa9876543210",
     ["sk-proj-ZyXwVuTsRqPoNmLkJiHgFeDcBa9876543210", "ZyXwVuTsRq"]),
    ("anthropic-sk-ant", "env", "ANTHROPIC_API_KEY=sk-ant-api03-QwErTyUiOpAsDfGhJkLzXcVbNm1234", ["QwErTyUiOpAsDfGh"]),
    ("json-api-key", "arg", '{"api_key": "JsonApiKeyValue123"}', ["JsonApiKeyValue123"]),
    ("json-token-compact", "arg", '{"token":"CompactJsonTok456"}', ["CompactJsonTok456"]),
    ("python-hf-token-kwarg", "arg", 'hf_token="PyKwargTokenValue7"', ["PyKwargTokenValue7"]),
    ("json-camel-api-key", "arg", '{"apiKey": "CamelApiKeyVal88"}', ["CamelApiKeyVal88"]),
    ("x-api-key-header", "arg", '-H "x-api-key: HeaderKeyValue31"', ["HeaderKeyValue31"]),
    ("authorization-bearer", "text", "Authorization: Bearer BearerTokValue_9876543", ["BearerTokValue_9876543"]),
    ("authorization-basic", "text", "Authorization: Basic dXNlcjpwYXNzd29yZDEyMw==", ["dXNlcjpwYXNzd29yZDEyMw"]),
    ("password-spaced-equals", "text", "password = Hunter2WithSpaces", ["Hunter2WithSpaces"]),
    ("password-colon", "text", "password: ColonPassVal77", ["ColonPassVal77"]),
    ("secret-key-spaced", "text", "secret_key = SecretKeyVal55", ["SecretKeyVal55"]),
    ("pem-private-key", "text", PEM, ["MIIEowIBAAKCAQEAu1SU1LfVLPHCozMxH2Mo4lgOEePzNm0tRgeLezV6ffAt0gun", "u1SU1LfVLPHC",
                                      "VTLw7onLRnrq0/IzW7yWR7QkrmBL7jTKEn5u+qKhbwKfBstIs+bMY2Zkp18gnTxK"]),
    ("url-password-with-slash", "text", "https://deploy:Pa55/Slash/Word@pypi.example.com/simple", ["Pa55/Slash/Word", "Slash/Word"]),
    ("url-empty-user", "text", "https://:EmptyUserPw42@hub.example.com/", ["EmptyUserPw42"]),
    ("url-database", "text", "postgresql://vllm:DbPassw0rd88@db.internal:5432/metrics", ["DbPassw0rd88"]),
    ("token-cut-by-wrap", "arg", "--api-key WrapFirstHalf12345\nWrapSecondHalf67890", ["WrapFirstHalf12345", "WrapSecondHalf67890"]),
    ("value-after-comma", "arg", "--api-key first-key-111,SecondKeyAfterComma222", ["SecondKeyAfterComma222", "first-key-111"]),
    ("password-after-comma", "text", "user=admin,password=CommaPassVal33", ["CommaPassVal33"]),
    ("vllm-api-key-env", "env", "VLLM_API_KEY=VllmEnvKey3141", ["VllmEnvKey3141"]),
    ("docker-e-env", "launch", f"docker run --gpus all -e HF_TOKEN=DockerEnvTok55 vllm/vllm-openai:latest --model {MODEL}",
     ["DockerEnvTok55"]),
    ("docker-env-equals", "launch",
     f"docker run --gpus all --env=HUGGING_FACE_HUB_TOKEN=DockerEnvEq66 vllm/vllm-openai:latest --model {MODEL}", ["DockerEnvEq66"]),
    ("llm-python-kwarg", "launch", f'LLM(model="{MODEL}", hf_token="LlmKwargTok77")', ["LlmKwargTok77"]),
    ("jwt", "text", "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
     ["eyJzdWIiOiIxMjM0NTY3ODkwIn0", "dozjgNryP4J3jVmNHl0w5N"]),
    ("url-query-key", "text", "https://api.example.com/v1?api_key=QueryKeyVal99&x=1", ["QueryKeyVal99"]),
    ("ngc-api-key", "env", "NGC_API_KEY=nvapi-AbCdEfGhIjKlMnOpQrStUvWxYz012345", ["AbCdEfGhIjKlMnOpQrSt"]),
    ("email-address", "text", "contact alice.smith@example.com", ["alice.smith@example.com", "alice.smith"]),
    ("env-password-single-quoted", "env", "DB_PASSWORD='Single Quoted Pw 5'", ["Single Quoted Pw 5", "Quoted Pw"]),
    ("escaped-json-secret", "text", '{\\"client_secret\\": \\"EscapedJsonSecret3\\"}', ["EscapedJsonSecret3"]),
    ("cookie-header", "text", "Cookie: session=CookieSess10nVal", ["CookieSess10nVal"]),
    ("wandb-env", "env", "WANDB_API_KEY=0123456789abcdef0123456789abcdef01234567", ["0123456789abcdef0123456789abcdef01234567"]),
    ("unprefixed-high-entropy", "text", "key rotated to Zx9Kq2LmN8pR4tV6wY1bC3dF", ["Zx9Kq2LmN8pR4tV6wY1bC3dF"]),
    ("env-token-spaced-quoted", "env", 'MY_SERVICE_TOKEN="tok with space 12"', ["tok with space 12", "with space"]),
    ("non-default-args-dict", "text", f"non-default args: {{'model': '{MODEL}', 'api_key': 'NonDefaultArgKey1'}}",
     ["NonDefaultArgKey1"]),
    # issue #25: the forms the second campaign showed leaking (../shared/reviews/attack.md, section 5)
    ("azure-account-key", "text", f"DefaultEndpointsProtocol=https;AccountName=vllmstore;AccountKey={AZURE_KEY};"
     "EndpointSuffix=core.windows.net", [AZURE_KEY, AZURE_KEY[:24]]),
    ("azure-sas-sig", "text", "https://vllmstore.blob.core.windows.net/models/w.safetensors?sv=2022-11-02&ss=b&sp=rl"
     "&se=2026-12-31T00%3A00%3A00Z&sig=AbCdEf%2BgHiJkLmNo%2FpQrStUv1234567890wxyz%3D", ["AbCdEf%2BgHiJkLmNo", "pQrStUv12345"]),
    ("s3-presigned-url", "text", "https://models.s3.amazonaws.com/w.bin?X-Amz-Algorithm=AWS4-HMAC-SHA256"
     "&X-Amz-Credential=AKIAZQ3DRSLKXN7PRZ4E%2F20261201%2Fus-east-1%2Fs3%2Faws4_request&X-Amz-Date=20261201T000000Z"
     f"&X-Amz-Expires=3600&X-Amz-Security-Token={AMZ_TOKEN}&X-Amz-SignedHeaders=host&X-Amz-Signature={AMZ_SIG}",
     [AMZ_SIG, AMZ_SIG[:16], "AKIAZQ3DRSLKXN7PRZ4E", AMZ_TOKEN, AMZ_TOKEN[:16]]),
    ("s3-signature-header", "text", f"x-amz-security-token: {AMZ_TOKEN[::-1]}, x-amz-signature: {AMZ_SIG[::-1]}",
     [AMZ_TOKEN[::-1], AMZ_SIG[::-1]]),
    ("curl-u", "text", "curl -u admin:CurlPassw0rd42 http://localhost:8000/v1/models", ["CurlPassw0rd42"]),
    ("curl-user-long", "text", "curl -s --user ops:CurlUserPw9 https://vllm.internal/health", ["CurlUserPw9"]),
    ("curl-user-quoted", "text", 'curl -s -u "ops:Curl Spaced Pass 5" https://vllm.internal/health', ["Curl Spaced Pass 5", "Spaced Pass"]),
    ("cookie-second-value", "text", "Cookie: sessionid=FirstCookieVal1; csrftoken=CsrfTok3nValue99",
     ["FirstCookieVal1", "CsrfTok3nValue99"]),
    ("set-cookie", "text", "Set-Cookie: session=SetCookieVal77; Path=/; HttpOnly, Set-Cookie: csrftoken=SetCsrfVal78; Path=/",
     ["SetCookieVal77", "SetCsrfVal78"]),
    ("wandb-login", "text", f"wandb login {WANDB_HEX}", [WANDB_HEX]),
    ("wandb-login-relogin", "text", f"wandb login --relogin {WANDB_HEX[::-1]}", [WANDB_HEX[::-1]]),
    ("wandb-login-python", "text", f'wandb.login(key="{WANDB_HEX[5:] + WANDB_HEX[:5]}")', [WANDB_HEX[5:] + WANDB_HEX[:5]]),
    ("netrc-one-line", "text", "machine huggingface.co login vllm password NetrcPassw0rd1", ["NetrcPassw0rd1"]),
    ("netrc-lines", "text", "machine huggingface.co\n  login vllm\n  password NetrcLinePw2", ["NetrcLinePw2"]),
    ("pgpass-line", "text", "db.internal:5432:metrics:vllm:PgPassFileVal1", ["PgPassFileVal1"]),
    ("pgpass-wildcards", "text", "*:*:*:postgres:PgWild\\:Pass2", ["PgWild", "Pass2"]),
    ("docker-login-p", "text", "docker login -u bot -p DockerLoginPw3 registry.example.com", ["DockerLoginPw3"]),
    ("docker-login-password", "text", "docker login --username bot --password=DockerLoginPw4 nvcr.io", ["DockerLoginPw4"]),
    ("slack-webhook", "text", "alerts to https://hooks.slack.com/services/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",
     ["SlackHookTokenXyZ0123456", "B4E5F6G7H"]),
    ("discord-webhook", "text", "https://discord.com/api/webhooks/123456789012345678/DiscordHookTok-Qr5tUvWxYz_0123456789",
     ["DiscordHookTok", "Qr5tUvWxYz_0123456789"]),
    ("stripe-sk-live", "env", "STRIPE=sk_live_51StripeLiveKeyQ7w8e9r0", ["sk_live_51StripeLiveKeyQ7w8e9r0", "StripeLiveKeyQ7w8"]),
    ("stripe-rk-live", "text", "restricted key rk_live_51StripeRestrictedZ1x2 rejected",
     ["rk_live_51StripeRestrictedZ1x2", "StripeRestrictedZ1"]),
    ("stripe-sk-test", "text", "charging with sk_test_4eC39HqLyjWDarjtT1zdp7dc", ["sk_test_4eC39HqLyjWDarjtT1zdp7dc", "4eC39HqLyj"]),
    ("google-client-secret", "text", "oauth client 1234.apps.googleusercontent.com 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",
     ["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", "GoogleClientSecretVal"]),
    ("gcp-private-key-id", "text", '{"type": "service_account", "private_key_id": "3f2e1d0c9b8a79685746352413021f0e1d2c3b4a"}',
     ["3f2e1d0c9b8a79685746352413021f0e1d2c3b4a"]),
    ("k8s-env-hf-token", "text", "- name: HF_TOKEN\n  value: K8sPlainTokenVal", ["K8sPlainTokenVal"]),
    ("k8s-env-quoted", "text", '- name: "WANDB_API_KEY"\n  value: "wandb-k8s-quoted-9f8e7d"', ["wandb-k8s-quoted-9f8e7d"]),
    ("k8s-env-json", "text", '{"name": "OPENAI_API_KEY", "value": "EcsJsonEnvVal5"}', ["EcsJsonEnvVal5"]),
    ("vllm-list-api-key", "text", f"non-default args: {{'model': '{MODEL}', 'api_key': ['ListKey123Abc']}}", ["ListKey123Abc"]),
    ("vllm-list-two-keys", "text", "non-default args: {'api_key': ['FirstListKey1', 'SecondListKey2'], 'port': 8000}",
     ["FirstListKey1", "SecondListKey2"]),
    ("vllm-namespace-api-key", "text", f"args: Namespace(model='{MODEL}', api_key=['NsListKey456'], port=8000)", ["NsListKey456"]),
    ("hf-token-short-piece-wrap", "text", "token hf_Ab3dE\nfGhIjKlMnOpQrStUvWxYz0123456 rejected",
     ["hf_Ab3dE", "Ab3dE", "fGhIjKlMnOpQrStUvWxYz0123456"]),
    # campaign r6b, left over: a pair URL-encoded inside another URL, a secret word before the provider's name
    ("url-encoded-api-key", "text", "redirect to https://app.example/login?next=https%3A%2F%2Fapi.example%2Fv1%3F"
     "api_key%3DEncApiKeyVal77%26n%3D1", ["EncApiKeyVal77"]),
    ("url-encoded-token", "text", "GET /cb?state=access_token%3DEncTokenVal88%26x%3D1 failed", ["EncTokenVal88"]),
    ("url-encoded-twice", "text", "https://a.example/r?u=https%253A%252F%252Fb%252Fc%253Ftoken%253DEncTwiceVal5", ["EncTwiceVal5"]),
    ("env-token-before-provider", "env", "TOKEN_HF=ProvLastTokenV9", ["ProvLastTokenV9"]),
    ("env-key-before-provider", "env", "API_KEY_OPENAI=ProvLastKeyV10", ["ProvLastKeyV10"]),
    # campaign r8 (left open by r7): a well-known program's option that takes a secret (secrets.yaml's
    # tool_secret_options), a token as a URL's user name, an XML element named as a secret
    ("redis-cli-a", "text", "redis-cli -h cache -a redis_pw-Tool1 ping", ["redis_pw-Tool1"]),
    ("redis-cli-pass", "text", "redis-cli --pass=redis_pw-Tool2 -n 0", ["redis_pw-Tool2"]),
    ("mysql-p-glued", "text", "mysql -u root -pmysql_pw-Tool3 vllm_db", ["mysql_pw-Tool3"]),
    ("sshpass-p", "text", "sshpass -p 'ssh pw Tool4' ssh ops@gpu-node", ["ssh pw Tool4", "pw Tool4"]),
    ("htpasswd-b", "text", "htpasswd -bc /etc/nginx/.htpasswd admin htpw_Tool5-x", ["htpw_Tool5-x"]),
    ("az-login-p", "text", "az login --service-principal -u app-id -p az_secret-Tool6 --tenant t", ["az_secret-Tool6"]),
    ("openssl-k", "text", "openssl enc -aes-256-cbc -k ossl_pw-Tool7 -in w.bin", ["ossl_pw-Tool7"]),
    ("7z-p-glued", "text", "7z x -p7z_pw-Tool8 weights.7z", ["7z_pw-Tool8"]),
    ("vault-login", "text", "vault login s.vaultTok3n_Tool9abcdefgh", ["s.vaultTok3n_Tool9abcdefgh", "vaultTok3n_Tool9"]),
    ("ldapsearch-w", "text", "ldapsearch -x -D cn=admin,dc=x -w ldap_pw-Tool10 -b dc=x", ["ldap_pw-Tool10"]),
    ("keytool-storepass", "text", "keytool -importcert -keystore ks.jks -storepass ks_pw-Tool11 -file ca.crt",
     ["ks_pw-Tool11"]),
    ("url-token-user", "text", "git clone https://0a1b2c3d4e5f_TokUser12-x9y8z7@10.0.0.5:3000/org/weights.git",
     ["0a1b2c3d4e5f_TokUser12-x9y8z7"]),
    ("url-token-oauth-basic", "text", "remote: https://TokOauth13_a1b2c3d4e5f6g7:x-oauth-basic@github.com/o/r",
     ["TokOauth13_a1b2c3d4e5f6g7"]),
    ("xml-password", "text", "<settings><username>bot</username><password>xml_pw-Tool14</password></settings>",
     ["xml_pw-Tool14"]),
    ("xml-token-attrs", "text", '<hf:token scope="read">xml_tok-Tool15</hf:token>', ["xml_tok-Tool15"]),
    # r11 S4: a YAML block under a secret key (the value is on the lines below the key)
    ("yaml-list-under-password", "text", "password:\n  - yaml_pw-Block16\n  - yaml_pw-Block17",
     ["yaml_pw-Block16", "yaml_pw-Block17"]),
    ("yaml-literal-under-token", "text", "hf_token: |\n  yaml_tok-Block18\n  yaml_tok-Block19",
     ["yaml_tok-Block18", "yaml_tok-Block19"]),
    ("yaml-folded-under-api-key", "text", "api_key: >-\n    yaml_key-Block20", ["yaml_key-Block20"]),
]
FORM_IDS = [form[0] for form in FORMS]

# Ordinary log text that looks a little like a secret and must come through unchanged.
NEAR_MISSES = [
    "--max-model-len 4096", "--max-num-batched-tokens 8192", "max_tokens=16", "token_ids=[1, 2, 3]",
    f"tokenizer={MODEL}", "TOKENIZERS_PARALLELISM=false", "# GPU blocks: 2730, # CPU blocks: 512",
    "GPU KV cache size: 43,680 tokens", "KV cache memory 5.00 GiB", "pad_token: <pad>", "NVIDIA A100-SXM4-80GB",
    "Qwen2ForCausalLM", "Qwen/Qwen3-Coder-30B-A3B-Instruct-FP8", "/usr/lib/python3/dist-packages/torch/cuda/Module1A2b3C",
    "CUDA_VISIBLE_DEVICES=0,1", "0x7F3A9B2C4D5E6F70", "http://localhost:8000/v1/models", "--api-key <your-key>",
    "HF_TOKEN=$HF_TOKEN", "Halve KV bytes per token: --kv-cache-dtype fp8",
    # near the issue #25 forms: hashes, versions, UUIDs, words and ports that only resemble them
    "sha256: 9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08  model-00001-of-00004.safetensors",
    "vLLM API server version 0.6.3.post2.dev123+g1234abcd", "version 0.11.1rc2.dev45+gdeadbeef.cu128",
    "commit 1234abcd5678ef901234abcd5678ef9012345678", "Using GPU-5a1b2c3d-4e5f-6789-abcd-ef0123456789 (NVIDIA H100 80GB HBM3)",
    "--kv-cache-dtype fp8_e4m3", "kv_cache_dtype='auto'", "worker exited on sig 15", "terminated (sig=SIGTERM)",
    "signature: (self, x)", "pip install hf_transfer", "HF_HUB_ENABLE_HF_TRANSFER=1", "from huggingface_hub import hf_hub_download",
    'password authentication failed for user "vllm"', "Please log in with `huggingface-cli login`",
    "TOKEN_LIMIT=4096", "KEY_FILE=/etc/vllm/tls.key", "GET /v1/models?page%3D2%26max_tokens%3D16",
    "wandb: Currently logged in as: team (use `wandb login --relogin` to force relogin)", "docker login registry.example.com",
    "docker run -p 8000:8000 --gpus all vllm/vllm-openai:latest", "curl -X POST http://localhost:8000/v1/completions",
    "curl -s http://localhost:8000/v1/models -H 'Content-Type: application/json'", "cookies are disabled",
    "INFO 05-01 10:00:01 [api_server.py:1] started at 12:30:45", "listening on [::1]:8000 and fe80::1ff:fe23:4567:890a",
    "MASTER_ADDR=10.0.0.1:29500", 'launch: "HF_TOKEN=$HF_TOKEN VLLM_USE_V1=0 vllm serve m --dtype half"',
    '--env \\"HUGGING_FACE_HUB_TOKEN=<secret>\\" -p 8000', '- name: MAX_MODEL_LEN\n  value: "4096"', "  value: spawn", '  value: "1"',
    "Namespace(model='m', api_key=None, port=8000)", "non-default args: {'model': 'm', 'api_key': []}",
    "'allowed_origins': ['*'], 'token_ids': [1, 2]", "X-Amz-SignedHeaders=host&X-Amz-Expires=3600",
    # near the r8 forms: the same programs and tags without a secret
    "vault login failed: permission denied", "docker run -p 8000:8000 -p 8001:8001 img", "mysql -P 3306 -p vllm_db",
    "redis-cli -h cache ping", "ssh-keygen -t ed25519 -f key", "<max_tokens>16</max_tokens>", "<tokenizer>m</tokenizer>",
    "git clone https://github.com/org/weights.git", "https://huggingface.co/org/m/resolve/main/config.json",
    "openssl s_client -connect hub:443 -servername hub", "7z x -o/models weights.7z",
    # near the r11 S4 forms: blocks under keys that hold no secret, and a secret key with its value on its line
    "args:\n  - --model\n  - org/m", "tokenizer:\n  - org/m", "secrets:\n  - hf-token-secret-name",
    "max_tokens: |\n  4096", "password: <set-me>\n  - not-its-value", "Invalid token:\n  File \"x.py\", line 3",
]
ERROR_TAIL = "(max_tokens=16, token_ids=[1, 2], tokenizer=meta-llama/Llama-3.1-8B-Instruct, # GPU blocks: 2730)"
KV_ERROR = (
    "ValueError: To serve at least one request with the model's max seq len (131072), (16.00 GiB KV cache is needed, "
    "which is larger than the available KV cache memory (5.00 GiB). Based on the available memory, the estimated "
    "maximum model length is 40960."
)


def launch_line(where: str, fragment: str) -> str:
    plain = f"vllm serve {MODEL} --max-model-len 131072 --max-num-batched-tokens 8192 --tokenizer {MODEL}"
    if where == "env":
        return f"{fragment} {plain}"
    if where == "arg":
        return f"{plain} {fragment}"
    if where == "launch":
        return fragment.replace("--model", "--max-model-len 131072 --model") if "docker" in fragment else \
            fragment.replace(")", ", max_model_len=131072)")
    return plain


def log_for(form: tuple) -> str:
    """A start-up that fails on the KV cache, with the form on the launch line and in two error lines."""
    _, where, fragment, _ = form
    return "\n".join([
        f"$ {launch_line(where, fragment)}",
        "INFO 05-01 10:00:01 [api_server.py:1] vLLM API server version 0.8.5",
        f"WARNING 05-01 10:00:02 [utils.py:9] env: {fragment}",
        "INFO 05-01 10:00:03 [worker.py:2] # GPU blocks: 2730, # CPU blocks: 512",
        f"ERROR 05-01 10:00:04 [engine.py:7] RuntimeError: request failed: {fragment} {ERROR_TAIL}",
        f"ERROR 05-01 10:00:05 [engine.py:8] {KV_ERROR}",
    ]) + "\n"
