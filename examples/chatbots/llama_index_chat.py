"""A LlamaIndex chat over rag-multihop's retrievers: ``CondensePlusContextChatEngine``,
an answer quoted from the passages, the model's answer streamed beside it.

Each turn a follow-up is first made standalone (:class:`chatkit.Conversation`: without a
model for the bundled one or one marked ``--small-model``, the previous answer's subjects
carried in; else the model's rewrite, checked), then the engine (``skip_condense=True``) asks
the chosen retriever (the LLM-free multi-hop retriever by default; dense, graph fusion,
BridgeRAG, AAR or CoopRAG's RaLa by ``--method``), puts the nodes in the reasoning chain's
order (:class:`ChainOrder`, read from the retriever's ``last_trace``), numbers them
(:class:`CitationNumbers`) and streams the model's answer. The answer shown first is
extractive: the best sentence of hop 1 and hop 2, cited with the same numbers.
LlamaIndex chat engines return the nodes they retrieved, not the ones an answer cites:
:func:`cited_nodes` returns those. The model is the embedded local one unless ``--llm`` (or
``RAG_MULTIHOP_CHAT_LLM``) names a litellm model string; every call goes through
rag-multihop's ``LLMClient`` (``RagMultihopLLM`` of the LlamaIndex integration), which counts
calls, tokens and cost.

With ``--llm-object`` the answers come from a LlamaIndex ``LLM`` object of the app's own
(:mod:`llm_objects`: a ``CustomLLM`` over the model's OpenAI-compatible endpoint), which
``RagMultihopLLM`` drives through the same client and account.

Run:  bash examples/chatbots/run.sh llama-index [--corpus DIR] [--method NAME] [--llm MODEL]
          [--llm-object]
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

import chatkit
import llm_objects
from chatkit import TOP_K, ChatCorpus, Source, TurnAccount, TurnStream
from folders import Section, UnreadableFile
from llama_index.core import SimpleDirectoryReader, VectorStoreIndex
from llama_index.core.base.base_retriever import BaseRetriever
from llama_index.core.chat_engine import CondensePlusContextChatEngine
from llama_index.core.chat_engine.types import StreamingAgentChatResponse
from llama_index.core.memory import ChatMemoryBuffer
from llama_index.core.node_parser import HTMLNodeParser, MarkdownNodeParser
from llama_index.core.postprocessor.types import BaseNodePostprocessor
from llama_index.core.readers.base import BaseReader
from llama_index.core.schema import BaseNode, MetadataMode, NodeWithScore, QueryBundle, TextNode
from llama_index.embeddings.rag_multihop import RagMultihopEmbedding
from llama_index.llms.rag_multihop import RagMultihopLLM
from llama_index.postprocessor.rag_multihop import AssociationRerank, RaLaRerank
from llama_index.retrievers.rag_multihop import (
    SIGNALS_KEY,
    BridgeRetriever,
    CorpusIndexMultiHopRetriever,
    EntityGraphRetriever,
    PITFusionRetriever,
)
from pydantic import PrivateAttr

from rag_multihop.llm import LLMAccount, LLMClient, LLMSettings

CONTEXT_PROMPT = "Numbered passages:\n\n{context_str}\n\nAnswer with citations like [1]."


class ChainOrder(BaseNodePostprocessor):
    """The nodes in the reasoning chain's display order (hop 1, hop 2, related), read from
    the retriever's trace by ``trace()``, so the numbers the model sees are the cards'."""

    _method: str = PrivateAttr()
    _trace: Callable[[], chatkit.Trace | None] = PrivateAttr()

    def __init__(self, method: str, trace: Callable[[], chatkit.Trace | None]) -> None:
        super().__init__()
        self._method = method
        self._trace = trace

    @classmethod
    def class_name(cls) -> str:
        return "ChainOrder"

    def _postprocess_nodes(
        self, nodes: list[NodeWithScore], query_bundle: QueryBundle | None = None
    ) -> list[NodeWithScore]:
        order = chatkit.chain_order([to_source(n) for n in nodes], self._trace(), self._method)
        return [nodes[i] for i in order]


READERS_MISSING = (
    "reading folders needs the chats' readers: pip install -r examples/chatbots/requirements.txt"
)
HTML_HEADINGS = ("h1", "h2", "h3")
"""HTML elements that start a section (their text becomes the passages' heading)."""
HTML_TAGS = [*HTML_HEADINGS, "h4", "h5", "h6", "p", "li", "pre", "td", "th", "dd", "dt"]
"""Elements ``HTMLNodeParser`` keeps (no inline tags: their text is in their paragraph)."""


def _root_cause(exc: BaseException) -> str:
    """The innermost error's type and message (through ``PDFReader``'s retry wrapper)."""
    while True:
        attempt = getattr(exc, "last_attempt", None)  # tenacity's RetryError
        inner = attempt.exception() if attempt is not None else exc.__cause__
        if inner is None:
            return f"{type(exc).__name__}: {exc}"
        exc = inner


def _markdown_section(text: str) -> Section:
    """A ``MarkdownNodeParser`` node (it starts at its heading line) as a section."""
    first, _, rest = text.partition("\n")
    if first.startswith("#"):
        return Section(first.lstrip("#").strip(), rest.strip())
    return Section("", text.strip())


def _html_sections(nodes: Sequence[BaseNode]) -> list[Section]:
    """``HTMLNodeParser`` nodes (one per run of same-tag elements) grouped under the
    nearest h1-h3 node before them."""
    sections: list[Section] = []
    heading = ""
    texts: list[str] = []
    for node in nodes:
        text = node.get_content(metadata_mode=MetadataMode.NONE).strip()
        if node.metadata.get("tag") in HTML_HEADINGS:
            sections.append(Section(heading, "\n\n".join(texts)))
            heading, texts = " ".join(text.split()), []
        elif text:
            texts.append(text)
    sections.append(Section(heading, "\n\n".join(texts)))
    return [s for s in sections if s.text]


class LlamaIndexFolderReader:
    """A file's sections through LlamaIndex's own readers: ``SimpleDirectoryReader`` (PDFs
    by llama-index-readers-file's ``PDFReader``, a document per page, headed ``page N``),
    then ``MarkdownNodeParser`` for Markdown (a section per heading) and ``HTMLNodeParser``
    for HTML (h1-h3 start sections); text files are one section. Text is decoded as
    ``utf-8-sig``, like Haystack's ``TextFileToDocument``: a leading byte-order mark is
    dropped, so a heading on the first line stays a heading."""

    name = "llama-index"

    def __init__(self) -> None:
        try:
            from llama_index.readers.file import PDFReader
        except ImportError as exc:
            raise ImportError(f"{READERS_MISSING} ({exc})") from exc
        self.file_extractor: dict[str, BaseReader] = {".pdf": PDFReader(return_full_document=False)}
        self.markdown = MarkdownNodeParser()
        self.html = HTMLNodeParser(tags=HTML_TAGS)

    def read(self, path: Path) -> list[Section]:
        try:
            documents = SimpleDirectoryReader(
                input_files=[path],
                file_extractor=self.file_extractor,
                encoding="utf-8-sig",
                errors="strict",
                raise_on_error=True,
            ).load_data()
        except Exception as exc:  # "Error loading file" around the reader's own error
            raise UnreadableFile(_root_cause(exc)) from exc
        suffix = path.suffix.lower()
        if suffix == ".pdf":
            return [
                Section(f"page {d.metadata.get('page_label', n)}", d.text.strip())
                for n, d in enumerate(documents, start=1)
                if d.text.strip()
            ]
        if suffix in (".md", ".markdown"):
            nodes = self.markdown.get_nodes_from_documents(documents)
            return [s for s in map(_markdown_section, (n.get_content() for n in nodes)) if s.text]
        if suffix in (".html", ".htm"):
            return _html_sections(self.html.get_nodes_from_documents(documents))
        return [Section("", d.text) for d in documents]


class CitationNumbers(BaseNodePostprocessor):
    """Copies of the nodes with their position shown to the LLM (``source: [n]``)."""

    @classmethod
    def class_name(cls) -> str:
        return "CitationNumbers"

    def _postprocess_nodes(
        self, nodes: list[NodeWithScore], query_bundle: QueryBundle | None = None
    ) -> list[NodeWithScore]:
        return [
            NodeWithScore(
                node=n.node.model_copy(
                    update={"metadata": {"source": f"[{i}]", **n.node.metadata}}
                ),
                score=n.score,
            )
            for i, n in enumerate(nodes, start=1)
        ]


def cited_nodes(response: StreamingAgentChatResponse) -> list[NodeWithScore]:
    """The source nodes a finished response cites with ``[n]``, in citation-number order."""
    numbers = chatkit.cited_numbers(str(response), len(response.source_nodes))
    return [response.source_nodes[n - 1] for n in numbers]


def to_source(item: NodeWithScore) -> Source:
    metadata = item.node.metadata
    signals = dict(metadata.get(SIGNALS_KEY) or {})
    score = float(item.get_score())
    return Source(
        id=item.node.node_id,
        title=str(metadata.get("title", "")),
        text=item.node.get_content(metadata_mode=MetadataMode.NONE),
        score=score,
        signals=signals or {"dense": score},
    )


class LlamaIndexStack:
    """The corpus as LlamaIndex nodes and index, and one retriever per method (built on
    first use, once, shared by every chat session of the process)."""

    def __init__(self, corpus: ChatCorpus) -> None:
        self.corpus = corpus
        self.embed_model = RagMultihopEmbedding(encoder=corpus.encoder)
        self.nodes = [
            TextNode(id_=p.id, text=p.text, metadata={"title": p.title}, embedding=v.tolist())
            for p, v in zip(corpus.corpus, corpus.vectors, strict=True)
        ]
        self.index = VectorStoreIndex(self.nodes, embed_model=self.embed_model)
        self._built: dict[str, tuple[BaseRetriever, list[BaseNodePostprocessor]]] = {}
        self._building = threading.Lock()

    def vector(self, k: int) -> BaseRetriever:
        return self.index.as_retriever(similarity_top_k=k)

    def graph(self) -> EntityGraphRetriever:
        graph = self.corpus.entity_graph()
        return EntityGraphRetriever(
            graph, self.nodes, seed_retriever=self.vector(2), similarity_top_k=20
        )

    def retriever(self, method: str) -> tuple[BaseRetriever, list[BaseNodePostprocessor]]:
        chatkit.get_method(method)
        with self._building:  # sessions asking at once get the same retriever
            if method not in self._built:
                self._built[method] = RETRIEVERS[method](self)
            return self._built[method]


Built = tuple[BaseRetriever, list[BaseNodePostprocessor]]
RETRIEVERS: dict[str, Callable[[LlamaIndexStack], Built]] = {
    "dense": lambda s: (s.vector(TOP_K), []),
    "multihop": lambda s: (
        CorpusIndexMultiHopRetriever(
            str(s.corpus.corpus_index()), similarity_top_k=TOP_K, embed_model=s.embed_model
        ),
        [],
    ),
    "graph-fusion": lambda s: (
        PITFusionRetriever(
            [s.vector(50), s.graph()],
            similarity_top_k=TOP_K,
            names=["dense", "graph"],
            pool_cap=[None, 10],
        ),
        [],
    ),
    "bridge": lambda s: (
        BridgeRetriever(s.vector(20), similarity_top_k=TOP_K, embed_model=s.embed_model),
        [],
    ),
    "aar": lambda s: (
        s.vector(50),
        [
            AssociationRerank(
                index_path=str(s.corpus.aar_index()), top_n=TOP_K, embed_model=s.embed_model
            )
        ],
    ),
    "coop": lambda s: (
        s.vector(50),
        [RaLaRerank(top_n=TOP_K, index_path=str(s.corpus.rala_index()))],
    ),
}
chatkit.check_builders(RETRIEVERS, "llama_index_chat")


class LlamaIndexChat:
    """One conversation: its memory, its LLM client (its account) and the chosen method.

    ``small_model``: condense follow-ups without the model (default: for the local model).
    """

    def __init__(
        self,
        stack: LlamaIndexStack,
        settings: LLMSettings,
        method: str = chatkit.DEFAULT_METHOD,
        *,
        client: LLMClient | None = None,
        small_model: bool | None = None,
    ) -> None:
        self.stack = stack
        self.settings = settings
        self.method = chatkit.get_method(method).name
        self.client = client or LLMClient(settings)
        window = chatkit.context_tokens(settings)
        self.llm = RagMultihopLLM(self.client, context_window=window)
        self.memory = ChatMemoryBuffer.from_defaults(token_limit=window // 2)
        self.conversation = chatkit.Conversation(chatkit.uses_llm_condense(settings, small_model))

    def engine(self) -> CondensePlusContextChatEngine:
        retriever, postprocessors = self.stack.retriever(self.method)
        return CondensePlusContextChatEngine.from_defaults(
            retriever,
            llm=self.llm,
            memory=self.memory,
            system_prompt=chatkit.SYSTEM_PROMPT,
            context_prompt=CONTEXT_PROMPT,
            skip_condense=True,  # the question arrives standalone (chatkit.Conversation)
            node_postprocessors=[
                *postprocessors,
                ChainOrder(self.method, self._trace),
                CitationNumbers(),
            ],
        )

    def stream(self, message: str) -> TurnStream:
        return TurnStream(self._turn(chatkit.check_question(message, self.settings)))

    def reset(self) -> None:
        self.memory.reset()
        self.conversation.reset()

    def _trace(self) -> chatkit.Trace | None:
        """The trace of this thread's last retrieval (bridge and multi-hop retrievers keep it
        as ``last_trace``, per thread), as JSON."""
        retriever, _ = self.stack.retriever(self.method)
        trace: Any = getattr(retriever, "last_trace", None)
        return None if trace is None else trace.to_dict()

    def _rewrite(self, prompt: str) -> str:
        return self.llm.complete(prompt).text

    def _turn(self, question: str) -> chatkit.TurnEvents:
        start, history = time.perf_counter(), list(self.memory.get_all())
        self.llm.calls.clear()
        condensed = self.conversation.condense(question, self._rewrite)
        response = self.engine().stream_chat(condensed.standalone)
        retrieved_at = time.perf_counter()
        sources = tuple(to_source(n) for n in response.source_nodes)
        retrieval = chatkit.make_retrieval(condensed, sources, self.method, self._trace())
        yield retrieval
        generated, error = yield from chatkit.generate(response.response_gen)
        if error is not None:
            self.memory.set(history)  # a failed answer leaves no half exchange in the memory
        elif response.write_response_to_history_thread is not None:
            response.write_response_to_history_thread.join()  # the answer's account is in
        condense = sum((a for kind, a in self.llm.calls if kind == "complete"), LLMAccount())
        account = TurnAccount(
            condense=condense,
            answer=sum((a for kind, a in self.llm.calls if kind == "chat"), LLMAccount()),
            retrieval_s=max(0.0, retrieved_at - start - condense.wall_time_s),
            latency_s=time.perf_counter() - start,
        )
        result = chatkit.finish_turn(retrieval, generated, account, error)
        self.conversation.record(result)
        return result


def main(argv: Sequence[str] | None = None) -> int:
    args, settings, corpus = chatkit.terminal_start(
        __doc__, argv, LlamaIndexFolderReader(), llm_objects.check_endpoint
    )
    client = llm_objects.llama_index_client(settings) if args.llm_object else None
    chat = LlamaIndexChat(
        LlamaIndexStack(corpus),
        settings,
        args.method,
        client=client,
        small_model=args.small_model,
    )
    print(f"{corpus.name}: {len(corpus.corpus)} passages · method {chat.method}")
    print(chatkit.model_note(settings))
    if client is not None:
        print(f"Through the LlamaIndex LLM object {client.settings.model}.")
    return chatkit.repl(chat, args.question)


if __name__ == "__main__":
    raise SystemExit(main())
