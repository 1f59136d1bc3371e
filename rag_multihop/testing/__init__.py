"""Test helpers for rag-multihop and for code built on it: no model, no network, no LLM.

What the core suite and both integrations' suites share, written once (like Haystack's
``haystack.testing``):

- :class:`HashingEncoder` (and :func:`hashing_vectors`): a deterministic bag-of-words
  encoder; words hashed into ``dim`` buckets, rows L2-normalised;
- the toy two-hop corpus: :data:`POLISH_WEDDING_QUESTION` and
  :func:`polish_wedding_passages` (the question's bridge, its answer passage, distractors);
- :class:`FakeTransport`: a plain-object LLM transport (the
  :class:`~rag_multihop.llm.transport.StreamingTransport` protocol an
  :class:`~rag_multihop.llm.LLMClient` calls instead of litellm) that answers by the prompt's
  content or plays a script, and records what it was asked;
- :func:`polish_wedding_replies`: what a model that reads the toy corpus right replies to each
  kind of prompt of BridgeRAG and CoopRAG (keyed by the :data:`PROMPT_MARKERS`), and
  :func:`polish_wedding_reply`, the reply to one prompt (for fakes of a framework's LLM);
- :class:`FakeOpenAIServer`: a scripted OpenAI-compatible server on 127.0.0.1 (whole and
  streamed replies, a broken stream on request) for code that talks HTTP;
- :func:`chroma_server`: a real Chroma server on 127.0.0.1 for the adapters' vector-store
  tests (needs ``chromadb``).

Importing this module imports numpy and the core types only (no torch, litellm, chromadb or
framework).

Example:
    >>> from rag_multihop.llm import LLMClient, LLMSettings
    >>> encoder = HashingEncoder(dim=8)
    >>> encoder.encode(["Polish Wedding", "polish wedding!"]).shape
    (2, 8)
    >>> transport = FakeTransport({"capital": "Paris"}, default="I do not know")
    >>> client = LLMClient(LLMSettings("openai/gpt-4o-mini"), transport=transport)
    >>> client.complete("What is the capital of France?").text
    'Paris'
    >>> transport.prompts()
    ['What is the capital of France?']
"""

from rag_multihop.testing.chroma import chroma_server
from rag_multihop.testing.encoders import HashingEncoder, hashing_vectors
from rag_multihop.testing.llm import FakeOpenAIServer, FakeTransport, Reply
from rag_multihop.testing.toy import (
    POLISH_WEDDING_ANSWER,
    POLISH_WEDDING_CHAIN,
    POLISH_WEDDING_QUESTION,
    POLISH_WEDDING_UNROLLING,
    PROMPT_MARKERS,
    polish_wedding_passages,
    polish_wedding_replies,
    polish_wedding_reply,
)

__all__ = [
    "POLISH_WEDDING_ANSWER",
    "POLISH_WEDDING_CHAIN",
    "POLISH_WEDDING_QUESTION",
    "POLISH_WEDDING_UNROLLING",
    "PROMPT_MARKERS",
    "FakeOpenAIServer",
    "FakeTransport",
    "HashingEncoder",
    "Reply",
    "chroma_server",
    "hashing_vectors",
    "polish_wedding_passages",
    "polish_wedding_replies",
    "polish_wedding_reply",
]
