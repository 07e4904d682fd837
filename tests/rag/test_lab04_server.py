"""Lab 04 on a server of one's own (issue 40): the privileges ``index`` needs, tenants loaded from folders,
a reader that cannot choose its tenant, and health checks whose named repair works.

Roles are created in the temporary embedded server as its superuser; the commands log in as
them over the server's socket (the embedded server trusts local connections).
"""
from __future__ import annotations

import json
import os
import re
from urllib.parse import parse_qs, urlsplit

import psycopg
import pytest
from psycopg import sql

from ragcourse.cli.main import main
from ragcourse.rag.schema import reader_role
from ragcourse.rag.store import PgIndex
from support.database import (CORPUS, HEALTH_FAULTS, SMALL, TENANT_A_FILES, FakeEncoder, owner_execute, two_tenants,
                              write_corpus)


@pytest.fixture(scope="module")
def server(database):
    """(superuser connection, a function user, dbname -> URL) on the module's server."""
    admin = psycopg.connect(database.uri, autocommit=True)
    if not admin.execute("SELECT rolsuper FROM pg_roles WHERE rolname = current_user").fetchone()[0]:
        pytest.skip("needs a superuser to create roles (the embedded server's)")
    parts = urlsplit(database.uri)
    host = parse_qs(parts.query).get("host", [parts.hostname or "127.0.0.1"])[0]

    def url(user: str, dbname: str = "postgres") -> str:
        port = f"&port={parts.port}" if parts.port else ""
        return f"postgresql://{user}@/{dbname}?host={host}{port}"

    yield admin, url
    admin.close()


def as_superuser(server, dbname: str, *statements: str) -> None:
    admin, url = server
    with psycopg.connect(url(admin.info.user, dbname), autocommit=True) as connection:
        for statement in statements:
            connection.execute(statement)


def run(argv, capsys, url=None):
    previous = os.environ.get("RAGCOURSE_DATABASE_URL")
    if url:
        os.environ["RAGCOURSE_DATABASE_URL"] = url
    try:
        status = main(argv)
    except SystemExit as exit_:
        status = exit_.code
    finally:
        if previous is None:
            os.environ.pop("RAGCOURSE_DATABASE_URL", None)
        else:
            os.environ["RAGCOURSE_DATABASE_URL"] = previous
    captured = capsys.readouterr()
    return status, captured.out, captured.err


@pytest.fixture(scope="module")
def model():
    from ragcourse.engines.dense import ModelUnavailable, load_model

    try:
        load_model()
    except ModelUnavailable as missing:
        pytest.skip(str(missing))


@pytest.fixture
def notes(tmp_path, monkeypatch):
    monkeypatch.setenv("RAGCOURSE_CACHE_DIR", str(tmp_path / "cache"))
    return write_corpus(tmp_path / "notes", {"a.md": "# Walruses\n\nThe walrus eats clams on the sea floor.\n"})


def the_error(err: str) -> str:
    """The one line after the ``database:`` line, checked to be the only one."""
    lines = [line for line in err.strip().splitlines() if not line.startswith("database: ")]
    assert len(lines) == 1 and "Traceback" not in err, err
    return lines[0]


# ---------------------------------------------------------------- 1. privileges, one line each

def fresh_database(server, name: str, owner: str | None = None) -> None:
    admin, _ = server
    admin.execute(sql.SQL("DROP DATABASE IF EXISTS {}").format(sql.Identifier(name)))
    admin.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)) +
                  (sql.SQL(" OWNER {}").format(sql.Identifier(owner)) if owner else sql.SQL("")))


def fresh_role(server, name: str, options: str = "LOGIN") -> None:
    admin, _ = server
    admin.execute(sql.SQL("DROP ROLE IF EXISTS {}").format(sql.Identifier(name)))
    admin.execute(sql.SQL(f"CREATE ROLE {{}} {options}").format(sql.Identifier(name)))


def schema_absent(server, dbname: str, schema: str = "notes") -> bool:
    admin, url = server
    with psycopg.connect(url(admin.info.user, dbname), autocommit=True) as connection:
        return connection.execute("SELECT to_regnamespace(%s) IS NULL", [schema]).fetchone()[0]


@pytest.mark.embeddings
def test_a_database_owner_without_createrole_gets_one_line_and_nothing_written(server, model, notes, capsys):
    fresh_role(server, "owner_nocr")
    fresh_database(server, "db_owner", "owner_nocr")
    as_superuser(server, "db_owner", "CREATE EXTENSION vector")
    status, _, err = run(["index", "--corpus", str(notes), "--schema", "notes"], capsys, server[1]("owner_nocr", "db_owner"))
    line = the_error(err)
    assert status == 1
    assert "lacks CREATEROLE (to create the reader roles ragcourse_reader, ragcourse_reader_public)" in line
    assert 'CREATE ROLE "ragcourse_reader" NOLOGIN; GRANT "ragcourse_reader" TO "owner_nocr";' in line
    assert "Nothing was written" in line and schema_absent(server, "db_owner")


