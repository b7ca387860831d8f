"""LLM query expansion: one chat call returns reformulations of the query and a HyDE passage.

The call goes to any OpenAI-compatible ``POST {base_url}/chat/completions``. It asks for JSON
(``response_format`` with a JSON schema; a server that rejects that option is asked again without it,
and remembered), then parses the answer leniently: reasoning blocks and code fences are dropped and the
first JSON object holding the expected fields is taken. Each reformulation is embedded as a query and
the HyDE passage (a short hypothetical answer) as a document; each becomes one more dense leg of the
RRF fusion.

Expansion is optional: a failed call or a malformed answer means the query runs unexpanded, with one
warning on stderr and the reason in the query document (``expand.skipped``).

With ``expand.cache`` on (the default) answers and their vectors are kept in a persistent cache
(ragx/models/expand_cache.py), so a query asked again -- interactively, by `ragx eval` or by the lab --
makes no chat call and embeds nothing new; the query document's ``expand.cache`` says "hit" or "miss".
"""

from __future__ import annotations

import json
import re
import time
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

from ..config import check_bound
from ..errors import ProviderError
from .base import required
from .openai_engine import HTTPStatusError, JsonClient, one_line, resolve_base_url

__all__ = ["ChatExpander", "Expansion", "ExpansionFormatError", "expansion_legs", "parse_answer", "prompt_hash"]

MAX_VARIANTS = 4
TEMPERATURE = 0
MAX_TOKENS = 1024  # room for models that think aloud before the JSON


class ExpansionFormatError(ProviderError):
    """The chat model answered, but not with usable JSON."""


@dataclass
class Expansion:
    variants: list[str]
    hyde: str | None = None
    model: str = ""
    seconds: float = 0.0
    structured: bool = True  # whether the server took the JSON schema (response_format)
    raw: str = field(default="", repr=False)


_SYSTEM = (
    "You help a document search engine find passages. Rewrite the user's search query and answer "
    "with a single JSON object and nothing else."
)


def _prompt(query: str, n: int, hyde: bool) -> str:
    lines = [
        f"Search query: {query}",
        "",
        f'Give "variants": {n} different rewordings of the query that keep its meaning but use other '
        "words, synonyms or a more specific phrasing (each one line, no numbering).",
    ]
    if hyde:
        lines.append(
            'Give "hyde": a short passage of two to four sentences, written like a paragraph of the '
            "documents being searched, that would answer the query. Plausible detail is fine."
        )
    else:
        lines.append('Give "hyde": an empty string.')
    lines.append('Answer only with JSON: {"variants": ["..."], "hyde": "..."}')
    return "\n".join(lines)


def _schema(n: int) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {
            "variants": {"type": "array", "items": {"type": "string"}, "minItems": 1, "maxItems": n},
            "hyde": {"type": "string"},
        },
        "required": ["variants", "hyde"],
        "additionalProperties": False,
    }


def prompt_hash(n: int, hyde: bool) -> str:
    """A hash of the prompt template as sent: the system prompt, the user prompt built around a placeholder
    query, and the JSON schema asked for. Editing any of them changes it, so cached answers to the old
    prompt are no longer found."""
    from .expand_cache import digest

    return digest([_SYSTEM, _prompt("\x00{query}\x00", n, hyde), _schema(n)])[:16]


_THINK = re.compile(r"<(think|thinking|reasoning)>.*?</\1>", re.S | re.I)
_FENCE = re.compile(r"```[a-zA-Z0-9_-]*\s*\n?(.*?)```", re.S)


def _objects(text: str):
    """Every JSON object that parses, starting at each '{' in the text, in order."""
    decoder = json.JSONDecoder()
    for match in re.finditer(r"\{", text):
        try:
            obj, _ = decoder.raw_decode(text, match.start())
        except json.JSONDecodeError:
            continue
        if isinstance(obj, dict):
            yield obj


def parse_answer(content: str, query: str, n: int, hyde: bool) -> tuple[list[str], str | None]:
    """Reformulations (deduplicated, not the query itself, at most n) and the HyDE passage.

    Raises ExpansionFormatError when no JSON object with usable fields is found.
    """
    text = _THINK.sub(" ", content or "")
    candidates = [m.group(1) for m in _FENCE.finditer(text)] + [text]
    for chunk in candidates:
        for obj in _objects(chunk):
            variants_raw = obj.get("variants", obj.get("queries", obj.get("reformulations")))
            hyde_raw = obj.get("hyde", obj.get("passage"))
            if not isinstance(variants_raw, list) and not isinstance(hyde_raw, str):
                continue
            seen = {" ".join(query.lower().split())}
            variants: list[str] = []
            for v in variants_raw if isinstance(variants_raw, list) else []:
                if not isinstance(v, str):
                    continue
                v = " ".join(v.split())
                key = v.lower()
                if v and key not in seen and len(variants) < n:
                    seen.add(key)
                    variants.append(v)
            passage = " ".join(hyde_raw.split()) if hyde and isinstance(hyde_raw, str) else ""
            if variants or passage:
                return variants, passage or None
    raise ExpansionFormatError(f"the chat model's answer held no usable JSON: {one_line(content, 120)!r}")


