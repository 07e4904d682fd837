"""The fictional world of lessons 01-16: generator, tokenizer, concepts, corpus, simulated models,
and the per-lesson data built on them. Imports nothing of ``retrieval`` or ``batch``."""
