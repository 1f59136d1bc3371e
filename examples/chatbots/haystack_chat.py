"""A Haystack chat over rag-multihop's components: a retrieval pipeline, then an answer
pipeline, multi-turn, citations from ``AnswerBuilder``'s referenced documents.

    retrieval: text_embedder -> our components (by --method) -> documents, trace
    answer:    ChatPromptBuilder -> chat generator (streaming)
               -> AnswerBuilder(reference_pattern=[n])

A follow-up is first made standalone (:class:`chatkit.Conversation`: without a model for the
bundled one or one marked ``--small-model``, the previous answer's subjects carried in; else a
small condense pipeline, ``ChatPromptBuilder`` -> generator, whose rewrite is checked). The
retrieved documents are put in the reasoning chain's order (read from the component's
``trace`` output) before the answer pipeline numbers them, so the model's ``[n]`` and the
cards agree; the answer shown first is extractive (the best sentence of hop 1 and hop 2,
cited), the model's answer streams beside it. The generator is Haystack's
``OpenAIChatGenerator`` pointed at the OpenAI-compatible endpoint of the embedded local model
(the one ``rag-multihop llm serve`` prints) by default, or at ``--api-base`` with ``--llm
openai/<name>``; any other litellm model string (``anthropic/...``, ``ollama/...``) goes
through ``RagMultihopChatGenerator``, the Haystack integration's generator over
rag-multihop's ``LLMClient``.

With ``--llm-object`` that ``OpenAIChatGenerator`` (the app's own generator object) is given
to ``RagMultihopChatGenerator``, so rag-multihop's client drives it: timeout, retries and the
account of every call (:mod:`llm_objects`).

Run:  bash examples/chatbots/run.sh haystack [--corpus DIR] [--method NAME] [--llm MODEL]
          [--llm-object]
"""

# No `from __future__ import annotations`: Haystack reads component annotations at runtime.
import os
import queue
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HAYSTACK_TELEMETRY_ENABLED", "False")
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

import chatkit
import folders
import llm_objects
from chatkit import TOP_K, ChatCorpus, Source, TurnAccount, TurnStream
from folders import Section, UnreadableFile
from haystack import Document, Pipeline
from haystack.components.builders import AnswerBuilder, ChatPromptBuilder
from haystack.components.converters import HTMLToDocument, PyPDFToDocument, TextFileToDocument
from haystack.components.generators.chat import OpenAIChatGenerator
from haystack.components.joiners import DocumentJoiner
from haystack.components.preprocessors import MarkdownHeaderSplitter
from haystack.components.retrievers.in_memory import InMemoryEmbeddingRetriever
from haystack.components.routers import FileTypeRouter
from haystack.dataclasses import ChatMessage
from haystack.document_stores.in_memory import InMemoryDocumentStore
from haystack.utils import Secret
from haystack_integrations.common.rag_multihop.convert import SIGNALS_KEY
from haystack_integrations.components.embedders.rag_multihop import RagMultihopTextEmbedder
from haystack_integrations.components.generators.rag_multihop import RagMultihopChatGenerator
from haystack_integrations.components.joiners.rag_multihop import PITDocumentJoiner
from haystack_integrations.components.rankers.rag_multihop import AssociationRanker, RaLaRanker
from haystack_integrations.components.retrievers.rag_multihop import (
    BridgeRetriever,
    CorpusIndexMultiHopRetriever,
    EntityGraphRetriever,
)

from rag_multihop.llm import LLMAccount, LLMSettings
from rag_multihop.llm.local import REPEAT_PENALTY, ensure_local_server, is_local_model

ANSWER_TEMPLATE = [
    ChatMessage.from_system(chatkit.SYSTEM_PROMPT),
    ChatMessage.from_user(
        "{% if history %}Conversation so far:\n{{ history }}\n\n{% endif %}"
        "Numbered passages:\n"
        "{% for doc in documents %}[{{ loop.index }}] {{ doc.meta.title }}: {{ doc.content }}\n"
        "{% endfor %}\nQuestion: {{ question }}\nAnswer with citations like [1]."
    ),
]
CONDENSE_TEMPLATE = [ChatMessage.from_user("{{ prompt }}")]
"""The condense prompt arrives whole (``rag_multihop.conversation.condense_prompt``)."""


