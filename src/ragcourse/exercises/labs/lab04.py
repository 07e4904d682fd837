"""Exercises of lab 04: a tenant kept apart by the database, a health check the lab lacks, and a lost answer traced.

q1 (predict) asks what a role sees through row-level security before any policy names it; q2
(build) is a policy for new tenants, proved against a real PostgreSQL by queries run as each
tenant's role (a spoofed setting, both tables, full text, the other tenants' views); q3 (build)
is a health check for a fault ``PgIndex.health`` does not look for (a chunk missing from the
middle of a source); q4 (build) follows every judged question through its trace and names the
stage that lost the evidence.

Every check that needs a database starts a temporary embedded PostgreSQL of its own
(``lab04_scratch.scratch_index``), fills it with a small subset of the corpus, and stops and deletes it
before it returns, whatever happens; with ``$RAGCOURSE_DATABASE_URL`` set it uses that server
and drops its schema and roles instead.
"""
from __future__ import annotations

from functools import lru_cache
from typing import Any, Callable, Sequence

from ...engines.dense import DenseEncoder
from ...rag.pipeline import Pipeline, Trace
from ...rag.context import ContextBudget
from ...engines.chunking.policy import ChunkPolicy
from ...rag.reader import citation_doc_id
from ...rag.store import READER_ROLE, Check, PgIndex, check_tenant, counts_by_tenant
from .lab04_scratch import (NEW_TENANTS, as_role, create_role, scratch_index, small_subset, team_of, trace_subset, visible,
                            write_files)  # noqa: F401 (write_files: the notebook's exercises.write_files)
from .shared import judged
from ..lending import ReadOnlyIndex
from ..framework import (Exercise, ExerciseSet, Mismatch, call, check_choice, first_hint,
                         require_function, shown)

LOSS_STAGES = ("retrieval", "reranking", "assembly", "reader")
CITED = "cited"           # what lost_at returns when the answer cites a relevant page
PROBES = 10   # lost_at's probes with a page only the full-text path proposed
TIGHT = {"per_path": 5, "keep": 3, "budget": ContextBudget(max_passages=2, max_tokens=400)}


# ---------------------------------------------------------------- q1: predict default deny

DENY_OPTIONS = {"a": "every row of the table", "b": "only the rows of its own tenant",
                "c": "no rows at all", "d": "an error: permission denied"}


@lru_cache(maxsize=1)
def default_view() -> tuple[int, int]:
    """(chunks the table owner sees, chunks a granted role with no policy of its own sees)."""
    with scratch_index("exercise_deny", small_subset()[:8], tenant_of=team_of) as index:
        role = NEW_TENANTS[0][0]
        create_role(index, role)
        owner = sum(counts_by_tenant(index).values())
        with as_role(index, role) as connection:
            seen = connection.execute(index.sql("SELECT count(*) FROM {s}.chunks")).fetchone()[0]
    return owner, seen


def deny_option(seen: int, owner: int) -> str:
    return "c" if seen == 0 else ("a" if seen == owner else "b")


def check_deny(prediction: Any) -> list[str]:
    """PREDICTED_DEFAULT_VIEW against what a granted role without a policy sees."""
    if not isinstance(prediction, str) or prediction.strip().lower().strip("()") not in DENY_OPTIONS:
        # a placeholder or a typo: check_choice says so before anything is measured (no database started)
        return check_choice(prediction, "PREDICTED_DEFAULT_VIEW", DENY_OPTIONS, "c", "", [])
    owner, seen = default_view()
    return check_choice(
        prediction, "PREDICTED_DEFAULT_VIEW", DENY_OPTIONS, deny_option(seen, owner),
        f"the table owner counts {owner} chunks; the new role, with SELECT granted and no policy naming it,"
        f" counts {seen}",
        ["Once row-level security is enabled on a table, a row is visible only if some policy lets the",
         "role see it. No policy for the role means no row: the default is to deny, silently, not with an",
         "error (the error would come from a missing GRANT, which is a different gate). That is why a new",
         "tenant's first symptom is an empty result, and why the fix is a policy, not a wider grant."])


# ---------------------------------------------------------------- q2: build the policies of a new tenant

