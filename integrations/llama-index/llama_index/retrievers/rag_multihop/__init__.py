"""LlamaIndex retrievers of rag-multihop; :mod:`.benchmark_peers` registers the fusion peers."""
