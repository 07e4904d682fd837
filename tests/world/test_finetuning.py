"""Lesson 15's world: validity stamps, the refresh and the labelled training examples."""
import pytest

from ragcourse.world.concepts import SECOND_EDITION
from ragcourse.world.corpus import build_world
from ragcourse.world.finetuning import (
    TRAINING_SIZE,
    ValidityStamps,
    read_stamp,
    stamp_text,
    stamped_chunks,
    training_examples,
    validity_stamps,
)
from ragcourse.world.llm import FineTunedModel
from ragcourse.world.rng import make_rng

COURSE_SEED = 20260218


@pytest.fixture(scope="module")
def world():
    return build_world(COURSE_SEED, SECOND_EDITION)


def test_course_seed_refresh_matches_the_course():
    stamps = validity_stamps(COURSE_SEED, SECOND_EDITION)
    assert stamps.stale == ["unit", "account", "switch", "faultcode", "pressure", "crew", "index",
                            "planned", "periodic"]
    assert stamps.trained["tier"] == "y01a" and stamps.trained["calib"] == "y20a"
    assert stamps.current["unit"] == "y02b" and stamps.current["tier"] == "y01a"


@pytest.mark.parametrize("seed", [1, 4242, 3000000000])
def test_stamps_follow_the_course_formula(seed):
    stamps = validity_stamps(seed, SECOND_EDITION)
    for i, key in enumerate(SECOND_EDITION.keys):
        version = "b" if make_rng(seed + 31 * (i + 1))() < 0.45 else "a"
        assert stamps.current[key] == f"y{i + 1:02d}{version}"
    assert stamps == validity_stamps(seed, SECOND_EDITION)


def test_refresh_share_extremes():
    assert validity_stamps(COURSE_SEED, SECOND_EDITION, refresh_share=0.0).stale == []
    assert len(validity_stamps(COURSE_SEED, SECOND_EDITION, refresh_share=1.0).stale) == 20


def test_course_training_set(world):
    training = training_examples(COURSE_SEED, world.documents)
    assert len(training) == TRAINING_SIZE == 48
    assert training[:6] == ["tier", "crew", "valve", "notice", "pressure", "planned"]
    assert len(set(training)) == 20 and len(set(training[:12])) == 9
    assert sum(q.concept in validity_stamps(COURSE_SEED, SECOND_EDITION).stale for q in world.queries) == 13


def test_training_prefixes_do_not_depend_on_size(world):
    longer = training_examples(COURSE_SEED, world.documents, 60)
    assert longer[:48] == training_examples(COURSE_SEED, world.documents)
    assert training_examples(COURSE_SEED, world.documents, 0) == []


@pytest.mark.parametrize("bad", [-1, 2.0, True, None])
def test_training_size_is_checked(world, bad):
    with pytest.raises(ValueError, match="n must be a non-negative integer"):
        training_examples(COURSE_SEED, world.documents, bad)
    with pytest.raises(ValueError, match="at least one document"):
        training_examples(COURSE_SEED, [], 3)


def test_stamped_chunks_end_with_the_stamp_in_force(world):
    stamps = validity_stamps(COURSE_SEED, SECOND_EDITION)
    chunks = stamped_chunks(world.documents, SECOND_EDITION, stamps.current)
    assert len(chunks) == 693
    assert chunks[0].text == ("filter replacement for term goes with filter replacement and is filed"
                              " effective y19a")
    assert all(read_stamp(c.text) == stamps.current[c.main] for c in chunks)


def test_stamp_text_and_read_stamp():
    assert stamp_text("valve check", "y18b") == "valve check effective y18b"
    assert read_stamp("valve check effective y18b") == "y18b"
    assert read_stamp("valve check") is None and read_stamp("valve check effective") is None


def test_fine_tuned_model_quotes_the_snapshot_or_the_context(world):
    stamps = ValidityStamps(trained={"tier": "y01a"}, current={"tier": "y01b"})
    model = FineTunedModel(SECOND_EDITION, COURSE_SEED, ["tier"], stamps.trained)
    assert model.solve("which band am i in note").stamp == "y01a"
    context = [stamp_text("tier limit for note goes with tier limit and is filed", "y01b")]
    assert model.solve("which band am i in note", context).stamp == "y01b"
