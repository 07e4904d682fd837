"""Lab 04's untried rungs (issue 51): dense alone, weighted fusion, the name channel, as ``Setting`` fields.

- ``retrieval.fusion.fuse_partial``'s weights: weight 1 is today's fusion to the bit, a small case by hand;
- ``Setting``'s new fields validated, its defaults and their printed form unchanged;
- the name channel's tokens (``rag.schema.name_tokens``) on tiny cases (no database);
- over six small numpy pages in PostgreSQL: defaults leave the candidates as they were, ``lexical="none"``
  is the dense order and the learned stage still reads it, the channel's similarity is pg_trgm's
  (checked against a reference written here), misspelt names found, hostile questions harmless, each
  tenant's pages only, a removed page gone after a refresh;
- the real corpus: the three misspellings lab 04 could not find land in the top 3 with the channel on.
"""
from __future__ import annotations

import math
import re

import numpy as np
import pytest

from ragcourse.rag.schema import NAME_THRESHOLD, name_rows, name_statement, name_tokens
from ragcourse.rag.pipeline import DEFAULT_SETTING, UNTUNED_SETTING, Setting
from ragcourse.rag.search import RRF_CONSTANT, candidates, check_question, fuse
from ragcourse.retrieval.fusion import fuse_partial
from support.database import PAGES, WHOLE_PAGE, FakeEncoder, schema_name, write_corpus
from support.database import numpy_index as build_numpy_index


# ---------------------------------------------------------------- weighted fusion

def test_weight_one_is_todays_fusion_to_the_bit():
    rng = np.random.default_rng(51)
    for _ in range(50):
        lists = [list(rng.permutation(40)[:int(rng.integers(1, 30))]) for _ in range(int(rng.integers(1, 4)))]
        plain = fuse_partial(lists, 60, first_position=1)
        weighted = fuse_partial(lists, 60, first_position=1, weights=[1.0] * len(lists))
        assert [(item, score.hex()) for item, score in plain] == [(item, score.hex()) for item, score in weighted]


def test_a_weighted_fusion_by_hand():
    # k = 10, ranks from 1; dense (second list) weighs 2: a: 1/11 + 2/11, b: 1/12, c: 2/12
    fused = dict(fuse_partial([["a", "b"], ["a", "c"]], 10, first_position=1, weights=[1, 2]))
    assert fused == pytest.approx({"a": 1 / 11 + 2 / 11, "b": 1 / 12, "c": 2 / 12})
    assert [item for item, _ in fuse_partial([["a", "b"], ["a", "c"]], 10, first_position=1, weights=[1, 2])] \
        == ["a", "c", "b"]
    # a weight below 1: a: 1/12 + 0.5/12, b: 1/11, c: 0.5/11
    assert [item for item, _ in fuse_partial([["b", "a"], ["c", "a"]], 10, first_position=1, weights=[1, 0.5])] \
        == ["a", "b", "c"]


@pytest.mark.parametrize("weights", [[1, 0], [1, -1], [1, math.nan], [1, math.inf], [1, "2"], [1, True], [1], "ab"])
def test_bad_fusion_weights_are_refused(weights):
    with pytest.raises(ValueError, match="weight"):
        fuse_partial([["a"], ["b"]], 60, weights=weights)


# ---------------------------------------------------------------- the setting's fields

@pytest.mark.parametrize("bad", [0, -1.0, math.nan, math.inf, "2", None, True])
def test_a_bad_dense_weight_names_the_field(bad):
    with pytest.raises(ValueError, match="dense_weight"):
        Setting(dense_weight=bad)
    with pytest.raises(ValueError, match="dense_weight"):
        UNTUNED_SETTING.changed(dense_weight=bad)


@pytest.mark.parametrize("bad", [1, "yes", None])
def test_a_bad_names_value_names_the_field(bad):
    with pytest.raises(ValueError, match="names"):
        Setting(names=bad)


@pytest.mark.parametrize("bad", ["None", "dense", None])
def test_lexical_none_is_allowed_and_a_bad_value_is_refused_by_the_pipeline(bad):
    from ragcourse.rag.search import check_lexical

    assert check_lexical("none") == "none"
    with pytest.raises(ValueError, match="lexical must be one of english, names, bm25, none"):
        Setting(lexical=bad).pipeline(index=None, encoder=FakeEncoder())


