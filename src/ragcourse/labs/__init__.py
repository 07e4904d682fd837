"""The labs' own measurements, on top of the engines and the RAG system: lab 01's failures, lab 03's practice, lab 04's ladder."""
