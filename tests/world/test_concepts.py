import pytest

from ragcourse.world.concepts import CLASSES, FIRST_EDITION, SECOND_EDITION
from ragcourse.world.text import tokenize


@pytest.mark.parametrize("edition", [FIRST_EDITION, SECOND_EDITION])
def test_each_edition_has_four_concepts_per_class_and_no_bridge_tokens(edition):
    assert len(edition.concepts) == 20
    assert [len(edition.in_class(label)) for label in CLASSES] == [4, 4, 4, 4, 4]
    for concept in edition.concepts:
        assert not set(tokenize(concept.document_form)) & set(tokenize(concept.query_form)), concept
    assert len(set(edition.keys)) == 20


def test_editions_differ_where_the_course_differs():
    assert FIRST_EDITION.concept("tier").document_form == "tier threshold"
    assert SECOND_EDITION.concept("tier").document_form == "tier limit"
    assert FIRST_EDITION.filler_words[1] == "region" and SECOND_EDITION.filler_words[1] == "area"
    assert SECOND_EDITION.keys[:4] == ["tier", "unit", "account", "switch"]
