"""Exercise sets of Part 1 (lessons 01-06, embeddings and vector search): one module a lesson."""
