"""Lab 04's conventional RAG system in PostgreSQL: ingest, store, search, rerank, assemble, read, trace, health."""
