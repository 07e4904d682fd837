"""The command line, ``python -m ragcourse``.

``main`` builds the parser from ``COMMANDS`` and holds the one error handler; each command is a
module with ``add_arguments`` and ``run``: ``run``, ``figures``, ``sweep``, ``refresh`` (sharing
``selection``, the choice of lessons and labs), ``search``, ``questions``, ``prepare``, ``index`` and
``ask`` (sharing ``postgres``), and, from ``ragcourse.exercises``, ``grading`` (grade) and ``build``
(exercises).
"""
