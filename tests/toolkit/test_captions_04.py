"""Lesson 04's figure (scan agreement against comparisons per query) against its caption.

The plotted points are recomputed with the package exactly as the notebook's cells 6, 22 and 25
do at the course seed; each test asserts one claim the caption or the reading under the figure
makes, and checks that the committed notebook still makes it, so that a changed caption forces a
look at its test. The figure's description (its output's text and alt, written by cell 26 from the
plotted points) is recomputed from the same points and compared with the committed one.
"""
import json
from functools import lru_cache

from ragcourse.batch.notebooks import NOTEBOOKS_DIR
from ragcourse.toolkit.figures import numbers_not_plotted, values_output
from ragcourse.retrieval.index import build_bucket_index, build_graph, neighbour_ranking
from ragcourse.retrieval.metrics import overlap_recall
from ragcourse.retrieval.ranking import top_k
from ragcourse.world.concepts import FIRST_EDITION
from ragcourse.world.corpus import build_world
from ragcourse.world.embedding import EmbeddingModel, cosine

SEED, K, DIM, ENTRY = 20260218, 5, 32, 0
BUCKET_COUNTS = (8, 16, 25)                       # the bucket counts of BUCKET_GRID
TABLE_DEGREES = (8, 16, 32, 48)                   # DEGREES, the graph table's rows
NOTEBOOK = NOTEBOOKS_DIR / "04-vector-databases.ipynb"
FIGURE_NAME = '"04-recall-vs-comparisons"'


def caption_and_reading() -> tuple[str, str]:
    """The markdown cell that introduces the figure (before the cell computing its points) and the one after it."""
    cells = json.loads(NOTEBOOK.read_text(encoding="utf-8"))["cells"]
    texts = ["".join(c["source"]) for c in cells]
    figure = next(n for n, c in enumerate(cells) if c["cell_type"] == "code" and FIGURE_NAME in texts[n])
    markdown = [n for n, c in enumerate(cells) if c["cell_type"] == "markdown"]
    return texts[max(n for n in markdown if n < figure)], texts[min(n for n in markdown if n > figure)]


@lru_cache(maxsize=4)
def figure_points(seed: int) -> dict:
    """Cell 25's points: per bucket count a list of (probes, comparisons, agreement); per degree the same and reachability."""
    world = build_world(seed, FIRST_EDITION)
    model = EmbeddingModel(world.edition, projection_seed=seed, dim=DIM)
    document_vectors = [model.embed(d.text) for d in world.documents]
    query_vectors = [model.embed(q.text) for q in world.queries]
    n_queries = len(query_vectors)
    baseline = [top_k([cosine(q, v) for v in document_vectors], K) for q in query_vectors]
    buckets = {}
    for count in BUCKET_COUNTS:
        index = build_bucket_index(document_vectors, count, seed)
        points = []
        for probes in [p for p in (1, 2, 3, 4, 6, 8) if p <= count]:
            results = [index.search(v, probes, K) for v in query_vectors]
            points.append((probes, sum(r.comparisons for r in results) / n_queries,
                           sum(overlap_recall(r.ids, baseline[n]) for n, r in enumerate(results)) / n_queries))
        buckets[count] = points
    similarity_lists = neighbour_ranking(document_vectors)
    graph, reachable = [], {}
    for degree in sorted(set(range(8, 65, 8)) | set(TABLE_DEGREES)):
        built = build_graph(document_vectors, degree, similarity_lists)
        walks = [built.search(v, K, entry=ENTRY) for v in query_vectors]
        graph.append((degree, sum(w.comparisons for w in walks) / n_queries,
                      sum(overlap_recall(w.ids, baseline[n]) for n, w in enumerate(walks)) / n_queries))
        reachable[degree] = built.reachable(ENTRY)
    return {"buckets": buckets, "graph": graph, "reachable": reachable, "documents": len(document_vectors)}


def at(line, x):
    """The height of a polyline of (label, comparisons, agreement) points at comparisons ``x``."""
    for (_, x0, y0), (_, x1, y1) in zip(line, line[1:]):
        if x0 <= x <= x1:
            return y0 if x1 == x0 else y0 + (y1 - y0) * (x - x0) / (x1 - x0)
    raise ValueError(x)


