"""Do two versions of ragmeter give the same ``multilingual score`` (or ``trace score``) outputs?

    python benchmarks/compare_scoring_outputs.py OLD_SRC NEW_SRC [--rows 200000]
    python benchmarks/compare_scoring_outputs.py OLD_SRC NEW_SRC --family trace [--rows 1000000]

OLD_SRC and NEW_SRC are ``src`` folders (e.g. ``git archive main src | tar -x -C /tmp/old``
then ``/tmp/old/src``, and this checkout's ``src``).  Each case runs the command line of both
versions on the same file with the same flags and compares, byte for byte after parsing: the
``--json`` summary, the ``--items`` file, and the run record (its ``result`` and its items).
Files: the LBRAG shared run (``../shared/data/lbrag``, skipped when absent), the built-in
sample, a generated file of ``--rows`` rows (JSON Lines and Parquet: the columnar path), a
10-row file (the small path) and a file with unscored rows.  Prints one line per case and
exits 1 on any difference.  Written for issue 14 (the scoring was made faster; the numbers
must not move).

``--family trace``: ``trace score`` on generated label rows (``bench_scoring.generate_trace``,
JSON Lines and Parquet), the built-in sample, and a small file of every kind of line the C
scanner defers or names itself (ids blank, of spaces, non-ASCII, escaped or missing; nulls;
another field; no document sentence; invalid JSON is not among them: it stops the command);
flags: the defaults, ``--definitions writeup``, ``--resamples 200 --seed 7``, ``--by id``
on the small files (60,000 rows: the record samples its items).  The run record's items are also compared as bytes (decompressed).
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
LBRAG = HERE.parent.parent / "shared" / "data" / "lbrag" / "20251214_2145" / \
    "20251214_2145_answers.jsonl"
FLAGS = ([], ["--ci", "--paired"], ["--normalize", "squad"], ["--by", "lang"],
         ["--baseline", "multi"])


def _items(path: Path) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    with gzip.open(path, "rt", encoding="utf-8") as fh:
        for line in fh:
            block = json.loads(line)
            out.extend(dict(zip(block["keys"], row, strict=True)) for row in block["rows"])
    return out


def _run(src: Path, data: Path, flags: list[str], out: Path, family: str = "multilingual"
         ) -> dict[str, Any]:
    """One CLI run; its summary, items and run record."""
    out.mkdir(parents=True)
    env = {**os.environ, "PYTHONPATH": str(src), "RAGMETER_HOME": str(out / "home")}
    cmd = [sys.executable, "-m", "ragmeter", family, "score", str(data), *flags,
           "--json", str(out / "summary.json"), "--runs-dir", str(out / "runs")]
    with_items = "--by" not in flags
    if with_items:
        cmd += ["--items", str(out / "items.jsonl")]
    subprocess.run(cmd, check=True, env=env, capture_output=True)
    # the default command (no --items) keeps no answer text: its record too
    plain = [c for c in cmd if c not in ("--items", str(out / "items.jsonl"))]
    plain[plain.index("--runs-dir") + 1] = str(out / "runs_plain")
    subprocess.run(plain, check=True, env=env, capture_output=True)
    doc: dict[str, Any] = {"summary": json.loads((out / "summary.json").read_text("utf-8"))}
    if with_items:
        doc["items"] = (out / "items.jsonl").read_text("utf-8")
    for folder in ("runs", "runs_plain"):
        (record,) = [p for p in (out / folder).glob("*.json")]
        rec = json.loads(record.read_text("utf-8"))
        doc[folder] = {"result": rec["result"], "items": _items(out / folder / rec["items_file"]),
                       **{k: rec[k] for k in ("items_total", "items_unscored",
                                             "items_truncated", "signature")}}
        if family == "trace":  # the items file's bytes too (decompressed)
            doc[folder]["items_bytes"] = gzip.decompress(
                (out / folder / rec["items_file"]).read_bytes())
    return doc


def _parquet_case(files: dict[str, Path], jsonl: Path, out: Path, name: str) -> None:
    """``jsonl`` written as Parquet to ``out``, added to ``files`` as ``name`` (no pyarrow:
    no such case)."""
    try:
        import pyarrow.json as pj
        import pyarrow.parquet as pq

        pq.write_table(pj.read_json(jsonl), out)
        files[name] = out
    except ImportError:
        print("pyarrow missing: no Parquet case")


def _compare(args: argparse.Namespace, family: str, files: dict[str, Path], sample: str,
             flag_sets: Any, tmp: Path) -> int:
    """Run every case with both versions; print one line each and the verdict; 1 on any
    difference.  ``flag_sets(name)``: the flag lists of the case ``name``."""
    failures = 0
    env = {**os.environ, "PYTHONPATH": str(args.new_src), "RAGMETER_HOME": str(tmp / "h")}
    files["built-in sample"] = Path(subprocess.run(
        [sys.executable, "-c", "from ragmeter.io._samples import sample_path; "
         f"print(sample_path({sample!r}))"],
        check=True, env=env, capture_output=True, text=True).stdout.strip())
    for name, data in files.items():
        for k, flags in enumerate(flag_sets(name)):
            old = _run(args.old_src, data, flags, tmp / "old" / f"{len(name)}{name[:3]}{k}",
                       family)
            new = _run(args.new_src, data, flags, tmp / "new" / f"{len(name)}{name[:3]}{k}",
                       family)
            diff = [key for key in old if old[key] != new.get(key)]
            failures += bool(diff)
            print(f"{'SAME' if not diff else 'DIFFERENT: ' + ', '.join(diff):<12} {name}"
                  f" {' '.join(flags) or '(defaults)'}", flush=True)
    print("all outputs identical" if not failures else f"{failures} case(s) differ")
    return 1 if failures else 0


def _write_cases(tmp: Path, rows: int) -> dict[str, Path]:
    sys.path.insert(0, str(HERE))
    from bench_scoring import generate

    files: dict[str, Path] = {}
    if LBRAG.is_file():
        files["lbrag"] = LBRAG
    big = tmp / f"gen{rows}.jsonl"
    generate(big, rows)
    files[f"generated {rows:,}"] = big
    _parquet_case(files, big, tmp / "gen.parquet", f"generated {rows:,} parquet")
    ten = tmp / "ten.jsonl"
    generate(ten, 12)
    files["12 rows"] = ten
    lines = ten.read_text("utf-8").splitlines()
    holes = []
    for i, line in enumerate(lines):
        row = json.loads(line)
        if i % 4 == 2:  # a non-baseline system (rows cycle direct, multi, cross, lbrag)
            row["pred_answer"] = None
        holes.append(json.dumps(row, ensure_ascii=False))
    (tmp / "holes.jsonl").write_text("\n".join(holes) + "\n", "utf-8")
    files["12 rows, 3 unscored"] = tmp / "holes.jsonl"
    return files


TRACE_FLAGS = ([], ["--definitions", "writeup"], ["--resamples", "200", "--seed", "7"])


def _trace_cases(tmp: Path, rows: int) -> dict[str, Path]:
    sys.path.insert(0, str(HERE))
    from bench_scoring import generate_trace

    files: dict[str, Path] = {}
    big = tmp / f"trace{rows}.jsonl"
    generate_trace(big, rows)
    files[f"generated {rows:,}"] = big
    _parquet_case(files, big, tmp / "trace.parquet", f"generated {rows:,} parquet")
    docs = [[["0a", "One."], ["0b", "Two \u00e9."]], [["1a", "Three."]]]
    clean = {"documents_sentences": docs, "all_relevant_sentence_keys": ["0a", "1a"],
             "all_utilized_sentence_keys": ["0a"], "unsupported_response_sentence_keys": []}
    odd_ids: list[Any] = ["r1", "", "   ", "\u3000", "caf\u00e9", "tab\there", "a\\b",
                          "line-3", None, 7, "\u00a0", "x y"]
    lines = []
    for i in range(60_000):  # runs of clean lines between deferred ones, over many blocks
        row: dict[str, Any] = dict(clean, all_utilized_sentence_keys=["0a", "0b"][:i % 3])
        kind = i % 97
        if kind < len(odd_ids):
            if odd_ids[kind] is not None:
                row["id"] = odd_ids[kind]
        else:
            row["id"] = f"q{i}"
        if kind == 20:
            row["all_relevant_sentence_keys"] = None
        if kind == 21:
            row["status"] = "ok"
        if kind == 22:
            row["documents_sentences"] = [[]]
        if kind == 23:
            row["unsupported_response_sentence_keys"] = ["r0"]
        lines.append(json.dumps(row, ensure_ascii=kind % 2 == 0))
    (tmp / "odd.jsonl").write_text("\n".join(lines) + "\n", "utf-8")
    files["60,000 rows, odd ids and deferred lines"] = tmp / "odd.jsonl"
    return files


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("old_src", type=Path)
    ap.add_argument("new_src", type=Path)
    ap.add_argument("--rows", type=int, default=200_000)
    ap.add_argument("--family", choices=["multilingual", "trace"], default="multilingual")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        if args.family == "trace":
            return _compare(args, "trace", _trace_cases(tmp, args.rows), "trace_labelled.jsonl",
                            lambda name: [*TRACE_FLAGS, *([["--by", "id"]]
                                                          if "generated" not in name else [])],
                            tmp)

        def flag_sets(name: str) -> list[list[str]]:
            return [["--baseline", "retrieve"] if flags[:1] == ["--baseline"]
                    and name == "built-in sample" else flags for flags in FLAGS]

        return _compare(args, "multilingual", _write_cases(tmp, args.rows),
                        "multilingual_answers.jsonl", flag_sets, tmp)


if __name__ == "__main__":
    raise SystemExit(main())
