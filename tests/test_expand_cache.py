"""The expansion cache against the real loopback chat server (tests/servers.py): a repeated query or
evaluation makes no chat call and embeds no variant again, with identical results; anything that
changes the answer (prompt, model, server, settings) is a miss; failures are never cached."""

from __future__ import annotations

import json

import numpy as np
import pytest
from cli_runner import call
from fakes import HashEmbedder, make_corpus
from servers import FakeOpenAI, provider_env, write_toml  # noqa: F401 (fixture)

import ragx.models.expand as expand_module
from ragx.api import Corpus
from ragx.config import load_settings
from ragx.errors import ConfigError
from ragx.eval.presets import parse_config
from ragx.eval.queries import LabelledQuery
from ragx.eval.runner import run_eval
from ragx.index.build import run_index
from ragx.models.expand_cache import DOCUMENT, QUERY, ExpansionCache, embed_texts

pytestmark = pytest.mark.usefixtures("provider_env")

QUERIES = ["bread oven", "comet telescope", "sail harbour"]


def answer_for(body) -> str:
    """A deterministic answer built from the query in the prompt (as a real model's would differ per query)."""
    query = body["messages"][-1]["content"].splitlines()[0].removeprefix("Search query: ")
    return json.dumps({"variants": [f"{query} nebula", f"{query} dough mast"], "hyde": f"A passage on {query} and tides."})


@pytest.fixture
def chat():
    with FakeOpenAI() as server:
        server.default_chat = answer_for
        yield server


def chat_calls(server: FakeOpenAI) -> int:
    return sum(p.endswith("/chat/completions") for p in server.paths())


@pytest.fixture
def embedded(fake_model, monkeypatch):
    """Every text the shared fake embedder embeds, by mode (the embedder ragx builds is fake_model)."""
    seen: dict[str, list[str]] = {QUERY: [], DOCUMENT: []}
    query, documents = fake_model.embed_query, fake_model.embed_documents
    monkeypatch.setattr(fake_model, "embed_query", lambda text: (seen[QUERY].append(text), query(text))[1])
    monkeypatch.setattr(fake_model, "embed_documents",
                        lambda texts, **kw: (seen[DOCUMENT].extend(texts), documents(texts, **kw))[1])
    return seen


def expand_toml(url: str, extra: str = "", model: str = "chat-7b") -> str:
    return (f'[expand]\nenabled = true\nmodel = "{model}"\nbase_url = "{url}"\ntimeout = 5.0\nmax_retries = 0\n{extra}'
            '[search]\ndense_n = 20\nlexical_n = 20\n')


@pytest.fixture
def corpus(tmp_path, chat, fake_model):
    make_corpus(tmp_path)
    write_toml(tmp_path, expand_toml(chat.base_url))
    run_index(tmp_path, load_settings(tmp_path), HashEmbedder())
    return tmp_path


def without_note(doc: dict) -> dict:
    return {k: v for k, v in doc.items() if k != "expand"}


def variant_embeddings(seen: dict[str, list[str]]) -> int:
    return sum(t not in QUERIES for t in seen[QUERY]) + len(seen[DOCUMENT])


# -- queries ------------------------------------------------------------------------------------