HTML_EXTRACTION = {"output_format": "markdown", "include_formatting": True, "favor_recall": True}
"""trafilatura's options: the page's main text as Markdown, so h1-h3 arrive as ``#`` headings."""


def converters() -> dict[str, Any]:
    """The converter of each file type. Markdown goes through ``TextFileToDocument``:
    ``MarkdownToDocument`` renders it to plain text, dropping the ``#`` headings that titles
    are made of."""
    return {
        "application/pdf": PyPDFToDocument(),
        "text/html": HTMLToDocument(extraction_kwargs=HTML_EXTRACTION),
        "text/markdown": TextFileToDocument(),
        "text/plain": TextFileToDocument(),
    }


def converter_pipeline() -> Pipeline:
    """``FileTypeRouter`` -> one converter per type (:func:`converters`) -> ``DocumentJoiner``."""
    pipeline = Pipeline()
    by_type = converters()
    pipeline.add_component("router", FileTypeRouter(mime_types=list(by_type)))
    pipeline.add_component("joiner", DocumentJoiner())
    for n, (mime, converter) in enumerate(by_type.items()):
        pipeline.add_component(f"converter_{n}", converter)
        pipeline.connect(f"router.{mime}", f"converter_{n}.sources")
        pipeline.connect(f"converter_{n}.documents", "joiner.documents")
    return pipeline


class HaystackFolderReader:
    """A file's sections through Haystack's converters (:func:`converter_pipeline`): PDF
    pages (``PyPDFToDocument`` separates them by form feeds) headed ``page N``, HTML and
    Markdown cut at their ``#`` headings by ``MarkdownHeaderSplitter`` (the heading in
    ``meta["header"]``), text files one section."""

    name = "haystack"

    def __init__(self) -> None:
        try:
            self.pipeline = converter_pipeline()
        except ImportError as exc:  # pypdf, trafilatura or lxml_html_clean
            raise ImportError(
                "reading folders needs the converters' packages: pip install -r "
                f"examples/chatbots/requirements.txt ({exc})"
            ) from exc
        self.headings = MarkdownHeaderSplitter(keep_headers=False)

    def read(self, path: Path) -> list[Section]:
        out = self.pipeline.run({"router": {"sources": [path]}})
        documents = out.get("joiner", {}).get("documents", [])
        if not documents:  # the converter logged why and skipped the file
            raise UnreadableFile("the converter returned no document (see the warning above)")
        suffix = path.suffix.lower()
        if suffix == ".pdf":
            return folders.page_sections((documents[0].content or "").split("\f"))
        if suffix == ".txt":
            return [Section("", d.content or "") for d in documents]
        parts = self.headings.run(documents)["documents"]
        return [Section(str(d.meta.get("header") or ""), (d.content or "").strip()) for d in parts]


def chat_generator(settings: LLMSettings) -> Any:
    """``OpenAIChatGenerator`` for the local model (with llama.cpp's ``repeat_penalty``, as
    rag-multihop's local transport sends it) and OpenAI-compatible servers, else
    ``RagMultihopChatGenerator`` (the Haystack integration's generator over ``LLMClient``)."""
    kwargs: dict[str, Any] = {
        "max_tokens": settings.max_tokens,
        "temperature": settings.temperature,
    }
    key: Secret | None = None
    api_base: str | None
    if is_local_model(settings.model):
        server = ensure_local_server()  # it requires its own random key
        model, api_base, key = server.alias, server.base_url, Secret.from_token(server.api_key)
        kwargs["extra_body"] = {"repeat_penalty": REPEAT_PENALTY}
    elif settings.model.startswith("openai/"):
        model, api_base = settings.model.removeprefix("openai/"), settings.api_base
        if not api_base or os.environ.get("OPENAI_API_KEY"):  # a server may need one too
            key = Secret.from_env_var("OPENAI_API_KEY")
    else:
        return RagMultihopChatGenerator(
            llm=settings.model,
            api_base=settings.api_base,
            max_tokens=settings.max_tokens,
            temperature=settings.temperature,
            timeout=settings.timeout,
            max_retries=settings.max_retries,
        )
    return OpenAIChatGenerator(
        api_key=key or Secret.from_token("sk-no-key-required"),
        model=model,
        api_base_url=api_base,
        generation_kwargs={**kwargs, "stream_options": {"include_usage": True}},
        timeout=settings.call_timeout,
        max_retries=settings.retries,
    )


