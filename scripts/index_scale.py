"""Scale of the persistent corpus index on synthetic titled corpora with given vectors.

For each size N: build the index (vectors given: random unit vectors), open it and make
the ``multihop`` and ``pit-boltzmann`` retrievers from it, time the first query and
``--queries`` more (query vector given), add 10k passages, delete 10k (and, with
``--phases ...,reupsert``, upsert 10k passages it already holds, unchanged: an ingestion
pipeline run again over the same files; with ``trickle``, 500 one-passage writes, with the
default merge policy or ``--no-merge``). Each phase runs in its own process, so its peak
RSS is its own. Prints a markdown table and writes JSON.
With ``--preload`` the server maps every page of the index right after opening
(``IndexSnapshot.preload``, timed as ``preload_s``), as a long-running server would;
without it, the first queries fault in the pages they touch.

Memory while serving is also reported as the process's anonymous memory grown by opening
and querying (``RssAnon`` of ``/proc/self/status``: what the index's structures cost;
memory-mapped file pages, vectors and columns the queries touched, are ``RssFile``) per
passage, less the exact flat index's copy of the vectors (``ann="flat"`` builds one). With
an ANN (``--ann HNSW32``), the dense top 10 / top 50 of the queries are compared with the
exact ones (recall) at several ``efSearch`` values, with their search times.

The corpus: passage i is titled by two pseudo-words (unique), its ~55-word text names its
own title, three other titles (Zipf-distributed, so some pages are hubs) and a year among
common words. Questions name one title ("Where was the founder of X born?").

Run from the repository root (numbers depend on the machine's load; say what it was)::

    python scripts/index_scale.py --sizes 10000,100000 --out /tmp/index_scale.json
    python scripts/index_scale.py --sizes 100000,1000000 --ann HNSW32 --out /tmp/scale.json
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

SYLLABLES = [
    "ka",
    "lo",
    "mi",
    "ra",
    "te",
    "su",
    "no",
    "vi",
    "da",
    "pe",
    "zo",
    "ru",
    "ba",
    "ni",
    "fo",
    "ge",
    "ta",
    "li",
    "mo",
    "se",
]
CHANGE = 10_000
TRICKLE = 500


def _words(count: int, syllables: int, seed: int) -> list[str]:
    rng = np.random.default_rng(seed)
    found: dict[str, None] = {}
    while len(found) < count:
        parts = rng.integers(0, len(SYLLABLES), size=syllables)
        found["".join(SYLLABLES[p] for p in parts)] = None
    return list(found)


FIRST = [w.capitalize() for w in _words(997, 3, 1)]
VOCABULARY = _words(3000, 3, 2)


def title(i: int) -> str:
    """The unique title of passage ``i``."""
    return f"{FIRST[i % len(FIRST)]} {_last(i // len(FIRST))}"


def _last(j: int) -> str:
    word = ""
    j += 1
    while j:
        j, r = divmod(j - 1, len(SYLLABLES))
        word = SYLLABLES[r] + word
    return (word + "n").capitalize()


def passages(start: int, end: int, universe: int, seed: int | list[int]) -> list[Any]:
    """Passages ``start .. end-1``; they name titles of passages ``0 .. universe-1``."""
    from rag_multihop import Passage

    rng = np.random.default_rng(seed)
    out = []
    for i in range(start, end):
        words = rng.choice(VOCABULARY, size=48).tolist()
        hub = min(int(rng.zipf(1.6)) - 1, universe - 1) * 7919 % universe
        named = [hub, *rng.integers(0, universe, size=2).tolist()]
        year = int(rng.integers(1800, 2020))
        text = (
            f"{title(i)} is a {words[0]} {words[1]} {words[2]} of {title(int(named[0]))}. "
            f"It was {' '.join(words[3:15])} in {year} by {title(int(named[1]))}. "
            f"Later {' '.join(words[15:30])} with {title(int(named[2]))} and "
            f"{' '.join(words[30:48])}."
        )
        out.append(Passage(f"p{i}", text, title(i)))
    return out


def vectors(start: int, end: int, dim: int) -> np.ndarray:
    """Unit vectors of passages ``start .. end-1`` (each row seeded by its passage)."""
    out = np.empty((end - start, dim), dtype=np.float32)
    for block in range(start, end, 50_000):
        stop = min(block + 50_000, end)
        rng = np.random.default_rng([block, dim])
        out[block - start : stop - start] = rng.standard_normal((stop - block, dim), np.float32)
    out /= np.linalg.norm(out, axis=1, keepdims=True)
    return out


def _rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _status_mb(field: str) -> float:
    """A ``/proc/self/status`` memory field (``RssAnon``, ``RssFile``) in MB."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(f"{field}:"):
            return int(line.split()[1]) / 1024
    return float("nan")


