"""Why `multihop` misses gold passages on an untitled view: one class per missed passage.

Reads a bench run's ``rankings.jsonl`` (``rag-multihop bench --view untitled ... --out RUN``)
and, for every gold passage outside the top ``k``, says what the name machinery made of it:

- ``no subject``: nothing was read from its text (:func:`~rag_multihop.multihop.subjects.
  passage_names` gives its opaque id only);
- ``not linked``: subjects were read, but neither the question nor the other gold passages
  write any key the title index finds for it (a name written otherwise, or described);
- ``linked (shared)``: a text names it, but under a key other passages share;
- ``linked``: the question or another gold passage names it alone: the name machinery did
  its part and the scoring placed it below ``k``.

Run from the repository root::

    python scripts/untitled_misses.py --dataset 2wiki --run runs/un/2wiki-untitled-tune
"""

from __future__ import annotations

import argparse
import json
import random
from collections import Counter, defaultdict
from pathlib import Path

from rag_multihop.eval.datasets import load_named
from rag_multihop.eval.views import ViewSettings, apply_view
from rag_multihop.multihop.subjects import indexed_names
from rag_multihop.multihop.titles import TitleIndex
from rag_multihop.paths import data_dir


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--dataset", required=True, help="a named dataset (2wiki, ...)")
    parser.add_argument("--run", required=True, type=Path, help="a bench run's --out folder")
    parser.add_argument("--k", type=int, default=5)
    parser.add_argument("--examples", type=int, default=3, help="examples shown per class")
    args = parser.parse_args()
    loaded = load_named(args.dataset, data_dir(None))
    untitled = apply_view(loaded, ViewSettings("untitled"))
    original = dict(zip(untitled.corpus.ids, loaded.corpus, strict=True))
    passages = list(untitled.corpus)
    row = {p.id: i for i, p in enumerate(passages)}
    names = [indexed_names(p) for p in passages]
    index = TitleIndex(names)
    counts: Counter[str] = Counter()
    examples: dict[str, list[str]] = defaultdict(list)
    for line in (args.run / "rankings.jsonl").open(encoding="utf-8"):
        ranked = json.loads(line)
        top = set(ranked["top"]["multihop"][: args.k])
        for gold in ranked["gold"]:
            if gold in top:
                continue
            target = row[gold]
            texts = [ranked["question"]]
            texts += [passages[row[g]].text for g in ranked["gold"] if g != gold]
            weights = [
                m.referents[target] for t in texts for m in index.find(t) if target in m.referents
            ]
            if len(names[target]) == 1 or not names[target][1:]:
                kind = "no subject"
            elif not weights:
                kind = "not linked"
            else:
                kind = "linked" if max(weights) == 1.0 else "linked (shared)"
            counts[kind] += 1
            examples[kind].append(
                f"{ranked['question']}  ->  {original[gold].title!r} read as {names[target][1:]}"
            )
    print(f"{sum(counts.values())} gold passages outside the top {args.k}: {dict(counts)}")
    rng = random.Random(0)
    for kind, found in examples.items():
        print(f"\n{kind}:")
        for text in rng.sample(found, min(args.examples, len(found))):
            print(f"  {text}")


if __name__ == "__main__":
    main()
