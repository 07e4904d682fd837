"""Lab 04's tests against PostgreSQL share these: a fake encoder, small corpora, the owner's queries, and the
faults each health check must find (``tests/rag/``: the database, server, tenant, full-text and memo tests)."""
from __future__ import annotations

import hashlib
import re
from pathlib import Path

import numpy as np
import pytest

from ragcourse.engines.dense import DIMENSION, EncodeStats
from ragcourse.engines.chunking.policy import ChunkPolicy
from ragcourse.rag.store import PgIndex

WORD = re.compile(r"\w+")
SMALL = ChunkPolicy("sentences", size=60, overlap=0, unit="characters")   # about one sentence a chunk: several chunks a file

CORPUS = {
    "alpha.md": "# Walruses\n\nThe walrus eats clams on the sea floor. Walruses haul out on the ice.\n\n"
                "## Tusks\n\nTusks help a walrus climb out of the water.\n",
    "beta.txt": "Volcanoes erupt lava and ash. The magma chamber below a volcano refills slowly.\n",
    "notes/2023-01-02-oysters.md": "Oysters filter the water of the bay. An oyster reef protects the coast.\n",
    "notes/lighthouse.md": "date: 2024-05-01\n\nThe lighthouse keeper polished the lens every night. "
                           "Ships saw the beam far out at sea.\n",
    "private/vault.md": "# Vault\n\nThe zebra codebook is kept in the vault. A walrus guards the vault door.\n",
    "private/volcano-plan.txt": "The volcano observatory keeps the zebra code. Lava samples stay in the vault.\n",
}
TENANT_B_FILES = {"private/vault.md", "private/volcano-plan.txt"}
TENANT_A_FILES = set(CORPUS) - TENANT_B_FILES


def two_tenants(path: str) -> str:
    """Files under private/ belong to tenant b, every other file to tenant a."""
    return "b" if path.startswith("private/") else "a"


class FakeEncoder:
    """Deterministic stand-in for DenseEncoder: 384-dim float32 unit vectors, no model.

    Each word maps to a fixed Gaussian direction (seeded by its sha256); a text is the
    normalised sum of its words, so texts sharing words are close. ``calls`` counts encodes.
    """

    def __init__(self, revision: str = "fake-1"):
        self.revision = revision
        self.last = EncodeStats()
        self.calls = 0
        self._words: dict[str, np.ndarray] = {}

    def _word(self, word: str) -> np.ndarray:
        if word not in self._words:
            seed = int.from_bytes(hashlib.sha256(word.encode()).digest()[:8], "little")
            self._words[word] = np.random.default_rng(seed).standard_normal(DIMENSION).astype(np.float32)
        return self._words[word]

    def encode(self, texts) -> np.ndarray:
        texts = list(texts)
        self.calls += 1
        rows = np.zeros((len(texts), DIMENSION), dtype=np.float32)
        for row, text in zip(rows, texts):
            for word in WORD.findall(text.lower()):
                row += self._word(word)
            if not row.any():
                row[0] = 1.0
        self.last = EncodeStats(len(texts), len(set(texts)), len(texts))
        return rows / np.linalg.norm(rows, axis=1, keepdims=True)

    def token_counts(self, texts) -> list[int]:
        return [len(t.split()) for t in texts]


def write_corpus(root: Path, files: dict[str, str | bytes]) -> Path:
    """Write ``files`` (relative path -> text or bytes) under ``root``; ``root``."""
    for relative, content in files.items():
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content, encoding="utf-8")
    return root


def schema_name(test_name: str) -> str:
    """A valid, unique schema for a test: ``t_`` + its name squeezed to [a-z0-9_] + a short hash."""
    squeezed = re.sub(r"[^a-z0-9_]+", "_", test_name.lower())[:40]
    return f"t_{squeezed}_{hashlib.sha1(test_name.encode()).hexdigest()[:8]}"


def owner_rows(index: PgIndex, statement: str, params=()) -> list[tuple]:
    """Rows of ``statement`` (``{s}`` = the schema) as the table owner: row-level security does not apply."""
    with index.connection.transaction():
        return index.connection.execute(index.sql(statement), params).fetchall()


def owner_execute(index: PgIndex, statement: str, params=()) -> None:
    with index.connection.transaction():
        index.connection.execute(index.sql(statement), params)


# ---------------------------------------------------------------- the health checks' faults, each tripped by one

def break_into_directory(path: Path) -> None:
    path.unlink()
    path.mkdir()


def orphan_chunk(index: PgIndex, corpus: Path) -> None:
    (constraint,), = owner_rows(index, "SELECT conname FROM pg_constraint WHERE conrelid = %s::regclass "
                                       "AND contype = 'f'", [f"{index.schema}.chunks"])
    owner_execute(index, f"ALTER TABLE {{s}}.chunks DROP CONSTRAINT {constraint}")
    owner_execute(index, "INSERT INTO {s}.chunks (source_id, ordinal, start_char, end_char, text, content_hash, "
                         "chunker, embedding_version, tenant, embedding) SELECT 999999, ordinal, start_char, end_char, "
                         "text, content_hash, chunker, embedding_version, tenant, embedding FROM {s}.chunks LIMIT 1")


