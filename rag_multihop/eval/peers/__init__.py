"""Framework peers: the benchmark's baselines run by LlamaIndex and Haystack themselves.

This package is the one place in ``rag_multihop`` allowed to import LlamaIndex or Haystack.
Its modules import their framework at the top, and nothing imports them until a peer is
built: :mod:`rag_multihop.eval.methods.peers` registers the peer names and imports
:mod:`.llama_index` or :mod:`.haystack` inside the factory, so ``available_methods()`` and
every other method run without either framework installed.
"""
