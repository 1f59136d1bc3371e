"""Haystack joiners of rag-multihop; :mod:`.benchmark_peers` registers the DocumentJoiner peers."""
