"""The course's cross-encoder: its training data never holds a question, its cache key follows the data, the
code and the settings, two trainings give the same weights, its scores are cached and read back identical,
and a bad parameter is refused by name."""
from __future__ import annotations

import dataclasses
import hashlib
import os
from pathlib import Path

import pytest

from ragcourse.rag.cross_encoder import training_pairs as tp
from ragcourse.rag.cross_encoder.training import TrainSettings, model_key

pytestmark = pytest.mark.embeddings("questions", "lab 04")   # the pairs rank lab 04's chunks by their cached vectors

TINY = TrainSettings(groups=4, negatives=1, max_length=32, batch_groups=2, threads=1, checkpoints=2,
                     learning_rate=1e-3, warmup=0.0)


def tiny_groups() -> list[tp.Group]:
    """Four hand-made groups (a query, its page's text, one other page's text), short enough to train in seconds."""
    rows = [("join arrays end to end", "Join a sequence of arrays along an existing axis.", "Return the sine."),
            ("np.linalg.solve", "# numpy.linalg.solve Solve a linear matrix equation.", "Compute the eigenvalues."),
            ("sort an array", "Return a sorted copy of an array.", "Round to the given number of decimals."),
            ("fft.ifft", "# numpy.fft.ifft Compute the one-dimensional inverse discrete Fourier Transform.",
             "Return evenly spaced numbers over a specified interval.")]
    return [tp.Group(q, "summary", f"page{n}", pos, (neg,), (f"other{n}",)) for n, (q, pos, neg) in enumerate(rows)]


@pytest.fixture(scope="module")
def prepared():
    from ragcourse.rag.cross_encoder.reranker import prepare_groups

    return prepare_groups()


def normalised(text: str) -> str:
    return " ".join(text.lower().split())


def test_no_training_pair_holds_a_question(prepared):
    questions = {normalised(t) for t in tp.question_texts()}
    assert len(questions) > 500   # judged, unanswerable, real and fresh questions were all read
    groups = prepared.groups
    assert len(groups) == TrainSettings().groups
    queries = {normalised(g.query) for g in groups}
    assert not queries & questions
    long_questions = [q for q in questions if len(q) >= 25]
    texts = {normalised(t) for g in groups for t in g.texts}
    inside = [q for q in long_questions for t in texts if q in t]
    assert inside == []
    print(f"{len(groups)} groups, {len(texts)} distinct texts; kinds "
          f"{ {k: sum(g.kind == k for g in groups) for k in tp.KINDS} }; supply dropped {prepared.supply.dropped}")


def test_a_query_equal_to_a_question_is_dropped_and_counted(prepared):
    from ragcourse.corpus.apidocs import load_corpus

    corpus = load_corpus()
    chunks = tp.page_chunks(corpus)
    title = corpus.documents[0].title
    supply = tp.query_supply(corpus, chunks, [f"  {title.upper()} "])
    assert supply.dropped["equal to a question"] == 1
    assert title not in {q.text for q in supply.queries}
    assert len(supply.queries) == len(prepared.supply.queries) - 1


def test_every_group_has_its_page_positive_and_other_pages_negative(prepared):
    chunks = tp.page_chunks(__import__("ragcourse.corpus.apidocs", fromlist=["load_corpus"]).load_corpus())
    by_page: dict[str, list[str]] = {}
    for chunk in chunks:
        by_page.setdefault(chunk.doc_id, []).append(" ".join(tp.headed(chunk).split()))   # header, then text
    for group in prepared.groups:
        assert group.doc_id not in group.negative_pages and len(set(group.negative_pages)) == len(group.negatives)
        positive = " ".join(group.positive.split())
        kept = tp.kept_whole(tp.TrainingQuery(group.query, group.kind, group.doc_id, 0, group.source),
                             TrainSettings().seed, TrainSettings().kept_source)
        if group.kind in ("name", "heading") or kept:
            assert positive in by_page[group.doc_id]
        else:   # the words the query was written from are cut out of every text of its group
            assert group.source and all(normalised(group.source) not in normalised(t) for t in group.texts)