def _statements(answer: Any) -> list[str]:
    make = require_function(answer, "tenant_policies")
    got = call(make, "tenant_policies", (), "tenant_policies()")
    if isinstance(got, str):
        got = [got]
    if not isinstance(got, (list, tuple)) or not got or not all(isinstance(s, str) and s.strip() for s in got):
        raise Mismatch("tenant_policies()", "a list of SQL statements (strings)", shown(got),
                       'return a list such as ["CREATE POLICY ... ON {s}.chunks ...", ...]')
    return list(got)


def apply_statements(index: PgIndex, statements: Sequence[str], role: str, tenant: str) -> None:
    """Run the statements as the owner, ``{s}``, ``{role}``, ``{tenant}`` and ``{policy}`` filled in; all or nothing."""
    import psycopg
    from psycopg import sql

    with index.connection.transaction():
        for statement in statements:
            try:
                composed = sql.SQL(statement).format(s=sql.Identifier(index.schema), role=sql.Identifier(role),
                                                     tenant=sql.Literal(check_tenant(tenant)),
                                                     policy=sql.Identifier(f"{role}_rows"))
            except (KeyError, IndexError, ValueError) as error:
                raise Mismatch(f"filling in {statement!r}", "placeholders {s}, {role}, {tenant} and {policy} only",
                               f"{type(error).__name__}: {error}",
                               "write the schema as {s}, the role as {role}, the tenant as {tenant} and the"
                               " policy's name as {policy}; a literal brace would need doubling") from None
            try:
                index.connection.execute(composed)
            except psycopg.Error as error:
                raise Mismatch(f"running {statement!r} for role {role}, tenant {tenant}",
                               "a statement PostgreSQL accepts", f"{type(error).__name__}: "
                               f"{str(error).strip().splitlines()[0]}",
                               "run it by hand in the notebook's database to see the whole message") from None


def probe_tenant(index: PgIndex, role: str, tenant: str, owner_view: dict[str, dict[str, int]]) -> None:
    """Mismatch unless every query run as ``role`` returns only ``tenant``'s rows, and all of them.

    ``owner_view`` is table -> tenant -> rows as the table owner counts them.
    """
    other = next(t for t in sorted(owner_view["chunks"]) if t != tenant)
    with as_role(index, role) as connection:
        plain = visible(connection, index)
        connection.execute("SELECT set_config('ragcourse.tenant', %s, true)", [other])
        spoofed = visible(connection, index)
        searched = connection.execute(index.sql(
            "SELECT c.tenant, s.tenant FROM {s}.chunks c JOIN {s}.sources s USING (source_id) "
            "WHERE c.search_text @@ to_tsquery('english', 'array | matrix | transform | return')")).fetchall()
    for table in ("sources", "chunks"):
        leaked = {t: n for t, n in plain[table].items() if t != tenant}
        if leaked:
            raise Mismatch(f"SELECT tenant, count(*) FROM {table} as {role}", f"only {tenant}'s rows",
                           f"other tenants' rows too: {leaked}",
                           f"the role sees other tenants' rows of {table}: USING must compare the row's tenant"
                           " with {tenant}, and the policy must name the role (TO {role})")
    for table in ("sources", "chunks"):
        leaked = {t: n for t, n in spoofed[table].items() if t != tenant}
        if leaked:
            raise Mismatch(f"as {role}: SELECT set_config('ragcourse.tenant', '{other}', true); then"
                           f" SELECT tenant, count(*) FROM {table}", f"still only {tenant}'s rows",
                           f"{other}'s rows: {leaked}",
                           "the tenant can change a session setting itself: key the policy on something the"
                           " tenant cannot choose, the role it runs as ({role}) and the tenant name ({tenant})")
    bad = [pair for pair in searched if pair != (tenant, tenant)]
    if bad:
        raise Mismatch(f"a full-text search as {role}", f"only {tenant}'s chunks and sources",
                       f"{len(bad)} rows of other tenants", "every table the query joins needs the policy")
    for table in ("sources", "chunks"):
        expected = owner_view[table].get(tenant, 0)
        got = plain[table].get(tenant, 0)
        if got != expected:
            raise Mismatch(f"SELECT count(*) FROM {table} as {role}", f"all {expected} of {tenant}'s rows",
                           str(got), f"no policy lets the role see its rows of {table}: write one for each of the"
                           " two tables" if got == 0 else "the policy must let the role see every row whose"
                           " tenant is its own (USING compares the row's tenant with {tenant})")


