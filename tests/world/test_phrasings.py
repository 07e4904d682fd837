"""Tests of lesson 11's short and long user phrasings (ragcourse.world.phrasings)."""
from __future__ import annotations

import pytest

from ragcourse import COURSE_SEED
from ragcourse.world.concepts import FIRST_EDITION, SECOND_EDITION
from ragcourse.world.corpus import build_world
from ragcourse.world.phrasings import CONNECTOR, PHRASING_STRIDE, PREFIX, SHORT, phrase_queries, short_text
from ragcourse.world.rng import make_rng
from ragcourse.world.text import tokenize

ED = SECOND_EDITION


def course_phrasings(seed: int):
    """The course's loop, written out with its literal 20, 7 and 4."""
    queries = build_world(seed, ED).queries
    keys, common = ED.keys, ED.filler_words
    short, long_ = [], []
    for i, query in enumerate(queries):
        draw = make_rng(seed + PHRASING_STRIDE * i)
        y, o2 = keys[int(draw() * 20)], common[int(draw() * 7)]
        z = keys[int(draw() * 20)]
        short.append(f"{SHORT[query.concept]} {query.text.split()[-1]}")
        long_.append(f"{PREFIX[int(draw() * 4)]} {ED.concept(y).query_form} {o2} "
                     f"{CONNECTOR[int(draw() * 4)]} {query.text} {ED.concept(z).query_form}")
    return queries, short, long_


@pytest.fixture(scope="module")
def phrasings():
    return phrase_queries(build_world(COURSE_SEED, ED).queries, COURSE_SEED, ED)


def test_course_seed_lengths_match_the_course(phrasings):
    assert len(phrasings) == 40
    assert round(sum(len(tokenize(p.short)) for p in phrasings) / 40, 1) == 4.5
    assert round(sum(len(tokenize(p.long)) for p in phrasings) / 40, 1) == 26.5


def test_first_query_at_the_course_seed(phrasings):
    first = phrasings[0]
    assert first.query.text == "how it gets written down form"
    assert first.short == "is it written form"
    assert first.long == ("since this morning accuracy tweak form also i wrote to the relevant department"
                          " how it gets written down form when does it show up")
    assert (first.before, first.after) == ("calib", "restore")
    assert first.text("original") == first.query.text and first.text("long") == first.long


@pytest.mark.parametrize("seed", [COURSE_SEED, 1, 4242, 3000000000])
def test_phrasings_equal_the_course_loop(seed):
    queries, short, long_ = course_phrasings(seed)
    phrasings = phrase_queries(queries, seed, ED)
    assert [p.short for p in phrasings] == short
    assert [p.long for p in phrasings] == long_
    assert [p.query for p in phrasings] == queries


def test_target_is_kept_and_the_original_is_inside_the_long_text(phrasings):
    for p in phrasings:
        assert p.short.split()[-1] == p.query.filler
        assert f" {p.query.text} " in f" {p.long} "
        assert ED.concept(p.before).query_form in p.long and p.long.endswith(ED.concept(p.after).query_form)


def test_short_forms_cover_the_edition_and_are_deterministic(phrasings):
    assert set(SHORT) == set(ED.keys)
    queries = [p.query for p in phrasings]
    assert phrase_queries(queries, COURSE_SEED, ED) == phrasings
    assert phrase_queries(queries, COURSE_SEED + 1, ED) != phrasings
    assert short_text(queries[0]) == phrasings[0].short


def test_bad_arguments_are_refused(phrasings):
    with pytest.raises(ValueError, match="form must be 'short', 'long' or 'original'"):
        phrasings[0].text("medium")
    with pytest.raises(ValueError, match="no short phrasing for the concepts"):
        phrase_queries(build_world(COURSE_SEED, FIRST_EDITION).queries, COURSE_SEED, FIRST_EDITION)
