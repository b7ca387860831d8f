"""`ragx export` / `ragx import`: an index moved to another copy of the corpus, and what differs."""

from __future__ import annotations

import json
import shutil
import tarfile

import pytest
from cli_runner import call
from fakes import add_fts5_table, make_corpus

pytestmark = pytest.mark.usefixtures("fake_model")  # conftest's: every embedder is the hash fake


@pytest.fixture
def exported(tmp_path, capsys):
    """An indexed corpus, its export, and a copy of its files elsewhere (other mtimes, no index)."""
    origin = tmp_path / "origin"
    origin.mkdir()
    make_corpus(origin)
    assert call(capsys, "index", "--root", str(origin))[0] == 0
    archive = tmp_path / "index.tar.gz"
    code, out, err = call(capsys, "export", str(archive), "--root", str(origin), "--json")
    assert code == 0, err
    doc = json.loads(out)
    assert doc["schema"] == "ragx.export.v1" and doc["counts"]["files"] == 19 and archive.stat().st_size == doc["bytes"]
    copy = tmp_path / "copy"
    shutil.copytree(origin, copy, ignore=shutil.ignore_patterns(".ragx"))  # new mtimes, same bytes
    return origin, archive, copy


def query(capsys, root, text="telescope orbit planet"):
    code, out, err = call(capsys, "query", text, "--root", str(root), "--json", "--no-rerank")
    assert code == 0, err
    return [(r["file"], r["line_start"], r["line_end"], round(r["score"], 6)) for r in json.loads(out)["results"]]


def test_an_imported_index_answers_like_the_original(exported, capsys):
    origin, archive, copy = exported
    code, out, err = call(capsys, "import", str(archive), "--root", str(copy), "--json")
    assert code == 0, err
    doc = json.loads(out)
    assert doc["schema"] == "ragx.import.v1"
    assert doc["same"] == 19 and doc["differs"] == {"new": [], "changed": [], "deleted": []}
    assert query(capsys, copy) == query(capsys, origin)
    status = json.loads(call(capsys, "status", "--root", str(copy), "--json", "--deep")[1])
    assert status["consistent"] and status["drift"] == {"new": 0, "changed": 0, "deleted": 0, "unreadable": 0}
    code, out, _ = call(capsys, "index", "--root", str(copy), "--json")
    report = json.loads(out)
    assert code == 0 and report["embedded_chunks"] == 0 and report["unchanged"] == 19


def test_import_names_the_files_that_differ_and_the_next_index_redoes_only_those(exported, capsys):
    _, archive, copy = exported
    (copy / "sailing-0.md").write_text("# sailing 0\n\nA new text about the keel and the mast.\n", encoding="utf-8")
    (copy / "cooking-1.md").unlink()
    (copy / "extra.md").write_text("# extra\n\nA note about comets and nebula light.\n", encoding="utf-8")
    code, out, err = call(capsys, "import", str(archive), "--root", str(copy), "--json")
    assert code == 0, err
    doc = json.loads(out)
    assert doc["differs"] == {"new": ["extra.md"], "changed": ["sailing-0.md"], "deleted": ["cooking-1.md"]}
    assert doc["same"] == 17
    code, text, err = call(capsys, "import", str(archive), "--root", str(copy), "--force")
    assert code == 0 and "changed  sailing-0.md" in text and "run `ragx index`" in err

    code, out, _ = call(capsys, "index", "--root", str(copy), "--json")
    report = json.loads(out)
    assert (report["new"], report["changed"], report["deleted"]) == (1, 1, 1)
    assert report["embedded_files"] == ["extra.md", "sailing-0.md"]
    status = json.loads(call(capsys, "status", "--root", str(copy), "--json", "--deep")[1])
    assert status["consistent"] and status["drift"]["changed"] == 0


def test_import_refuses_other_settings_an_existing_index_and_a_damaged_archive(exported, capsys, tmp_path):
    origin, archive, copy = exported
    (copy / "ragx.toml").write_text("[graph]\nk = 4\n", encoding="utf-8")
    code, out, err = call(capsys, "import", str(archive), "--root", str(copy))
    assert code == 2 and out == "" and "graph" in err and len(err.strip().splitlines()) == 1
    assert not (copy / ".ragx").exists()  # refused before anything was written
    (copy / "ragx.toml").unlink()

    before = query(capsys, origin)
    code, _, err = call(capsys, "import", str(archive), "--root", str(origin))
    assert code == 2 and "--force" in err
    assert query(capsys, origin) == before

    damaged = tmp_path / "damaged.tar.gz"
    with tarfile.open(archive) as src, tarfile.open(damaged, "w:gz") as dst:
        for member in src.getmembers():
            data = src.extractfile(member).read()
            if member.name == "gen/vectors.npy":
                data = data[:-8] + b"\x00" * 8
            member.size = len(data)
            import io

            dst.addfile(member, io.BytesIO(data))
    code, _, err = call(capsys, "import", str(damaged), "--root", str(origin), "--force")
    assert code == 2 and "checksum" in err
    assert query(capsys, origin) == before
    code, _, err = call(capsys, "import", str(tmp_path / "missing.tar.gz"), "--root", str(copy))
    assert code == 2 and "not a file" in err


