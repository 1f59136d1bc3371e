"""A browser chat (Gradio) that shows why each passage was used.

Served on 127.0.0.1: a question box, the answer quoted from the passages with numbered
citations and the model's answer streamed beside it (labelled), a side panel with the
retrieved passages as cards numbered in display order, grouped by the reasoning chain read
from the method's trace (hop 1, hop 2 with the name that links it, related) and each
passage's signals as bars labelled in plain words, the turn's account (LLM calls, tokens,
cost, latency), a method switcher and the answering model named plainly. Every browser tab
is its own conversation; a question sent while an answer streams is queued (shown at once,
answered next), and every error is shown in the chat, which stays usable. The chat behind it
is the LlamaIndex one (``--framework haystack`` for the Haystack one, its readers too); the
page loads nothing from outside 127.0.0.1. A ``--corpus`` folder is indexed in the background
(:class:`FolderIndexing`) while the page answers from the demo corpus and shows a progress
line (stage, passages/s, ETA); once the folder is ready, new conversations use it.

Run:  bash examples/chatbots/run.sh web [--corpus DIR] [--llm MODEL] [--port 7860]
"""

from __future__ import annotations

import html
import logging
import os
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")
os.environ.setdefault("HF_HUB_OFFLINE", "1")

import chatkit
import gradio as gr
from chatkit import Chat, ChatCorpus, Evidence, Retrieval, TurnResult
from folders import IndexProgress, check_folder

logger = logging.getLogger(__name__)

MAX_SESSIONS = 64
"""Conversations kept at once (the oldest is dropped beyond that)."""


def signal_bar(name: str, meaning: str, value: float) -> str:
    """One signal as a bar labelled in plain words, its exact value on hover (values
    outside [0, 1] are shown, the bar is clipped); the signal's name stays in ``data-signal``
    for scripts, out of sight."""
    width = round(100 * min(1.0, max(0.0, value)))
    return (
        f'<span class="signal" data-signal="{html.escape(name)}" '
        f'title="{html.escape(meaning)} = {value:.4f}">'
        f'<span class="bar"><span style="width:{width}%"></span></span>'
        f'<span class="signal-value">{value:.2f}</span>'
        f'<span class="signal-name">{html.escape(meaning)}</span></span>'
    )


def evidence_html(
    chain: Sequence[Evidence], method: str, standalone: str = "", trace: chatkit.Trace | None = None
) -> str:
    """The side panel: cards numbered in display order, grouped by step of the chain, cited
    ones marked, signals as bars labelled from the method's signal vocabulary."""
    parts = [f'<div class="evidence" data-method="{html.escape(method)}">']
    if standalone:
        parts.append(f'<div class="searched">searched for: {html.escape(standalone)}</div>')
    for step, heading in chatkit.STEPS.items():
        members = [e for e in chain if e.step == step]
        if not members:
            continue
        parts.append(f'<div class="hop" data-step="{html.escape(step)}">{heading}</div>')
        for e in members:
            cited = '<span class="cited">cited</span>' if e.cited else ""
            signals = "".join(
                signal_bar(name, meaning, value)
                for name, meaning, value in chatkit.signal_items(e.source.signals, method, trace)
            )
            text = html.escape(e.source.text[:280] + ("…" if len(e.source.text) > 280 else ""))
            parts.append(
                f'<div class="passage" data-id="{html.escape(e.source.id)}" '
                f'data-number="{e.number}" data-step="{html.escape(e.step)}">'
                f'<div class="passage-head"><b>[{e.number}]</b> '
                f"{html.escape(e.source.title or e.source.id)} {cited}</div>"
                f'<div class="role">{html.escape(e.role)}</div>'
                f'<div class="signals">{signals}</div><div class="text">{text}</div></div>'
            )
    parts.append("</div>")
    return "".join(parts)


WAITING = "⏳ waiting for the answer above…"


