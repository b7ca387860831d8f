"""The search page's model: a form read from the URL, `Corpus.query` run once, results grouped by file."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

from ..api import Corpus, time_filter
from ..errors import UsageError
from ..schemas import group_by_file
from .highlight import marked, query_terms

TOP_CHOICES = (5, 10, 20, 50)


@dataclass(frozen=True)
class SearchForm:
    q: str = ""
    tags: tuple[str, ...] = ()
    path: str = ""
    since: str = ""
    until: str = ""
    top: int = 10

    @classmethod
    def read(cls, params: Mapping[str, str]) -> "SearchForm":
        """The form from a query string; a bad `top` is a usage error (a 400 page), not a crash."""
        top_text = params.get("top", "") or "10"
        if not top_text.isdigit() or not 1 <= int(top_text) <= max(TOP_CHOICES):
            raise UsageError(f"top must be a whole number from 1 to {max(TOP_CHOICES)}, got {top_text!r}")
        tags = tuple(t for t in params.get("tags", "").replace(",", " ").split() if t)
        return cls(params.get("q", "").strip(), tags, params.get("path", "").strip(),
                   params.get("since", "").strip(), params.get("until", "").strip(), int(top_text))


def run_search(corpus: Corpus, form: SearchForm) -> dict[str, Any]:
    """The query document (as `ragx query --explain --json` prints it) and its results grouped for the page."""
    when = time_filter(form.since or None, form.until or None)
    doc = corpus.query(form.q, top=form.top, explain=True, time=when, tags=form.tags, path_glob=form.path or None)
    terms = query_terms(" ".join(doc.get("variants") or [form.q]))
    for r in doc["results"]:
        r["marked"] = marked(r["text"], terms)
    return {"doc": doc, "groups": group_by_file(doc["results"]), "terms": sorted(terms)}


def seed_legs(step: dict[str, Any]) -> str:
    """How a seed was found: "dense #1, lexical #2" (the retrieval legs and its rank in each)."""
    legs = [f"{k.split('_')[0]} #{v}" for k, v in step.items() if k.endswith("_rank") and v]
    return ", ".join(legs) or "expansion"
