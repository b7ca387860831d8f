"""What `ragx init` proposes for a folder, from what it holds: a code project keeps the default includes
(code and docs); a notes vault (mostly markdown) gets include globs for its documents only.
"""

from __future__ import annotations

from pathlib import Path

from .discover import discover
from .filetypes import DOCUMENT_EXTENSIONS, MARKDOWN, PDF_UNAVAILABLE, default_kind

MOSTLY = 0.6  # a folder whose default-type files are at least this share markdown is a notes vault
# ... unless one of these stands at its root: a code project's README, AGENTS.md and docs can outnumber
# its sources, and leaving the code out is the worse mistake (a vault that also builds a site gets its
# code indexed too, which `index.include` can narrow).
PROJECT_MANIFESTS = ("pyproject.toml", "setup.py", "setup.cfg", "package.json", "Cargo.toml", "go.mod", "pom.xml",
                     "build.gradle", "build.gradle.kts", "CMakeLists.txt", "Gemfile", "composer.json", "mix.exs",
                     "deno.json", "Package.swift", "stack.yaml", "dune-project")


def project_manifest(folder: Path) -> str | None:
    """The first code-project manifest at the folder's root (pyproject.toml, package.json, ...), or None."""
    return next((name for name in PROJECT_MANIFESTS if (folder / name).is_file()), None)


def markdown_includes(folder: Path) -> tuple[str, ...]:
    """Include globs for the document extensions present (markdown, other prose, PDF), when markdown
    makes up at least MOSTLY of the files ragx would index by default (a notes vault: its theme's CSS
    and scripts are noise, its PDFs and text files are not). A PDF this install cannot read yet counts."""
    found = discover(folder)
    paths = [f.path for f in found.files] + [p.path for p in found.skipped if p.reason == PDF_UNAVAILABLE]
    markdown = [p for p in paths if default_kind(p) == MARKDOWN]
    if not paths or len(markdown) < MOSTLY * len(paths):
        return ()
    extensions = {p.rsplit(".", 1)[-1].lower() for p in paths if "." in p.rsplit("/", 1)[-1]}
    return tuple(f"*.{ext}" for ext in sorted(extensions & DOCUMENT_EXTENSIONS))