def reply_account(reply: ChatMessage, settings: LLMSettings) -> LLMAccount:
    """The account of one generator reply from its ``meta`` (local calls cost 0)."""
    usage = reply.meta.get("usage") or {}
    default_cost = 0.0 if is_local_model(settings.model) else None
    return LLMAccount(
        calls=1,
        prompt_tokens=int(usage.get("prompt_tokens") or 0),
        completion_tokens=int(usage.get("completion_tokens") or 0),
        cost=reply.meta.get("cost", default_cost),
    )


class HaystackStack:
    """The corpus as Haystack documents in an in-memory store (shared by sessions)."""

    def __init__(self, corpus: ChatCorpus) -> None:
        self.corpus = corpus
        self.store = InMemoryDocumentStore(embedding_similarity_function="cosine")
        self.store.write_documents(
            [
                Document(id=p.id, content=p.text, meta={"title": p.title}, embedding=v.tolist())
                for p, v in zip(corpus.corpus, corpus.vectors, strict=True)
            ]
        )

    def dense(self, top_k: int) -> InMemoryEmbeddingRetriever:
        return InMemoryEmbeddingRetriever(document_store=self.store, top_k=top_k)


# A builder adds a method's retrieval components to the pipeline and returns the socket that
# yields its documents and the inputs that receive the question text.
Wiring = tuple[str, list[str]]


def _embedded(p: Pipeline, s: HaystackStack, top_k: int) -> None:
    p.add_component("text_embedder", RagMultihopTextEmbedder())
    p.add_component("dense", s.dense(top_k))
    p.connect("text_embedder.embedding", "dense.query_embedding")


def build_dense(p: Pipeline, s: HaystackStack) -> Wiring:
    _embedded(p, s, TOP_K)
    return "dense.documents", ["text_embedder.text"]


def build_multihop(p: Pipeline, s: HaystackStack) -> Wiring:
    p.add_component("text_embedder", RagMultihopTextEmbedder())
    p.add_component(
        "multihop", CorpusIndexMultiHopRetriever(str(s.corpus.corpus_index()), top_k=TOP_K)
    )
    p.connect("text_embedder.embedding", "multihop.query_embedding")
    return "multihop.documents", ["text_embedder.text", "multihop.query"]


def build_graph_fusion(p: Pipeline, s: HaystackStack) -> Wiring:
    _embedded(p, s, 50)
    p.add_component("graph", EntityGraphRetriever(s.store, top_k=20, seed_top_n=2))
    p.add_component(
        "joiner", PITDocumentJoiner(top_k=TOP_K, pool_cap=[None, 10], names=["dense", "graph"])
    )
    p.connect("dense.documents", "graph.documents")
    p.connect("dense.documents", "joiner.documents")
    p.connect("graph.documents", "joiner.documents")
    return "joiner.documents", ["text_embedder.text", "graph.query"]


def build_bridge(p: Pipeline, s: HaystackStack) -> Wiring:
    p.add_component("bridge", BridgeRetriever(s.dense(20), top_k=TOP_K))
    return "bridge.documents", ["bridge.query"]


