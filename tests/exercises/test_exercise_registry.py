"""The exercise sets' registry (``framework.EXERCISE_SETS``): each key is its set's own name, in its own module."""
from __future__ import annotations

import importlib
import pkgutil

import pytest

from ragcourse.exercises import labs, part1, part2
from ragcourse.exercises.framework import EXERCISE_SETS, is_lab_set, load_set, set_number


@pytest.mark.parametrize("name", list(EXERCISE_SETS))
def test_each_sets_registry_key_is_its_own_name(name):
    """A set module copied from another and left with the other's name (or registered under another's key)
    fails here; so does a key whose module is not the lesson's or lab's of its number."""
    module = importlib.import_module(EXERCISE_SETS[name])
    assert module.EXERCISES.name == name and load_set(name) is module.EXERCISES
    number = set_number(name)
    expected = (f"ragcourse.exercises.labs.lab{number:02d}" if is_lab_set(name) else
                f"ragcourse.exercises.part{1 if number <= 6 else 2}.lesson{number:02d}")
    assert EXERCISE_SETS[name] == expected


def test_every_set_module_is_registered():
    """A module that defines ``EXERCISES`` but is missing from the registry is never graded."""
    defined = []
    for package in (part1, part2, labs):
        for info in pkgutil.iter_modules(package.__path__):
            module = importlib.import_module(f"{package.__name__}.{info.name}")
            if hasattr(module, "EXERCISES"):
                defined.append(module.__name__)
    assert sorted(defined) == sorted(EXERCISE_SETS.values())
