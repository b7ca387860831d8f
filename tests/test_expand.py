"""LLM query expansion against a real loopback chat server: variants fan out to dense legs; malformed
answers, failed calls and slow answers degrade to no expansion with one warning."""

from __future__ import annotations

import json
import time

import numpy as np
import pytest
from cli_runner import call
from fakes import HashEmbedder, make_corpus
from servers import FakeOpenAI, expansion, free_port, provider_env, write_toml  # noqa: F401 (fixture)

from ragx.api import Corpus
from ragx.config import load_settings
from ragx.errors import ConfigError
from ragx.index.build import run_index
from ragx.models.expand import ExpansionFormatError, parse_answer

pytestmark = pytest.mark.usefixtures("provider_env")

QUERY = "bread oven"
VARIANTS = ["telescope nebula galaxies", "comet orbit planet"]
HYDE = "The comet crossed the nebula while the telescope tracked its orbit."


@pytest.fixture(autouse=True)
def _fake_model(fake_model):
    """The shared fake embedder (conftest.fake_model) for every test here."""


@pytest.fixture
def chat():
    with FakeOpenAI() as server:
        yield server


@pytest.fixture
def corpus(tmp_path, chat):
    make_corpus(tmp_path)
    # Few seeds per leg: on this small corpus 100 (the default) would seed every chunk from the query alone.
    write_toml(tmp_path, f'[expand]\nenabled = true\nmodel = "chat-7b"\nbase_url = "{chat.base_url}"\ntimeout = 5.0\n'
                         '[search]\ndense_n = 20\nlexical_n = 20\n')
    run_index(tmp_path, load_settings(tmp_path), HashEmbedder())
    return tmp_path


# -- parsing ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "content",
    [
        '{"variants": ["a b", "c d"], "hyde": "passage"}',
        'Sure! Here you go:\n```json\n{"variants": ["a b", "c d"], "hyde": "passage"}\n```\nAnything else?',
        '<think>the user wants {"variants": ["x"]} style</think>{"variants": ["a b", "c d"], "hyde": "passage"}',
        'noise {not json} {"variants": ["a b", "A  B", "bread OVEN", "c d", ""], "hyde": "  passage \\n"}',
    ],
)
def test_answers_are_parsed_robustly(content):
    assert parse_answer(content, "bread oven", 3, True) == (["a b", "c d"], "passage")


def test_variant_count_and_hyde_switch():
    content = json.dumps({"variants": ["a", "b", "c", "d", "e"], "hyde": "p"})
    assert parse_answer(content, "q", 2, True) == (["a", "b"], "p")
    assert parse_answer(content, "q", 4, False) == (["a", "b", "c", "d"], None)


@pytest.mark.parametrize("content", ["I cannot help with that.", '{"answer": 42}', '{"variants": "one string"', "```\n[1, 2]\n```"])
def test_malformed_answers_raise(content):
    with pytest.raises(ExpansionFormatError, match="no usable JSON"):
        parse_answer(content, "q", 3, True)


# -- through the pipeline -----------------------------------------------------------------------


def test_variants_fan_out_to_dense_legs_and_are_listed(corpus, chat, capsys):
    chat.answer(expansion(VARIANTS, HYDE))
    code, out, err = call(capsys, "query", QUERY, "--root", str(corpus), "--json", "--top", "60", "--explain")
    doc = json.loads(out)
    assert code == 0 and "warning" not in err
    assert doc["variants"] == [QUERY, *VARIANTS, HYDE]
    assert doc["expand"] == {"used": True, "model": "chat-7b", "variants": 2, "hyde": True, "structured_output": True,
                             "cache": "miss", "cached_vectors": 0}
    # The variants' legs (about astronomy) seeded results the query alone (about baking) did not.
    seeds_from_variants = [
        r for r in doc["results"]
        if r["path"][0]["dense_rank"] is None and r["path"][0]["lexical_rank"] is None
        and any(v is not None and v <= 3 for v in r["path"][0]["variant_ranks"])
    ]
    assert seeds_from_variants and all(r["file"].startswith("astronomy") for r in seeds_from_variants)
    # One chat call, asking for structured JSON, naming the model and the query.
    (req,) = [r for r in chat.requests if r["path"] == "/v1/chat/completions"]
    body = req["body"]
    assert body["model"] == "chat-7b" and body["response_format"]["type"] == "json_schema"
    assert QUERY in body["messages"][-1]["content"]


def test_variant_vectors_are_the_embedders(corpus, chat):
    chat.answer(expansion(VARIANTS, HYDE))
    c = Corpus(corpus).searcher.candidates(QUERY, load_settings(corpus).search)
    assert len(c.dense_ids) == 4  # query, two variants, HyDE
    snap, emb = Corpus(corpus).searcher, HashEmbedder()
    snap.refresh()
    for text, ids in zip(c.variants, c.dense_ids):
        top = snap.snapshot.vindex.search(emb.embed_query(text), 1, len(snap.snapshot.ids))[0]
        assert ids[0] == top[0]


