"""YAML frontmatter of markdown notes: where the block ends, and the fields that describe the note.

A note's frontmatter (a `---` line, YAML, a closing `---` or `...` line, at the very start of the
file) is metadata, not prose: it is never embedded or shown as a chunk. Its descriptive fields
(`title`, `desc`/`description`, `aliases`, `tags`) become a short natural-language header that is
embedded and indexed in front of each of the note's chunks (see `header`), and `tags`/`aliases` also
go to the link table (ragx/ingest/links.py) for `--tag` filters and link edges.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

from . import payloads

# The opening line, then the YAML (possibly empty), then a closing line of its own.
_BLOCK = re.compile(r"\A\ufeff?---[ \t]*\r?\n(?P<yaml>(?:.*?\r?\n)??)(?:---|\.\.\.)[ \t]*(?:\r?\n|\Z)", re.DOTALL)
_TAG_SPLIT = re.compile(r"[,\s]+")


@dataclass(frozen=True)
class Frontmatter:
    end: int                         # character offset just past the closing line
    title: str = ""
    desc: str = ""
    aliases: tuple[str, ...] = ()
    tags: tuple[str, ...] = ()
    value_spans: tuple[tuple[str, int, int], ...] = ()  # (key, start, end) of one-line scalar values

    def header(self) -> str:
        """What the note says about itself, as a sentence or two: "Title. Description. Also: ...".

        Embedded and indexed in front of each chunk; empty when the frontmatter says nothing. A base64
        data-URI payload in a value is left out (ragx/ingest/payloads.py): in every chunk's header, it
        would drown the note's every chunk in junk."""
        title, desc = payloads.removed(self.title), payloads.removed(self.desc)
        parts = [s.rstrip(".") for s in (title, desc) if s]
        aliases = [a for a in map(payloads.removed, self.aliases) if a]
        if aliases:
            parts.append("Also called " + ", ".join(aliases))
        if self.tags:
            parts.append("Tags: " + ", ".join(self.tags))
        return ". ".join(parts) + "." if parts else ""


def _strings(value) -> tuple[str, ...]:
    """A YAML list or a comma/space-separated string, as clean strings (tags lose a leading '#')."""
    if value is None:
        return ()
    items = value if isinstance(value, (list, tuple)) else [value]
    out: list[str] = []
    for item in items:
        if isinstance(item, (str, int, float)) and str(item).strip():
            out.append(str(item).strip())
    return tuple(dict.fromkeys(out))


def _tags(value) -> tuple[str, ...]:
    raw = [t for s in _strings(value) for t in _TAG_SPLIT.split(s)] if isinstance(value, str) else list(_strings(value))
    return tuple(dict.fromkeys(t.lstrip("#").strip().lower() for t in raw if t.lstrip("#").strip()))


_SCALAR_LINE = re.compile(r"^(?P<key>[A-Za-z_][\w-]*):[ \t]*(?P<value>['\"]?(?P<inner>[^\n'\"]*?)['\"]?)[ \t]*\r?$", re.MULTILINE)


def _value_spans(text: str, start: int, end: int) -> tuple[tuple[str, int, int], ...]:
    """Where each one-line `key: value` scalar sits (the value without its quotes), for a note that
    is all frontmatter: its only chunk is then the description itself, never raw YAML."""
    spans = []
    for m in _SCALAR_LINE.finditer(text, start, end):
        if m.group("inner").strip():
            spans.append((m.group("key").lower(), m.start("inner"), m.end("inner")))
    return tuple(spans)


@lru_cache(maxsize=1)
def _loader():
    """PyYAML's SafeLoader, but a timestamp stays the text it was written as.

    The fields read here are words, never dates (ragx/index/dates.py reads `date:`/`updated:` from the
    raw text itself), and constructing a timestamp raises ValueError or OverflowError for one that
    cannot exist (`date: 0000-00-00`, `updated: 2024-02-30`): one bad date would cost the note its
    title and tags. Built on first use, so only notes with frontmatter pay for importing yaml."""
    import yaml

    class NoTimestampLoader(yaml.SafeLoader):
        pass

    NoTimestampLoader.add_constructor("tag:yaml.org,2002:timestamp", NoTimestampLoader.construct_yaml_str)
    return NoTimestampLoader


def _load(block: str):
    """The YAML of a frontmatter block, or None when it cannot be read.

    Besides YAMLError, PyYAML raises RecursionError for deeply nested flow collections (5,000 `[`) and
    may raise ValueError/OverflowError while constructing values: all mean "no usable fields", never
    a failed index run."""
    import yaml

    try:
        return yaml.load(block, Loader=_loader())  # safe: a SafeLoader subclass
    except (yaml.YAMLError, ValueError, OverflowError, RecursionError):
        return None


def parse(text: str) -> Frontmatter | None:
    """The frontmatter at the start of `text`, or None when there is none.

    Malformed YAML still ends the block (it is metadata all the same) but yields no fields."""
    m = _BLOCK.match(text)
    if m is None:
        return None
    data = _load(m.group("yaml")) if m.group("yaml").strip() else {}
    spans = _value_spans(text, m.start("yaml"), m.end("yaml"))
    if not isinstance(data, dict):
        return Frontmatter(end=m.end(), value_spans=spans)
    fields = {str(k).lower(): v for k, v in data.items()}
    title = fields.get("title")
    desc = fields.get("desc", fields.get("description"))
    return Frontmatter(
        end=m.end(),
        title=str(title).strip() if isinstance(title, (str, int, float)) else "",
        desc=str(desc).strip() if isinstance(desc, (str, int, float)) else "",
        aliases=_strings(fields.get("aliases", fields.get("alias"))),
        tags=_tags(fields.get("tags", fields.get("tag"))),
        value_spans=spans,
    )
