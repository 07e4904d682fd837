"""Lesson 06's query classes and searchable text, checked against the course at its seed."""
import pytest

from ragcourse import COURSE_SEED
from ragcourse.retrieval.fusion import reciprocal_rank_fusion
from ragcourse.retrieval.search import EmbeddingIndex, KeywordIndex
from ragcourse.world.concepts import FIRST_EDITION
from ragcourse.world.corpus import build_world
from ragcourse.world.embedding import EmbeddingModel, length
from ragcourse.world.query_classes import (
    QUERY_CLASS_NAMES,
    class_query_text,
    draw_query_classes,
    searchable_text,
)


@pytest.fixture(scope="module")
def world():
    return build_world(COURSE_SEED, FIRST_EDITION)


@pytest.fixture(scope="module")
def classes(world):
    return draw_query_classes(COURSE_SEED, FIRST_EDITION, world.documents)


def test_first_query_of_each_class_at_the_course_seed(classes):
    assert list(classes) == list(QUERY_CLASS_NAMES) == ["subscriber", "document", "code"]
    assert [classes[name][0].text for name in QUERY_CLASS_NAMES] == [
        "how it gets saved form", "reading procedure form", "SY194 numbered document"]


def test_classes_share_draws_and_the_subscriber_class_is_the_usual_query_set(world, classes):
    assert [len(classes[name]) for name in QUERY_CLASS_NAMES] == [40, 40, 40]
    assert [q.text for q in classes["subscriber"]] == [q.text for q in world.queries]
    for name in QUERY_CLASS_NAMES:
        assert [q.concept for q in classes[name]] == [q.concept for q in world.queries]
        assert all(q.query_class == name for q in classes[name])
    assert [q.code for q in classes["code"]] == [q.code for q in classes["document"]]
    codes = {d.code: d for d in world.documents}
    for query in classes["document"]:
        assert codes[query.code].main == query.concept
        assert query.text.startswith(FIRST_EDITION.concept(query.concept).document_form + " ")


def test_deterministic_and_seed_dependent(world, classes):
    assert draw_query_classes(COURSE_SEED, FIRST_EDITION, world.documents) == classes
    other = build_world(1, FIRST_EDITION)
    assert draw_query_classes(1, FIRST_EDITION, other.documents)["code"][0].text == "TR097 numbered document"


def test_searchable_text_carries_the_code_but_not_into_the_embedding(world, classes):
    model = EmbeddingModel(FIRST_EDITION, projection_seed=COURSE_SEED)
    first = world.documents[0]
    assert searchable_text(first) == first.code + " " + first.text
    assert all(model.embed(searchable_text(d)) == model.embed(d.text) for d in world.documents)
    assert all(length(model.embed(q.text)) == 0.0 for q in classes["code"])


def test_bad_class_and_empty_corpus_are_refused(world):
    with pytest.raises(ValueError, match="query_class must be one of subscriber, document, code"):
        class_query_text("codes", world.documents[0], "form", FIRST_EDITION)
    with pytest.raises(ValueError, match="documents must not be empty"):
        draw_query_classes(COURSE_SEED, FIRST_EDITION, [])


def test_fusion_picks_the_compromise_document_at_the_course_seed(world, classes):
    """The course's example: both searches are right at rank one, the fused list is not."""
    texts = [searchable_text(d) for d in world.documents]
    keyword = KeywordIndex(texts)
    embedding = EmbeddingIndex(EmbeddingModel(FIRST_EDITION, projection_seed=COURSE_SEED), texts)
    query = next(q for q in classes["document"] if q.text == "pressure drop region")
    keyword_order, embedding_order = keyword.rank(query.text), embedding.rank(query.text)
    fused = reciprocal_rank_fusion([keyword_order, embedding_order], 20)
    codes = lambda order: [world.documents[i].code for i in order[:3]]  # noqa: E731
    assert codes(keyword_order) == ["AR002", "AR015", "AR018"]
    assert codes(embedding_order) == ["AR079", "AR088", "AR101"]
    assert codes(fused) == ["AR033", "AR015", "AR018"]
    hits = [sum(world.documents[reciprocal_rank_fusion([keyword.rank(q.text), embedding.rank(q.text)], c)[0]].main
                == q.concept for q in classes["document"]) for c in (5, 20, 60)]
    assert hits == [18, 16, 16]  # 0.4500 / 0.4000 / 0.4000 of 40