def below_where_overlapping(lower, upper):
    """Whether ``lower`` lies strictly under ``upper`` over the comparisons both lines span."""
    start, end = max(lower[0][1], upper[0][1]), min(lower[-1][1], upper[-1][1])
    if start > end:
        return None
    xs = {start, end} | {x for _, x, _ in lower + upper if start <= x <= end}
    return all(at(lower, x) < at(upper, x) for x in xs)


def by_probes(count):
    return {probes: (comparisons, agreement) for probes, comparisons, agreement in figure_points(SEED)["buckets"][count]}


def test_one_line_per_bucket_count_and_more_points_than_the_tables():
    caption, _ = caption_and_reading()
    assert "One line per bucket count, its points the probe settings; one line for the graph, its points the degrees." in caption
    assert "more probe settings and degrees than the tables show" in caption
    points = figure_points(SEED)
    assert sum(len(line) for line in points["buckets"].values()) == 18 > 6      # cell 25 prints 18; the table has 6 rows
    assert len(points["graph"]) == 8 > len(TABLE_DEGREES)


def test_full_scan_reaches_full_agreement_at_200_comparisons():
    caption, _ = caption_and_reading()
    assert "perfect agreement with itself at 200 comparisons" in caption
    assert figure_points(SEED)["documents"] == 200      # the star: every document scored once, agreement 1 by definition


def test_16_and_25_buckets_first_reach_full_agreement_with_4_probes():
    _, reading = caption_and_reading()
    assert "The 16- and 25-bucket lines climb steeply and reach full agreement with 4 probes, at 69.2 and 61.7 comparisons" in reading
    for count, printed in ((16, "69.2"), (25, "61.7")):
        line = by_probes(count)
        assert line[3][1] < 1.0 == line[4][1]
        assert f"{line[4][0]:.1f}" == printed
        assert line[4][0] < 200 / 2          # far left of the full scan


def test_8_bucket_line_climbs_more_slowly_and_needs_all_eight():
    _, reading = caption_and_reading()
    assert "The 8-bucket line climbs more slowly (0.5800 with 1 probe, then about 0.91 and 0.96)" in reading
    assert "reaches 1.0 only with all eight buckets open, just right of the dotted line" in reading
    eight = figure_points(SEED)["buckets"][8]
    line = by_probes(8)
    assert f"{line[1][1]:.4f}" == "0.5800"
    assert (round(line[2][1], 2), round(line[3][1], 2)) == (0.91, 0.96)
    assert [probes for probes, _, agreement in eight if agreement == 1.0] == [8]
    assert 200 < line[8][0] <= 210 and line[8][0] - 200 == 8           # eight representatives on top of the scan
    for count in (16, 25):
        assert below_where_overlapping(eight, figure_points(SEED)["buckets"][count]) is True


def test_graph_line_below_every_bucket_line_where_they_overlap():
    _, reading = caption_and_reading()
    assert "The graph line lies below every bucket line wherever their comparison counts overlap." in reading
    points = figure_points(SEED)
    for line in points["buckets"].values():
        assert below_where_overlapping(points["graph"], line) is True


def test_graph_line_rises_from_the_start_then_climbs_unevenly():
    _, reading = caption_and_reading()
    assert ("it rises from 0.0800 at degree 8 to 0.1750 at degree 16 and about 0.33 at degree 24, then to 0.5250 at degree 32,"
            " the first degree of the table at which the entry reaches all 200 documents") in reading
    assert "level at degree 40, 0.7650 at 48, lower again at 56 and about 0.85 at 64" in reading
    points = figure_points(SEED)
    agreement = {degree: value for degree, _, value in points["graph"]}
    assert [f"{agreement[d]:.4f}" for d in (8, 16, 32, 48)] == ["0.0800", "0.1750", "0.5250", "0.7650"]
    assert agreement[8] < agreement[16] < agreement[24] < agreement[32]
    assert abs(agreement[24] - 0.33) <= 0.005 + 1e-9 and abs(agreement[64] - 0.85) <= 0.005 + 1e-9      # "about", to the hundredth
    assert agreement[40] == agreement[32] and agreement[56] < agreement[48]
    assert [d for d in TABLE_DEGREES if points["reachable"][d] == 200][0] == 32


