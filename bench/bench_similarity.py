"""Similarity at class scale: wall and CPU seconds for a synthetic class of N students x 5 functions (CPU
time is the figure to compare on a busy machine).

Run: .venv/bin/python bench/bench_similarity.py [N ...]   (default: 100 300 1000)

The class is tests/similarity_class.synthetic_class: per function, each student takes one honest student's
version of the planted test class, renames its local names and inserts one to three lines of their own, so
honest students share some k-grams the way real ones do (the same loop over a board) without being copies;
every 50th student copies the one before, renamed. The seed is fixed, so a run measures the same class.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from grader.report.similarity import compare  # noqa: E402
from similarity_class import FUNCTIONS, synthetic_class  # noqa: E402

def main(sizes: list[int]) -> None:
    import copydetect  # noqa: F401  (its import, about 2 s, is not the comparison's cost)
    for count in sizes:
        code = synthetic_class(count)
        started, cpu = time.perf_counter(), time.process_time()
        similarity = compare(code)
        seconds, cpu = time.perf_counter() - started, time.process_time() - cpu
        print(f"{count} students x {len(FUNCTIONS)} functions: {seconds:.1f} s wall, {cpu:.1f} s CPU; "
              f"{len(similarity.pairs)} of {similarity.pairs_compared} pairs share code, "
              f"{len(similarity.flagged)} flagged", flush=True)


if __name__ == "__main__":
    main([int(arg) for arg in sys.argv[1:]] or [100, 300, 1000])