EF_SEARCH = (16, 32, 64, 128)


BUILD_BATCH = 50_000
"""Passages (and vectors) per batch handed to the streamed build."""


def corpus_batches(n: int, dim: int) -> Any:
    """The corpus of ``n`` passages with their vectors, :data:`BUILD_BATCH` at a time
    (generated lazily: the build never sees the whole corpus at once)."""
    for start in range(0, n, BUILD_BATCH):
        end = min(start + BUILD_BATCH, n)
        yield passages(start, end, n, seed=[n, start]), vectors(start, end, dim)


class _AnnTimer:
    """Wraps the index's ANN builder to time vector insertion apart from the rest."""

    def __init__(self) -> None:
        import rag_multihop.store.index as module

        self.seconds = 0.0
        self._build = module.make_ann_index
        module.make_ann_index = self  # type: ignore[assignment]

    def __call__(self, *args: Any, **options: Any) -> Any:
        start = time.perf_counter()
        try:
            return self._build(*args, **options)
        finally:
            self.seconds += time.perf_counter() - start


class _Stages:
    """Records when each build stage reported its last batch (and, with ``log``, prints
    each batch with the memory then to stderr)."""

    def __init__(self, log: bool) -> None:
        self.start = time.perf_counter()
        self.ends: dict[str, float] = {}
        self.log = log

    def __call__(self, stage: str, done: int, total: int) -> None:
        self.ends[stage] = time.perf_counter() - self.start
        if self.log:
            print(
                f"{stage}: {done:,}/{total:,} at {self.ends[stage]:.0f} s (CPU "
                f"{time.process_time():.0f} s), RSS "
                f"{_status_mb('VmRSS'):.0f} MB (anon {_status_mb('RssAnon'):.0f}), peak "
                f"{_rss_mb():.0f} MB, load {os.getloadavg()[0]:.1f}",
                file=sys.stderr,
                flush=True,
            )


def phase_build(path: Path, n: int, dim: int, ann: str) -> dict[str, Any]:
    from rag_multihop.store import CorpusIndex, IndexSettings

    timer = _AnnTimer()
    stages = _Stages(log=n >= 500_000)
    start, cpu = time.perf_counter(), time.process_time()
    CorpusIndex.build_batches(
        path, corpus_batches(n, dim), settings=IndexSettings(ann=ann), progress=stages
    )
    seconds = time.perf_counter() - start
    disk = sum(f.stat().st_size for f in path.rglob("*") if f.is_file())
    read_s = stages.ends.get("read names", 0.0)
    return {
        "build_s": seconds,
        "build_cpu_s": time.process_time() - cpu,
        "build_read_s": read_s,
        "build_links_s": stages.ends.get("find links", 0.0) - read_s,
        "build_ann_s": timer.seconds,
        "build_rss_mb": _rss_mb(),
        "disk_mb": disk / 2**20,
        "bytes_per_passage_beyond_vectors": (disk - n * dim * 4) / n,
    }


