

def test_recursive_chunks_with_the_summary_line_differ_from_the_plain_ones_only_by_it():
    """``recursive_chunks(..., summary=True)`` (lab 03's control for headers): the summary line right after
    the name and signature, nothing else changed, and the chunk headings still name their sections."""
    from ragcourse.corpus.apidocs import load_corpus
    from ragcourse.engines.chunking.splitters import HEAD_HEADING, markdown_text, recursive_chunks

    corpus = load_corpus()
    for document in corpus.documents[:60]:
        plain, kept = markdown_text(document), markdown_text(document, summary=True)
        head = plain.split("\n\n", 1)[0]
        assert kept == plain.replace(head, f"{head}\n\n{document.title}", 1)
        chunks = recursive_chunks(document, 800, summary=True)
        assert document.title in chunks[0].text
        assert "".join(c.text for c in chunks).replace("\n", "").replace(" ", "") == kept.replace("\n", "").replace(" ", "")
        named = {HEAD_HEADING} | {section.heading for section in document.sections}
        assert all(set(c.heading.split(", ")) <= named for c in chunks), [c.heading for c in chunks]
