from collections import Counter

from ragcourse.world.concepts import CLASSES, FIRST_EDITION, SECOND_EDITION
from ragcourse.world.corpus import build_world, paragraph_chunks, tag_chunk

SEED = 20260218


def test_first_edition_corpus_statistics_match_the_course():
    world = build_world(SEED, FIRST_EDITION)
    assert len(world.documents) == 200 and len(world.queries) == 40
    assert sum(len(d.paragraphs) for d in world.documents) == 693
    counts = Counter(d.label for d in world.documents)
    assert [counts[c] for c in CLASSES] == [52, 46, 39, 32, 31]


def test_first_document_and_query_match_the_course():
    world = build_world(SEED, FIRST_EDITION)
    doc = world.documents[0]
    assert (doc.code, doc.label, doc.title) == ("BK001", "maintenance", "filter swap procedure")
    assert doc.paragraphs[1] == "calibration record for entry is kept and written together with filter swap"
    assert doc.concepts[0] == doc.main and len(doc.concepts) == len(doc.paragraphs) + 1
    assert doc.text.startswith("filter swap procedure " + doc.paragraphs[0] + " " + doc.paragraphs[1])
    query = world.queries[0]
    assert (query.text, query.concept, query.label) == ("how it gets saved form", "reading", "meter")
    assert query.filler == "form"


def test_world_is_deterministic_and_seed_dependent():
    a, b = build_world(SEED, FIRST_EDITION), build_world(SEED, FIRST_EDITION)
    assert a.documents == b.documents and a.queries == b.queries
    c = build_world(SEED + 1, FIRST_EDITION)
    assert c.documents != a.documents


def test_relevant_counts_cover_every_document():
    world = build_world(SEED, FIRST_EDITION)
    relevant = world.relevant
    assert sum(relevant.values()) == 200
    assert set(relevant) == set(FIRST_EDITION.keys)


def test_second_edition_chunks_tag_the_concepts_they_name():
    world = build_world(SEED, SECOND_EDITION)
    chunks = paragraph_chunks(world.documents, SECOND_EDITION)
    assert len(chunks) == sum(len(d.paragraphs) for d in world.documents)
    first = chunks[0]
    assert first.code == world.documents[0].code
    assert "goes with" in first.text and first.text.endswith("and is filed")
    for chunk in chunks[:50]:
        for key in chunk.concepts:
            assert SECOND_EDITION.concept(key).document_form in chunk.text


def test_tag_chunk_keeps_the_document_and_tags_every_form_it_holds_in_axis_order():
    document = build_world(SEED, SECOND_EDITION).documents[0]
    chunk = tag_chunk(document, "pressure drop for note goes with line leak and is filed", SECOND_EDITION)
    assert (chunk.code, chunk.label, chunk.main) == (document.code, document.label, document.main)
    assert chunk.concepts == ("leak", "pressure")
    assert tag_chunk(document, "water escaping note", SECOND_EDITION).concepts == ()   # query forms do not count
    first = paragraph_chunks([document], SECOND_EDITION)[0]
    assert (first.text, first.concepts) == (
        "filter replacement for term goes with filter replacement and is filed", ("filter",))
