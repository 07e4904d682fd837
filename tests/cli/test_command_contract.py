"""The one contract of ``python -m ragcourse``: every command a module with ``add_arguments`` and ``run``,
a bad argument one line and exit status 2, a problem outside the arguments one line and status 1,
one ``--jobs`` rule, and the exercise build reached through the command line (issue 41)."""
from __future__ import annotations

import inspect
import json
import subprocess
import sys

import pytest

from ragcourse.batch.contract import MAX_JOBS, CommandError, UsageError, jobs_value
from ragcourse.batch.notebooks import PROJECT_ROOT
from ragcourse.cli import main as cli_main
from ragcourse.cli.main import COMMANDS, build_parser, main
from ragcourse.cli.selection import parse_lessons, parse_selection
from ragcourse.cli import exercises as build
from ragcourse.exercises.notebooks import STUDENT_DIR, student_path
from support.cli import run_main

PROG = "python -m ragcourse"
LESSONS = {n: f"{n:02d}" for n in range(1, 17)}
LABS = {1: "lab 1", 2: "lab 2"}


def bad_arguments(tmp_path) -> dict[str, tuple[list[str], str]]:
    """For every command, arguments it refuses after parsing (in its ``run``, or a check below it) and the word
    the refusal must name."""
    return {
        "run": (["run", "17"], "LESSON"),
        "figures": (["figures", "lab9"], "lab 9"),
        "sweep": (["sweep", "--seeds", "1", "lab1"], "LESSON"),
        "refresh": (["refresh", "0"], "LESSON"),
        "search": (["search", "   "], "QUESTION"),
        "questions": (["questions", "every"], "SET"),
        "prepare": (["prepare", "--check", "--keys", str(tmp_path / "no-such-folder" / "keys.txt")], "--keys"),
        "index": (["index", "--corpus", str(tmp_path / "no-such-folder")], "--corpus"),
        "ask": (["ask", "   "], "question is empty"),          # rag.search.check_question's ValueError
        "grade": (["grade"], "give at least one PATH"),
        "exercises": (["exercises", "99-no-such-set"], "NAME"),
        "train-reranker": (["train-reranker", "--groups", "0"], "groups"),   # rag.cross_encoder.TrainSettings
    }


def test_every_command_module_keeps_the_contract():
    parser, commands = build_parser()
    assert list(commands) == list(COMMANDS)
    for name, (module, help_line) in COMMANDS.items():
        assert callable(module.add_arguments) and callable(module.run), name
        assert list(inspect.signature(module.run).parameters)[:2] == ["args", "out"], name
        assert help_line and f"{PROG} {name}" in cli_main.__doc__, f"{name} is missing from cli.main's usage summary"


def test_every_command_has_a_bad_argument_below():
    assert set(bad_arguments(PROJECT_ROOT)) == set(COMMANDS)


@pytest.mark.parametrize("command", list(COMMANDS))
def test_a_bad_argument_is_one_line_and_status_2(command, tmp_path, capsys):
    argv, named = bad_arguments(tmp_path)[command]
    status, out, err = run_main(argv, capsys)
    assert status == 2 and out == ""
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"{PROG} {command}: error: ") and named in lines[0], err


def test_a_database_that_does_not_answer_is_a_command_error(tmp_path, capsys, monkeypatch):
    """rag.database.DatabaseUnavailable, through the table in cli.main: its message without 'error:', status 1."""
    monkeypatch.setenv("RAGCOURSE_DATABASE_URL", "postgresql://nobody@127.0.0.1:9/none?connect_timeout=2")
    status, out, err = run_main(["index", "--check", "--corpus", str(tmp_path)], capsys)
    assert status == 1 and out == ""
    assert err.startswith(f"{PROG} index: cannot connect to ") and "Traceback" not in err, err
    assert ": error:" not in err and "RAGCOURSE_DATABASE_URL is right" in err


def test_a_command_error_is_one_line_and_status_1_and_a_bug_keeps_its_traceback(monkeypatch, capsys):
    def fails(args, out):
        raise build.BuildError("the student version of 01 does not run top to bottom: code cell 3 raised")

    monkeypatch.setattr(build, "run", fails)
    status, out, err = run_main(["exercises"], capsys)
    assert issubclass(build.BuildError, CommandError)
    assert status == 1 and out == "" and err == f"{PROG} exercises: the student version of 01 does not run top to " \
                                                "bottom: code cell 3 raised\n"

    def breaks(args, out):
        raise KeyError("a bug, not the user's mistake")

    monkeypatch.setattr(build, "run", breaks)
    with pytest.raises(KeyError, match="a bug"):
        main(["exercises"])