def test_a_share_of_the_cut_kinds_keeps_its_words():
    queries = [tp.TrainingQuery(f"how to do thing {n}", "summary", f"page{n}", 0, f"Do thing {n}.") for n in range(400)]
    kept = [tp.kept_whole(q, 7, 0.3) for q in queries]
    assert 0.2 < sum(kept) / len(kept) < 0.4                      # about the share asked for
    assert kept == [tp.kept_whole(q, 7, 0.3) for q in queries]   # fixed by the seed
    assert not any(tp.kept_whole(q, 7, 0.0) for q in queries) and all(tp.kept_whole(q, 7, 1.0) for q in queries)
    name = tp.TrainingQuery("np.sort", "name", "numpy.sort", 0, "np.sort")
    assert not tp.kept_whole(name, 7, 1.0)                       # names and headings are never cut anyway


def test_the_key_changes_with_the_data_the_code_and_the_settings():
    digest = tp.groups_digest(tiny_groups())
    key = model_key(digest, TINY, "1", base="b")
    assert key == model_key(tp.groups_digest(tiny_groups()), TINY, "1", base="b")
    changed_group = dataclasses.replace(tiny_groups()[0], positive="Join arrays.")
    others = {
        "data": model_key(tp.groups_digest([changed_group, *tiny_groups()[1:]]), TINY, "1", base="b"),
        "order": model_key(tp.groups_digest(tiny_groups()[::-1]), TINY, "1", base="b"),
        "code": model_key(digest, TINY, "2", base="b"),
        "settings": model_key(digest, TINY.changed(max_length=48), "1", base="b"),
        "seed": model_key(digest, TINY.changed(seed=1), "1", base="b"),
        "base model": model_key(digest, TINY, "1", base="c"),
    }
    assert len({key, *others.values()}) == len(others) + 1


@pytest.mark.parametrize("make, name", [
    (lambda: TrainSettings(groups=0), "groups"),
    (lambda: TrainSettings(max_length=8), "max_length"),
    (lambda: TrainSettings(frozen_layers=6), "frozen_layers"),
    (lambda: TrainSettings(learning_rate=0.0), "learning_rate"),
    (lambda: TrainSettings(threads=True), "threads"),
    (lambda: TrainSettings().changed(layers=3), "layers"),
])
def test_a_bad_setting_is_refused_by_name(make, name):
    with pytest.raises(ValueError, match=name):
        make()


def test_bad_parameters_of_the_scorer_and_the_lab_are_refused_by_name(tmp_path):
    from ragcourse.labs.second_stage import curve_subset
    from ragcourse.rag.cross_encoder.reranker import ScoreCache, TrainedCrossEncoder
    from ragcourse.rag.cross_encoder.training import train

    with pytest.raises(ValueError, match="depth"):
        TrainedCrossEncoder(tmp_path, "k", depth=0, cache=ScoreCache(tmp_path / "s.sqlite"))
    with pytest.raises(ValueError, match="count"):
        curve_subset([], 1)
    with pytest.raises(ValueError, match="groups"):
        train([], TINY, tmp_path / "m", progress=False)