def other_chunker(index, corpus):
    owner_execute(index, "UPDATE {s}.chunks SET chunker = 'fixed-v0' WHERE ordinal = 0 AND source_id = "
                         "(SELECT min(source_id) FROM {s}.sources)")


def update_first_chunk(assignment: str):
    """A fault that changes one column of the first chunk row."""
    def fault(index, corpus):
        owner_execute(index, f"UPDATE {{s}}.chunks SET {assignment} WHERE chunk_id = "
                             "(SELECT min(chunk_id) FROM {s}.chunks)")
    return fault


other_embedding = update_first_chunk("embedding_version = 'other-model@1'")
no_embedding = update_first_chunk("embedding = NULL")
bad_span = update_first_chunk("end_char = end_char + 1")


def file_edited(index, corpus):
    with open(corpus / "beta.txt", "a") as handle:
        handle.write("One more sentence.\n")


def file_deleted(index, corpus):
    (corpus / "beta.txt").unlink()


def file_replaced_by_directory(index, corpus):
    break_into_directory(corpus / "beta.txt")


def source_without_chunks(index, corpus):
    owner_execute(index, "DELETE FROM {s}.chunks WHERE source_id = (SELECT source_id FROM {s}.sources "
                         "WHERE path = 'beta.txt')")


STALE_STATISTICS = "tenants whose BM25 term statistics do not match their chunks (refresh to recompute)"
HEALTH_FAULTS = [   # (fault, the check(s) it must fail); {chunker} and {embedding} are the index's versions
    pytest.param(orphan_chunk, "chunks without a source", id="orphan chunk"),
    pytest.param(other_chunker, "chunks not made by {chunker}", id="other chunker version"),
    pytest.param(other_embedding, "chunks not embedded by {embedding}", id="other embedding version"),
    pytest.param(no_embedding, "chunks without an embedding", id="chunk without embedding"),
    pytest.param(bad_span, "chunk spans that do not match their text", id="span does not match text"),
    pytest.param(file_edited, "sources whose file changed since indexing", id="file edited after indexing"),
    pytest.param(file_deleted, "sources whose file is missing", id="file deleted after indexing"),
    pytest.param(file_replaced_by_directory, "sources whose file cannot be read", id="file replaced by a directory"),
    # deleting chunk rows by hand also leaves BM25's term statistics counting them: both are found
    pytest.param(source_without_chunks, ("sources without a chunk", STALE_STATISTICS), id="source without chunks"),
]


# Six numpy pages, one chunk a page (the full-text tests: names, BM25, plans; ``conftest``'s ``pages`` indexes them).
PAGES = {
    "numpy.linalg.solve.md": "# numpy.linalg.solve\n\nSolve a linear matrix equation, or system of linear scalar "
                             "equations.\n\nSee numpy.linalg.solve for the exact solution.\n",
    "numpy.where.md": "# numpy.where\n\nReturn elements chosen from x or y depending on condition. Use np.where "
                      "with a mask.\n",
    "numpy.fft.fftshift.md": "# numpy.fft.fftshift\n\nShift the zero-frequency component to the center of the "
                             "spectrum.\n",
    "numpy.sum.md": "# numpy.sum\n\nSum of array elements over a given axis. The sum of an empty array is zero.\n",
    "numpy.mean.md": "# numpy.mean\n\nCompute the arithmetic mean along the specified axis. The mean of the "
                     "array elements, the sum divided by the count.\n",
    "numpy.all.md": "# numpy.all\n\nTest whether all array elements along a given axis evaluate to True.\n",
}
WHOLE_PAGE = ChunkPolicy("sentences", size=4000, overlap=0, unit="characters")   # one chunk a page


def numpy_index(database, tmp_path_factory, schema: str):
    """The numpy reference indexed at the package's chunking (``DEFAULT_SETTING``) in ``schema``, as ``index``
    builds it: yields (index, encoder), dropped afterwards; skips when the encoder's model is missing."""
    from ragcourse.corpus.apidocs import export_markdown, load_corpus
    from ragcourse.engines.dense import DenseEncoder, ModelUnavailable
    from ragcourse.rag.pipeline import DEFAULT_SETTING

    try:
        encoder = DenseEncoder()
    except ModelUnavailable as missing:
        pytest.skip(str(missing))
    folder = tmp_path_factory.mktemp("numpy") / "history"
    export_markdown(load_corpus(), folder, summaries=True)
    index = PgIndex(database, schema, DEFAULT_SETTING.chunk_policy(), encoder)
    index.drop()
    index.refresh(folder)
    yield index, encoder
    index.drop()
    index.close()