def check_policies(answer: Any) -> list[str]:
    """tenant_policies() keeps each new tenant's role to its rows, and leaves the lab's readers as they were."""
    statements = _statements(answer)
    with scratch_index("exercise_tenants", small_subset(), tenant_of=team_of) as index:
        owner_view = {table: dict(rows) for table, rows in _owner_counts(index).items()}
        tenants = sorted(owner_view["chunks"])
        before = {}
        for tenant in tenants:
            with index.reader(tenant) as connection:
                before[tenant] = visible(connection, index)
        for role, tenant in NEW_TENANTS:
            create_role(index, role)
            apply_statements(index, statements, role, tenant)
        for tenant in tenants:
            with index.reader(tenant) as connection:
                after = visible(connection, index)
            if after != before[tenant]:
                raise Mismatch(f"the lab's reader ({READER_ROLE}) as tenant {tenant}", shown(str(before[tenant]), 90),
                               shown(str(after), 90), "name the new tenant's role in the policy (TO {role}): a"
                               " policy for every role also adds rows to the other tenants' views")
        for role, tenant in NEW_TENANTS:
            probe_tenant(index, role, tenant, owner_view)
        shown_counts = ", ".join(f"{t} {owner_view['chunks'][t]}" for t in tenants)
    return [f"Both new tenants ({', '.join(f'{t} as {r}' for r, t in NEW_TENANTS)}) see all of their own rows and"
            " none of anyone else's:",
            "in sources and in chunks, through a full-text search, and after setting ragcourse.tenant to another",
            f"tenant's name; the lab's reader still sees exactly what it saw before (chunks: {shown_counts}).",
            "The policies hold in the database itself, so no query the application forgets to filter can leak."]


def _owner_counts(index: PgIndex) -> dict[str, list[tuple[str, int]]]:
    with index.connection.transaction():
        return {table: index.connection.execute(index.sql(
            f"SELECT tenant, count(*) FROM {{s}}.{table} GROUP BY 1 ORDER BY 1")).fetchall()
            for table in ("sources", "chunks")}



# ---------------------------------------------------------------- q3: build a health check for a missing chunk

GAP_NAME = "sources whose chunk ordinals have a gap"


def reference_gaps(index: PgIndex) -> Check:
    """Sources whose chunk ordinals are not 0, 1, ..., n - 1 (a chunk lost from the middle or the start)."""
    with index.connection.transaction():
        paths = [p for (p,) in index.connection.execute(index.sql(
            "SELECT s.path FROM {s}.sources s JOIN {s}.chunks c USING (source_id) GROUP BY s.path "
            "HAVING count(*) <> max(c.ordinal) + 1 ORDER BY 1")).fetchall()]
    return Check(GAP_NAME, not paths, len(paths), tuple(paths[:3]))


def _as_check(got: Any, tried: str) -> Check:
    if not isinstance(got, Check):
        raise Mismatch(tried, "a Check(name, passed, found, examples)", shown(got),
                       "return Check(name, passed, found, examples), imported from ragcourse.rag.store")
    if not isinstance(got.name, str) or not got.name.strip():
        raise Mismatch(tried, "a Check with a name", shown(got.name), "name the check after what it looks for")
    return got


def _gap_faults(index: PgIndex) -> list[tuple[str, list[int]]]:
    """The faults injected: ordinal 1 of one source, ordinals 0 and 1 of another, the last chunk of a third."""
    with index.connection.transaction():
        long = [(p, n) for p, n in index.connection.execute(index.sql(
            "SELECT s.path, count(*) FROM {s}.sources s JOIN {s}.chunks c USING (source_id) GROUP BY s.path "
            "HAVING count(*) >= 3 ORDER BY count(*) DESC, s.path")).fetchall()]
    if len(long) < 3:
        raise RuntimeError("the health check's subset holds fewer than three sources of three chunks or more")
    (first, _), (second, _), (third, n_third) = long[:3]
    return [(first, [1]), (second, [0, 1]), (third, [n_third - 1])]


def _delete(index: PgIndex, path: str, ordinals: Sequence[int]) -> None:
    with index.connection.transaction():
        index.connection.execute(index.sql(
            "DELETE FROM {s}.chunks c USING {s}.sources s WHERE c.source_id = s.source_id AND s.path = %s "
            "AND c.ordinal = ANY(%s)"), [path, list(ordinals)])


