"""Builders for real-looking skill folders and tools files in ``tmp_path``."""

from __future__ import annotations

import textwrap
from collections.abc import Callable
from pathlib import Path

import pytest

PDF_FRONTMATTER = """\
name: pdf-processing
description: >-
  Extract text and tables from PDF files, fill forms and merge documents.
  Use when the user mentions PDFs, forms or document extraction.
license: Apache-2.0
compatibility: Needs poppler-utils and network access
metadata:
  author: docs-team
  version: "1.2"
allowed-tools: Bash(pdftotext:*) Read
"""

PDF_BODY = """\
# PDF processing

Run `scripts/extract.py` on the file, then read `references/forms.md` for forms.
"""


def skill_text(frontmatter: str, body: str = "# Body\n", newline: str = "\n") -> bytes:
    """A SKILL.md: ``---``, the (dedented) frontmatter, ``---``, the body."""
    text = f"---\n{textwrap.dedent(frontmatter)}---\n{body}"
    return text.replace("\n", newline).encode("utf-8")


WriteSkill = Callable[..., Path]


@pytest.fixture
def write_skill(tmp_path: Path) -> WriteSkill:
    """``write_skill(folder, frontmatter, body=..., root=tmp_path/"skills", newline="\\n")``."""

    def write(
        folder: str,
        frontmatter: str,
        body: str = "# Body\n",
        *,
        root: Path | None = None,
        newline: str = "\n",
    ) -> Path:
        where = (root or tmp_path / "skills") / folder
        where.mkdir(parents=True, exist_ok=True)
        (where / "SKILL.md").write_bytes(skill_text(frontmatter, body, newline))
        return where

    return write


@pytest.fixture
def pdf_skill(write_skill: WriteSkill) -> Path:
    """A complete skill folder with scripts, references, assets and noise to ignore."""
    folder: Path = write_skill("pdf-processing", PDF_FRONTMATTER, PDF_BODY)
    for rel in (
        "scripts/extract.py",
        "scripts/lib/util.py",
        "references/forms.md",
        "assets/template.docx",
        "scripts/__pycache__/extract.cpython-311.pyc",
        "assets/.DS_Store",
        "notes.txt",
    ):
        (folder / rel).parent.mkdir(parents=True, exist_ok=True)
        (folder / rel).write_text("x")
    return folder