@pytest.mark.embeddings
def test_the_reader_roles_created_beforehand_need_no_createrole(server, model, notes, capsys):
    """The README's SQL for roles created by an administrator: then index, check and ask all work."""
    fresh_role(server, "owner_pre")
    fresh_database(server, "db_pre", "owner_pre")
    as_superuser(server, "db_pre", "CREATE EXTENSION vector")
    for role in ("ragcourse_reader", "ragcourse_reader_public"):
        as_superuser(server, "postgres", f"DO $$ BEGIN IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = '{role}') "
                                         f"THEN CREATE ROLE {role} NOLOGIN; END IF; END $$",
                     f"GRANT {role} TO owner_pre")
    url = server[1]("owner_pre", "db_pre")
    status, out, err = run(["index", "--corpus", str(notes), "--schema", "notes"], capsys, url)
    assert status == 0 and "every check passed" in out, err
    status, out, err = run(["ask", "what does the walrus eat", "--schema", "notes", "--json", "--reader", "extractive"],
                           capsys, url)
    assert status == 0 and json.loads(out)["answer"]["citations"], err


@pytest.mark.embeddings
def test_a_role_granted_nothing_on_the_role_it_needs_is_told_to_get_membership(server, model, notes, capsys):
    fresh_role(server, "owner_nomember", "LOGIN CREATEROLE")
    fresh_database(server, "db_nomember", "owner_nomember")
    as_superuser(server, "db_nomember", "CREATE EXTENSION vector")
    fresh_role(server, "ragcourse_reader_orphan", "NOLOGIN")   # exists, owned by nobody the login may use
    status, _, err = run(["index", "--corpus", str(notes), "--schema", "notes", "--tenant", "orphan"], capsys,
                         server[1]("owner_nomember", "db_nomember"))
    line = the_error(err)
    assert status == 1 and re.search(r"membership in (ragcourse_reader, )?ragcourse_reader_orphan\b", line)
    assert 'GRANT "ragcourse_reader_orphan" TO "owner_nomember";' in line and schema_absent(server, "db_nomember")


@pytest.mark.embeddings
def test_a_role_without_create_on_the_database_gets_one_line(server, model, notes, capsys):
    fresh_role(server, "nocreate", "LOGIN CREATEROLE")
    fresh_database(server, "db_nocreate")
    as_superuser(server, "db_nocreate", "CREATE EXTENSION vector")
    status, _, err = run(["index", "--corpus", str(notes), "--schema", "notes"], capsys, server[1]("nocreate", "db_nocreate"))
    line = the_error(err)
    assert status == 1 and "lacks CREATE on database db_nocreate (to create schema notes)" in line
    assert 'GRANT CREATE ON DATABASE "db_nocreate" TO "nocreate";' in line and schema_absent(server, "db_nocreate")


@pytest.mark.embeddings
def test_a_role_that_may_not_create_the_vector_extension_gets_one_line(server, model, notes, capsys):
    fresh_role(server, "novector")
    fresh_database(server, "db_novector", "novector")
    status, _, err = run(["index", "--corpus", str(notes)], capsys, server[1]("novector", "db_novector"))
    line = the_error(err)
    assert status == 1 and "may not create the extension vector in database db_novector" in line
    assert "CREATE EXTENSION vector;" in line


@pytest.mark.embeddings
def test_a_privilege_the_server_refuses_anyway_is_one_line(server, model, notes, capsys):
    """Another role's index: the reader session cannot take the tenant's role (the server's own refusal)."""
    fresh_role(server, "intruder", "LOGIN")
    as_superuser(server, "postgres", "GRANT CREATE ON DATABASE postgres TO intruder")
    admin, url = server
    status, out, err = run(["index", "--corpus", str(notes), "--schema", "someone_elses"], capsys, url(admin.info.user))
    assert status == 0, err
    status, _, err = run(["ask", "walrus", "--schema", "someone_elses", "--reader", "extractive"], capsys,
                         server[1]("intruder"))
    line = the_error(err)
    assert status == 1 and "the database refused a reader session for tenant 'public'" in line
    assert "README" in line


# ---------------------------------------------------------------- 2. tenants loaded from folders

