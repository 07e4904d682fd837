"""Part 3's corpus: the API reference of the installed numpy, one document per public object.

Real text that nobody on this project wrote, present on every machine that installs the
pinned numpy, and read offline with ``inspect``. Each docstring is parsed into its
sections by numpydoc's ``NumpyDocString`` (the parser numpy's own documentation uses).

What is in it, and what is left out on purpose:

- ``numpy``, ``numpy.linalg`` and ``numpy.fft``: every public function, ufunc and class;
- ``numpy.random``: its classes, ``default_rng`` and every public method of ``Generator``.
  The legacy module-level functions (``numpy.random.normal`` and fifty more) are bound
  methods of one hidden ``RandomState`` and repeat ``Generator``'s pages almost word for
  word; they would only add near-duplicates that compete for the same questions.
- What real questions ask for beyond those (see ``queries.real_questions``):
  ``numpy.lib.stride_tricks`` (``sliding_window_view``, ``as_strided``); the ``assert_*``
  functions of ``numpy.testing`` (not its test-runner helpers); the power-series module
  ``numpy.polynomial.polynomial`` (``polyfit``, ``Polynomial``; the other five families
  repeat its pages with other bases); ``numpy.strings``; the functions of ``numpy.ma`` that
  have no top-level namesake (``masked_where``, ``filled``: the others repeat a top-level
  page for masked input); and the methods of ``ndarray`` that have no top-level function of
  the same name (``item``, ``tolist``, ``view``: ``a.sum`` and the rest point to ``numpy.sum``).
  ``numpy.char`` is left out: the legacy twin of ``numpy.strings``, its pages repeat them.
- Constants, modules and index helpers (``pi``, ``r_``, ``newaxis``) have no page of their own.
- The ``Examples`` and ``References`` sections are not indexed: doctest code and citations
  (they would also double the text to embed). Every other section is.

A document's id is its fully qualified public name; an object reachable under several
names is one document, filed under the first name in module order (the name that
matches the object's own ``__name__`` first), with the others kept as ``aliases``.
The summary line is the document's ``title`` and is never part of its ``text``: the
self-retrieval queries ask for a document with its own summary.
"""
from __future__ import annotations

import hashlib
import importlib
import inspect
import json
import warnings
from dataclasses import asdict, dataclass
from functools import lru_cache
from pathlib import Path
from typing import Iterator, NamedTuple, Sequence

MODULES = ("numpy", "numpy.linalg", "numpy.fft", "numpy.random", "numpy.lib.stride_tricks", "numpy.testing",
           "numpy.polynomial.polynomial", "numpy.strings", "numpy.ma")
INDEXED_SECTIONS = ("Extended Summary", "Parameters", "Returns", "Yields", "Receives", "Other Parameters",
                    "Raises", "Warns", "Warnings", "Attributes", "Methods", "See Also", "Notes")
LEFT_OUT_SECTIONS = ("Examples", "References")
FUNCTION_TYPES = ("function", "_ArrayFunctionDispatcher", "builtin_function_or_method",
                  "cython_function_or_method")
RANDOM_FUNCTIONS = ("default_rng",)


@dataclass(frozen=True)
class Section:
    """One parsed section of a docstring: its heading and its text (paragraphs split by blank lines)."""

    heading: str
    text: str


