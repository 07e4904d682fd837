"""Lab 04's cross-encoder, trained by the course on pairs from the corpus: ``training_pairs`` (the data),
``training`` (the model, its key and its training), ``reranker`` (the cache, the second stage,
``train_or_load``) and ``combined`` (its score as one more feature of the learned combination)."""
