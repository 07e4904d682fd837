"""Part 3's real corpus (numpy's API reference, read from the installed package) and its question sets."""
