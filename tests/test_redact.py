"""No credential reaches a message, a warning, an MCP error or settings output (ragx/redact.py), and a
base_url's user:password@ is HTTP basic authentication against a real server on 127.0.0.1."""

from __future__ import annotations

import base64

import pytest
from fakes import HashEmbedder
from servers import FakeOpenAI, free_port, openai_toml, provider_env, write_toml  # noqa: F401 (fixtures)

from ragx.api import Corpus
from ragx.errors import ProviderError
from ragx.redact import redact, remember

pytestmark = pytest.mark.usefixtures("provider_env")

KEY = "sk-test-9f8e7d6c5b4a39281706"
PASSWORD = "p@ss:w/rd-42"  # quoted in the URL: p%40ss%3Aw%2Frd-42


def test_shapes_and_remembered_values_are_masked():
    remember("hunter2-secret")
    text = ("GET https://bob:hunter2-secret@example.org/v1?api_key=abc123&x=1 failed; "
            "Authorization: Bearer abcdef123456; the server said: bad key hunter2-secret")
    shown = redact(text)
    assert "hunter2-secret" not in shown and "abc123" not in shown and "abcdef123456" not in shown
    assert "https://***@example.org/v1?api_key=***&x=1" in shown and "Bearer ***" in shown
    assert redact("the cat sat on the mat") == "the cat sat on the mat"


def test_userinfo_is_basic_authentication_against_a_live_server(tmp_path):
    quoted = "p%40ss%3Aw%2Frd-42"
    with FakeOpenAI(HashEmbedder()) as server:
        server.authorization = "Basic " + base64.b64encode(f"alice:{PASSWORD}".encode()).decode()
        url = server.base_url.replace("http://", f"http://alice:{quoted}@")
        write_toml(tmp_path, openai_toml(url))
        vector = Corpus(tmp_path).embedder.embed_query("stars")
        assert len(vector) == 64
        assert server.requests[-1]["headers"]["Authorization"] == server.authorization
        # a wrong password: refused, and the message shows neither password
        write_toml(tmp_path, openai_toml(url.replace("42@", "43@")))
        with pytest.raises(ProviderError) as refused:
            Corpus(tmp_path).embedder.embed_query("stars")
    message = str(refused.value)
    assert "HTTP 401" in message and "p%40ss" not in message and PASSWORD not in message and "rd-43" not in message
    assert "Basic ***" in message  # the server echoed the header it was sent


def test_a_key_the_server_echoes_is_not_shown(tmp_path, monkeypatch, capsys):
    from cli_runner import call

    with FakeOpenAI(HashEmbedder(), api_key="the-right-key") as server:
        write_toml(tmp_path, openai_toml(server.base_url))
        (tmp_path / "a.md").write_text("# stars\n\ncomets and planets\n", encoding="utf-8")
        monkeypatch.setenv("OPENAI_API_KEY", KEY)
        code, out, err = call(capsys, "index", "--root", str(tmp_path))
    assert code == 2 and "HTTP 401" in err
    assert KEY not in err + out and KEY[:12] not in err + out


@pytest.mark.parametrize("url", [f"http://alice:{PASSWORD}@127.0.0.1:notaport/v1", "http://alice:hunter3-pw@127.0.0.1:1x/v1",
                                 "http://alice:hunter3-pw@no-such-host.invalid/v1"])
def test_a_bad_base_url_never_shows_its_password(tmp_path, capsys, url):
    """Issue 42: a password in embeddings.base_url appeared in a `nonnumeric port` error."""
    from cli_runner import call

    write_toml(tmp_path, openai_toml(url))
    (tmp_path / "a.md").write_text("# stars\n\ncomets\n", encoding="utf-8")
    code, out, err = call(capsys, "index", "--root", str(tmp_path))
    assert code == 2 and err.count("ragx: error:") == 1, err
    assert "hunter3-pw" not in err + out and "w/rd-42" not in err + out and "ss:w" not in err + out


def test_mcp_tool_errors_are_redacted():
    from ragx.mcp.results import failed

    remember("mcp-secret-token")
    text = failed("internal error in search: ValueError: mcp-secret-token at http://u:pw123456@h/v1")["content"][0]["text"]
    assert "mcp-secret-token" not in text and "pw123456" not in text


def test_warnings_are_redacted(capsys):
    from ragx.log import warn

    remember("warn-secret-value")
    warn("expansion failed: server said warn-secret-value")
    assert "warn-secret-value" not in capsys.readouterr().err
