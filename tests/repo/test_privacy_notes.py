"""Proof beside the code: each mining family's package carries its privacy note
(``dpcore/<family>/PRIVACY.md``) with an "as of" SHA-256 digest of the files it argues about.
A change to one of those files fails here until someone re-reads the argument against it and
sets the note's digest (the failure message gives the new one); docs/PRIVACY.md keeps the
shared parts and links every note."""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

import pytest

from dpcore.registry import FAMILIES

REPO = Path(__file__).resolve().parents[2]

#: "As of SHA-256 `<hex>` of:" followed by a blank line and one "- `path`" line per file.
AS_OF = re.compile(r"As of SHA-256 `([0-9a-f]{64})` of:\n\n((?:- `[^`\n]+`\n)+)")


def files_digest(paths: list[str], root: Path = REPO) -> str:
    """SHA-256 over each file's repository path and bytes, in the order listed."""
    h = hashlib.sha256()
    for path in paths:
        h.update(path.encode("utf-8") + b"\0" + (root / path).read_bytes() + b"\0")
    return h.hexdigest()


def as_of(note: Path) -> tuple[str, list[str]]:
    """The digest a note states and the files it lists (AssertionError when it has none)."""
    match = AS_OF.search(note.read_text(encoding="utf-8"))
    assert match, f"{note.name} in {note.parent.name} has no 'As of SHA-256 `…` of:' block"
    return match.group(1), re.findall(r"- `([^`]+)`", match.group(2))


@pytest.mark.parametrize("family", FAMILIES)
def test_each_family_carries_a_privacy_note_that_is_current(family):
    note = REPO / "dpcore" / family / "PRIVACY.md"
    assert note.is_file(), f"the {family} package has no privacy note ({note.name})"
    stated, paths = as_of(note)
    missing = [p for p in paths if not (REPO / p).is_file()]
    assert not missing, f"{note.relative_to(REPO)} argues about files that do not exist: {missing}"
    outside = [p for p in paths if not p.startswith(f"dpcore/{family}/")]
    assert not outside, f"a family's note covers its own package's files only: {outside}"
    assert len(set(paths)) == len(paths) >= 3
    actual = files_digest(paths)
    assert actual == stated, (
        f"{note.relative_to(REPO)}: a file it argues about changed since the note was last "
        f"checked. Re-read the argument against the change (fix the note if it no longer "
        f"holds), then set its digest to {actual}")


def test_docs_privacy_links_every_note_and_keeps_the_shared_parts():
    text = (REPO / "docs" / "PRIVACY.md").read_text(encoding="utf-8")
    for family in FAMILIES:
        assert f"](../dpcore/{family}/PRIVACY.md)" in text, family
    for shared in ("## 1. What is claimed", "## 2. Neighbouring datasets",
                   "## 3. The building blocks", "## 5. The ledger and the accountant",
                   "## 13. Black-box audit"):
        assert shared in text


def test_every_note_links_back_to_the_shared_argument():
    for family in FAMILIES:
        text = (REPO / "dpcore" / family / "PRIVACY.md").read_text(encoding="utf-8")
        assert "](../../docs/PRIVACY.md)" in text, family


def test_the_digest_sees_a_one_byte_change_and_a_reordering(tmp_path):
    (tmp_path / "a.py").write_text("x = 1\n")
    (tmp_path / "b.py").write_text("y = 2\n")
    before = files_digest(["a.py", "b.py"], tmp_path)
    assert files_digest(["b.py", "a.py"], tmp_path) != before
    (tmp_path / "a.py").write_text("x = 2\n")
    assert files_digest(["a.py", "b.py"], tmp_path) != before
    # a byte moved from one file to the next is a change too (paths and bytes are framed)
    (tmp_path / "a.py").write_text("x = 1\ny")
    (tmp_path / "b.py").write_text(" = 2\n")
    assert files_digest(["a.py", "b.py"], tmp_path) != before


def test_the_as_of_block_is_read_as_written(tmp_path):
    note = REPO / "dpcore" / "sequences" / "PRIVACY.md"
    stated, paths = as_of(note)
    assert len(stated) == 64 and "dpcore/sequences/miner.py" in paths
    broken = tmp_path / "PRIVACY.md"
    broken.write_text("As of SHA-256 `abc` of:\n\n- `x.py`\n")
    with pytest.raises(AssertionError, match="no 'As of"):
        as_of(broken)
