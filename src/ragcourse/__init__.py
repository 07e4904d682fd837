"""ragcourse: the fictional world behind the course "Embeddings and Retrieval-Augmented Generation".

Everything here is a simulator. The corpus, the concepts, the embedding models and the
language model are invented; no real endpoint, institution or document is involved.
Importing the package prints nothing and changes no global state.
"""

COURSE_SEED = 20260218

__all__ = ["COURSE_SEED"]
__version__ = "0.1.0"
