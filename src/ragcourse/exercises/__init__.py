"""Exercises with checks a student can trust, and the grader behind ``python -m ragcourse grade``.

* ``framework``: questions, verdicts ("passed", "not passed yet", "not done yet") and their wording,
  and the registry of the sets (``EXERCISE_SETS``);
* ``reference``: the lessons' reference worlds, cached per seed, that checks compare with;
* ``part1.lesson01`` ... ``part1.lesson06``, ``part2.lesson07`` ... ``part2.lesson16``: each lesson's exercise set;
* ``labs.lab01``, ``labs.lab02``, ``labs.lab03``, ``labs.lab04``: the exercise sets of the Part 3 labs, on real
  text (``labs.shared``: the corpus and questions they read once);
* ``notebooks``: masters and student versions, and making one from the other;
* ``execute``: running a notebook in a fresh kernel with a time limit;
* ``build``: ``make exercises`` (student versions regenerated and executed);
* ``grading``: ``python -m ragcourse grade``; ``judge`` (a submission's supervisor, the checks run outside
  its kernel), ``wire`` (the grader-kernel protocol), ``lending`` (what a check lends the kernel) and
  ``sandbox`` (the submission's kernel: folder, user, deadline).

A student notebook imports its lesson's module (``from ragcourse.exercises.part1 import lesson01 as
exercises``) and calls ``exercises.check("q2", keyword_score)``. Nothing else in the package
imports this subpackage; only the command line does. Importing it prints nothing.
"""
