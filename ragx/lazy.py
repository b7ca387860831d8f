"""Modules that load on first use, for code on the paths of commands that never need them.

`ragx status` reads SQLite and stats the corpus: importing numpy (50-60 ms of CPU, a quarter of the
command) for modules it shares with the query path would be paid on every call. The store and the
helpers it imports bind numpy through `lazy_module`, so numpy loads when a function first touches it.

Not thread-safe before Python 3.12 while the module is still unloaded (two threads touching it first at
once may see it half-initialised), so a process that serves calls from several threads loads it in one
thread first: mcp/stdio.py's loader does.
"""

from __future__ import annotations

import importlib.util
import sys
import threading
from types import ModuleType
from typing import Callable, TypeVar

T = TypeVar("T")


def lazy_module(name: str) -> ModuleType:
    """`name` as `import name` would give it, executed only when one of its attributes is first read.

    Registered in sys.modules, so every later `import name` in the process gets the same object (and
    loads it on use): one numpy, whichever module asked first."""
    loaded = sys.modules.get(name)
    if loaded is not None:
        return loaded
    spec = importlib.util.find_spec(name)
    if spec is None or spec.loader is None:
        raise ModuleNotFoundError(f"No module named {name!r}", name=name)
    spec.loader = importlib.util.LazyLoader(spec.loader)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def load_now(module: ModuleType) -> ModuleType:
    """Finish loading a module `lazy_module` returned (a no-op for one already loaded)."""
    getattr(module, "__name__")  # noqa: B009 - any attribute read runs the deferred import
    return module


def once(owner: object, attr: str, lock: threading.Lock, make: Callable[[], T]) -> T:
    """`owner.<attr>`, built by `make()` the first time any thread asks for it (checked again under
    `lock`, so two threads never build it twice; once built, no call takes the lock)."""
    value = getattr(owner, attr)
    if value is None:
        with lock:
            value = getattr(owner, attr)
            if value is None:
                value = make()
                setattr(owner, attr, value)
    return value
