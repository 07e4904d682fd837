"""The techniques the lessons teach: ranking, exhaustive and approximate search, fusion, chunking,
the retrieval pipeline and its measures. The generic parts (``ranking``, ``fusion``, ``metrics``)
take plain indices, ids and scores, so the labs reuse them on real text."""