def test_second_query_asks_nothing_and_embeds_no_variant_with_identical_results(corpus, chat, embedded, capsys):
    code, out, _ = call(capsys, "query", QUERIES[0], "--root", str(corpus), "--json", "--explain")
    first = json.loads(out)
    assert code == 0 and first["expand"]["cache"] == "miss" and first["expand"]["cached_vectors"] == 0
    assert chat_calls(chat) == 1 and variant_embeddings(embedded) == 3  # two variants and the HyDE passage
    code, out, _ = call(capsys, "query", QUERIES[0], "--root", str(corpus), "--json", "--explain")
    second = json.loads(out)
    assert code == 0 and second["expand"]["cache"] == "hit" and second["expand"]["cached_vectors"] == 3
    assert chat_calls(chat) == 1 and variant_embeddings(embedded) == 3  # no new call, no new embedding
    assert second["variants"] == first["variants"] and len(first["variants"]) == 4
    assert without_note(second) == without_note(first)  # every score, rank and path: the same floats

    write_toml(corpus, expand_toml(chat.base_url, "cache = false\n"))
    code, out, _ = call(capsys, "query", QUERIES[0], "--root", str(corpus), "--json", "--explain")
    uncached = json.loads(out)
    assert uncached["expand"]["cache"] == "off" and "cached_vectors" not in uncached["expand"]
    assert chat_calls(chat) == 2 and variant_embeddings(embedded) == 6
    assert without_note(uncached) == without_note(first)


def test_cache_off_asks_every_time_and_writes_nothing(corpus, chat, isolated_expand_cache):
    write_toml(corpus, expand_toml(chat.base_url, "cache = false\n"))
    for _ in range(2):
        assert Corpus(corpus).query(QUERIES[1])["expand"]["cache"] == "off"
    assert chat_calls(chat) == 2 and not isolated_expand_cache.exists()


def test_a_repeated_evaluation_makes_no_chat_call_and_no_variant_embedding(corpus, chat, embedded):
    labelled = [LabelledQuery(str(i), q, {"notes.txt": 1}) for i, q in enumerate(QUERIES)]
    runs, counts = [], []
    for _ in range(2):  # two evaluations, each from a fresh Corpus (as two `ragx eval` runs)
        c = Corpus(corpus)
        configs = [parse_config("full", c.settings.search), parse_config("graph", c.settings.search)]
        runs.append(run_eval(c.searcher, labelled, configs).runs)
        counts.append((chat_calls(chat), variant_embeddings(embedded)))
        c.close()
    assert counts == [(3, 9), (3, 9)]  # 3 calls and 9 variant/HyDE embeddings, all in the first run
    assert runs[1] == runs[0] and runs[0]["full"]  # the same files with the same float scores


# -- what makes a miss ----------------------------------------------------------------------------


def _edit_system_prompt(corpus, chat, monkeypatch):
    monkeypatch.setattr(expand_module, "_SYSTEM", expand_module._SYSTEM + " Prefer technical terms.")


def _edit_prompt_builder(corpus, chat, monkeypatch):
    built = expand_module._prompt
    monkeypatch.setattr(expand_module, "_prompt", lambda q, n, hyde: built(q, n, hyde) + "\nKeep each rewording short.")


def _other_model(corpus, chat, monkeypatch):
    write_toml(corpus, expand_toml(chat.base_url, model="chat-13b"))


def _fewer_variants(corpus, chat, monkeypatch):
    write_toml(corpus, expand_toml(chat.base_url, "variants = 2\n"))


def _no_hyde(corpus, chat, monkeypatch):
    write_toml(corpus, expand_toml(chat.base_url, "hyde = false\n"))


def _other_temperature(corpus, chat, monkeypatch):
    monkeypatch.setattr(expand_module, "TEMPERATURE", 0.7)


def _other_server(corpus, chat, monkeypatch):
    other = FakeOpenAI().start()
    other.default_chat = answer_for
    monkeypatch.setattr(chat, "other", other, raising=False)
    write_toml(corpus, expand_toml(other.base_url))


@pytest.mark.parametrize("change", [None, _edit_system_prompt, _edit_prompt_builder, _other_model, _fewer_variants,
                                    _no_hyde, _other_temperature, _other_server])