def answer_markdown(
    retrieval: Retrieval,
    label: str,
    generated: str = "",
    *,
    streaming: bool = False,
    error: str | None = None,
) -> str:
    """The answer from the passages and the cards it cites ("Sources:" lists only those),
    then the model's answer, labelled as generated (streaming: with a cursor), and the
    model's failure when it failed."""
    parts = [f"**From the passages:** {retrieval.answer.text or chatkit.NO_PASSAGE}"]
    cited = sorted((e for e in retrieval.evidence if e.cited), key=lambda e: e.number)
    if cited:
        sources = " · ".join(f"[{e.number}] {e.source.title or e.source.id}" for e in cited)
        parts.append(f"<small>Sources: {sources}</small>")
    if generated.strip() or streaming:
        cursor = " ▍" if streaming else ""
        parts.append(f"**Model's answer** ({label}; generated, unchecked): {generated}{cursor}")
    if error:
        parts.append(
            f"⚠️ **The model failed:** {error}. The answer from the passages stands; ask again."
        )
    return "\n\n".join(parts)


def account_markdown(result: TurnResult, turn: int) -> str:
    a = result.account
    return (
        f"**Turn {turn}** · {a.summary()}  \n"
        f"condense: {a.condense.calls} call(s), {a.condense.total_tokens:,} tokens · "
        f"answer: {a.answer.calls} call(s), {a.answer.total_tokens:,} tokens · "
        f"method: {result.retrieval.method}"
    )


CSS = """
.evidence .hop {font-weight:600; margin:10px 0 4px; color:#555}
.evidence .searched {font-size:12px; color:#666; margin-bottom:6px}
.evidence .passage {border:1px solid #ddd; border-radius:6px; padding:6px 8px; margin:4px 0}
.evidence .role {font-size:12px; color:#666}
.evidence .cited {background:#2e7d32; color:#fff; border-radius:4px; padding:0 5px;
  font-size:11px}
.evidence .signals {margin:4px 0}
.evidence .signal {display:flex; align-items:center; gap:4px; font-size:12px}
.evidence .bar {display:inline-block; width:50px; height:7px; background:#e5e5e5;
  border-radius:3px; overflow:hidden}
.evidence .bar span {display:block; height:100%; background:#3f7fbf}
.evidence .text {font-size:12px; color:#333}
"""


@dataclass
class Session:
    """One browser tab: its chat, the messages shown (queued questions included), its turn
    count, and a lock that lets one turn run at a time (a question sent meanwhile waits)."""

    chat: Chat
    messages: list[dict[str, Any]] = field(default_factory=list)
    turns: int = 0
    turn_lock: threading.Lock = field(default_factory=threading.Lock)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def shown(self) -> list[dict[str, Any]]:
        with self.lock:
            return [dict(m) for m in self.messages]

    def set(self, index: int, content: str) -> None:
        with self.lock:
            self.messages[index] = {"role": "assistant", "content": content}


class FolderIndexing:
    """A folder indexed in a background thread (:meth:`start`), its progress and outcome
    read by the page (:meth:`status`); ``on_ready`` gets the folder's corpus when done."""

    def __init__(
        self,
        folder: str,
        load: Callable[[Callable[[IndexProgress], None]], ChatCorpus],
        on_ready: Callable[[ChatCorpus], None],
    ) -> None:
        self.folder = folder
        self._load = load
        self._on_ready = on_ready
        self.progress: IndexProgress | None = None
        self.error: str | None = None
        self.corpus: ChatCorpus | None = None
        self.finished = threading.Event()

    def start(self) -> FolderIndexing:
        threading.Thread(target=self._run, name="folder-indexing", daemon=True).start()
        return self

    def _report(self, progress: IndexProgress) -> None:
        self.progress = progress

    def _run(self) -> None:
        try:
            corpus = self._load(self._report)
            self._on_ready(corpus)
            self.corpus = corpus
        except Exception as exc:  # shown on the page; the chat stays on the demo corpus
            logger.exception("indexing %s failed", self.folder)
            self.error = str(exc)
        finally:
            self.finished.set()

    def status(self) -> str:
        """The page's corpus line: the indexing stage with its rate and ETA, then the
        outcome."""
        name = html.escape(self.folder)
        if self.corpus is not None:
            return (
                f"**Corpus:** {html.escape(self.corpus.name)} ({len(self.corpus.corpus):,} "
                "passages) · indexed; the next question starts a conversation over it"
            )
        if self.error is not None:
            return (
                f"⚠️ **Could not index {name}:** {html.escape(self.error)}  \n"
                "Answers still come from the demo corpus."
            )
        doing = self.progress.describe() if self.progress else "listing files"
        return f"⏳ **Indexing {name}:** {doing} · answers come from the demo corpus until then"