def test_an_export_from_before_the_bm25_postings_imports_and_gains_them_on_the_next_run(exported, capsys, tmp_path):
    """An archive as an older ragx wrote it: no lexicon files, none in its manifest's checksums."""
    import sqlite3

    from ragx.index.transfer import DB, FINGERPRINT, _sha256, _write_tar
    from ragx.index.verified import LEXICON, LEXICON_DELTA

    origin, archive, copy = exported
    unpacked = tmp_path / "unpacked"
    with tarfile.open(archive) as tar:
        tar.extractall(unpacked, filter="data")
    db = sqlite3.connect(unpacked / DB)
    checksums = json.loads(db.execute("SELECT value FROM manifest WHERE key = 'checksums'").fetchone()[0])
    with db:
        db.execute("UPDATE manifest SET value = ? WHERE key = 'checksums'",
                   (json.dumps({k: v for k, v in checksums.items() if k not in (LEXICON, LEXICON_DELTA)}, sort_keys=True),))
        add_fts5_table(db)
    db.close()
    fingerprint = json.loads((unpacked / FINGERPRINT).read_text())
    members = {name: unpacked / name for name in fingerprint["members"] if not name.startswith(("gen/lexicon",))}
    fingerprint["members"] = {name: _sha256(path) for name, path in members.items()}
    old = tmp_path / "old.tar.gz"
    _write_tar(old, fingerprint, members)

    code, _, err = call(capsys, "import", str(old), "--root", str(copy), "--json")
    assert code == 0, err
    assert query(capsys, copy) == query(capsys, origin)  # BM25 from the FTS5 table until then
    assert call(capsys, "index", "--root", str(copy), "--json")[0] == 0  # nothing changed: the postings are written
    gens = sorted((copy / ".ragx").glob("gen-*"))
    assert (gens[-1] / LEXICON).exists()
    assert query(capsys, copy) == query(capsys, origin)


def test_export_refuses_an_existing_file_unless_forced(exported, capsys, tmp_path):
    origin, archive, _ = exported
    target = tmp_path / "notes.txt"
    target.write_text("my own notes\n", encoding="utf-8")
    code, out, err = call(capsys, "export", str(target), "--root", str(origin))
    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1
    assert "already exists" in err and "--force" in err
    assert target.read_text(encoding="utf-8") == "my own notes\n"
    assert not list(tmp_path.glob(".notes.txt.tmp-*"))

    code, _, err = call(capsys, "export", str(archive), "--root", str(origin), "--force", "--json")
    assert code == 0, err
    assert tarfile.is_tarfile(archive) and not list(tmp_path.glob(".index.tar.gz.tmp-*"))


@pytest.mark.parametrize("inside", [".ragx/index.sqlite", ".ragx/archive.tar.gz", "sailing-0.md", "notes.txt"])
def test_export_never_writes_into_the_index_or_over_an_indexed_file(exported, capsys, inside):
    origin, _, _ = exported
    before = query(capsys, origin)
    target = origin / inside
    was = target.read_bytes() if target.exists() else None
    for extra in ((), ("--force",)):
        code, out, err = call(capsys, "export", str(target), "--root", str(origin), *extra)
        assert code == 2 and out == "" and len(err.strip().splitlines()) == 1, err
        assert "export" in err and "--force" not in err  # forcing would not help: say so, not how to force
    assert (target.read_bytes() if target.exists() else None) == was
    assert not [p for p in (origin / ".ragx").iterdir() if ".tmp-" in p.name]
    assert query(capsys, origin) == before


def test_export_refuses_a_note_the_next_run_would_index_and_writes_beside_the_notes(exported, capsys):
    origin, _, _ = exported
    note = origin / "later.md"
    note.write_text("# later\n\nWritten after the last index run.\n", encoding="utf-8")
    code, _, err = call(capsys, "export", str(note), "--root", str(origin), "--force")
    assert code == 2 and "later.md" in err and "corpus file" in err
    assert note.read_text(encoding="utf-8").startswith("# later")

    beside = origin / "index.tar.gz"  # in the root, but not a file ragx indexes (an archive)
    code, _, err = call(capsys, "export", str(beside), "--root", str(origin))
    assert code == 0, err
    assert tarfile.is_tarfile(beside)