def test_the_defaults_and_their_printed_form_are_unchanged():
    assert (UNTUNED_SETTING.dense_weight, UNTUNED_SETTING.names) == (1.0, False)
    assert DEFAULT_SETTING == Setting(constant=10, dense_weight=3.0, second_stage="learned")
    assert repr(DEFAULT_SETTING) == ("Setting(policy='recursive', summaries=True, headers=True, lexical='bm25', "
                                     "per_path=30, constant=10, second_stage='learned', max_tokens=1500, "
                                     "dense_weight=3.0)")
    assert repr(Setting(lexical="none", names=True)).endswith("lexical='none', per_path=30, constant=60, "
                                                              "second_stage='none', max_tokens=1500, names=True)")
    assert Setting(dense_weight=2).index_key == Setting(names=True).index_key == UNTUNED_SETTING.index_key


def test_pipeline_carries_the_new_fields():
    setting = UNTUNED_SETTING.changed(lexical="none", dense_weight=2.5, names=True)
    pipeline = setting.pipeline(index=None, encoder=FakeEncoder())
    assert (pipeline.lexical, pipeline.dense_weight, pipeline.names) == ("none", 2.5, True)


def test_seed_policy_is_the_designs_chunking():
    policy = Setting(policy="seed").chunk_policy()
    assert (policy.size, policy.overlap, policy.unit, policy.headers) == (2000, 300, "characters", True)


# ---------------------------------------------------------------- name-like tokens

@pytest.mark.parametrize("question, tokens", [
    ("np.linespace", ["np.linespace"]),
    ("How do I call np.argsrot on a matrix?", ["np.argsrot"]),
    ("numpy.linalg.slove, then arr.cumsum()", ["numpy.linalg.slove", "arr.cumsum"]),
    ("set_printoptions or argsrot(x)", ["set_printoptions", "argsrot"]),
    ("NP.Where and np.where", ["np.where"]),
    ("e.g. i.e. U.S.A. a.b np.pi", ["np.pi"]),          # fewer than 4 letters is no name
    ("how do I sort an array in place", []),            # plain words are left to the other paths
    ("x' OR '1'='1; --% \\ ((", []),
])
def test_name_tokens(question, tokens):
    assert name_tokens(question) == tokens


def test_a_question_with_no_name_has_no_statement():
    assert name_statement(None, "how do I sort an array", 30) is None


# ---------------------------------------------------------------- over six pages in PostgreSQL

def trigrams(text: str) -> set[str]:
    """pg_trgm's trigrams of ``text`` (ASCII): each lower-case alphanumeric word padded '  w '."""
    return {f"  {word} "[i:i + 3] for word in re.findall(r"[a-z0-9]+", text.lower()) for i in range(len(word) + 1)}


def reference_similarity(a: str, b: str) -> float:
    x, y = trigrams(a), trigrams(b)
    return len(x & y) / len(x | y) if x | y else 0.0


def forms(doc_id: str) -> list[str]:
    return [doc_id, re.sub(r"^numpy\.", "np.", doc_id), re.sub(r"^numpy\.", "", doc_id), doc_id.rsplit(".", 1)[-1]]


def channel(index, question: str, tenant: str = "public", limit: int = 30):
    with index.reader(tenant) as connection:
        return name_rows(connection, index, question, limit, tenant)


@pytest.mark.parametrize("question", ["np.linalg.slove", "np.wher(x)", "fft.fftshit", "np.su_m and numpy.mena",
                                      "numpy.all_of"])
def test_the_channel_scores_pg_trgm_similarity_and_keeps_what_reaches_the_threshold(pages, question):
    expected = {}
    for path in PAGES:
        doc_id = path[:-3]
        best = max(reference_similarity(token, form) for token in name_tokens(question) for form in forms(doc_id))
        if best >= NAME_THRESHOLD:
            expected[doc_id] = best
    rows = channel(pages, question)
    assert {sp.passage.doc_id: sp.score for sp in rows} == pytest.approx(expected)
    assert [sp.score for sp in rows] == sorted((sp.score for sp in rows), reverse=True)
    assert [sp.rank for sp in rows] == list(range(1, len(rows) + 1)) and all(sp.passage.ordinal == 0 for sp in rows)
    assert rows, "the question must match a page, or the test proves nothing"


