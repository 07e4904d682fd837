"""Part 3's chunking, in one place: labs 01-02's passages (``text_chunks``), lab 03's splitters, lab 04's spans and policy."""