def file_hash(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """The tiny groups trained twice with the same settings, once with another seed."""
    from ragcourse.rag.cross_encoder.reranker import quiet_loading
    from ragcourse.rag.cross_encoder.training import train

    folders = {name: tmp_path_factory.mktemp(name) for name in ("first", "second", "other seed")}
    with quiet_loading():
        logs = {name: train(tiny_groups(), TINY.changed(seed=7) if name == "other seed" else TINY, folder,
                            progress=False) for name, folder in folders.items()}
    return folders, logs


@pytest.mark.slow
def test_two_trainings_give_the_same_weights(trained):
    from ragcourse.engines.dense import model_folder
    from safetensors.torch import load_file

    folders, logs = trained
    weights = {name: file_hash(folder / "model.safetensors") for name, folder in folders.items()}
    print(f"losses: {logs['first'].losses}; weights {weights}")
    assert logs["first"].losses == logs["second"].losses
    assert weights["first"] == weights["second"]
    assert weights["other seed"] != weights["first"]
    assert sorted(logs["first"].checkpoints) == [4, 8]
    base = load_file(str(Path(model_folder()) / "model.safetensors"))
    mine = load_file(str(folders["first"] / "model.safetensors"))
    name = next(n for n in mine if n.endswith("encoder.layer.5.output.dense.weight"))
    frozen = next(n for n in mine if n.endswith("encoder.layer.0.output.dense.weight"))
    assert not (mine[name] == base[name.removeprefix("bert.")]).all()   # the upper layers learned
    assert (mine[frozen] == base[frozen.removeprefix("bert.")]).all()    # the frozen ones did not move


@pytest.mark.slow
def test_a_tiny_training_learns_its_groups(tmp_path):
    """Ten passes over the four tiny groups: the listwise loss (ln 2 at chance with two texts a group) falls
    well below chance, the new head moves, and the trained model ranks every group's positive first."""
    import math

    from safetensors.torch import load_file

    from ragcourse.rag.cross_encoder.reranker import compute_scores, quiet_loading
    from ragcourse.rag.cross_encoder.training import new_model, train

    settings = TINY.changed(epochs=10, checkpoints=1)
    with quiet_loading():
        log = train(tiny_groups(), settings, tmp_path / "m", progress=False)
        start = new_model(settings)
    steps_an_epoch = len(tiny_groups()) // settings.batch_groups
    last = sum(log.losses[-steps_an_epoch:]) / steps_an_epoch
    print(f"losses {[round(x, 3) for x in log.losses]}")
    assert last < 0.5 * math.log(2), log.losses
    head = load_file(str(tmp_path / "m" / "model.safetensors"))
    name = next(n for n in head if n.endswith("classifier.weight"))
    assert not (head[name] == dict(start.model.named_parameters())["classifier.weight"].detach()).all()
    from ragcourse.rag.rerank import CrossEncoderReranker

    with quiet_loading():
        model = CrossEncoderReranker(str(tmp_path / "m")).model
    for group in tiny_groups():
        scores = compute_scores(model, [(group.query, t) for t in group.texts])
        assert scores[0] > max(scores[1:]), (group.query, scores)


@pytest.mark.slow
def test_scores_are_cached_and_read_back_identical(trained, tmp_path):
    from ragcourse.rag.cross_encoder.reranker import ScoreCache, TrainedCrossEncoder
    from ragcourse.rag.rerank import rerank
    from ragcourse.rag.passages import Passage

    folders, _ = trained
    cache = ScoreCache(tmp_path / "scores.sqlite")
    scorer = TrainedCrossEncoder(folders["first"], "tiny", depth=3, cache=cache)
    texts = [g.texts[0] for g in tiny_groups()] + ["Return the sine.", "Compute the eigenvalues."]
    first = scorer.score_many([("join arrays", texts), ("solve a system", texts[:2])])
    assert scorer.last_computed == len(texts) + 2 and cache.count("tiny") == len(texts) + 2
    again = TrainedCrossEncoder(folders["first"], "tiny", depth=3, cache=ScoreCache(tmp_path / "scores.sqlite"))
    assert again.score_many([("join arrays", texts), ("solve a system", texts[:2])]) == first
    assert again.last_computed == 0 and again._model is None   # read back without loading the model
    assert scorer.compute([("join arrays", t) for t in texts]) == first[0]
    # through rerank: the first three texts are scored, the other three follow them in incoming order
    passages = [Passage(n, f"p{n}.md", 0, 0, len(t), t) for n, t in enumerate(texts)]
    result = rerank(again, "join arrays", passages, keep=6)
    assert again.last_unscored == 3
    assert [sp.passage.chunk_id for sp in result.ranked][3:] == [3, 4, 5]
    assert sorted(sp.passage.chunk_id for sp in result.ranked[:3]) == [0, 1, 2]
    from types import SimpleNamespace   # the same through the stage's own call, given the whole first stage
    fused = SimpleNamespace(fused=[SimpleNamespace(passage=p) for p in passages])
    assert again.reorder("join arrays", fused, keep=6) == result


@pytest.mark.slow
def test_a_second_call_reads_the_trained_model(monkeypatch, tmp_path):
    from ragcourse.engines.dense import DenseEncoder
    from ragcourse.rag.cross_encoder.reranker import train_or_load

    encoder = DenseEncoder()   # the shared embedding cache, opened before the cache folder moves
    monkeypatch.setenv("RAGCOURSE_CACHE_DIR", str(tmp_path))
    said: list[str] = []
    first = train_or_load(progress=False, settings=TINY, encoder=encoder, report=said.append)
    assert any(line.startswith("training the cross-encoder") for line in said)
    stamp = os.stat(first.folder / "model.safetensors").st_mtime_ns
    said.clear()
    second = train_or_load(progress=False, settings=TINY, encoder=encoder, report=said.append)
    assert not any(line.startswith("training") for line in said)
    assert second.folder == first.folder and os.stat(second.folder / "model.safetensors").st_mtime_ns == stamp
    # no staging folder left; beside the model only its training lock (``reranker.training_lock``)
    assert sorted(p.name for p in (tmp_path / "reranker").iterdir()) == sorted([first.key, f".{first.key}.lock"])


def test_the_combined_weights_are_one_logistic_regression_over_six_features():
    import numpy as np

    from ragcourse.rag.cross_encoder.combined import COMBINED_FEATURES, CombinedWeights

    mean, scale = (1.0, 0.1, 0.5, 0.1, 0.0, -2.0), (2.0, 0.1, 0.1, 0.1, 0.2, 3.0)
    coef, intercept = (0.2, 0.1, 0.4, 0.3, 0.5, 0.7), -3.0
    weights = CombinedWeights.of(mean, scale, coef, intercept)
    x = np.array([[1.5, 0.2, 0.6, 0.0, 1.0, 4.0], [0.0, 0.0, 0.4, 0.5, 0.0, -6.0]])
    direct = intercept + ((x - np.array(mean)) / np.array(scale)) @ np.array(coef)
    assert np.allclose(weights.logits(x), direct, rtol=0, atol=1e-12)
    assert len(COMBINED_FEATURES) == 6 and COMBINED_FEATURES[-1] == "cross-encoder score"
    with pytest.raises(ValueError, match="mean, scale and coef"):
        CombinedWeights.of(mean[:5], scale, coef, intercept)
    with pytest.raises(ValueError, match="scale"):
        CombinedWeights.of(mean, scale[:5] + (0.0,), coef, intercept)


def test_the_command_says_whether_the_model_is_cached(capsys):
    import re

    from ragcourse.cli.main import main

    status = main(["train-reranker", "--estimate"])
    out = capsys.readouterr().out
    assert re.search(r"cross-encoder [0-9a-f]{16} is (cached|not trained yet: about \d+\.\d minutes to train)", out), out
    assert status == (0 if "is cached" in out else 1)


def test_the_trained_cross_encoder_is_a_second_stage(tmp_path):
    from ragcourse.engines.stages import SecondStage
    from ragcourse.rag.cross_encoder.reranker import ScoreCache, TrainedCrossEncoder

    stage = TrainedCrossEncoder(tmp_path, "k", depth=3, cache=ScoreCache(tmp_path / "scores.sqlite"))
    assert isinstance(stage, SecondStage) and callable(stage.reorder)