@pytest.mark.parametrize("question, page", [("np.linalg.slove", "numpy.linalg.solve"), ("np.wehre", "numpy.where"),
                                            ("fft.fftshit", "numpy.fft.fftshift"), ("np.fft.fftshfit()", "numpy.fft.fftshift")])
def test_a_misspelt_name_finds_its_page_first(pages, question, page):
    assert channel(pages, question)[0].passage.doc_id == page
    assert channel(pages, question, limit=1)[0].passage.doc_id == page


def test_no_name_like_token_no_rows(pages):
    assert channel(pages, "what is the mean of an array") == []


HOSTILE = ["'", "''; DROP TABLE chunks; --", "x' OR '1'='1", "np.where('x')", "%%s %(tokens)s {s} \\", "np.su%m_",
           "np.sum\\x", "Ｗａｌｒｕｓ.ｓｕｍ 🦭", "np.mean " * 2000, "a_b." * 4000]


@pytest.mark.parametrize("question", HOSTILE, ids=lambda q: repr(q[:20]))
def test_hostile_questions_reach_the_channel_only_as_parameters(pages, question):
    question = check_question(question)
    rows = channel(pages, question)
    assert {sp.passage.doc_id + ".md" for sp in rows} <= set(PAGES) and len(rows) <= 30
    with pages.connection.transaction():
        assert pages.connection.execute(pages.sql("SELECT count(*) FROM {s}.chunks")).fetchone()[0] == len(PAGES)


def signature(found):
    return [(sp.passage.chunk_id, sp.score.hex(), sp.rank) for sp in found]


@pytest.mark.parametrize("question", ["np.linalg.solve for a system", "mean of the array", "np.wher"])
def test_defaults_leave_the_candidates_as_they_were(pages, question):
    vector = FakeEncoder().encode([question])[0]
    today = candidates(pages, question, vector, 4, lexical="bm25", constant=RRF_CONSTANT)
    explicit = candidates(pages, question, vector, 4, lexical="bm25", constant=RRF_CONSTANT, dense_weight=1.0,
                          names=False)
    for found in (today, explicit):
        assert found.names == () and not found.name_channel
        # today's fusion, written out: 1/(k + rank) from full text, then from dense, in that order
        scores = {}
        for ranked in (found.full_text, found.dense):
            for sp in ranked:
                scores[sp.passage.chunk_id] = scores.get(sp.passage.chunk_id, 0.0) + 1.0 / (RRF_CONSTANT + sp.rank)
        order = sorted(scores.items(), key=lambda pair: (-pair[1], pair[0]))
        assert [(cid, s.hex()) for cid, s in order] == [(cid, s) for cid, s, _ in signature(found.fused)]
    assert signature(today.fused) == signature(explicit.fused)


def test_dense_alone_is_the_dense_order_and_the_learned_stage_still_reads_it(pages):
    from ragcourse.rag.rerank import LearnedOrder, candidate_features

    question = "np.linalg.solve for a system"
    found = candidates(pages, question, FakeEncoder().encode([question])[0], 4, lexical="none")
    assert found.full_text == () and len(found.dense) == 4
    assert [sp.passage.chunk_id for sp in found.fused] == [sp.passage.chunk_id for sp in found.dense]
    assert [sp.score for sp in found.fused] == [1 / (RRF_CONSTANT + r) for r in range(1, 5)]
    passages, features = candidate_features(question, found.full_text, found.dense)
    assert features[:, :2].tolist() == [[0.0, 0.0]] * 4, "no full-text row: its features are 0, as for any such chunk"
    order = LearnedOrder().reorder(question, found, 4)
    assert order.scored == 4 and len(order.ranked) == 4


def test_a_dense_weight_moves_the_dense_paths_candidates_up(pages):
    question = "the sum of array elements with np.where"
    vector = FakeEncoder().encode([question])[0]
    plain = candidates(pages, question, vector, 6, lexical="bm25")
    heavy = candidates(pages, question, vector, 6, lexical="bm25", dense_weight=1000.0)
    assert [sp.passage.chunk_id for sp in heavy.fused] == [sp.passage.chunk_id for sp in heavy.dense]
    assert [sp.passage.chunk_id for sp in plain.fused] != [sp.passage.chunk_id for sp in heavy.fused], \
        "the paths must disagree, or the test proves nothing"


