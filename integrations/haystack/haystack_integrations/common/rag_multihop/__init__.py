"""Code shared by the rag-multihop Haystack components (``haystack_integrations.common``, the
place haystack-core-integrations keeps an integration's shared helpers): the one translation
between Haystack and rag-multihop, :mod:`.convert`."""