def test_no_expand_skips_the_call(corpus, chat, capsys):
    code, out, _ = call(capsys, "query", QUERY, "--root", str(corpus), "--json", "--no-expand")
    doc = json.loads(out)
    assert code == 0 and doc["variants"] == [QUERY]
    assert doc["expand"]["used"] is False and "--no-expand" in doc["expand"]["skipped"]
    assert chat.requests == []


def test_malformed_answer_means_no_expansion_and_one_warning(corpus, chat, capsys):
    chat.answer("Here are some ideas: bread, ovens, baking.", "Still no JSON, sorry.")
    code, out, err = call(capsys, "query", QUERY, "--root", str(corpus), "--json")
    doc = json.loads(out)
    assert code == 0 and doc["results"] and doc["variants"] == [QUERY]
    assert doc["expand"]["used"] is False and "no usable JSON" in doc["expand"]["skipped"]
    assert [line for line in err.splitlines() if "warning" in line] == [
        f"ragx: warning: query expansion skipped: {doc['expand']['skipped']}"
    ]


def test_failing_chat_server_degrades_after_bounded_retries(corpus, chat, capsys):
    chat.fail(5, 500, "CUDA out of memory")
    doc = Corpus(corpus).query(QUERY)
    assert doc["results"] and doc["variants"] == [QUERY]
    skipped = doc["expand"]["skipped"]
    assert skipped.startswith(f"chat server {chat.base_url} failed: HTTP 500: CUDA out of memory") and "2 attempts" in skipped
    assert len(chat.requests) == 2  # expand.max_retries = 1
    assert capsys.readouterr().err.count("warning") == 1


def test_dead_chat_server_degrades(tmp_path, capsys):
    make_corpus(tmp_path, n_per_topic=2)
    url = f"http://127.0.0.1:{free_port()}/v1"
    write_toml(tmp_path, f'[expand]\nenabled = true\nmodel = "m"\nbase_url = "{url}"\n')
    run_index(tmp_path, load_settings(tmp_path), HashEmbedder())
    doc = Corpus(tmp_path).query(QUERY)
    assert doc["results"] and "unreachable: connection refused" in doc["expand"]["skipped"]
    assert "expand.base_url" in doc["expand"]["skipped"]


def test_slow_answer_times_out_without_retrying(corpus, chat, capsys):
    write_toml(corpus, f'[expand]\nenabled = true\nmodel = "m"\nbase_url = "{chat.base_url}"\ntimeout = 0.3\nmax_retries = 3\n')
    chat.delay = 1.5
    t0 = time.perf_counter()
    doc = Corpus(corpus).query(QUERY)
    assert time.perf_counter() - t0 < 1.4  # one 0.3 s wait: a slow generation is not retried
    assert doc["results"] and "timed out after 0.3 s" in doc["expand"]["skipped"]


def test_server_without_structured_output_is_asked_plainly(corpus, chat):
    chat.reject_response_format = True
    chat.answer(expansion(VARIANTS, HYDE), expansion(VARIANTS[:1], ""))
    c = Corpus(corpus)
    doc = c.query(QUERY)
    assert doc["expand"]["used"] and doc["expand"]["structured_output"] is False
    assert doc["variants"] == [QUERY, *VARIANTS, HYDE]
    doc = c.query("sail mast")  # remembered: the second query goes without response_format at once
    assert doc["variants"] == ["sail mast", VARIANTS[0]] and doc["expand"]["hyde"] is False
    assert ["response_format" in r["body"] for r in chat.requests] == [True, False, False]


def test_expansion_config_errors_fail_loud(corpus, monkeypatch):
    write_toml(corpus, '[expand]\nenabled = true\nmodel = ""\n')
    with pytest.raises(ConfigError, match="expand.model is empty"):
        Corpus(corpus).query(QUERY)
    write_toml(corpus, '[expand]\nenabled = true\nmodel = "m"\napi_key_env = "RAGX_NO_SUCH_KEY"\n')
    monkeypatch.delenv("RAGX_NO_SUCH_KEY", raising=False)
    with pytest.raises(ConfigError, match="RAGX_NO_SUCH_KEY"):
        Corpus(corpus).query(QUERY)


def test_disabled_expansion_makes_no_call(tmp_path, chat):
    make_corpus(tmp_path, n_per_topic=1)
    run_index(tmp_path, load_settings(tmp_path), HashEmbedder())
    doc = Corpus(tmp_path).query(QUERY)
    assert doc["variants"] == [QUERY] and doc["expand"] == {"used": False} and chat.requests == []
    assert np.isfinite([r["score"] for r in doc["results"]]).all()
