"""``python -m ragcourse``: the command line lives in ``ragcourse.cli`` (``cli.main`` parses and dispatches)."""
from ragcourse.cli.main import entry_point

if __name__ == "__main__":
    entry_point()
