"""Lab 04's name channel: pages whose name looks like a name the question types, misspelt or not.

Full text matches whole words and MiniLM reads a misspelt name as other word pieces, so
``np.linespace`` finds neither ``numpy.linspace``'s words nor its meaning. The name channel
compares the question's name-like tokens with every page's name forms by trigram similarity,
in PostgreSQL, and is fused with the two other paths by RRF (``search.candidates``, ``names=True``).

- **Name-like tokens** (``name_tokens``): runs of ASCII letters, digits, underscores and dots
  that start with a letter or ``_`` and hold a dot between two name parts (``np.linespace``,
  ``numpy.linalg.slove``, ``arr.cumsum``), an underscore (``set_printoptions``) or are called
  (``argsrot(``), with at least ``MIN_LETTERS`` letters in all (so ``e.g`` and ``i.e`` are not
  names). A plain word is not one: ``argsrot`` alone is left to the other paths. Distinct,
  lower-case, in order of appearance, at most ``MAX_NAME_TOKENS`` (a question of 20,000
  characters cannot hold many more; the rest are not compared).
- **A page's name forms**, derived in SQL from ``sources.path`` as ``Passage.doc_id`` derives
  the page's id (the file name less its suffix): the id (``numpy.linalg.solve``), its
  ``np.`` form (``np.linalg.solve``), the id without ``numpy.`` (``linalg.solve``) and its last
  part (``solve``). Nothing is stored: the forms follow ``sources`` through every refresh
  (a page removed is gone from the channel with its row), and row-level security keeps the
  reader to its own tenant's sources and chunks, as on the other paths.
- **Similarity**: pg_trgm's definition, computed by hand because the embedded PostgreSQL
  (pgserver 16) ships without the extension: each word (a run of ASCII letters and digits,
  lower-cased) padded with two spaces before and one after, its 3-character substrings; the
  similarity of two strings is the number of trigrams they share over the number of distinct
  trigrams in either. A page scores the best similarity of any (token, form) pair and is kept
  when that reaches ``NAME_THRESHOLD`` (pg_trgm's default 0.3).
- **Rows**: each kept page's first chunk (lowest ordinal), best score first, ties by chunk id
  (a total order, so a deeper search's first rows are a shallower one's: ``PathMemo``), at most
  the path's limit.

The tokens reach SQL as one array parameter; no character of the question reaches the statement.
"""
from __future__ import annotations

import re

from .passages import ScoredPassage

NAME_THRESHOLD = 0.3        # pg_trgm's default similarity threshold
MIN_LETTERS = 4             # letters a name-like token holds at least
MAX_NAME_TOKENS = 64        # name-like tokens compared, the first in the question
NAME_TOKEN = re.compile(r"(?<![A-Za-z0-9_.])([A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*)(\s*\()?")
LETTER = re.compile(r"[A-Za-z]")

# One word's trigrams, pg_trgm's way: the word padded '  w ' and cut into every 3-character substring.
_GRAMS = ("SELECT DISTINCT {key}, substr(w.padded, i, 3) AS gram FROM {rows} CROSS JOIN LATERAL (SELECT '  ' || m[1] "
          "|| ' ' AS padded FROM regexp_matches(lower({text}), '[a-z0-9]+', 'g') AS m) w "
          "CROSS JOIN LATERAL generate_series(1, length(w.padded) - 2) AS i")
NAME_CHANNEL_SQL = (
    "WITH tokens AS (SELECT t.token, t.n FROM unnest(%(tokens)s::text[]) WITH ORDINALITY AS t(token, n)), "
    r"pages AS (SELECT s.source_id, regexp_replace(regexp_replace(s.path, '^.*/', ''), '\.[^.]*$', '') AS doc "
    "FROM {s}.sources s), "
    "forms AS (SELECT DISTINCT p.source_id, f.form FROM pages p CROSS JOIN LATERAL (VALUES (p.doc), "
    r"(regexp_replace(p.doc, '^numpy\.', 'np.')), (regexp_replace(p.doc, '^numpy\.', '')), "
    r"(regexp_replace(p.doc, '^.*\.', ''))) AS f(form)), "
    f"form_grams AS ({_GRAMS.format(key='f.source_id, f.form', rows='forms f', text='f.form')}), "
    f"token_grams AS ({_GRAMS.format(key='t.n', rows='tokens t', text='t.token')}), "
    "form_sizes AS (SELECT source_id, form, count(*) AS size FROM form_grams GROUP BY source_id, form), "
    "token_sizes AS (SELECT n, count(*) AS size FROM token_grams GROUP BY n), "
    "shared AS (SELECT fg.source_id, fg.form, tg.n, count(*) AS common FROM form_grams fg "
    "JOIN token_grams tg USING (gram) GROUP BY fg.source_id, fg.form, tg.n), "
    "scored AS (SELECT sh.source_id, max(sh.common::float8 / (fs.size + ts.size - sh.common)) AS score "
    "FROM shared sh JOIN form_sizes fs USING (source_id, form) JOIN token_sizes ts USING (n) GROUP BY sh.source_id), "
    "ranked AS (SELECT DISTINCT ON (sc.source_id) c.chunk_id, sc.score FROM scored sc JOIN {s}.chunks c "
    "USING (source_id) WHERE sc.score >= %(threshold)s ORDER BY sc.source_id, c.ordinal) "
    "SELECT c.chunk_id, s.path, c.ordinal, c.start_char, c.end_char, c.text, c.tenant, r.score "
    "FROM ranked r JOIN {s}.chunks c USING (chunk_id) JOIN {s}.sources s USING (source_id) "
    "ORDER BY r.score DESC, c.chunk_id LIMIT %(limit)s")


def name_tokens(question: str) -> list[str]:
    """The question's name-like tokens, lower-case, distinct, in order (at most ``MAX_NAME_TOKENS``)."""
    found = []
    for match in NAME_TOKEN.finditer(question):
        token, called = match.group(1), match.group(2) is not None
        if ("." in token or "_" in token or called) and len(LETTER.findall(token)) >= MIN_LETTERS:
            found.append(token.lower())
    return list(dict.fromkeys(found))[:MAX_NAME_TOKENS]


def name_statement(index, question: str, limit: int) -> tuple[object, dict] | None:
    """The name channel's statement and parameters for ``question``; None when it holds no name-like token."""
    tokens = name_tokens(question)
    if not tokens:
        return None
    return index.sql(NAME_CHANNEL_SQL), {"tokens": tokens, "threshold": NAME_THRESHOLD, "limit": limit}


def check_names(names: object) -> bool:
    """Whether to run the name channel: True or False."""
    if not isinstance(names, bool):
        raise ValueError(f"names must be True or False; got {names!r}")
    return names


def name_rows(connection, index, question: str, limit: int, tenant: str, memo=None) -> list[ScoredPassage]:
    """The name channel's rows in an open reader session of ``tenant`` (row-level security applies), best first;
    with a ``memo`` (``search.PathMemo``) a question asked before is answered from memory."""
    from .search import _passages

    def fetch(depth: int) -> list[ScoredPassage]:
        statement = name_statement(index, question, depth)
        return [] if statement is None else _passages(connection.execute(*statement, prepare=False).fetchall())

    if memo is None:
        return fetch(limit)
    return memo.rows(("names", index.schema, tenant, question), limit, fetch)