class WebChat:
    """The Gradio app: one chat per browser tab (Gradio's session hash); a folder indexed
    in the background (``indexing``) replaces the corpus when it is ready (:meth:`switch`)."""

    def __init__(
        self,
        make_chat: Callable[[], Chat],
        title: str,
        note: str,
        indexing: FolderIndexing | None = None,
    ) -> None:
        self.make_chat = make_chat
        self.title = title
        self.note = note
        self.indexing = indexing
        self._sessions: OrderedDict[str, Session] = OrderedDict()
        self._lock = threading.Lock()

    def switch(self, make_chat: Callable[[], Chat], title: str) -> None:
        """Chats from now on come from ``make_chat``; every tab starts a new conversation."""
        with self._lock:
            self.make_chat, self.title = make_chat, title
            self._sessions.clear()

    def corpus_status(self) -> tuple[str, str, Any]:
        """(header, corpus line, timer): the timer stops once the folder is indexed."""
        if self.indexing is None:
            return self.header(), "", gr.Timer(active=False)
        finished = self.indexing.finished.is_set()
        return self.header(), self.indexing.status(), gr.Timer(active=not finished)

    def header(self) -> str:
        return f"## {self.title}\n**Model:** {self.note}"

    def session(self, key: str) -> Session:
        with self._lock:
            if key not in self._sessions:
                self._sessions[key] = Session(self.make_chat())
                if len(self._sessions) > MAX_SESSIONS:
                    self._sessions.popitem(last=False)
            self._sessions.move_to_end(key)
            return self._sessions[key]

    def respond(self, message: str, method: str, request: gr.Request) -> Iterator[tuple[Any, ...]]:
        """Stream one turn: (question box, chat, passage panel, account). The question shows
        at once; while another turn of this tab runs it waits, marked as queued, and is
        answered next. The box is cleared once, when the question is taken."""
        session = self.session(request.session_hash or "default")
        try:
            question = chatkit.check_question(message, session.chat.settings)
        except chatkit.ChatInputError as exc:
            gr.Warning(str(exc))
            yield gr.skip(), gr.skip(), gr.skip(), gr.skip()
            return
        with session.lock:
            session.messages += [
                {"role": "user", "content": question},
                {"role": "assistant", "content": WAITING},
            ]
            slot = len(session.messages) - 1
        yield "", session.shown(), gr.skip(), gr.skip()
        with session.turn_lock:
            session.turns += 1
            yield from self._turn(session, slot, question, method)

    def _turn(
        self, session: Session, slot: int, question: str, method: str
    ) -> Iterator[tuple[Any, ...]]:
        chat, turn = session.chat, session.turns
        label = chatkit.model_label(chat.settings)
        session.set(slot, "retrieving…")
        yield gr.skip(), session.shown(), '<div class="evidence">retrieving…</div>', "…"
        try:
            chat.method = chatkit.get_method(method).name
            stream = chat.stream(question)
            generated, panel = "", ""
            for piece in stream:
                generated += piece
                r = stream.retrieval
                assert r is not None
                if not panel:
                    panel = evidence_html(r.evidence, r.method, r.standalone, r.trace)
                session.set(slot, answer_markdown(r, label, generated, streaming=True))
                yield gr.skip(), session.shown(), panel, "answering…"
            result = stream.result
            assert result is not None
        except Exception as exc:  # shown in the chat; the page stays usable
            logger.exception("the turn failed")
            session.set(slot, f"⚠️ **The turn failed:** {chatkit.error_line(exc)}\n\nAsk again.")
            yield (
                gr.skip(),
                session.shown(),
                gr.skip(),
                f"**Turn {turn}** · ⚠️ failed (see the chat)",
            )
            return
        r = result.retrieval
        session.set(slot, answer_markdown(r, label, result.generated, error=result.error))
        panel = evidence_html(result.evidence, r.method, r.standalone, r.trace)
        yield gr.skip(), session.shown(), panel, account_markdown(result, turn)

    def clear(self, request: gr.Request) -> tuple[list[Any], str, str]:
        session = self.session(request.session_hash or "default")
        with session.turn_lock, session.lock:
            session.chat.reset()
            session.messages.clear()
        return [], "", ""

    def build(self) -> gr.Blocks:
        with gr.Blocks(title="rag-multihop chat") as demo:
            header = gr.Markdown(self.header(), elem_id="model-note")
            status = gr.Markdown(
                self.indexing.status() if self.indexing else "", elem_id="corpus-status"
            )
            timer = gr.Timer(1.0, active=self.indexing is not None)
            timer.tick(self.corpus_status, None, [header, status, timer])
            with gr.Row():
                with gr.Column(scale=3):
                    chatbot = gr.Chatbot(label="Chat", height=520, elem_id="chat")
                    with gr.Row():
                        box = gr.Textbox(
                            placeholder="Ask a question about the corpus…",
                            show_label=False,
                            scale=5,
                            elem_id="question",
                        )
                        send = gr.Button("Send", variant="primary", scale=1, elem_id="send")
                    clear = gr.Button("New conversation", size="sm")
                with gr.Column(scale=2):
                    method = gr.Dropdown(
                        choices=[(m.label, m.name) for m in chatkit.METHODS.values()],
                        value=chatkit.DEFAULT_METHOD,
                        label="Retrieval method",
                        info=" · ".join(
                            f"{m.label}: {m.description}" for m in chatkit.METHODS.values()
                        ),
                        elem_id="method",
                    )
                    account = gr.Markdown(elem_id="account")
                    panel = gr.HTML(label="Reasoning chain", elem_id="panel")
            outputs = [box, chatbot, panel, account]
            for event in (box.submit, send.click):  # a question sent mid-answer is queued
                event(self.respond, [box, method], outputs, trigger_mode="multiple")
            clear.click(self.clear, None, [chatbot, panel, account])
        return demo