@pytest.mark.database
@pytest.mark.embeddings
def test_two_folders_load_two_tenants_and_ask_answers_from_each_alone(model, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("RAGCOURSE_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("RAGCOURSE_DATABASE_URL", raising=False)
    a = write_corpus(tmp_path / "a", {"notes.md": "The walrus eats clams on the sea floor.\n",
                                      "more.md": "Walruses haul out on the ice.\n"})
    b = write_corpus(tmp_path / "b", {"notes.md": "The volcano erupts lava and ash every spring.\n"})
    for folder, tenant in ((a, "team-a"), (b, "team-b")):
        status, out, err = run(["index", "--corpus", str(folder), "--tenant", tenant, "--schema", "shared"], capsys)
        assert status == 0 and f"{len(list(folder.iterdir()))} added" in out, err
    answers = {}
    for tenant in ("team-a", "team-b"):
        status, out, err = run(["ask", "what does the walrus eat", "--schema", "shared", "--tenant", tenant,
                                "--json", "--reader", "extractive"], capsys)
        assert status == 0, err
        answers[tenant] = json.loads(out)
    rows = lambda result: [r["citation"] for stage in ("full_text", "dense", "fused") for r in result[stage]]  # noqa: E731
    assert answers["team-a"]["answer"]["citations"] and "walrus" in answers["team-a"]["answer"]["text"]
    assert set(c.split("#")[0] for c in rows(answers["team-b"])) == {"notes.md"}   # b's only file
    assert "walrus" not in answers["team-b"]["answer"]["text"].lower()
    # refreshing one tenant leaves the other's rows: a file deleted from a is removed from a only
    (a / "more.md").unlink()
    status, out, _ = run(["index", "--corpus", str(a), "--tenant", "team-a", "--schema", "shared", "--refresh"], capsys)
    assert status == 0 and "1 removed" in out and "every check passed" in out
    status, out, _ = run(["index", "--corpus", str(b), "--tenant", "team-b", "--schema", "shared", "--check"], capsys)
    assert status == 0 and "index: 1 sources" in out
    status, _, err = run(["index", "--corpus", str(b), "--tenant", "team-a", "--schema", "shared"], capsys)
    assert status == 1 and "was built from" in the_error(err)


@pytest.mark.parametrize("tenant", ["a b", "x'; DROP TABLE sources; --", "", "é" * 3, "t" * 65])
def test_a_hostile_tenant_name_is_refused_before_any_database(tenant, capsys):
    status, _, err = run(["index", "--corpus", ".", "--tenant", tenant], capsys)
    assert status == 2 and "argument --tenant: tenant must be 1-64 letters" in err


def test_long_and_mixed_case_tenants_get_distinct_valid_roles():
    assert reader_role("A") != reader_role("a") and reader_role("public") == "ragcourse_reader_public"
    long = reader_role("t" * 64)
    assert len(long) <= 63 and long != reader_role("t" * 63 + "u")


# ---------------------------------------------------------------- 3. a reader that cannot choose its tenant

@pytest.fixture
def tenant_index(database, tmp_path):
    index = PgIndex(database, "t_reader_choice", SMALL, FakeEncoder(), tenant_of=two_tenants)
    index.drop()
    index.refresh(write_corpus(tmp_path / "c", CORPUS))
    yield index
    index.drop()
    index.close()


def test_a_tenants_own_login_reads_its_rows_and_cannot_choose_another(server, tenant_index):
    admin, url = server
    a_role = reader_role("a")
    admin.execute(sql.SQL("ALTER ROLE {} LOGIN").format(sql.Identifier(a_role)))
    try:
        expected = owner_count(tenant_index, "a")
        with psycopg.connect(url(a_role), autocommit=True) as connection:
            count = lambda: connection.execute(tenant_index.sql(  # noqa: E731
                "SELECT count(*), count(*) FILTER (WHERE tenant <> 'a') FROM {s}.chunks")).fetchone()
            assert count() == (expected, 0)
            connection.execute("SET ragcourse.tenant = 'b'")      # the setting chose the tenant in schema version 2
            assert count() == (expected, 0)
            paths = {p for (p,) in connection.execute(tenant_index.sql("SELECT path FROM {s}.sources"))}
            assert paths == TENANT_A_FILES
            tenants = connection.execute(tenant_index.sql("SELECT tenant FROM {s}.tenants")).fetchall()
            assert tenants == [("a",)]
            lexemes = connection.execute(tenant_index.sql("SELECT DISTINCT tenant FROM {s}.lexemes")).fetchall()
            assert lexemes == [("a",)]
            for other in (reader_role("b"), "ragcourse_reader"):
                with pytest.raises(psycopg.errors.InsufficientPrivilege):
                    connection.execute(sql.SQL("SET ROLE {}").format(sql.Identifier(other)))
            with pytest.raises(psycopg.errors.InsufficientPrivilege):
                connection.execute(tenant_index.sql("ALTER TABLE {s}.chunks DISABLE ROW LEVEL SECURITY"))
    finally:
        admin.execute(sql.SQL("ALTER ROLE {} NOLOGIN").format(sql.Identifier(a_role)))


def test_a_login_granted_the_tenants_role_reads_only_as_it(server, tenant_index):
    """A login of its own, member of tenant a's role: sees nothing as itself, a's rows as that role, never b's."""
    admin, url = server
    fresh_role(server, "app_a")
    admin.execute(sql.SQL("GRANT {} TO app_a").format(sql.Identifier(reader_role("a"))))
    with psycopg.connect(url("app_a"), autocommit=True) as connection:
        chunks = tenant_index.sql("SELECT count(*) FILTER (WHERE tenant = 'a'), count(*) FILTER (WHERE tenant = 'b') "
                                  "FROM {s}.chunks")
        assert connection.execute(chunks).fetchone() == (0, 0)   # no tenant is mapped to app_a itself
        connection.execute(sql.SQL("SET ROLE {}").format(sql.Identifier(reader_role("a"))))
        connection.execute("SET ragcourse.tenant = 'b'")
        assert connection.execute(chunks).fetchone() == (owner_count(tenant_index, "a"), 0)


def owner_count(index: PgIndex, tenant: str) -> int:
    with index.connection.transaction():
        return index.connection.execute(index.sql("SELECT count(*) FROM {s}.chunks WHERE tenant = %s"),
                                        [tenant]).fetchone()[0]


# ---------------------------------------------------------------- 4. every failed check is repaired by its command

def tenant_moved_in_sql(index, corpus):
    owner_execute(index, "UPDATE {s}.chunks SET tenant = 'b' WHERE source_id = (SELECT source_id FROM {s}.sources "
                         "WHERE path = 'beta.txt')")
    owner_execute(index, "UPDATE {s}.sources SET tenant = 'b' WHERE path = 'beta.txt'")


def lexeme_counts_broken(index, corpus):
    owner_execute(index, "UPDATE {s}.lexemes SET chunks = chunks + 5 WHERE lexeme = 'walrus'")


def collection_broken(index, corpus):
    owner_execute(index, "UPDATE {s}.collection SET total_length = total_length + 7")


def statistics_deleted(index, corpus):
    owner_execute(index, "DELETE FROM {s}.lexemes")
    owner_execute(index, "DELETE FROM {s}.collection")


STATISTICS_FAULTS = [pytest.param(f, id=f.__name__.replace("_", " ")) for f in
                     (tenant_moved_in_sql, lexeme_counts_broken, collection_broken, statistics_deleted)]


@pytest.mark.parametrize("fault", [p.values[0] for p in HEALTH_FAULTS] + [p.values[0] for p in STATISTICS_FAULTS],
                         ids=[p.id for p in HEALTH_FAULTS] + [p.id for p in STATISTICS_FAULTS])
def test_every_failed_check_names_a_repair_and_the_repair_works(database, tmp_path, fault, request):
    corpus = write_corpus(tmp_path / "corpus", CORPUS)
    index = PgIndex(database, f"t_repair_{abs(hash(request.node.name)) % 10 ** 8}", SMALL, FakeEncoder(),
                    tenant_of=lambda path: "a")
    index.drop()
    try:
        index.refresh(corpus)
        fault(index, corpus)
        report = index.health(corpus)
        assert not report.passed
        failed = [line for line in report.lines() if line.lstrip().startswith("FAIL")]
        assert failed and all("(fix: " in line for line in failed)
        if any(c.repair == "files" for c in report.checks if not c.passed):   # a directory where the file was
            (corpus / "beta.txt").rmdir()
        index.refresh(corpus)
        repaired = index.health(corpus)
        assert repaired.passed, repaired.lines()
    finally:
        index.drop()
        index.close()


@pytest.mark.database
@pytest.mark.embeddings
def test_the_cli_check_names_the_command_and_refresh_repairs_broken_statistics(model, notes, capsys):
    status, out, err = run(["index", "--corpus", str(notes), "--tenant", "stats", "--schema", "stats"], capsys)
    assert status == 0, err
    from ragcourse.rag.database import open_database

    database = open_database()
    try:
        index = PgIndex(database, "stats")
        owner_execute(index, "UPDATE {s}.lexemes SET chunks = chunks + 3")
        index.close()
    finally:
        database.close()
    status, out, _ = run(["index", "--corpus", str(notes), "--tenant", "stats", "--schema", "stats", "--check"], capsys)
    assert status == 1
    assert (f"(fix: python -m ragcourse index --corpus {notes} --schema stats --tenant stats --refresh)" in out
            and "FAIL  tenants whose BM25 term statistics" in out)
    status, out, _ = run(["index", "--corpus", str(notes), "--tenant", "stats", "--schema", "stats", "--refresh"], capsys)
    assert status == 0 and "1 unchanged" in out and "every check passed" in out
