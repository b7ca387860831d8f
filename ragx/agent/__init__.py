"""The agent skill shipped with ragx (SKILL.md) and where `ragx init --agent` installs it."""
