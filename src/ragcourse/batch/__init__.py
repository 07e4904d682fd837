"""The batch machinery behind ``python -m ragcourse``: notebook discovery, the engine that
executes notebooks in pre-started kernels, the seed sweep."""