def _call_gaps(gaps: Callable, index: PgIndex, tried: str) -> Any:
    """``gaps`` called on a read-only view of ``index`` (what the grader can lend a submission's kernel)."""
    view = ReadOnlyIndex(index)
    try:
        return call(gaps, "ordinal_gaps", (view,), tried)
    finally:
        view.close()


def check_gaps(answer: Any) -> list[str]:
    """ordinal_gaps(index) passes on a sound index and trips, with the right count and examples, on gaps."""
    gaps = require_function(answer, "ordinal_gaps")
    lines = []
    with scratch_index("exercise_health", small_subset(), policy=ChunkPolicy("headings")) as index:
        tried = "ordinal_gaps(index) on a freshly built index"
        got = _as_check(_call_gaps(gaps, index, tried), tried)
        if not got.passed or got.found != 0 or tuple(got.examples) != ():
            raise Mismatch(tried, "passed=True, found=0, examples=()",
                           f"passed={got.passed!r}, found={got.found!r}, examples={shown(tuple(got.examples))}",
                           "a source with n chunks holds ordinals 0 to n - 1: compare count(*) with max(ordinal) + 1")
        faults = _gap_faults(index)
        steps = [faults[2:], faults[:1], faults[1:2]]   # the last chunk first: no gap; then two real ones
        done: list[str] = []
        for step in steps:
            for path, ordinals in step:
                _delete(index, path, ordinals)
                done.append(f"ordinal{'s' if len(ordinals) > 1 else ''} {', '.join(map(str, ordinals))} of {path}")
            tried = f"ordinal_gaps(index) after deleting {'; '.join(done)}"
            expected = reference_gaps(index)   # before the answer runs (it reads the index through a view)
            got = _as_check(_call_gaps(gaps, index, tried), tried)
            mine = (bool(got.passed), got.found, tuple(got.examples))
            theirs = (expected.passed, expected.found, expected.examples)
            if mine != theirs:
                hint = first_hint(mine, [
                    (lambda: (theirs[0], sum(len(o) for p, o in faults if p in expected.examples), theirs[2]),
                     "found counts sources with a gap, not the chunks they lost"),
                    (lambda: (True, 0, ()), "a chunk missing from the middle leaves ordinals 0 and 2 but not 1:"
                     " compare the number of chunks with the highest ordinal + 1, not only the first ordinal"),
                    (lambda: (not theirs[0], theirs[1], theirs[2]), "passed is True when nothing was found")],
                    "found is the number of sources whose ordinals are not 0 .. n - 1, examples the first three"
                    " of their paths in sorted order, passed whether found is 0")
                raise Mismatch(tried, f"passed={theirs[0]}, found={theirs[1]}, examples={shown(theirs[2])}",
                               f"passed={mine[0]}, found={mine[1]}, examples={shown(mine[2])}", hint)
        lab_view = index.health()
        lines += [f"ordinal_gaps agrees with the reference on a sound index and after {len(steps)} injected faults;",
                  f"at the end it reports: {got.name}: {got.found}, e.g. {', '.join(got.examples)}.",
                  "PgIndex.health() on the same damaged index: "
                  + ("every check passed" if lab_view.passed else "FAILED: " + ", ".join(lab_view.failed)) + ".",
                  "A chunk lost from the middle of a source is text no search can find, and nothing else notices.",
                  "(A lost last chunk leaves no gap in the ordinals: catching it takes the file and its chunker.)"]
    return lines


# ---------------------------------------------------------------- q4: build the stage that lost the evidence

def reference_lost_at(trace: Trace, relevant: Sequence[str]) -> str:
    """The first stage after which no relevant page remains; ``cited`` when the answer cites one."""
    wanted = set(relevant)
    if not wanted & (set(trace.documents("full text")) | set(trace.documents("dense"))):
        return "retrieval"
    if not wanted & set(trace.documents("reranked")):
        return "reranking"
    if not wanted & set(trace.documents("admitted")):
        return "assembly"
    if not wanted & {citation_doc_id(c) for c in trace.answer.citations}:
        return "reader"
    return CITED


def _variants(trace: Trace, relevant: Sequence[str]) -> list[tuple[Callable[[], Any], str]]:
    wanted = set(relevant)

    def dense_only():
        if not wanted & set(trace.documents("dense")):
            return "retrieval"
        return reference_lost_at(trace, relevant)

    def admitted_only():
        if not wanted & set(trace.documents("admitted")):
            return "retrieval"
        return reference_lost_at(trace, relevant)

    return [(dense_only, "a relevant page from either path counts: look at the full-text list as well as the"
                         " dense one"),
            (admitted_only, "walk the stages in order (the two paths, the reranked list, the admitted context,"
                            " the answer) and name the first one after which no relevant page is left")]