@dataclass(frozen=True)
class ApiDocument:
    """One public numpy object's reference page."""

    doc_id: str
    module: str
    kind: str                      # function, ufunc, class or method
    title: str                     # the summary line
    signature: str
    sections: tuple[Section, ...]  # the indexed sections, in docstring order
    see_also: tuple[str, ...]      # See Also references resolved to document ids
    aliases: tuple[str, ...]
    numpy_version: str

    @property
    def text(self) -> str:
        """What is indexed: the name and signature, then every indexed section; never the summary."""
        return "\n\n".join(self._parts(summary=False))

    def searched_text(self) -> str:
        """``text`` with the summary line after the name and signature.

        What an index built for people's questions holds: the summary is often the page's best
        evidence. Only self-retrieval, whose queries are these summaries, must search ``text``.
        """
        return "\n\n".join(self._parts(summary=True))

    def _parts(self, summary: bool) -> list[str]:
        head = self.doc_id + (self.signature[self.signature.index("("):] if "(" in self.signature else "")
        return ([head] + ([self.title] if summary and self.title else [])
                + [f"{section.heading}\n\n{section.text}" for section in self.sections])

    def markdown(self, summary: bool = True) -> str:
        """The page as Markdown: the id as title, the summary (unless ``summary=False``), then a heading per section."""
        lines = [f"# {self.doc_id}", ""] + ([self.title, ""] if summary else [])
        if self.signature:
            lines += ["```", self.signature, "```", ""]
        for section in self.sections:
            lines += [f"## {section.heading}", "", section.text, ""]
        return "\n".join(lines).rstrip("\n") + "\n"


class SearchedPage(NamedTuple):
    """A page as a chunker sees it (``doc_id`` and ``text``), here with its summary line kept."""

    doc_id: str
    text: str


def with_summaries(documents: Sequence[ApiDocument]) -> list[SearchedPage]:
    """Each page with its summary line indexed (``ApiDocument.searched_text``), ready for ``chunk_corpus``."""
    return [SearchedPage(d.doc_id, d.searched_text()) for d in documents]


@dataclass(frozen=True)
class ApiCorpus:
    """The documents in id order, with the numpy version they were read from."""

    documents: tuple[ApiDocument, ...]
    numpy_version: str

    def __len__(self) -> int:
        return len(self.documents)

    @property
    def by_id(self) -> dict[str, ApiDocument]:
        """Documents by id."""
        return {d.doc_id: d for d in self.documents}

    @property
    def alias_table(self) -> dict[str, str]:
        """Every public name (ids and aliases) mapped to its document id."""
        table = {}
        for document in self.documents:
            table[document.doc_id] = document.doc_id
            for alias in document.aliases:
                table[alias] = document.doc_id
        return table

    def fingerprint(self) -> str:
        """sha256 of the canonical JSON of every document (sorted keys, id order, UTF-8)."""
        payload = json.dumps([asdict(d) for d in self.documents], sort_keys=True,
                             ensure_ascii=False, separators=(",", ":"))
        return hashlib.sha256(payload.encode("utf-8")).hexdigest()

    def characters(self) -> int:
        """Characters of indexed text over the whole corpus."""
        return sum(len(d.text) for d in self.documents)


def _kind(obj: object) -> str | None:
    """The document kind of a module attribute, or None when it gets no page."""
    type_name = type(obj).__name__
    if type_name == "ufunc":
        return "ufunc"
    if inspect.isclass(obj):
        return "class"
    if type_name in FUNCTION_TYPES:
        return "function"
    return None


def _module_names(module_name: str, module) -> list[str]:
    """The public names of a module that may get a page (see the module docstring for the rules)."""
    if module_name in ("numpy", "numpy.linalg", "numpy.fft", "numpy.random"):
        return sorted(n for n in dir(module) if not n.startswith("_"))
    names = sorted(getattr(module, "__all__", None) or [n for n in dir(module) if not n.startswith("_")])
    if module_name == "numpy.testing":
        return [n for n in names if n.startswith("assert")]
    if module_name == "numpy.ma":
        top = importlib.import_module("numpy")
        return [n for n in names if not hasattr(top, n)]
    return names