class ChatExpander:
    """``expand(query)`` -> :class:`Expansion`, by one chat completion."""

    def __init__(
        self,
        model: str,
        *,
        base_url: str = "",
        api_key_env: str = "",
        timeout: float = 60.0,
        max_retries: int = 1,
        variants: int = 3,
        hyde: bool = True,
        backoff: float = 0.5,
        cache: Any = None,
    ) -> None:
        model = required(model, "expand.enabled is true but expand.model is empty: name the chat model the server serves")
        check_bound("expand.variants", variants)
        self.model = model
        self.name = f"openai-chat:{model}"
        self.n = min(int(variants), MAX_VARIANTS)
        self.hyde = bool(hyde)
        self.base_url = resolve_base_url(base_url)
        # retry_timeouts off: a generation too slow once is as slow the next time
        self.client = JsonClient(self.base_url, api_key_env=api_key_env, timeout=timeout, max_retries=max_retries,
                                 role="chat server", section="expand", backoff=backoff, retry_timeouts=False)
        self._structured = True  # cleared when the server rejects response_format
        self.cache = cache  # an ExpansionCache (ragx/models/expand_cache.py), None = expand.cache off

    def __repr__(self) -> str:
        return f"ChatExpander({self.model!r}, base_url={self.base_url!r})"

    def _payload(self, query: str, structured: bool) -> dict[str, Any]:
        payload: dict[str, Any] = {
            "model": self.model,
            "messages": [
                {"role": "system", "content": _SYSTEM},
                {"role": "user", "content": _prompt(query, self.n, self.hyde)},
            ],
            "temperature": TEMPERATURE,
            "max_tokens": MAX_TOKENS,
        }
        if structured:
            payload["response_format"] = {
                "type": "json_schema",
                "json_schema": {"name": "query_expansion", "strict": True, "schema": _schema(self.n)},
            }
        return payload

    def cache_identity(self) -> dict[str, Any]:
        """What an answer depends on besides the query: the cache key's other parts."""
        return {
            "generator": self.name,
            "base_url": self.base_url,
            "prompt": prompt_hash(self.n, self.hyde),
            "settings": {"variants": self.n, "hyde": self.hyde, "temperature": TEMPERATURE, "max_tokens": MAX_TOKENS},
        }

    def expand(self, query: str) -> Expansion:
        started = time.perf_counter()
        structured = self._structured
        try:
            doc = self.client.post("/chat/completions", self._payload(query, structured))
        except HTTPStatusError as exc:
            if not structured or exc.status not in (400, 415, 422, 501):
                raise
            self._structured = structured = False  # no structured output here: ask in the prompt only
            doc = self.client.post("/chat/completions", self._payload(query, structured))
        content = _content(doc)
        variants, passage = parse_answer(content, query, self.n, self.hyde)
        return Expansion(variants, passage, self.model, time.perf_counter() - started, structured, content)


def _content(doc: dict[str, Any]) -> str:
    try:
        message = doc["choices"][0]["message"]
    except (KeyError, IndexError, TypeError):
        raise ExpansionFormatError(f"the chat server's answer has no choices[0].message: {one_line(json.dumps(doc), 120)}") from None
    content = message.get("content") if isinstance(message, dict) else None
    if isinstance(content, list):  # content parts
        content = "".join(p.get("text", "") for p in content if isinstance(p, dict))
    if not isinstance(content, str) or not content.strip():
        raise ExpansionFormatError("the chat model returned an empty answer")
    return content


def _expansion(expander: Any, query: str) -> tuple[Expansion, bool]:
    """(the expansion, whether it came from the cache)."""
    cache = getattr(expander, "cache", None)
    if cache is None:
        return expander.expand(query), False
    identity = expander.cache_identity()
    stored = cache.answers(identity, [query]).get(query)
    if stored is not None:
        content, structured = stored
        try:
            variants, passage = parse_answer(content, query, expander.n, expander.hyde)
            return Expansion(variants, passage, expander.model, 0.0, structured, content), True
        except ExpansionFormatError:
            pass  # stored before a parser change that now rejects it: ask again (the answer replaces it)
    # A failed call or a malformed answer raises here, before anything is stored: failures are never
    # cached, so a later run asks the server again.
    exp = expander.expand(query)
    cache.put_answer(identity, query, exp.raw, exp.structured)
    return exp, False


def expansion_legs(
    expander_factory: Callable[[], Any], embedder: Any, query: str, warn: Callable[[str, str], object]
) -> tuple[list[str], np.ndarray | None, dict[str, Any]]:
    """Texts and vectors of the extra dense legs for `query`, and the note for the query document.

    Any failure of the expander (building it, the call, the answer) degrades to no extra legs; it is
    reported through `warn(key, message)` and in the note. Embedding failures are not caught: the
    query itself needs the same embedder. Answers and vectors go through the expander's cache, if any.
    """
    from .expand_cache import DOCUMENT, QUERY, embed_texts

    try:
        expander = expander_factory()
        exp, hit = _expansion(expander, query)
    except ProviderError as exc:
        reason = str(exc)
        warn(f"expand:{type(exc).__name__}:{reason}", f"query expansion skipped: {reason}")
        return [], None, {"used": False, "skipped": reason}
    texts = [*exp.variants, *([exp.hyde] if exp.hyde else [])]
    modes = [QUERY] * len(exp.variants) + [DOCUMENT] * (len(texts) - len(exp.variants))
    cache = getattr(expander, "cache", None)
    vecs, reused = embed_texts(embedder, texts, modes, cache)
    note = {
        "used": bool(texts),
        "model": exp.model,
        "variants": len(exp.variants),
        "hyde": exp.hyde is not None,
        "structured_output": exp.structured,
        "cache": "off" if cache is None else "unavailable" if cache.broken else "hit" if hit else "miss",
    }
    if cache is not None and not cache.broken:
        note["cached_vectors"] = reused
    return texts, vecs, note
