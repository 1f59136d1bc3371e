"""A browser chat (Gradio) that shows why each passage was used.

Served on 127.0.0.1: a question box, the answer streamed with numbered citations, a side
panel with the retrieved passages as the reasoning chain read from the method's trace (hop 1,
hop 2, related) and each passage's signals as bars labelled in plain words, the turn's account
(LLM calls, tokens, cost, latency), a method switcher and the answering model named plainly.
Every browser tab is its own conversation. The chat behind it is the LlamaIndex one
(``--framework haystack`` for the Haystack one, its readers too); the page loads nothing from
outside 127.0.0.1. A ``--corpus`` folder is indexed in the background (:class:`FolderIndexing`)
while the page answers from the demo corpus and shows a progress line (stage, passages/s,
ETA); once the folder is ready, new conversations use it.

Run:  bash examples/chatbots/run.sh web [--corpus DIR] [--llm MODEL] [--port 7860]
"""

from __future__ import annotations

import html
import logging
import os
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")
os.environ.setdefault("HF_HUB_OFFLINE", "1")

import chatkit
import gradio as gr
from chatkit import Chat, ChatCorpus, Evidence, TurnResult
from folders import IndexProgress, check_folder

logger = logging.getLogger(__name__)

MAX_SESSIONS = 64
"""Conversations kept at once (the oldest is dropped beyond that)."""


def signal_bar(name: str, meaning: str, value: float) -> str:
    """One signal as a bar labelled in plain words, its name and exact value on hover (values
    outside [0, 1] are shown, the bar is clipped)."""
    width = round(100 * min(1.0, max(0.0, value)))
    return (
        f'<span class="signal" data-signal="{html.escape(name)}" '
        f'title="{html.escape(name)} = {value:.4f}">'
        f'<span class="bar"><span style="width:{width}%"></span></span>'
        f'<span class="signal-value">{value:.2f}</span>'
        f'<span class="signal-name">{html.escape(meaning)}</span></span>'
    )


def evidence_html(chain: Sequence[Evidence], method: str, standalone: str = "") -> str:
    """The side panel: passages grouped by step of the chain, cited ones marked, signals as
    bars labelled from the method's signal vocabulary."""
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
                for name, meaning, value in chatkit.signal_items(e.source.signals, method)
            )
            text = html.escape(e.source.text[:280] + ("…" if len(e.source.text) > 280 else ""))
            parts.append(
                f'<div class="passage" data-id="{html.escape(e.source.id)}">'
                f'<div class="passage-head"><b>[{e.number}]</b> '
                f"{html.escape(e.source.title or e.source.id)} {cited}</div>"
                f'<div class="role">{html.escape(e.role)}</div>'
                f'<div class="signals">{signals}</div><div class="text">{text}</div></div>'
            )
    parts.append("</div>")
    return "".join(parts)


def answer_markdown(result: TurnResult) -> str:
    """The answer followed by its numbered sources (cited ones in bold)."""
    by_number = sorted(result.evidence, key=lambda e: e.number)
    sources = " · ".join(
        f"**[{e.number}] {e.source.title}**" if e.cited else f"[{e.number}] {e.source.title}"
        for e in by_number
    )
    return f"{result.answer.strip() or '(no answer)'}\n\n<small>Sources: {sources}</small>"


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
        self._sessions: OrderedDict[str, Chat] = OrderedDict()
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

    def session(self, key: str) -> Chat:
        with self._lock:
            if key not in self._sessions:
                self._sessions[key] = self.make_chat()
                if len(self._sessions) > MAX_SESSIONS:
                    self._sessions.popitem(last=False)
            self._sessions.move_to_end(key)
            return self._sessions[key]

    def respond(
        self, message: str, history: list[dict[str, Any]], method: str, request: gr.Request
    ) -> Iterator[tuple[Any, ...]]:
        """Stream one turn: (question box, chat, passage panel, account)."""
        chat = self.session(request.session_hash or "default")
        chat.method = chatkit.get_method(method).name
        try:
            stream = chat.stream(message)
        except chatkit.ChatInputError as exc:
            gr.Warning(str(exc))
            yield message, history, gr.skip(), gr.skip()
            return
        history = [
            *history,
            {"role": "user", "content": message},
            {"role": "assistant", "content": ""},
        ]
        answer, panel = "", '<div class="evidence">retrieving…</div>'
        yield "", history, panel, "…"
        try:
            for piece in stream:
                answer += piece
                if stream.retrieval is not None and panel.endswith("retrieving…</div>"):
                    r = stream.retrieval
                    chain = chatkit.evidence_chain(r.sources, r.method, trace=r.trace)
                    panel = evidence_html(chain, r.method)
                history[-1] = {"role": "assistant", "content": answer}
                yield "", history, panel, "answering…"
        except Exception as exc:  # shown in the chat; the page stays usable
            logger.exception("the turn failed")
            history[-1] = {
                "role": "assistant",
                "content": f"{answer}\n\n⚠️ **The model failed:** {exc}\n\nAsk again.",
            }
            yield "", history, panel, f"**Turn {len(history) // 2}** · ⚠️ failed (see the chat)"
            return
        result = stream.result
        assert result is not None
        history[-1] = {"role": "assistant", "content": answer_markdown(result)}
        panel = evidence_html(result.evidence, result.retrieval.method, result.retrieval.standalone)
        yield "", history, panel, account_markdown(result, len(history) // 2)

    def clear(self, request: gr.Request) -> tuple[list[Any], str, str]:
        self.session(request.session_hash or "default").reset()
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
            box.submit(self.respond, [box, chatbot, method], outputs)
            send.click(self.respond, [box, chatbot, method], outputs)
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
            return lambda: HaystackChat(stack, settings, args.method)

    else:
        from llama_index_chat import LlamaIndexChat, LlamaIndexFolderReader, LlamaIndexStack

        reader = LlamaIndexFolderReader()

        def chats(corpus: ChatCorpus) -> Callable[[], Chat]:
            stack = LlamaIndexStack(corpus)
            return lambda: LlamaIndexChat(stack, settings, args.method)

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