def test_what_changes_the_answer_is_a_miss(corpus, chat, change, monkeypatch):
    assert Corpus(corpus).query(QUERIES[2])["expand"]["cache"] == "miss"
    if change is not None:
        change(corpus, chat, monkeypatch)
    try:
        doc = Corpus(corpus).query(QUERIES[2])
        server = getattr(chat, "other", chat)
        asked = chat_calls(server) - (1 if server is chat else 0)
    finally:
        if getattr(chat, "other", None) is not None:
            chat.other.stop()
    assert doc["expand"]["used"]
    if change is None:  # the control: nothing changed, nothing asked
        assert (doc["expand"]["cache"], asked) == ("hit", 0)
    else:
        assert (doc["expand"]["cache"], asked) == ("miss", 1)
    if change is _edit_prompt_builder:
        assert "Keep each rewording short." in server.requests[-1]["body"]["messages"][-1]["content"]


# -- failures ----------------------------------------------------------------------------------


@pytest.mark.parametrize("failure", ["http", "malformed"])
def test_a_failed_answer_is_not_cached(corpus, chat, failure, isolated_expand_cache):
    if failure == "http":
        chat.fail(1, 500, "CUDA out of memory")
    else:
        chat.answer("Sorry, I can only answer in prose.")
    doc = Corpus(corpus).query(QUERIES[0])
    assert doc["expand"]["used"] is False and doc["expand"]["skipped"]
    assert ExpansionCache(isolated_expand_cache).counts()["answers"] == 0
    doc = Corpus(corpus).query(QUERIES[0])  # asked again, and this answer is kept
    assert doc["expand"]["used"] and doc["expand"]["cache"] == "miss" and chat_calls(chat) == 2
    assert Corpus(corpus).query(QUERIES[0])["expand"]["cache"] == "hit" and chat_calls(chat) == 2


def test_an_unusable_cache_file_means_running_without_it(corpus, chat, monkeypatch, tmp_path, capsys):
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("x")
    monkeypatch.setattr("ragx.models.expand_cache.default_path", lambda: blocker / "expand.sqlite3")
    doc = Corpus(corpus).query(QUERIES[0])
    assert doc["expand"]["used"] and doc["expand"]["cache"] == "unavailable" and len(doc["variants"]) == 4
    assert capsys.readouterr().err.count("expansion cache") == 1


def test_the_cache_setting_is_validated(corpus, chat):
    write_toml(corpus, expand_toml(chat.base_url, 'cache = "yes"\n'))
    with pytest.raises(ConfigError, match="expand.cache"):
        load_settings(corpus)


# -- vectors --------------------------------------------------------------------------------------


def test_vectors_are_kept_per_embedder_mode_and_query_prefix(tmp_path):
    cache = ExpansionCache(tmp_path / "e.sqlite3")
    emb = HashEmbedder()
    texts, modes = ["oven heat", "oven heat"], [QUERY, DOCUMENT]
    first, reused = embed_texts(emb, texts, modes, cache)
    assert reused == 0 and first.dtype == np.float32
    again, reused = embed_texts(emb, texts, modes, cache)
    assert reused == 2 and again.tobytes() == first.tobytes()
    assert embed_texts(HashEmbedder(name="test:other-model"), texts, modes, cache)[1] == 0
    emb.query_prefix = "query: "  # the manifest's name leaves the query prefix out; the key does not
    assert embed_texts(emb, texts, modes, cache)[1] == 1  # the document vector is still good
    assert cache.counts() == {"answers": 0, "vectors": 5}


def test_a_stored_answer_the_parser_now_rejects_is_asked_again(corpus, chat, isolated_expand_cache):
    """Answers are stored raw and parsed on every read: one a stricter parser rejects is a miss, replaced."""
    expander = Corpus(corpus).expander
    ExpansionCache(isolated_expand_cache).put_answer(expander.cache_identity(), QUERIES[1], "no JSON here", True)
    doc = Corpus(corpus).query(QUERIES[1])
    assert doc["expand"]["used"] and doc["expand"]["cache"] == "miss" and chat_calls(chat) == 1
    assert Corpus(corpus).query(QUERIES[1])["expand"]["cache"] == "hit" and chat_calls(chat) == 1
