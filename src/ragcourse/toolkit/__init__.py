"""What a notebook cell uses around the measurement: parameter checks, fixed-width tables,
the house style and deterministic figures, headline numbers for the sweep.
Imports neither ``world`` nor ``retrieval``."""