def build_aar(p: Pipeline, s: HaystackStack) -> Wiring:
    _embedded(p, s, 50)
    p.add_component("ranker", AssociationRanker(index_path=str(s.corpus.aar_index()), top_k=TOP_K))
    p.connect("dense.documents", "ranker.documents")
    p.connect("text_embedder.embedding", "ranker.query_embedding")
    return "ranker.documents", ["text_embedder.text", "ranker.query"]


def build_coop(p: Pipeline, s: HaystackStack) -> Wiring:
    _embedded(p, s, 50)
    p.add_component("ranker", RaLaRanker(top_k=TOP_K, index_path=str(s.corpus.rala_index())))
    p.connect("dense.documents", "ranker.documents")
    return "ranker.documents", ["text_embedder.text", "ranker.query"]


RETRIEVAL: dict[str, Callable[[Pipeline, HaystackStack], Wiring]] = {
    "dense": build_dense,
    "multihop": build_multihop,
    "graph-fusion": build_graph_fusion,
    "bridge": build_bridge,
    "aar": build_aar,
    "coop": build_coop,
}
chatkit.check_builders(RETRIEVAL, "haystack_chat")


def build_retrieval(stack: HaystackStack, method: str) -> tuple[Pipeline, Wiring]:
    """The retrieval pipeline of ``method``: its documents socket and its question inputs."""
    pipeline = Pipeline()
    return pipeline, RETRIEVAL[chatkit.get_method(method).name](pipeline, stack)


def answer_pipeline(generator: Any) -> Pipeline:
    """Prompt (the numbered documents), generator, ``AnswerBuilder``."""
    pipeline = Pipeline()
    pipeline.add_component("prompt_builder", ChatPromptBuilder(ANSWER_TEMPLATE))
    pipeline.add_component("llm", generator)
    pipeline.add_component("answer_builder", AnswerBuilder(reference_pattern=r"\[(\d+)\]"))
    pipeline.connect("prompt_builder.prompt", "llm.messages")
    pipeline.connect("llm.replies", "answer_builder.replies")
    return pipeline


def condense_pipeline(generator: Any) -> Pipeline:
    pipeline = Pipeline()
    pipeline.add_component("prompt_builder", ChatPromptBuilder(CONDENSE_TEMPLATE))
    pipeline.add_component("llm", generator)
    pipeline.connect("prompt_builder.prompt", "llm.messages")
    return pipeline


def to_source(document: Document) -> Source:
    signals = dict(document.meta.get(SIGNALS_KEY) or {})
    score = float(document.score or 0.0)
    return Source(
        id=document.id,
        title=str(document.meta.get("title", "")),
        text=document.content or "",
        score=score,
        signals=signals or {"dense": score},
    )


def _inputs(sockets: Sequence[str], value: Any, data: dict[str, dict[str, Any]]) -> None:
    for socket in sockets:
        name, _, field = socket.partition(".")
        data.setdefault(name, {})[field] = value


