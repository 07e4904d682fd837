"""``python -m ragcourse ask``: answer a question with citations from lab 04's PostgreSQL index.

  python -m ragcourse ask "how do I join two arrays end to end" [--json] [--trace]
  python -m ragcourse ask "what did we decide" --tenant a   # answered from tenant a's rows alone
  python -m ragcourse ask "..." --reader extractive          # copied sentences instead of written words

It runs the package's pipeline at its default setting (``rag.pipeline.DEFAULT_SETTING``, what lab 04 kept)
over the index ``index`` built; which
database, corpus folder and schema: ``ragcourse.cli.postgres``. The answer is written by the local
model (``rag.generator``) from the admitted passages and printed as it is produced, each ``[n]`` as
the ``[page#chunk]`` it cites; then the passages it was given (``*`` cited by number, ``+`` its page named
in the answer) and the time of each stage (retrieve, rerank, first token, whole answer).
Exit status: 0 answered, 1 an unusable database or index, 2 a bad argument or question.
"""
from __future__ import annotations

import argparse
import json
from pathlib import Path

from ..batch.contract import UsageError
from ..rag.generator import ABSTAIN
from .postgres import open_index, privileges, require_index, schema_for


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The ``ask`` command's arguments."""
    parser.add_argument("question", help="the question")
    parser.add_argument("--corpus", type=Path, metavar="DIR", help="ask the index of this folder (default: numpy)")
    parser.add_argument("--schema", metavar="NAME", help="ask this index (default: the corpus's)")
    parser.add_argument("--tenant", metavar="NAME",
                        help="answer from this tenant's rows only, in the shared index 'ragcourse' unless --schema "
                             "or --corpus says otherwise (default: public)")
    parser.add_argument("--json", action="store_true", help="the answer and its whole trace as one JSON object")
    parser.add_argument("--trace", action="store_true", help="print every stage after the answer")
    parser.add_argument("--reader", choices=("generator", "extractive"), default="generator",
                        help="who writes the answer: the local language model (default) or the extractive reader")
    parser.add_argument("--reranker-model", metavar="PATH",
                        help="a sentence-transformers CrossEncoder folder to rerank with (default: MiniLM max-sim)")


def run(args: argparse.Namespace, out) -> int:
    """Answer one question with citations; the exit status."""
    from ..rag.search import check_question
    from ..rag.pipeline import DEFAULT_SETTING
    from ..rag.rerank import make_reranker
    from ..rag.store import DEFAULT_TENANT

    question = check_question(args.question)
    if args.reranker_model is not None and not Path(args.reranker_model).exists():
        raise UsageError(f"argument --reranker-model: {args.reranker_model!r} does not exist")
    root, schema = schema_for(args, need_root=False)
    tenant = args.tenant or DEFAULT_TENANT
    database, index = open_index(schema, tenant=tenant)
    try:
        with privileges(f"a reader session for tenant {tenant!r}"):
            require_index(index, schema, args.corpus, args.tenant)
            reranker = None if args.reranker_model is None else make_reranker(index.encoder, args.reranker_model)
            reader = None
            if args.reader == "generator":
                from ..rag.generator import GeneratingReader

                reader = GeneratingReader()
                reader.generator.model   # loaded before the question, so the stage times below are the answer's
                stream = CitationStream(out) if not args.json else None
                reader.on_text = stream
            pipeline = DEFAULT_SETTING.pipeline(index, index.encoder, reader=reader, second_stage=reranker)
            trace = pipeline.ask(question, tenant)
        if args.json:
            result = trace.to_dict()
            if reader is not None:
                result["generation"] = generation_dict(reader)
            print(json.dumps(result, ensure_ascii=False), file=out)
            return 0
        if reader is None:
            print(trace.answer.text, file=out)
        else:
            stream.close()
            if trace.answer.abstained and ABSTAIN.lower() not in trace.answer.text.lower():
                print(ABSTAIN, file=out)
            made = reader.last
            print(given_line(trace.answer, reader.last_prompt.passages), file=out)
            retrieve = sum(v for k, v in trace.seconds.items() if k not in ("rerank", "assemble", "read"))
            print(f"({len(trace.context.admitted)} passages, {made.tokens_in} prompt tokens, {made.tokens_out} "
                  f"written{', from the generation cache' if made.cached else ''}; seconds: retrieve {retrieve:.2f}, "
                  f"rerank {trace.seconds['rerank']:.2f}, first token {made.first_token_seconds:.2f}, "
                  f"whole answer {trace.seconds['read']:.2f})", file=out)
        if args.trace:
            print("", file=out)
            for line in trace.lines():
                print(line, file=out)
        return 0
    finally:
        index.close()
        database.close()


def given_line(answer, passages) -> str:
    """The passages the model was given, in their numbered order, each marked ``*`` when the answer cites it by
    number and ``+`` when the answer names its page (the small model seldom writes ``[n]``; a name it writes
    still points at a source)."""
    from ..rag.answer_checks import named_passages

    cited = set(answer.citations)
    named = set() if answer.abstained else set(named_passages(answer.text, passages))
    given = "  ".join(f"[{sp.passage.citation}]{'*' if sp.passage.citation in cited else ''}"
                      f"{'+' if sp.passage.citation in named else ''}" for sp in passages)
    legend = "; ".join(what for what, shown in (("* cited by number", cited), ("+ its page named in the answer",
                                                                                  named)) if shown)
    return f"passages given (numbered in this order{'; ' + legend if legend else ''}): {given or 'none'}"


class CitationStream:
    """Prints generated text as it arrives, each complete ``[n]`` written as the passage it names."""

    def __init__(self, out):
        self.out, self.pending, self.prompt = out, "", None

    def __call__(self, piece: str) -> None:
        import re

        self.pending += piece
        cut = self.pending.rfind("[")
        ready, self.pending = ((self.pending, "") if cut < 0 or "]" in self.pending[cut:]
                               else (self.pending[:cut], self.pending[cut:]))
        if ready:
            print(self._named(ready), end="", file=self.out, flush=True)
        if len(self.pending) > 8 and not re.fullmatch(r"\[\d{0,3}", self.pending):   # not a citation after all
            print(self.pending, end="", file=self.out, flush=True)
            self.pending = ""

    def _named(self, text: str) -> str:
        from ..rag.generator import with_citations

        return with_citations(self.prompt, text) if self.prompt is not None else text

    def close(self) -> None:
        print(self._named(self.pending), file=self.out, flush=True)
        self.pending = ""


def generation_dict(reader) -> dict:
    """What ``--json`` adds for a generated answer: the model, the tokens, the times and the cited passages."""
    from ..rag.answer_checks import named_passages
    from ..rag.generator import with_citations

    made, prompt = reader.last, reader.last_prompt
    return {"model": reader.generator.fingerprint, "text": with_citations(prompt, made.text),
            "named": named_passages(made.text, prompt.passages),
            "tokens_in": made.tokens_in, "tokens_out": made.tokens_out, "passages_cut": prompt.cut,
            "first_token_seconds": round(made.first_token_seconds, 4), "seconds": round(made.seconds, 4),
            "cached": made.cached, "stopped": made.stopped}
