"""What `inspect` takes, in one place for the CLI, the API and the MCP tool: its targets, the British
spelling of one of them, and the argument each needs, checked before any index is opened.

Light on purpose (no numpy, no index modules): the CLI checks its arguments before it opens anything.
"""

from __future__ import annotations

import re

from .errors import UsageError, require_utf8

TARGETS = ("chunk", "file", "neighbors", "communities", "community")
ALIASES = {"neighbours": "neighbors"}  # accepted as input; documents always name the target as in TARGETS
NEEDS = {"chunk": "a chunk id", "neighbors": "a chunk id", "community": "a community number",
         "file": "a path relative to the corpus root"}
NUMBERED = frozenset({"chunk", "neighbors", "community"})
MAX_ID = 2**63 - 1  # SQLite integers are 64-bit: a larger id cannot name anything in the index
_WHOLE_NUMBER = re.compile(r"-?[0-9]+")  # ASCII digits only: str.isdigit() also takes "²" and "١٢"


def target(what: str) -> str:
    """The target's name as documents carry it; an unknown target is bad input."""
    name = ALIASES.get(what, what)
    if name not in TARGETS:
        raise UsageError(f"unknown inspect target {what!r} ({', '.join(TARGETS)})")
    return name


def checked(what: str, arg: str | None, command: str = "inspect") -> tuple[str, str | int | None]:
    """(target, argument): a whole number for a numbered target, else the text as given. `command`
    names the caller in messages (`ragx inspect` on the command line)."""
    name = target(what)
    if arg is not None:
        require_utf8(arg, f"the argument of `{command} {what}`")  # a shell byte that is not UTF-8, half an emoji
    if name in NEEDS and (arg is None or not arg.strip()):
        example = "notes/a.md" if name == "file" else "12"
        raise UsageError(f"`{command} {what}` needs {NEEDS[name]}, e.g. `{command} {what} {example}`")
    if name not in NEEDS and arg is not None and arg.strip():
        raise UsageError(f"`{command} {what}` takes no argument, got {arg!r}")
    if name not in NUMBERED or arg is None:
        return name, arg
    digits = arg.strip()
    if not _WHOLE_NUMBER.fullmatch(digits):
        raise UsageError(f"`{command} {what}` needs {NEEDS[name]} (a whole number), got {arg!r}")
    value = int(digits)
    if abs(value) > MAX_ID:
        noun = "community" if name == "community" else "chunk"
        raise UsageError(f"no {noun} {digits} in the index (ids are at most {MAX_ID})")
    return name, value