def phase_serve(path: Path, n: int, dim: int, queries: int, preload: bool) -> dict[str, Any]:
    from rag_multihop import Query
    from rag_multihop.multihop import MultiHopRetriever
    from rag_multihop.store import CorpusIndex, graph_fusion_retriever

    rng = np.random.default_rng(7)
    targets = rng.integers(0, n, size=queries + 1)
    base = vectors(0, 1, dim)[0]  # touch numpy and the generator before timing
    asked = []
    for t in targets.tolist():
        v = vectors(t, t + 1, dim)[0] + 0.3 * rng.standard_normal(dim).astype(np.float32)
        asked.append(
            Query(f"Where was the founder of {title(t)} born?", embedding=v / np.linalg.norm(v))
        )
    del base
    import faiss  # noqa: F401 - loaded before measuring: the library is not the index
    import scipy.sparse  # noqa: F401

    anon_before = _status_mb("RssAnon")
    start = time.perf_counter()
    snapshot = CorpusIndex(path).snapshot()
    multihop = MultiHopRetriever.from_index(snapshot)
    fusion = graph_fusion_retriever(snapshot)
    open_s = time.perf_counter() - start
    start = time.perf_counter()
    preloaded = snapshot.preload() if preload else 0
    preload_s = time.perf_counter() - start
    start = time.perf_counter()
    multihop.retrieve(asked[0], k=10)
    first_multihop = time.perf_counter() - start
    start = time.perf_counter()
    fusion.retrieve(asked[0], k=10)
    first_fusion = time.perf_counter() - start
    timings: dict[str, list[float]] = {"multihop": [], "fusion": []}
    cpu: dict[str, list[float]] = {"multihop": [], "fusion": []}
    for query in asked[1:]:
        for name, retriever in (("multihop", multihop), ("fusion", fusion)):
            start, start_cpu = time.perf_counter(), time.process_time()
            retriever.retrieve(query, k=10)
            timings[name].append((time.perf_counter() - start) * 1000)
            cpu[name].append((time.process_time() - start_cpu) * 1000)
    anon = _status_mb("RssAnon") - anon_before
    flat_copy = n * dim * 4 / 2**20 if snapshot.settings.ann == "flat" else 0.0
    out: dict[str, Any] = {
        "open_s": open_s,
        "preload_s": preload_s if preload else None,
        "preload_mb": preloaded / 2**20,
        "first_query_multihop_s": first_multihop,
        "first_query_fusion_s": first_fusion,
        "serve_rss_mb": _rss_mb(),
        "serve_anon_mb": anon,
        "serve_file_mb": _status_mb("RssFile"),
        "serve_bytes_per_passage": (anon - flat_copy) * 2**20 / n,
    }
    for name, values in timings.items():
        out[f"{name}_p50_ms"] = statistics.median(values)
        out[f"{name}_p95_ms"] = float(np.percentile(values, 95))
        out[f"{name}_cpu_p50_ms"] = statistics.median(cpu[name])
        out[f"{name}_cpu_p95_ms"] = float(np.percentile(cpu[name], 95))
    if snapshot.settings.ann != "flat":
        out |= _recall(snapshot, np.stack([q.embedding for q in asked[1:]]))
    return out


def _recall(snapshot: Any, queries: np.ndarray) -> dict[str, Any]:
    """Recall of the ANN's top 1 / 10 / 50 against the exact ones, per ``efSearch``, and
    the search time per query (after the serving numbers: the exact scan reads every
    vector). Random vectors are the hard case for an ANN: beyond the query's own passage
    (its top 1), the neighbours are nearly equidistant."""
    exact = []
    for block in range(0, len(queries), 50):
        scores = queries[block : block + 50] @ np.asarray(snapshot.vectors).T
        exact.extend(np.argsort(-scores, axis=1, kind="stable")[:, :50].tolist())
    ids = snapshot.passage_ids
    truth = [[ids[i] for i in row] for row in exact]
    dense = snapshot.dense_index
    out: dict[str, Any] = {}
    for ef in EF_SEARCH:
        dense.ef_search = ef
        for k in (1, 10, 50):
            start = time.perf_counter()
            found = [dense.search(q[None, :], k)[1][0] for q in queries]
            ms = (time.perf_counter() - start) * 1000 / len(queries)
            hits = [len(set(f) & set(t[:k])) / k for f, t in zip(found, truth, strict=True)]
            out[f"recall@{k}_ef{ef}"] = float(np.mean(hits))
            out[f"search{k}_ms_ef{ef}"] = ms
    return out