@lru_cache(maxsize=1)
def reference_traces() -> tuple[tuple[str, tuple[Trace, ...]], ...]:
    """Judged questions' traces under the lab's settings and under tight ones: (setting, traces)."""
    encoder = DenseEncoder()
    texts = [q.text for q in judged()]
    with scratch_index("exercise_traces", trace_subset(), encoder=encoder) as index:
        lab = Pipeline(index, encoder)
        tight = Pipeline(index, encoder, per_path=TIGHT["per_path"], keep=TIGHT["keep"], budget=TIGHT["budget"])
        return (("the lab's settings", tuple(lab.ask_many(texts))),
                ("tight settings (5 per path, keep 3, 2 passages, 400 tokens)", tuple(tight.ask_many(texts))))


def check_lost_at(answer: Any) -> list[str]:
    """lost_at(trace, relevant) names the same stage as the reference for every judged question, two settings."""
    lost_at = require_function(answer, "lost_at")
    runs = reference_traces()
    checked = 0
    tally = {}
    for setting, traces in runs:
        for question, trace in zip(judged(), traces):
            tried = f"lost_at(trace of {question.qid} {question.text[:36]!r} under {setting}, {question.relevant})"
            got = call(lost_at, "lost_at", (trace, question.relevant), tried)
            expected = reference_lost_at(trace, question.relevant)
            if got != expected:
                hint = first_hint(got, _variants(trace, question.relevant),
                                  f"return the first of {', '.join(LOSS_STAGES)} after which none of the relevant"
                                  f" pages is left (pages: Trace.documents(stage); the answer's citations name"
                                  f" source#ordinal), or {CITED!r} when the answer cites one")
                if expected == CITED:
                    hint = f"this answer cites a relevant page ({', '.join(trace.answer.citations)}): return {CITED!r}"
                raise Mismatch(tried, shown(expected), shown(got), hint)
            checked += 1
            tally.setdefault(setting, {}).setdefault(expected, 0)
            tally[setting][expected] += 1
    # Probes: pages that only the full-text path proposed, asked about as if they were the relevant ones,
    # so that an answer reading one path only cannot agree by luck (on these questions dense finds
    # nearly everything full text finds).
    probes = 0
    for question, trace in zip(judged(), runs[0][1]):
        only_words = [d for d in trace.documents("full text") if d not in set(trace.documents("dense"))]
        if not only_words or probes >= PROBES:
            continue
        pages = (only_words[0],)
        tried = f"lost_at(trace of {question.qid} {question.text[:36]!r}, {pages}) (a page only full text proposed)"
        got = call(lost_at, "lost_at", (trace, pages), tried)
        expected = reference_lost_at(trace, pages)
        if got != expected:
            raise Mismatch(tried, shown(expected), shown(got), first_hint(got, _variants(trace, pages),
                           "a page that either path proposed was retrieved: go on to the reranked list"))
        probes += 1
    lines = [f"lost_at agrees with the reference on {checked} traces ({len(judged())} judged questions, two"
             f" settings) and on {probes} probes with a page only full text proposed. Where the evidence was lost:"]
    for setting, counts in tally.items():
        lines.append(f"  {setting}: " + ", ".join(f"{counts.get(s, 0)} {s}" for s in (*LOSS_STAGES, CITED)))
    lines.append("Each count points at a different repair: a path that never finds the page, a reranker that")
    lines.append("drops it, a budget that has no room for it, or a reader that reads it and cites another.")
    return lines


EXERCISES = ExerciseSet("lab04-postgres-baseline", "A PostgreSQL baseline", [
    Exercise("q1", "predict", "a role that no policy names", ("PREDICTED_DEFAULT_VIEW",), check_deny),
    Exercise("q2", "build", "row-level security for new tenants", ("tenant_policies",), check_policies),
    Exercise("q3", "build", "a health check for a missing chunk", ("ordinal_gaps",), check_gaps),
    Exercise("q4", "build", "the stage that lost the evidence", ("lost_at",), check_lost_at),
], seconds=240.0)
check = EXERCISES.check