def make_app(args: Any) -> WebChat:
    """The web chat on the demo corpus; a ``--corpus`` folder is indexed in the background
    (read by the chosen framework's readers) and replaces it when ready."""
    settings = chatkit.llm_settings(args.llm, args.api_base)
    if args.framework == "haystack":
        from haystack_chat import HaystackChat, HaystackFolderReader, HaystackStack

        reader: Any = HaystackFolderReader()

        def chats(corpus: ChatCorpus) -> Callable[[], Chat]:
            stack = HaystackStack(corpus)
            return lambda: HaystackChat(stack, settings, args.method, small_model=args.small_model)

    else:
        from llama_index_chat import LlamaIndexChat, LlamaIndexFolderReader, LlamaIndexStack

        reader = LlamaIndexFolderReader()

        def chats(corpus: ChatCorpus) -> Callable[[], Chat]:
            stack = LlamaIndexStack(corpus)
            return lambda: LlamaIndexChat(
                stack, settings, args.method, small_model=args.small_model
            )

    def title(corpus: ChatCorpus) -> str:
        n = len(corpus.corpus)
        return f"rag-multihop chat · {corpus.name} ({n:,} passages) · {args.framework}"

    if args.corpus:
        check_folder(Path(args.corpus))  # at once; what is in it is read in the background
    demo = chatkit.load_chat_corpus()
    app = WebChat(chats(demo), title(demo), chatkit.model_note(settings))
    if args.corpus:
        app.indexing = FolderIndexing(
            args.corpus,
            lambda report: chatkit.load_chat_corpus(args.corpus, reader=reader, progress=report),
            lambda corpus: app.switch(chats(corpus), title(corpus)),
        ).start()
    return app


def main(argv: Sequence[str] | None = None) -> int:
    parser = chatkit.argument_parser(__doc__)
    parser.add_argument("--framework", choices=["llama-index", "haystack"], default="llama-index")
    parser.add_argument("--port", type=int, default=7860)
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    try:
        app = make_app(args)
    except chatkit.ChatInputError as exc:
        parser.error(str(exc))
    demo = app.build()
    demo.queue(default_concurrency_limit=4)
    demo.launch(server_name="127.0.0.1", server_port=args.port, css=CSS)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