class HaystackChat:
    """One conversation: its history, its generators and the chosen method.

    ``small_model``: condense follow-ups without the model (default: for the local model).
    """

    def __init__(
        self,
        stack: HaystackStack,
        settings: LLMSettings,
        method: str = chatkit.DEFAULT_METHOD,
        *,
        generator_factory: Callable[[LLMSettings], Any] = chat_generator,
        small_model: bool | None = None,
    ) -> None:
        self.stack = stack
        self.settings = settings
        self.method = chatkit.get_method(method).name
        self.conversation = chatkit.Conversation(chatkit.uses_llm_condense(settings, small_model))
        self._condense = condense_pipeline(generator_factory(settings))
        self._answer = answer_pipeline(generator_factory(settings))
        self._retrieval: dict[str, tuple[Pipeline, Wiring]] = {}
        self._reply: ChatMessage | None = None

    def reset(self) -> None:
        self.conversation.reset()

    def retrieval(self) -> tuple[Pipeline, Wiring]:
        if self.method not in self._retrieval:
            self._retrieval[self.method] = build_retrieval(self.stack, self.method)
        return self._retrieval[self.method]

    def stream(self, message: str) -> TurnStream:
        return TurnStream(self._turn(chatkit.check_question(message, self.settings)))

    def _retrieve(self, standalone: str) -> tuple[list[Document], chatkit.Trace | None]:
        pipeline, (documents, sockets) = self.retrieval()
        data: dict[str, dict[str, Any]] = {}
        _inputs(sockets, standalone, data)
        component = documents.partition(".")[0]
        out = pipeline.run(data, include_outputs_from={component})[component]
        return list(out["documents"]), out.get("trace")  # the trace, when it has one

    def _generate(self, question: str, documents: list[Document]) -> Iterator[str]:
        """The model's answer in pieces (the pipeline runs in a thread; its error is raised
        here); ``self._reply`` holds its reply when it ends."""
        pieces: queue.Queue[Any] = queue.Queue()
        finished: dict[str, Any] = {}
        data = {
            "prompt_builder": {
                "documents": documents,
                "question": question,
                "history": self.conversation.history_text(),
            },
            "answer_builder": {"documents": documents, "query": question},
            "llm": {"streaming_callback": lambda c: pieces.put(c.content)},
        }

        def run() -> None:
            try:
                finished["out"] = self._answer.run(data, include_outputs_from={"llm"})
            except Exception as exc:  # handed to the reader, raised there
                finished["error"] = exc
            finally:
                pieces.put(None)

        threading.Thread(target=run, daemon=True).start()
        while (piece := pieces.get()) is not None:
            if piece:
                yield piece
        if "error" in finished:
            raise finished["error"]
        self._reply = finished["out"]["llm"]["replies"][0]

    def _turn(self, question: str) -> chatkit.TurnEvents:
        start = time.perf_counter()
        condense = LLMAccount()

        def rewrite(prompt: str) -> str:
            nonlocal condense
            reply = self._condense.run({"prompt_builder": {"prompt": prompt}})["llm"]["replies"][0]
            condense = reply_account(reply, self.settings)
            return reply.text or ""

        condensed = self.conversation.condense(question, rewrite)
        retrieved_from = time.perf_counter()
        documents, trace = self._retrieve(condensed.standalone)
        by_id = {d.id: d for d in documents}
        retrieval = chatkit.make_retrieval(
            condensed, [to_source(d) for d in documents], self.method, trace
        )
        retrieval_s = time.perf_counter() - retrieved_from
        yield retrieval
        self._reply = None
        ordered = [by_id[s.id] for s in retrieval.sources]  # numbered as the cards are
        generated, error = yield from chatkit.generate(
            self._generate(condensed.standalone, ordered)
        )
        account = TurnAccount(
            condense=condense,
            answer=LLMAccount()
            if self._reply is None
            else reply_account(self._reply, self.settings),
            retrieval_s=retrieval_s,
            latency_s=time.perf_counter() - start,
        )
        result = chatkit.finish_turn(retrieval, generated, account, error)
        self.conversation.record(result)
        return result


def main(argv: Sequence[str] | None = None) -> int:
    args, settings, corpus = chatkit.terminal_start(
        __doc__, argv, HaystackFolderReader(), llm_objects.check_endpoint
    )
    factory: Callable[[LLMSettings], Any] = chat_generator
    if args.llm_object:  # an OpenAI-compatible endpoint, so chat_generator's OpenAIChatGenerator
        factory = lambda s: llm_objects.haystack_generator(chat_generator(s), s)  # noqa: E731
    chat = HaystackChat(
        HaystackStack(corpus),
        settings,
        args.method,
        generator_factory=factory,
        small_model=args.small_model,
    )
    print(f"{corpus.name}: {len(corpus.corpus)} passages · method {chat.method}")
    print(chatkit.model_note(settings))
    if args.llm_object:
        print("Through Haystack's OpenAIChatGenerator object, driven by rag-multihop's client.")
    return chatkit.repl(chat, args.question)


if __name__ == "__main__":
    raise SystemExit(main())