def _public_objects() -> Iterator[tuple[str, object, str]]:
    """(public name, object, kind) for every object that gets a page, in module order."""
    for module_name in MODULES:
        module = importlib.import_module(module_name)
        names = _module_names(module_name, module)
        own_name_first = sorted(names, key=lambda n: n != getattr(getattr(module, n), "__name__", None))
        for name in own_name_first:
            obj = getattr(module, name)
            kind = _kind(obj)
            if kind is None or not getattr(obj, "__doc__", None):
                continue
            if module_name == "numpy.random" and kind == "function" and name not in RANDOM_FUNCTIONS:
                continue
            yield f"{module_name}.{name}", obj, kind
    generator = importlib.import_module("numpy.random").Generator
    for name in sorted(n for n in dir(generator) if not n.startswith("_")):
        method = getattr(generator, name)
        if callable(method) and method.__doc__:
            yield f"numpy.random.Generator.{name}", method, "method"
    numpy = importlib.import_module("numpy")
    for name in sorted(n for n in dir(numpy.ndarray) if not n.startswith("_") and not hasattr(numpy, n)):
        method = getattr(numpy.ndarray, name)
        if callable(method) and method.__doc__:
            yield f"numpy.ndarray.{name}", method, "method"


def _join_lines(lines: Sequence[str]) -> str:
    """Docstring lines as text: trailing spaces dropped, runs of blank lines made one."""
    text = "\n".join(line.rstrip() for line in lines).strip("\n")
    while "\n\n\n" in text:
        text = text.replace("\n\n\n", "\n\n")
    return text


def _render_section(heading: str, value: object) -> str:
    """A parsed section's text: parameters as ``name : type`` then their description."""
    if heading == "See Also":
        entries = []
        for names, description in value:
            entry = ", ".join(name for name, _role in names)
            entries.append(entry + (" : " + " ".join(description).strip() if description else ""))
        return "\n".join(entries)
    if heading in ("Parameters", "Returns", "Yields", "Receives", "Other Parameters", "Raises", "Warns",
                   "Attributes", "Methods"):
        blocks = []
        for parameter in value:
            header = " : ".join(part for part in (parameter.name, parameter.type) if part)
            body = _join_lines(parameter.desc)
            blocks.append(header + ("\n" + body if body else ""))
        return "\n\n".join(blocks)
    return _join_lines(value)


def _parse(doc: str) -> dict:
    """numpydoc's parse of a docstring, its warnings about unknown sections silenced."""
    from numpydoc.docscrape import NumpyDocString

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return NumpyDocString(inspect.cleandoc(doc))


def _see_also_names(parsed: dict) -> list[str]:
    return [name for names, _ in parsed["See Also"] for name, _role in names]


def _resolve(name: str, table: dict[str, str], module: str) -> str | None:
    """A See Also name (``concatenate``, ``linalg.inv``, ``numpy.stack``) as a document id."""
    name = name.strip().strip("`").removeprefix("~").removesuffix("()")
    for candidate in (name, f"numpy.{name}", f"{module}.{name}", f"numpy.random.Generator.{name}"):
        if candidate in table:
            return table[candidate]
    return None


@lru_cache(maxsize=1)
def load_corpus() -> ApiCorpus:
    """The corpus from the installed numpy, read in a fresh interpreter (once per process).

    A fresh interpreter, because other libraries edit numpy's docstrings when they are
    imported: scipy, which scikit-learn imports, appends an "Array API Standard Support"
    note to ``numpy.sinc``'s. Read in the notebook's own process, the corpus would then
    depend on what had been imported before.
    """
    import subprocess
    import sys

    reader = f"import sys; from {__name__} import _read_corpus, corpus_to_json; " \
             "sys.stdout.write(corpus_to_json(_read_corpus()))"
    done = subprocess.run([sys.executable, "-c", reader], capture_output=True, text=True, encoding="utf-8")
    if done.returncode != 0:
        raise RuntimeError(f"reading numpy's reference failed:\n{done.stderr.strip()}")
    return corpus_from_json(done.stdout)


def corpus_to_json(corpus: ApiCorpus) -> str:
    """The corpus as JSON (the canonical form the fingerprint hashes, plus the version)."""
    return json.dumps({"numpy_version": corpus.numpy_version, "documents": [asdict(d) for d in corpus.documents]},
                      ensure_ascii=False)


