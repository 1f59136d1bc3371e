"""Progress bars for an index build's long stages: passages done, passages/s and ETA.

:func:`progress_bars` makes the callback that :class:`~rag_multihop.store.CorpusIndex`
(``progress=``) and :func:`~rag_multihop.store.ray_build.build_with_ray` call as
``progress(stage, done, total)``; library users may pass any callable of that shape.

Example:
    >>> seen = []
    >>> report = progress_bars(enabled=False, record=seen.append)
    >>> report("read names", 512, 1000); report("read names", 1000, 1000)
    >>> seen
    [('read names', 512, 1000), ('read names', 1000, 1000)]
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from rag_multihop.store.batches import Progress


def progress_bars(
    *, enabled: bool = True, record: Callable[[tuple[str, int, int]], Any] | None = None
) -> Progress:
    """A callback drawing one tqdm bar per stage (``total`` 0: unknown, the bar counts up);
    ``record`` also receives each call's arguments (e.g. for a log)."""
    from tqdm.auto import tqdm

    bars: dict[str, Any] = {}

    def report(stage: str, done: int, total: int) -> None:
        if record is not None:
            record((stage, done, total))
        bar = bars.get(stage)
        if bar is None:
            bar = bars[stage] = tqdm(
                total=total or None, desc=stage, unit="passage", disable=not enabled
            )
        bar.update(done - bar.n)
        if total and done >= total:
            bar.close()

    return report