def phase_add(path: Path, n: int, dim: int) -> dict[str, Any]:
    from rag_multihop.store import CorpusIndex

    new = passages(n, n + CHANGE, n + CHANGE, seed=n + 1)
    matrix = vectors(n, n + CHANGE, dim)
    index = CorpusIndex(path)
    timer = _AnnTimer()
    start, cpu = time.perf_counter(), time.process_time()
    index.add(new, matrix)
    return {
        "add_10k_s": time.perf_counter() - start,
        "add_cpu_s": time.process_time() - cpu,
        "add_ann_s": timer.seconds,
        "add_rss_mb": _rss_mb(),
    }


def phase_delete(path: Path, n: int) -> dict[str, Any]:
    from rag_multihop.store import CorpusIndex

    rows = np.random.default_rng(3).choice(n, size=min(CHANGE, n), replace=False)
    doomed = [f"p{i}" for i in rows]
    index = CorpusIndex(path)
    start, cpu = time.perf_counter(), time.process_time()
    index.delete(doomed)
    return {
        "delete_10k_s": time.perf_counter() - start,
        "delete_cpu_s": time.process_time() - cpu,
        "delete_rss_mb": _rss_mb(),
    }


def phase_reupsert(path: Path, n: int) -> dict[str, Any]:
    """Upsert 10k passages the index already holds, unchanged (an ingestion pipeline run
    again over the same files): their texts, titles and vectors read back from the index."""
    from rag_multihop.store import CorpusIndex

    index = CorpusIndex(path)
    snapshot = index.snapshot()
    rows = np.random.default_rng(4).choice(snapshot.n_live, size=min(CHANGE, n), replace=False)
    corpus = snapshot.corpus
    same = [corpus[int(row)] for row in rows]
    matrix = np.stack([np.asarray(snapshot.vectors[int(row)]) for row in rows])
    before = index.version
    start, cpu = time.perf_counter(), time.process_time()
    after = index.upsert(same, matrix)
    return {
        "reupsert_10k_s": time.perf_counter() - start,
        "reupsert_cpu_s": time.process_time() - cpu,
        "reupsert_new_version": after != before,
    }