def test_import_force_replaces_a_damaged_index(exported, capsys):
    origin, archive, _ = exported
    before = query(capsys, origin)
    db = origin / ".ragx" / "index.sqlite"
    db.write_bytes(b"\x00garbage, not a database\x00" * 1000)
    code, _, err = call(capsys, "status", "--root", str(origin))
    assert code == 2 and "damaged" in err

    code, _, err = call(capsys, "import", str(archive), "--root", str(origin))
    assert code == 2 and "--force" in err  # still refused without --force
    code, out, err = call(capsys, "import", str(archive), "--root", str(origin), "--force", "--json")
    assert code == 0, err
    assert json.loads(out)["same"] == 19
    assert query(capsys, origin) == before
    status = json.loads(call(capsys, "status", "--root", str(origin), "--json", "--deep")[1])
    assert status["consistent"]


def test_a_failed_import_over_a_damaged_index_leaves_it_as_it_was(exported, capsys, tmp_path):
    origin, archive, _ = exported
    db = origin / ".ragx" / "index.sqlite"
    damaged = b"\x00garbage, not a database\x00" * 1000
    db.write_bytes(damaged)
    truncated = tmp_path / "truncated.tar.gz"
    truncated.write_bytes(archive.read_bytes()[: archive.stat().st_size // 2])
    code, _, err = call(capsys, "import", str(truncated), "--root", str(origin), "--force")
    assert code == 2 and len(err.strip().splitlines()) == 1
    assert db.read_bytes() == damaged  # not half replaced: the user can still retry or rebuild


# ---- QA pass 38: targets inside the corpus, malformed fingerprints, other schema versions ----------

def _recraft(archive, out, mutate=None, raw=None):
    """`archive` written again to `out` with its fingerprint changed by `mutate` (or replaced by `raw`)."""
    import io

    with tarfile.open(archive) as src, tarfile.open(out, "w:gz") as dst:
        for member in src.getmembers():
            data = src.extractfile(member).read()
            if member.name == "ragx-export.json":
                if raw is not None:
                    data = raw
                else:
                    fingerprint = json.loads(data)
                    mutate(fingerprint)
                    data = json.dumps(fingerprint).encode("utf-8")
            info = tarfile.TarInfo(member.name)
            info.size = len(data)
            dst.addfile(info, io.BytesIO(data))
    return out


def _refused(capsys, *args):
    code, out, err = call(capsys, *args)
    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1, (code, err)
    assert "internal error" not in err
    return err


@pytest.mark.parametrize("inside", ["ragx.toml", "data.bin", "sub/scan.tar.gz", "absent-ragx.toml"])
def test_export_never_replaces_the_config_or_another_file_of_the_corpus_folder(exported, capsys, inside):
    origin, _, _ = exported
    (origin / "ragx.toml").write_text("[graph]\nk = 8\n", encoding="utf-8")
    (origin / "data.bin").write_bytes(b"\x00\x01 not indexed, but mine")
    (origin / "sub").mkdir()
    (origin / "sub" / "scan.tar.gz").write_bytes(b"an archive of my own, not a ragx export")
    assert call(capsys, "index", "--root", str(origin))[0] == 0
    before = query(capsys, origin)
    target = origin / ("ragx.toml" if inside == "absent-ragx.toml" else inside)
    if inside == "absent-ragx.toml":
        target.unlink()  # no config yet: an archive written under its name would become one
    was = target.read_bytes() if target.exists() else None
    for extra in ((), ("--force",)):
        err = _refused(capsys, "export", str(target), "--root", str(origin), *extra)
        assert "--force" not in err  # forcing would not help: do not suggest it
    assert (target.read_bytes() if target.exists() else None) == was
    assert query(capsys, origin) == before  # every command still works


def test_export_replaces_an_earlier_export_in_the_corpus_folder_only_when_forced(exported, capsys):
    origin, _, _ = exported
    target = origin / "backup.tar.gz"
    assert call(capsys, "export", str(target), "--root", str(origin))[0] == 0
    err = _refused(capsys, "export", str(target), "--root", str(origin))
    assert "already exists" in err and "--force" in err
    code, _, err = call(capsys, "export", str(target), "--root", str(origin), "--force")
    assert code == 0, err
    assert tarfile.is_tarfile(target)


def test_export_never_replaces_the_machine_settings_file(exported, capsys):
    import os

    origin, _, _ = exported
    from pathlib import Path

    rc = Path(os.environ["RAGX_RC"])
    rc.write_text("[graph]\nk = 8\n", encoding="utf-8")
    _refused(capsys, "export", str(rc), "--root", str(origin), "--force")
    assert rc.read_text(encoding="utf-8") == "[graph]\nk = 8\n"


def test_export_names_a_missing_folder_before_building_anything(exported, capsys, tmp_path):
    origin, _, _ = exported
    err = _refused(capsys, "export", str(tmp_path / "nodir" / "c2.tgz"), "--root", str(origin))
    assert f"folder {tmp_path / 'nodir'} does not exist" in err and ".tmp-" not in err
    assert not (tmp_path / "nodir").exists()
    (tmp_path / "afile").write_text("x", encoding="utf-8")
    err = _refused(capsys, "export", str(tmp_path / "afile" / "c2.tgz"), "--root", str(origin))
    assert f"{tmp_path / 'afile'} is not a folder" in err
    assert not [p for p in (origin / ".ragx").iterdir() if ".tmp-" in p.name]


MALFORMED = {
    "a list": dict(raw=b"[]"),
    "not UTF-8": dict(raw=b'{"format": "ragx.archive.v1", "x": "\xff"}'),
    "no members": dict(mutate=lambda fp: fp.pop("members")),
    "no identity": dict(mutate=lambda fp: fp.pop("identity")),
    "identity null": dict(mutate=lambda fp: fp.__setitem__("identity", None)),
    "identity without dim": dict(mutate=lambda fp: fp["identity"].pop("dim")),
    "no files_digest": dict(mutate=lambda fp: fp.pop("files_digest")),
    "members a string": dict(mutate=lambda fp: fp.__setitem__("members", "abc")),
    "a member outside": dict(mutate=lambda fp: fp["members"].__setitem__("../../../../etc/passwd", "00" * 32)),
    "a checksum not hex": dict(mutate=lambda fp: fp["members"].__setitem__("index.sqlite", 42)),
    "no database listed": dict(mutate=lambda fp: fp["members"].pop("index.sqlite")),
    "no counts": dict(mutate=lambda fp: fp.pop("counts")),
    "no format": dict(mutate=lambda fp: fp.pop("format")),
}


@pytest.mark.parametrize("case", sorted(MALFORMED))
def test_import_refuses_a_malformed_fingerprint_in_one_line_writing_nothing(exported, capsys, tmp_path, case):
    origin, archive, copy = exported
    bad = _recraft(archive, tmp_path / "bad.tar.gz", **MALFORMED[case])
    err = _refused(capsys, "import", str(bad), "--root", str(copy))
    assert f"{bad} is not a ragx export (damaged or incomplete ragx-export.json: " in err
    assert not (copy / ".ragx").exists()
    before = query(capsys, origin)
    _refused(capsys, "import", str(bad), "--root", str(origin), "--force")
    assert query(capsys, origin) == before


@pytest.mark.parametrize("version, words", [(99, ("newer ragx", "upgrade ragx")), (0, ("older ragx", "export it again"))])
def test_import_of_another_schema_version_says_which_ragx_wrote_it(exported, capsys, tmp_path, version, words):
    _, archive, copy = exported
    other = _recraft(archive, tmp_path / "other.tar.gz", lambda fp: fp["identity"].__setitem__("schema_version", version))
    err = _refused(capsys, "import", str(other), "--root", str(copy))
    assert all(w in err for w in words) and "`ragx index`" in err
    assert "ragx.toml" not in err and "config" not in err  # not a setting
    assert not (copy / ".ragx").exists()


def _flip_header(archive, out):
    """`archive` with one bit flipped in the tar header after the fingerprint, compressed again."""
    import gzip

    raw = bytearray(gzip.decompress(archive.read_bytes()))
    with tarfile.open(archive) as tar:
        second = tar.getmembers()[1].offset
    raw[second + 3] ^= 0x10  # inside the member's name: the header checksum no longer matches
    out.write_bytes(gzip.compress(bytes(raw)))
    return out


def test_an_archive_damaged_after_its_fingerprint_is_called_damaged(exported, capsys, tmp_path):
    origin, archive, copy = exported
    before = query(capsys, origin)
    data = archive.read_bytes()
    flipped = tmp_path / "flipped.tar.gz"
    flipped.write_bytes(data[: len(data) * 3 // 4] + bytes([data[len(data) * 3 // 4] ^ 0x04]) + data[len(data) * 3 // 4 + 1:])
    truncated = tmp_path / "truncated.tar.gz"
    truncated.write_bytes(data[: len(data) // 2])
    for bad in (flipped, truncated, _flip_header(archive, tmp_path / "header.tar.gz")):
        err = _refused(capsys, "import", str(bad), "--root", str(origin), "--force")
        assert "damaged" in err and "not a ragx export" not in err, err
        assert str(bad) in err
    assert query(capsys, origin) == before
    assert not (copy / ".ragx").exists()


def test_a_file_that_is_no_archive_is_not_a_ragx_export(exported, capsys, tmp_path):
    _, _, copy = exported
    text = tmp_path / "notes.tar.gz"
    text.write_text("just some text\n", encoding="utf-8")
    err = _refused(capsys, "import", str(text), "--root", str(copy))
    assert f"{text} is not a ragx export" in err and "method" not in err
    assert not (copy / ".ragx").exists()
