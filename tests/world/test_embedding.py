import pytest

from ragcourse.world.concepts import FIRST_EDITION
from ragcourse.world.embedding import EmbeddingModel, cosine, dot, length, projection_matrix, unit

SEED = 20260218


@pytest.fixture
def model():
    return EmbeddingModel(FIRST_EDITION, projection_seed=SEED)


def test_embedding_is_deterministic_unit_length_and_matches_the_course(model):
    vector = model.embed("how it gets saved form")
    assert vector == model.embed("how it gets saved form")
    assert len(vector) == 32
    assert abs(length(vector) - 1.0) < 1e-12
    assert " ".join(f"{x:+.3f}" for x in vector[:6]) == "-0.018 -0.155 -0.145 -0.101 +0.243 +0.028"


def test_both_surface_forms_reach_the_same_concept_in_domain(model):
    a, b = model.embed("reading procedure"), model.embed("how it gets saved")
    assert cosine(a, b) == pytest.approx(1.0)


def test_out_of_domain_model_ignores_query_forms_and_smears_filler_words(model):
    outside = model.with_settings(in_domain=False)
    weights = outside.concept_weights("weak flow region")
    assert weights == [0.05] * 20
    assert model.concept_weights("weak flow region")[FIRST_EDITION.keys.index("pressure")] == 1.0
    assert outside.concept_weights("pressure drop")[FIRST_EDITION.keys.index("pressure")] == 1.0


def test_text_without_concepts_embeds_to_the_zero_vector(model):
    assert model.embed("nothing relevant here") == [0.0] * 32
    assert unit([0.0, 0.0]) == [0.0, 0.0]


def test_projection_seed_and_dimension_change_the_vector(model):
    other = model.with_settings(projection_seed=SEED + 1)
    assert other.embed("tier threshold") != model.embed("tier threshold")
    assert len(model.with_settings(dim=8).embed("tier threshold")) == 8
    assert projection_matrix(SEED, 20)[0] != projection_matrix(SEED + 1, 20)[0]


def test_raw_vector_length_grows_with_repeated_concepts(model):
    once, twice = model.raw("valve inspection"), model.raw("valve inspection valve inspection")
    assert length(once) == length(twice)    # presence counts, not frequency
    both = model.raw("valve inspection tap shutoff routine")
    assert length(both) == pytest.approx(2 * length(once))
    assert dot(once, once) == pytest.approx(length(once) ** 2)