def corpus_from_json(text: str) -> ApiCorpus:
    """The inverse of ``corpus_to_json``."""
    data = json.loads(text)
    documents = tuple(ApiDocument(**{**d, "sections": tuple(Section(**s) for s in d["sections"]),
                                     "see_also": tuple(d["see_also"]), "aliases": tuple(d["aliases"])})
                      for d in data["documents"])
    return ApiCorpus(documents, data["numpy_version"])


def _read_corpus() -> ApiCorpus:
    """The corpus from numpy as imported in this process (``load_corpus`` calls it in a fresh one)."""
    import numpy

    first_name: dict[int, tuple[str, object, str]] = {}
    aliases: dict[int, list[str]] = {}
    for name, obj, kind in _public_objects():
        key = id(obj)
        if key in first_name:
            aliases[key].append(name)
        else:
            first_name[key], aliases[key] = (name, obj, kind), []
    parsed = {key: _parse(obj.__doc__) for key, (_, obj, _) in first_name.items()}
    drafts = []
    for key, (doc_id, obj, kind) in first_name.items():
        doc = parsed[key]
        title = " ".join(doc["Summary"]).strip()
        if not title:
            continue
        sections = tuple(Section(h, text) for h in INDEXED_SECTIONS if doc[h]
                         for text in [_render_section(h, doc[h])] if text)
        drafts.append((doc_id, obj, kind, title, " ".join(doc["Signature"].split()), sections,
                       tuple(sorted(aliases[key])), _see_also_names(doc)))
    table = {name: draft[0] for draft in drafts for name in (draft[0], *draft[6])}
    documents = []
    for doc_id, obj, kind, title, signature, sections, alias_names, see_also in drafts:
        module = doc_id.rsplit(".", 2 if kind == "method" else 1)[0]
        resolved = []
        for name in see_also:
            target = _resolve(name, table, module)
            if target and target != doc_id and target not in resolved:
                resolved.append(target)
        documents.append(ApiDocument(doc_id=doc_id, module=module, kind=kind, title=title,
                                     signature=signature, sections=sections, see_also=tuple(resolved),
                                     aliases=alias_names, numpy_version=numpy.__version__))
    documents.sort(key=lambda d: d.doc_id)
    return ApiCorpus(tuple(documents), numpy.__version__)


def describe(corpus: ApiCorpus) -> str:
    """Two lines a lab prints first: what the corpus is, and its fingerprint."""
    kinds: dict[str, int] = {}
    for document in corpus.documents:
        kinds[document.kind] = kinds.get(document.kind, 0) + 1
    plural = {"class": "classes"}
    spread = ", ".join(f"{count} {plural.get(kind, kind + 's')}" for kind, count in sorted(kinds.items(), key=lambda kv: -kv[1]))
    return (f"corpus: numpy {corpus.numpy_version} API reference, {len(corpus)} documents ({spread}), "
            f"{corpus.characters():,} characters\nfingerprint: {corpus.fingerprint()}")


def export_markdown(corpus: ApiCorpus, folder: str | Path, summaries: bool = True) -> int:
    """Write one ``<id>.md`` per document into ``folder`` (which must be new or empty); the count.

    ``summaries=False`` leaves each page's summary line out, as the labs' indexes do (the
    self-retrieval queries are those summaries).

    Files are written to a temporary folder beside it and moved in place at the end, so an
    interrupted export leaves no half-filled folder.
    """
    import shutil
    import tempfile

    folder = Path(folder)
    if folder.exists() and (not folder.is_dir() or any(folder.iterdir())):
        raise ValueError(f"folder must be a new or empty directory; {str(folder)!r} is not")
    folder.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=".export-", dir=folder.parent))
    try:
        for document in corpus.documents:
            (staging / f"{document.doc_id}.md").write_text(document.markdown(summaries), encoding="utf-8")
        if folder.exists():
            folder.rmdir()
        staging.rename(folder)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return len(corpus.documents)