def test_step_costs_of_the_graph_and_the_bucket_lines():
    _, reading = caption_and_reading()
    assert "Each of its steps costs roughly 4 to 24 comparisons, while the bucket lines' steps run from under 10 to nearly 50." in reading
    points = figure_points(SEED)

    def steps(line):
        return [x1 - x0 for (_, x0, _), (_, x1, _) in zip(line, line[1:])]

    graph_steps = steps(points["graph"])
    bucket_steps = [step for line in points["buckets"].values() for step in steps(line)]
    assert 3.5 <= min(graph_steps) <= 4.5 and 23.5 <= max(graph_steps) <= 24.5
    assert min(bucket_steps) < 10 and 45 <= max(bucket_steps) < 50


def committed_figure_outputs() -> tuple[str, str]:
    """The committed figure's description (text/plain of the one output whose image/png has an alt) and the
    text/plain of the values table shown under it."""
    cells = json.loads(NOTEBOOK.read_text(encoding="utf-8"))["cells"]
    outputs = [o for c in cells if c["cell_type"] == "code" for o in c.get("outputs", [])]
    described = [n for n, o in enumerate(outputs) if o.get("metadata", {}).get("image/png", {}).get("alt")]
    assert len(described) == 1, "one described figure"
    figure = outputs[described[0]]
    text = "".join(figure["data"]["text/plain"])
    assert figure["metadata"]["image/png"]["alt"] == text
    return text, "".join(outputs[described[0] + 1]["data"]["text/plain"])


def figure_description(points: dict) -> str:
    """The description cell 26 writes, from the recomputed points (agreement at .4f, comparisons at .1f)."""
    graph = points["graph"]
    bucket_texts = []
    for count, line in points["buckets"].items():
        best = max(line, key=lambda point: point[2])
        bucket_texts.append(f"{count} buckets from {line[0][2]:.4f} at {line[0][1]:.1f}, reaching {best[2]:.4f} at {best[1]:.1f}")
    below = all(below_where_overlapping(graph, line) is not False for line in points["buckets"].values())
    return (f"Scan agreement with the exhaustive top {K} against comparisons per query. Bucket lines: "
            + "; ".join(bucket_texts) + f". The graph line, {'below' if below else 'not below'} every bucket line"
            f" where they overlap, runs from {graph[0][2]:.4f} at {graph[0][1]:.1f} to {graph[-1][2]:.4f} at"
            f" {graph[-1][1]:.1f}; the exhaustive search: 1.0000 at {points['documents']}.")


def test_figure_description_is_written_from_the_plotted_points():
    description, values = committed_figure_outputs()
    points = figure_points(SEED)
    assert description == figure_description(points)
    lines = [*points["buckets"].values(), points["graph"]]
    agreements = [agreement for line in lines for _, _, agreement in line] + [1.0]          # the star at 1.0
    comparisons = [f"{x:.1f}" for line in lines for _, x, _ in line] + [points["documents"]]
    # "top 5" is in the axis label, the bucket counts in the legend
    assert numbers_not_plotted(description, [agreements, comparisons], ".4f", allowed=[K, *BUCKET_COUNTS]) == []
    assert "The graph line, below every bucket line where they overlap" in description
    # the figure has more points than the two tables print, so they follow as a table
    table = [["line", "setting", "comparisons per query", f"scan agreement (top {K})"],
             *[[f"bucket index, {count} buckets", f"probes {probes}", f"{x:.1f}", agreement]
               for count, line in points["buckets"].items() for probes, x, agreement in line],
             *[["neighbourhood graph", f"degree {degree}", f"{x:.1f}", agreement] for degree, x, agreement in points["graph"]],
             ["exhaustive search", "every document", str(points["documents"]), 1.0]]
    assert values == values_output(table, ".4f")["text/plain"]
