from sse_tool.redact import MASK, Redactor


def test_secret_headers_are_masked_and_others_kept():
    r = Redactor()
    shown = r.headers([("Authorization", "Bearer sk-abcdef123456"), ("x-api-key", "sk-ant-xyz789"),
                       ("api-key", "azure-key-1234"), ("x-goog-api-key", "AIzaSy-secret"),
                       ("Cookie", "session=abcdef"), ("Content-Type", "application/json")])
    assert shown == [("Authorization", f"Bearer {MASK}"), ("x-api-key", MASK), ("api-key", MASK),
                     ("x-goog-api-key", MASK), ("Cookie", MASK), ("Content-Type", "application/json")]


def test_key_query_parameters_and_passwords_are_masked_in_urls():
    r = Redactor()
    assert r.url("https://h/v1/m:stream?alt=sse&key=AIzaSecret&x=1") == \
        f"https://h/v1/m:stream?alt=sse&key={MASK}&x=1"
    assert r.url("https://user:hunter2pass@h/p?api_key=abc") == f"https://{MASK}@h/p?api_key={MASK}"


def test_learned_secrets_are_masked_wherever_they_reappear_in_text():
    r = Redactor()
    r.learn_headers([("Authorization", "Bearer sk-live-0123456789")])
    r.learn_url("http://h/?key=gem-secret-42")
    text = r.text("server said: invalid key sk-live-0123456789 for gem-secret-42")
    assert "sk-live" not in text and "gem-secret" not in text and text.count(MASK) == 2


def test_key_parameters_inside_free_text_are_masked():
    r = Redactor()
    assert r.text("GET https://x/y?alt=sse&key=abc123 failed") == f"GET https://x/y?alt=sse&key={MASK} failed"
    assert r.text("proxy http://bob:pw@proxy:3128 refused") == f"proxy http://{MASK}@proxy:3128 refused"


def test_short_values_are_not_learned_so_messages_stay_readable():
    r = Redactor(["a", "sk-longer-secret"])
    assert r.text("a cat saw sk-longer-secret") == f"a cat saw {MASK}"


def test_masking_is_idempotent():
    r = Redactor(["sk-0123456789"])
    once = r.url("http://h/?key=sk-0123456789")
    assert r.url(once) == once and r.text(once) == once


def test_a_secret_in_a_header_name_is_masked_whatever_its_case():
    # Header names are case-insensitive and clients hand them over lower-cased: a
    # mixed-case key an upstream quotes in a name must not come back readable
    r = Redactor(["sk-Mixed-Case-Key-0123"])
    shown = r.headers([("x-rejected-sk-mixed-case-key-0123", "1"), ("X-SK-MIXED-CASE-KEY-0123", "v"),
                       ("x-sk-Mixed-Case-Key-0123", "sk-Mixed-Case-Key-0123"), ("x-plain", "sk-mixed")])
    assert shown == [("x-rejected-" + MASK, "1"), ("X-" + MASK, "v"), ("x-" + MASK, MASK),
                     ("x-plain", "sk-mixed")]


def test_every_spelling_of_a_key_parameter_is_masked_in_urls():
    r = Redactor()
    for name in ("key", "KEY", "$key", "%24key", "%24KEY", "api_key"):
        assert r.url(f"https://h/p?alt=sse&{name}=AIzaSecret&x=1") == f"https://h/p?alt=sse&{name}={MASK}&x=1"