def test_one_jobs_rule_for_every_command():
    _, commands = build_parser()
    takes_jobs = {name for name, sub in commands.items()
                  for action in sub._actions if "--jobs" in action.option_strings and action.type is jobs_value}
    offers_jobs = {name for name, sub in commands.items() for action in sub._actions if "--jobs" in action.option_strings}
    assert takes_jobs == offers_jobs == {"run", "figures", "sweep", "refresh", "grade"}
    assert [jobs_value(text) for text in ("1", "64")] == [1, MAX_JOBS] and MAX_JOBS == 64
    for text in ("0", "65", "two", "1.5"):
        with pytest.raises(Exception, match=f"from 1 to 64; got '{text}'"):
            jobs_value(text)


@pytest.mark.parametrize("argv", [["run", "--jobs", "65"], ["grade", "notebooks/exercises", "--jobs", "65"]])
def test_run_and_grade_refuse_the_same_jobs(argv, capsys, monkeypatch):
    monkeypatch.chdir(PROJECT_ROOT)
    status, out, err = run_main(argv, capsys)
    assert status == 2 and err == f"{PROG} {argv[0]}: error: argument --jobs: must be a whole number from 1 to 64; " \
                                  "got '65'\n"


@pytest.mark.parametrize("values, message", [
    (["1-x"], "argument LESSON: must be a number such as 3 or a range such as 2-6; got '1-x'"),
    (["6-2"], "argument LESSON: range '6-2' runs backwards"),
    (["lab1-x"], "argument LESSON: must be a lab such as lab1, a range such as lab1-2, or labs; got 'lab1-x'"),
    (["lab2-1"], "argument LESSON: range 'lab2-1' runs backwards"),
    (["labs", "lab3"], "argument LESSON: no notebook for lab 3 (from 'lab3'); available: 01, 02"),
    (["17"], "argument LESSON: no notebook for lesson 17 (from '17'); available: " + ", ".join(LESSONS.values())),
])
def test_each_kind_of_notebook_gets_its_own_message(values, message):
    with pytest.raises(UsageError) as refused:
        parse_selection(values, LESSONS, LABS)
    assert str(refused.value) == message


def test_parse_lessons_names_a_kind_it_does_not_know():
    with pytest.raises(ValueError, match="kind must be one of lesson, lab; got 'chapter'"):
        parse_lessons(["1"], LESSONS, "chapter")


def test_make_exercises_calls_the_command_line():
    recipe = (PROJECT_ROOT / "Makefile").read_text().split("\nexercises:", 1)[1].split("\n\n", 1)[0]
    assert "-m ragcourse exercises" in recipe
    assert "ragcourse.exercises.build" not in (PROJECT_ROOT / "Makefile").read_text()


def test_the_exercise_build_refuses_a_bad_set_name_from_the_shell():
    done = subprocess.run([sys.executable, "-m", "ragcourse", "exercises", "01-what-is-an-embedding", "lesson-99"],
                          capture_output=True, text=True, cwd=PROJECT_ROOT, timeout=120)
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.startswith(f"{PROG} exercises: error: argument NAME: no master for lesson-99 in ")
    assert "there are 01-what-is-an-embedding, 02-embedding-models" in done.stderr
    assert done.stderr.count("\n") == 1


@pytest.mark.notebooks
def test_the_exercise_build_through_the_command_line_writes_the_committed_student_version(tmp_path, monkeypatch,
                                                                                          capsys):
    """``python -m ragcourse exercises NAME`` builds from the master and runs it: what it writes is what is committed."""
    name = "01-what-is-an-embedding"
    monkeypatch.setattr(build, "STUDENT_DIR", tmp_path / "notebooks" / "exercises")
    status, out, err = run_main(["exercises", name], capsys)
    assert status == 0, err
    assert out == f"wrote notebooks/exercises/{name}.ipynb\n"
    written = json.loads(student_path(name, tmp_path / "notebooks" / "exercises").read_text())
    committed = json.loads(student_path(name, STUDENT_DIR).read_text())
    assert [c["source"] for c in written["cells"]] == [c["source"] for c in committed["cells"]]
    assert [c.get("outputs") for c in written["cells"]] == [c.get("outputs") for c in committed["cells"]]
    assert written["metadata"] == committed["metadata"]