def phase_trickle(path: Path, n: int, dim: int, merge: bool) -> dict[str, Any]:
    """``TRICKLE`` one-passage writes (four adds, then a delete), as an ingestion pipeline
    fed one document at a time: the time of each, the segments left, and what opening the
    result costs (with the default :class:`MergePolicy`, or none)."""
    from rag_multihop.store import CorpusIndex

    index = CorpusIndex(path, merge=CorpusIndex(path).merge if merge else None)
    seconds = []
    for k in range(TRICKLE):
        start = time.perf_counter()
        if k % 5 == 4:
            index.delete([f"p{k}"])
        else:
            i = n + CHANGE + k
            index.add(passages(i, i + 1, i + 1, seed=i), vectors(i, i + 1, dim))
        seconds.append(time.perf_counter() - start)
    opens = []
    for _ in range(5):
        start = time.perf_counter()
        CorpusIndex(path).snapshot()
        opens.append(time.perf_counter() - start)
    tail = seconds[-TRICKLE // 10 :]
    return {
        "trickle_writes": TRICKLE,
        "trickle_merge": merge,
        "trickle_s": sum(seconds),
        "trickle_first_ms": statistics.median(seconds[: TRICKLE // 10]) * 1000,
        "trickle_last_ms": statistics.median(tail) * 1000,
        "trickle_max_ms": max(seconds) * 1000,
        "trickle_segments": index.info()["segments"],
        "trickle_open_ms": statistics.median(opens) * 1000,
    }


def _child(args: list[str]) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, __file__, "--phase", *args], check=True, stdout=subprocess.PIPE, text=True
    )
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--sizes", default="10000,100000")
    parser.add_argument("--dim", type=int, default=384)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--ann", default="flat", help="flat or a FAISS factory (HNSW32)")
    parser.add_argument("--workdir", type=Path, default=None)
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument(
        "--keep", action="store_true", help="keep each index (in --workdir) after its row"
    )
    parser.add_argument(
        "--phases", default="build,serve,add,delete", help="the phases to run, in order"
    )
    parser.add_argument(
        "--preload",
        action="store_true",
        help="serve: map every page of the index after opening (IndexSnapshot.preload)",
    )
    parser.add_argument(
        "--no-merge",
        action="store_true",
        help="trickle: write without merging small segments (MergePolicy None)",
    )
    parser.add_argument("--phase", nargs="*", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.phase:
        name, path, n, dim, extra = (
            args.phase[0],
            Path(args.phase[1]),
            *map(int, args.phase[2:4]),
            args.phase[4:],
        )
        if name == "build":
            result = phase_build(path, n, dim, extra[0])
        elif name == "serve":
            result = phase_serve(path, n, dim, int(extra[0]), extra[1] == "preload")
        elif name == "add":
            result = phase_add(path, n, dim)
        elif name == "reupsert":
            result = phase_reupsert(path, n)
        elif name == "trickle":
            result = phase_trickle(path, n, dim, extra[0] == "merge")
        else:
            result = phase_delete(path, n)
        print(json.dumps(result))
        return
    rows = []
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="index-scale-"))
    for n in [int(s) for s in args.sizes.split(",")]:
        path = workdir / f"idx-{n}"
        if args.phases.startswith("build"):
            shutil.rmtree(path, ignore_errors=True)
        common = [str(path), str(n), str(args.dim)]
        row: dict[str, Any] = {"passages": n, "dim": args.dim, "ann": args.ann}
        serve = [str(args.queries), "preload" if args.preload else "lazy"]
        extras = {
            "build": [args.ann],
            "serve": serve,
            "add": [],
            "delete": [],
            "reupsert": [],
            "trickle": ["none" if args.no_merge else "merge"],
        }
        for phase in args.phases.split(","):
            extra = extras[phase]
            row |= _child([phase, *common, *extra])
            row[f"{phase}_load_average"] = os.getloadavg()[0]
            print(json.dumps({"passages": n, "phase": phase, **row}), flush=True)
        row["load_average"] = os.getloadavg()
        rows.append(row)
        print(json.dumps(row), flush=True)
        if not args.keep:
            shutil.rmtree(path, ignore_errors=True)
    if args.out:
        args.out.write_text(json.dumps(rows, indent=2))
    keys = [
        ("passages", "{:,}"),
        ("build_s", "{:.1f}"),
        ("build_rss_mb", "{:.0f}"),
        ("disk_mb", "{:.0f}"),
        ("bytes_per_passage_beyond_vectors", "{:.0f}"),
        ("open_s", "{:.2f}"),
        ("preload_s", "{:.2f}"),
        ("first_query_multihop_s", "{:.2f}"),
        ("serve_rss_mb", "{:.0f}"),
        ("serve_bytes_per_passage", "{:.0f}"),
        ("multihop_p50_ms", "{:.1f}"),
        ("multihop_p95_ms", "{:.1f}"),
        ("fusion_p50_ms", "{:.1f}"),
        ("fusion_p95_ms", "{:.1f}"),
        ("multihop_cpu_p50_ms", "{:.1f}"),
        ("multihop_cpu_p95_ms", "{:.1f}"),
        ("fusion_cpu_p50_ms", "{:.1f}"),
        ("fusion_cpu_p95_ms", "{:.1f}"),
        ("add_10k_s", "{:.1f}"),
        ("delete_10k_s", "{:.1f}"),
        ("trickle_last_ms", "{:.0f}"),
        ("trickle_segments", "{:d}"),
        ("trickle_open_ms", "{:.0f}"),
    ]
    print("| " + " | ".join(k for k, _ in keys) + " |")
    print("|" + "---|" * len(keys))
    for row in rows:
        cells = (f.format(row[k]) if row.get(k) is not None else "-" for k, f in keys)
        print("| " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
