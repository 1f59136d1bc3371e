"""Index build throughput: in-process vs Ray (local workers), and fp32 vs bulk encoders.

``--sizes``: for each N, the synthetic titled corpus of ``scripts/index_scale.py`` (vectors
given, so only the encoder-free stages run) is written as Parquet shards; each engine builds
the index from them in its own process (read, both passes, merge, write; the Ray column
also shows the Ray start-up inside it); peak RSS is the largest sum over the build's process
tree (driver, Ray's daemons and workers), sampled from /proc every 0.2 s; the two indexes
are compared array by array. ``--ceiling`` also runs two in-process builds of the same
shards at once, each in its own process: two copies of the same work with no engine
between them and nothing to share, so ``2 × alone / together`` (wall seconds) is the most
any engine of two processes can gain on this machine (cores that slow each other down,
through shared caches, memory bandwidth or a hypervisor, show here as a ceiling under 2×).

``--embed N``: bulk-embedding passages/s (wall) and passages per CPU-second (the process's
CPU time, all its threads: the figure that holds on a shared, loaded machine) of the first N
passages of the shared 2Wiki corpus with the fp32 (``minilm``), int8 ONNX (``minilm-int8``)
and bfloat16 (``minilm-bf16``, fast only on a CPU with AMX) encoders, uncached, one after
the other in one process, their ratios to fp32, and each one's fingerprint similarity to
fp32.

Prints a markdown table and writes JSON (``--out``). The machine's load (``uptime``) is
recorded with each number: compare ratios within one run. Example::

    python scripts/index_build_bench.py --sizes 10000,100000 --workers 2 --embed 2000
    python scripts/index_build_bench.py --sizes 100000 --workers 2 --ceiling
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
sys.path.insert(0, str(Path(__file__).resolve().parent))

import index_scale  # the synthetic corpus generator

DIM = 32
SHARDS = 4


def load() -> str:
    """The 1-minute load average and the CPU count."""
    return f"{os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs"


def _tree(root: int) -> dict[int, tuple[float, float]]:
    """``pid → (resident MB, CPU seconds)`` of process ``root`` and all its descendants,
    from /proc."""
    parents: dict[int, int] = {}
    found: dict[int, tuple[float, float]] = {}
    tick = os.sysconf("SC_CLK_TCK")
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as handle:
                fields = handle.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        parents[int(entry)] = int(fields[1])
        found[int(entry)] = (
            int(fields[21]) * os.sysconf("SC_PAGE_SIZE") / 2**20,
            (int(fields[11]) + int(fields[12])) / tick,
        )
    tree: dict[int, tuple[float, float]] = {}
    frontier = [root]
    while frontier:
        pid = frontier.pop()
        if pid in found:
            tree[pid] = found[pid]
        frontier.extend(child for child, parent in parents.items() if parent == pid)
    return tree


class TreeUsage:
    """Samples the build's process tree every 0.2 s in a thread: ``peak`` resident MB (the
    largest sum over the tree) and ``cpu_s``, the CPU seconds of every process seen (the
    last sample of each; the driver's own from ``os.times`` at the end)."""

    def __init__(self) -> None:
        self.peak = 0.0
        self._cpu: dict[int, float] = {}
        self._start = os.times()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _sample(self) -> None:
        tree = _tree(os.getpid())
        self.peak = max(self.peak, sum(rss for rss, _ in tree.values()))
        self._cpu.update({pid: cpu for pid, (_, cpu) in tree.items() if pid != os.getpid()})

    def _run(self) -> None:
        while not self._stop.is_set():
            self._sample()
            self._stop.wait(0.2)

    @property
    def cpu_s(self) -> float:
        own = os.times()
        return (
            sum(self._cpu.values())
            + (own.user - self._start.user)
            + (own.system - self._start.system)
        )

    def __enter__(self) -> TreeUsage:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._sample()
        self._stop.set()
        self._thread.join()


def write_shards(folder: Path, n: int) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    folder.mkdir(parents=True)
    passages = index_scale.passages(0, n, n, seed=n)
    vectors = index_scale.vectors(0, n, DIM)
    cuts = np.linspace(0, n, SHARDS + 1).astype(int).tolist()
    for part in range(SHARDS):
        a, b = cuts[part], cuts[part + 1]
        table = pa.table(
            {
                "id": [p.id for p in passages[a:b]],
                "text": [p.text for p in passages[a:b]],
                "title": [p.title for p in passages[a:b]],
                "vector": pa.FixedSizeListArray.from_arrays(
                    pa.array(vectors[a:b].reshape(-1)), DIM
                ),
            }
        )
        pq.write_table(table, folder / f"part-{part:03d}.parquet")


def phase_inprocess(shards: Path, index: Path) -> dict[str, Any]:
    import pyarrow.parquet as pq

    from rag_multihop import Passage
    from rag_multihop.store import CorpusIndex

    with TreeUsage() as usage:
        start = time.perf_counter()
        table = pq.read_table(sorted(str(f) for f in shards.glob("*.parquet")))
        passages = [
            Passage(i, t, title)
            for i, t, title in zip(
                table.column("id").to_pylist(),
                table.column("text").to_pylist(),
                table.column("title").to_pylist(),
                strict=True,
            )
        ]
        vectors = table.column("vector").combine_chunks().flatten().to_numpy()
        CorpusIndex.build(index, passages, vectors.reshape(len(passages), -1))
        seconds = time.perf_counter() - start
    return {"build_s": seconds, "peak_rss_mb": usage.peak, "cpu_s": usage.cpu_s, "load": load()}


def phase_ray(shards: Path, index: Path, workers: int) -> dict[str, Any]:
    from rag_multihop.store.ray_build import build_with_ray

    timings: list[dict[str, Any]] = []
    with TreeUsage() as usage:
        start = time.perf_counter()
        build_with_ray(index, [str(shards / "*.parquet")], workers=workers, timings=timings)
        seconds = time.perf_counter() - start
    return {
        "build_s": seconds,
        "driver_peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        "ray_start_s": timings[0]["wall_s"],
        "peak_rss_mb": usage.peak,
        "cpu_s": usage.cpu_s,
        "phases": timings,
        "load": load(),
    }


def phase_embed(n: int) -> dict[str, Any]:
    from rag_multihop.encoders import make_encoder
    from rag_multihop.encoders.fingerprint import EncoderFingerprint
    from rag_multihop.eval.datasets import load_named
    from rag_multihop.paths import data_dir

    corpus = load_named("2wiki", data_dir()).corpus
    texts = [p.embedding_text for p in list(corpus)[:n]]
    out: dict[str, Any] = {"passages": len(texts)}
    encoders = {name: make_encoder(name) for name in EMBED_ENCODERS}
    for name, encoder in encoders.items():
        encoder.encode(texts[:64])  # load the model and warm up
        start, cpu = time.perf_counter(), time.process_time()
        encoder.encode(texts)
        cpu = time.process_time() - cpu
        seconds = time.perf_counter() - start
        out[name] = {
            "seconds": seconds,
            "passages_per_s": len(texts) / seconds,
            "cpu_s": cpu,
            "passages_per_cpu_s": len(texts) / cpu,
            "load": load(),
        }
    fingerprint = EncoderFingerprint.of(encoders["minilm"])
    for name in EMBED_ENCODERS[1:]:
        out[name]["fingerprint_cosine"] = fingerprint.similarity(encoders[name])
    return out


EMBED_ENCODERS = ("minilm", "minilm-int8", "minilm-bf16")
"""The encoders ``--embed`` compares, fp32 first."""


def same_index(a: Path, b: Path) -> bool:
    """Whether two indexes hold the same arrays: every segment's and the serving arrays'
    (manifests equal but for the creation time and the folders' random names)."""
    from rag_multihop.store.segment import (
        SEGMENTS,
        current_manifest_path,
        read_arrays,
        read_manifest,
        read_segment,
    )

    left, right = read_manifest(current_manifest_path(a)), read_manifest(current_manifest_path(b))
    entries = left.pop("segments"), right.pop("segments")
    serving = left.pop("serving"), right.pop("serving")
    left.pop("created"), right.pop("created")
    files = [[e["files"] for e in side] for side in entries]
    if left != right or files[0] != files[1] or serving[0]["files"] != serving[1]["files"]:
        return False
    pairs = [
        (read_segment(a, x).arrays, read_segment(b, y).arrays)
        for x, y in zip(*entries, strict=True)
    ]
    pairs.append(
        tuple(
            read_arrays(root / SEGMENTS / entry["name"], entry["files"])
            for root, entry in ((a, serving[0]), (b, serving[1]))
        )
    )
    return all(np.array_equal(np.asarray(x[k]), np.asarray(y[k])) for x, y in pairs for k in x)


def _child(args: list[str]) -> dict[str, Any]:
    return _children([args])[0]


def _children(runs: list[list[str]]) -> list[dict[str, Any]]:
    """Run each phase in its own process, all at once; their JSON results in order."""
    started = [
        subprocess.Popen(
            [sys.executable, __file__, "--phase", *args], stdout=subprocess.PIPE, text=True
        )
        for args in runs
    ]
    out = []
    for process in started:
        stdout, _ = process.communicate()
        if process.returncode:
            raise subprocess.CalledProcessError(process.returncode, process.args)
        out.append(json.loads(stdout.strip().splitlines()[-1]))
    return out


def ceiling(shards: Path, root: Path, alone_s: float) -> dict[str, Any]:
    """Two in-process builds of ``shards`` at once: their wall and CPU seconds and the
    two-process ceiling ``2 × alone_s / slowest``."""
    twins = _children([["inprocess", str(shards), str(root / f"twin-{i}.idx")] for i in (0, 1)])
    slowest = max(t["build_s"] for t in twins)
    return {"twins": twins, "ceiling": 2 * alone_s / slowest}


SERIAL = ("merge", "write")
"""The Ray build's phases that only the driver works in (``ray.init`` is start-up)."""


def _phase_rows(n: int, found: dict[str, Any]) -> list[str]:
    """The Ray build's phases: wall seconds, the driver's and the actors' CPU seconds, and
    the serial share (the driver-only phases' wall time over the build's after start-up)."""
    out = [
        "",
        f"Ray build of {n:,} passages by phase (load {found['load']}; the driver's own peak "
        f"RSS {found['driver_peak_rss_mb']:.0f} MB):",
        "",
        "| phase | wall s | driver CPU s | workers CPU s |",
        "|---|---:|---:|---:|",
    ]
    for phase in found["phases"]:
        out.append(
            f"| {phase['phase']} | {phase['wall_s']:.1f} | {phase['driver_cpu_s']:.1f} | "
            f"{phase['workers_cpu_s']:.1f} |"
        )
    work = sum(p["wall_s"] for p in found["phases"] if not p["phase"].startswith("ray."))
    serial = sum(p["wall_s"] for p in found["phases"] if p["phase"].startswith(SERIAL))
    out.append(
        f"serial share (driver-only phases over the build without Ray's start and stop): "
        f"{serial / work:.1%}"
    )
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", default="10000", help="comma-separated corpus sizes")
    parser.add_argument("--workers", type=int, default=2, help="Ray workers (local CPUs)")
    parser.add_argument(
        "--embed", type=int, default=0, help="passages for fp32 vs int8 and bf16 (0: skip)"
    )
    parser.add_argument("--out", type=Path, default=None, help="JSON results file")
    parser.add_argument(
        "--ceiling",
        action="store_true",
        help="also time two in-process builds at once: the machine's two-process ceiling",
    )
    parser.add_argument("--phase", nargs="+", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.phase:
        name, *rest = args.phase
        if name == "inprocess":
            result = phase_inprocess(Path(rest[0]), Path(rest[1]))
        elif name == "ray":
            result = phase_ray(Path(rest[0]), Path(rest[1]), int(rest[2]))
        else:
            result = phase_embed(int(rest[0]))
        print(json.dumps(result))
        return
    results: dict[str, Any] = {"builds": [], "machine": load()}
    rows = [
        "| passages | engine | build s | passages/s | CPU s (all processes) | peak RSS MB "
        "| load | identical |",
        "|---:|---|---:|---:|---:|---:|---|---|",
    ]
    phases: list[str] = []
    for n in [int(s) for s in args.sizes.split(",") if s]:
        root = Path(tempfile.mkdtemp(prefix="index-build-bench-"))
        try:
            write_shards(root / "shards", n)
            local = _child(["inprocess", str(root / "shards"), str(root / "local.idx")])
            distributed = _child(
                ["ray", str(root / "shards"), str(root / "ray.idx"), str(args.workers)]
            )
            identical = same_index(root / "local.idx", root / "ray.idx")
            twins = ceiling(root / "shards", root, local["build_s"]) if args.ceiling else None
        finally:
            shutil.rmtree(root, ignore_errors=True)
        speedup = local["build_s"] / distributed["build_s"]
        results["builds"].append(
            {
                "passages": n,
                "inprocess": local,
                "ray": distributed,
                "identical": identical,
                "speedup": speedup,
                "workers": args.workers,
                **({"ceiling": twins} if twins else {}),
            }
        )
        for engine, found in (
            ("in-process", local),
            (f"Ray ({args.workers} workers)", distributed),
        ):
            extra = f" (Ray start {found['ray_start_s']:.1f} s)" if "ray_start_s" in found else ""
            rows.append(
                f"| {n:,} | {engine} | {found['build_s']:.1f}{extra} | "
                f"{n / found['build_s']:.0f} | {found['cpu_s']:.1f} | "
                f"{found['peak_rss_mb']:.0f} | {found['load']} | {identical} |"
            )
        rows.append(f"| {n:,} | speed-up | {speedup:.2f}× | | | | | |")
        print(rows[-3], rows[-2], rows[-1], sep="\n", flush=True)
        if twins:
            for i, twin in enumerate(twins["twins"]):
                rows.append(
                    f"| {n:,} | in-process, copy {i + 1} of 2 at once | {twin['build_s']:.1f} | "
                    f"{n / twin['build_s']:.0f} | {twin['cpu_s']:.1f} | "
                    f"{twin['peak_rss_mb']:.0f} | {twin['load']} | |"
                )
            rows.append(f"| {n:,} | two-process ceiling | {twins['ceiling']:.2f}× | | | | | |")
            print(*rows[-3:], sep="\n", flush=True)
        phases += _phase_rows(n, distributed)
    rows += phases
    if args.embed:
        results["embed"] = _child(["embed", str(args.embed)])
        embed = results["embed"]
        rows += [
            "",
            "| encoder | passages | seconds | passages/s | CPU s | passages/CPU-s | load |",
            "|---|---:|---:|---:|---:|---:|---|",
        ]
        for name in EMBED_ENCODERS:
            e = embed[name]
            rows.append(
                f"| {name} | {embed['passages']} | {e['seconds']:.1f} | "
                f"{e['passages_per_s']:.0f} | {e['cpu_s']:.1f} | "
                f"{e['passages_per_cpu_s']:.0f} | {e['load']} |"
            )
        fp32 = embed["minilm"]
        for name in EMBED_ENCODERS[1:]:
            e = embed[name]
            rows.append(
                f"{name} / fp32: {e['passages_per_s'] / fp32['passages_per_s']:.2f}× "
                f"passages/s, {e['passages_per_cpu_s'] / fp32['passages_per_cpu_s']:.2f}× "
                f"passages/CPU-s; fingerprint: lowest probe cosine {e['fingerprint_cosine']:.4f}"
            )
    print("\n".join(rows))
    if args.out:
        args.out.write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