def test_the_channel_is_fused_third(pages):
    question = "np.wher"
    vector = FakeEncoder().encode([question])[0]
    found = candidates(pages, question, vector, 6, lexical="bm25", names=True)
    assert found.name_channel and found.names[0].passage.doc_id == "numpy.where"
    expected = fuse([list(found.full_text), list(found.dense), list(found.names)], RRF_CONSTANT)
    assert signature(found.fused) == signature(expected)
    assert "names" in found.seconds


def test_each_tenant_sees_its_own_pages_and_a_removed_page_leaves_the_channel(database, tmp_path):
    from ragcourse.rag.store import PgIndex

    root = write_corpus(tmp_path / "two", PAGES)
    index = PgIndex(database, schema=schema_name("name_channel_tenants"), policy=WHOLE_PAGE, encoder=FakeEncoder(),
                    tenant_of=lambda path: "linalg" if "linalg" in path or "fft" in path else "core")
    index.drop()
    try:
        index.refresh(root)
        assert [sp.passage.doc_id for sp in channel(index, "numpy.linalg.solve", "linalg")][0] == "numpy.linalg.solve"
        core = channel(index, "numpy.linalg.solve numpy.fft.fftshift", "core")
        assert core and {sp.passage.doc_id for sp in core} <= {"numpy.sum", "numpy.mean", "numpy.where", "numpy.all"}, \
            "another tenant's exact names are not found; the tenant's own near names are"
        assert {sp.passage.tenant for sp in channel(index, "np.sum np.where np.fft.fftshift", "core")} == {"core"}
        assert channel(index, "np.where", "nobody") == []
        (root / "numpy.where.md").unlink()
        index.refresh(root)
        assert "numpy.where" not in [sp.passage.doc_id for sp in channel(index, "np.where", "core")]
    finally:
        index.drop()
        index.close()


def test_the_memo_serves_the_channels_rows_as_a_prefix(pages):
    from ragcourse.rag.search import PathMemo

    memo = PathMemo(floor=6)
    question = "np.sum np.mean"
    with pages.reader() as connection:
        deep = name_rows(connection, pages, question, 6, "public", memo)
        shallow = name_rows(connection, pages, question, 2, "public", memo)
        fresh = name_rows(connection, pages, question, 2, "public")
    assert signature(shallow) == signature(fresh) == signature(deep[:2]) and memo.served == 1


# ---------------------------------------------------------------- the real corpus

MISSPELT = {"np.linespace": "numpy.linspace", "np.argsrot": "numpy.argsort", "np.linalg.slove": "numpy.linalg.solve"}


@pytest.fixture(scope="module")
def numpy_index(database, tmp_path_factory):
    yield from build_numpy_index(database, tmp_path_factory, "t_rungs_numpy")


@pytest.mark.embeddings("questions", "lab 04")
def test_the_channel_finds_the_misspelt_names_on_the_real_corpus(numpy_index):
    index, _ = numpy_index
    # trigrams rank a near name first at times: np.linalg.slove shares more with slogdet (0.65) than with solve (0.6)
    for name, page in MISSPELT.items():
        assert page in [sp.passage.doc_id for sp in channel(index, name)[:3]], name


@pytest.mark.embeddings("questions", "lab 04")
@pytest.mark.parametrize("name", [pytest.param(name, marks=pytest.mark.xfail(
    strict=True, reason="the channel ranks solve second (below slogdet); full text and dense put other linalg pages "
                        "above it")) if name == "np.linalg.slove" else name for name in MISSPELT])
def test_fused_with_the_channel_a_misspelt_name_puts_its_page_in_the_top_3(numpy_index, name):
    index, encoder = numpy_index
    # fused by plain RRF with the two paths (each list weighing 1), no second stage
    pipeline = DEFAULT_SETTING.changed(second_stage="none", names=True, dense_weight=1.0).pipeline(index, encoder)
    assert MISSPELT[name] in pipeline.ask(name).ranked_pages()[:3]
