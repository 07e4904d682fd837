"""Part 3's shared engines: chunk, encode (dense), index and search (lexical, BM25, TF-IDF), fuse, filter."""
