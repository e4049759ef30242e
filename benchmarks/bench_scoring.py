"""Scoring throughput: ragmeter's multilingual scorer (and ``trace score``) against a
plain-Python reference implementation, on the same generated rows, in the same run.

    python benchmarks/bench_scoring.py [--rows 200000] [--rounds 3]      # whole processes
    python benchmarks/bench_scoring.py --family trace --rows 1000000     # trace score
    python benchmarks/bench_scoring.py --rows 1000000,10000000 --rounds 1  # several sizes
    python benchmarks/bench_scoring.py --rows 1000000 --other-src /tmp/main/src  # before/after
    python benchmarks/bench_scoring.py --in-process [--rows 1000000]    # scoring only
    python benchmarks/bench_scoring.py --family trace --stages          # trace: us/row by stage

Issue 26.3's goals: ragmeter's peak RSS <= 200 MiB at 1M and at 10M rows (the default run
record included) and >= 4x the reference in CPU time.  The rows are generated on the fly into a
temporary folder (``$TMPDIR``), deleted at the end.

Whole processes (the default, issue 14; ragmeter's modules byte-compiled first, as an
install leaves them): the reference is a stand-alone script
(``python reference.py rows.jsonl``) and ragmeter is the default command line
(``python -m ragmeter multilingual score rows.jsonl``, run record included, in a temporary
``RAGMETER_HOME``); start-up, imports and output are timed.  The two alternate round by round
so a busy machine slows both alike; the medians are compared, with the CPU time (user + sys,
steadier on a shared machine) and the peak RSS of each process.  Goal: ratio >= 3 and
ragmeter's RSS < 1 GiB.  ``--family trace`` runs each ragmeter command once, untimed,
before the rounds: ``trace score``'s C scanner is built once per ``RAGMETER_HOME`` (about
0.3 s of CPU), which a median of two rounds would otherwise half include.

``--in-process`` times the scoring functions alone, imports excluded (issue 2's measure).

The reference is what a careful user would write by hand: json.loads per line, SQuAD's
normalize_answer (lowercase, drop punctuation and English articles, collapse spaces), Counter
F1, and a per-character response-language check.  It computes the same three families of
numbers (EM, F1, RLC) per row and their means per system.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import string
import subprocess
import sys
import tempfile
import time
from pathlib import Path

WORDS = {
    "en": "the capital city river mountain king queen war peace year museum song team".split(),
    "de": "die hauptstadt fluss berg könig königin krieg frieden jahr museum lied".split(),
    "ru": "столица город река гора король королева война мир год музей песня".split(),
    "ja": list("東京大阪日本山川王女戦争平和年博物館歌です"),
    "zh_cn": list("北京上海中国山河王后战争和平年博物馆歌曲"),
    "ar": "العاصمة مدينة نهر جبل ملك ملكة حرب سلام سنة متحف".split(),
    "ko": "수도 도시 강 산 왕 여왕 전쟁 평화 년 박물관".split(),
    "th": "เมืองหลวง เมือง แม่น้ำ ภูเขา กษัตริย์ ราชินี สงคราม".split(),
}
SYSTEMS = ("direct", "multi", "cross", "lbrag")


def _phrase(rng: random.Random, lang: str, n: int) -> str:
    words = [rng.choice(WORDS[lang]) for _ in range(n)]
    sep = "" if lang in ("ja", "zh_cn") else " "
    text = sep.join(words)
    if rng.random() < 0.3:
        text = text.capitalize() + rng.choice([".", "!", "", " (1969)"])
    if rng.random() < 0.05:
        text = "The answer is " + text  # wrong-script tail
    return text


def generate(path: Path, rows: int, seed: int = 0) -> None:
    rng = random.Random(seed)
    langs = list(WORDS)
    with path.open("w", encoding="utf-8") as fh:
        for i in range(rows // len(SYSTEMS)):
            lang = langs[i % len(langs)]
            gold = _phrase(rng, lang, rng.randint(1, 3))
            for system in SYSTEMS:
                pred = gold if rng.random() < 0.4 else _phrase(rng, lang, rng.randint(1, 6))
                fh.write(json.dumps({
                    "sample_id": f"q{i}_{lang}", "sample_lang": lang, "system": system,
                    "gold_answer": gold, "pred_answer": pred,
                    "translate_tokens": 0 if system in ("direct", "multi") else rng.randint(10, 300),
                }, ensure_ascii=False) + "\n")


def generate_trace(path: Path, rows: int, seed: int = 0) -> None:
    """RAGBench-shaped label rows: 1-3 documents of 2-6 short sentences, relevant and utilized
    keys among them, some unsupported response sentences."""
    rng = random.Random(seed)
    words = WORDS["en"]
    with path.open("w", encoding="utf-8") as fh:
        for i in range(rows):
            docs = [[[f"{d}{chr(97 + k)}", " ".join(rng.choice(words) for _ in range(8))]
                     for k in range(rng.randint(2, 6))] for d in range(rng.randint(1, 3))]
            keys = [key for doc in docs for key, _ in doc]
            relevant = rng.sample(keys, rng.randint(0, len(keys)))
            utilized = rng.sample(keys, rng.randint(0, len(keys)))
            unsupported = [f"r{k}" for k in range(rng.choice((0, 0, 0, 1, 2)))]
            fh.write(json.dumps({
                "id": f"t{i}", "documents_sentences": docs,
                "all_relevant_sentence_keys": relevant, "all_utilized_sentence_keys": utilized,
                "unsupported_response_sentence_keys": unsupported}) + "\n")


# ------------------------------------------------------------------ reference implementation

def reference_trace(path: str) -> dict:
    """RAGBench's four TRACe metrics per row and their means, by hand."""
    sums = [0.0, 0.0, 0.0, 0.0]
    n = 0
    with open(path, encoding="utf-8") as fh:
        for line in fh:
            r = json.loads(line)
            sentences = sum(len(doc) for doc in r["documents_sentences"])
            rel, util = r["all_relevant_sentence_keys"], r["all_utilized_sentence_keys"]
            sums[0] += len(rel) / sentences
            sums[1] += len(util) / sentences
            sums[2] += len(set(rel) & set(util)) / len(rel) if rel else 1.0
            sums[3] += float(not r["unsupported_response_sentence_keys"])
            n += 1
    return {"all": {"relevance": sums[0] / n, "utilization": sums[1] / n,
                    "completeness": sums[2] / n, "adherence": sums[3] / n, "n": n}}


def reference(path: str) -> dict:
    import re
    from collections import Counter

    exclude = set(string.punctuation)

    def normalize_answer(s: str) -> str:
        s = s.lower()
        s = "".join(ch for ch in s if ch not in exclude)
        s = re.sub(r"\b(a|an|the)\b", " ", s)
        return " ".join(s.split())

    def f1(pred: str, gold: str) -> float:
        p, g = normalize_answer(pred).split(), normalize_answer(gold).split()
        common = Counter(p) & Counter(g)
        same = sum(common.values())
        if same == 0:
            return 0.0
        pr, rc = same / len(p), same / len(g)
        return 2 * pr * rc / (pr + rc)

    def rlc(pred: str, lang: str) -> float:
        total = hits = 0
        for ch in pred:
            if ch.isspace() or ch.isdigit() or ch in ".,!?;:()[]{}-'\"/–—":
                continue
            total += 1
            if lang.startswith("zh"):
                hits += "\u4e00" <= ch <= "\u9fff"
            elif lang.startswith("ja"):
                hits += ("\u3040" <= ch <= "\u30ff") or ("\u4e00" <= ch <= "\u9fff")
            else:
                hits += ch.isalpha()
        return hits / total if total else 1.0

    sums: dict[str, list[float]] = {}
    with open(path, encoding="utf-8") as fh:
        for line in fh:
            r = json.loads(line)
            pred, gold = r["pred_answer"], r["gold_answer"]
            s = sums.setdefault(r["system"], [0.0, 0.0, 0.0, 0])
            s[0] += float(normalize_answer(pred) == normalize_answer(gold))
            s[1] += f1(pred, gold)
            s[2] += rlc(pred, r["sample_lang"])
            s[3] += 1
    return {k: {"em": v[0] / v[3], "f1": v[1] / v[3], "rlc": v[2] / v[3], "n": v[3]}
            for k, v in sums.items()}


def ragmeter_score(path: str) -> dict:
    from ragmeter.multilingual._score import score_file
    from ragmeter.multilingual._scorer import MultilingualConfig

    result = score_file(path, MultilingualConfig())
    return {k: {"em": m["em"], "f1": m["f1"], "rlc": m["rlc"], "n": m["n"]}
            for k, m in result.metrics.items()}


def _child(which: str, path: str) -> None:
    fn = reference if which == "reference" else ragmeter_score
    if which == "ragmeter":  # import outside the timing, as the reference's imports are
        import ragmeter.multilingual._scorer  # noqa: F401
    start, cpu0 = time.perf_counter(), time.process_time()
    out = fn(path)
    elapsed, cpu = time.perf_counter() - start, time.process_time() - cpu0
    rows = sum(v["n"] for v in out.values())
    rss_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print(json.dumps({"rows": rows, "seconds": elapsed, "cpu_seconds": cpu,
                      "rss_mib": rss_kib / 1024}))


REFERENCE_TRACE_MAIN = """

if __name__ == "__main__":
    import sys

    print(reference_trace(sys.argv[1]))
"""

REFERENCE_MAIN = """

if __name__ == "__main__":
    import sys

    for system, m in sorted(reference(sys.argv[1]).items()):
        print(f"{system}: EM {m['em']:.4f}  F1 {m['f1']:.4f}  RLC {m['rlc']:.4f}  n {m['n']}")
"""


def _timed(cmd: list[str], env: dict[str, str]) -> dict[str, float]:
    """Wall seconds, CPU seconds (user + sys) and peak RSS (MiB) of one child process."""
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    err = proc.stderr.read().decode() if proc.stderr else ""
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed ({proc.returncode}): {err[-2000:]}")
    return {"wall": wall, "cpu": usage.ru_utime + usage.ru_stime,
            "rss_mib": usage.ru_maxrss / 1024}


def _byte_compile() -> None:
    """Byte-compile ragmeter's modules first, as installing it does: with
    ``PYTHONDONTWRITEBYTECODE`` set (as on some machines) and an editable install, every run
    would otherwise compile them from source again (0.2-0.3 s of CPU a process)."""
    import compileall

    import ragmeter

    compileall.compile_dir(str(Path(ragmeter.__file__).parent), quiet=1)


def whole_processes(rows: int, rounds: int, family: str = "multilingual",
                    other_src: str | None = None) -> None:
    import inspect
    import statistics

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "rows.jsonl"
        script = Path(tmp) / "reference.py"
        if family == "trace":
            generate_trace(path, rows)
            script.write_text("import json\n\n\n" + inspect.getsource(reference_trace)
                              + REFERENCE_TRACE_MAIN, encoding="utf-8")
        else:
            generate(path, rows)
            script.write_text("import json\nimport string\n\n\n" + inspect.getsource(reference)
                              + REFERENCE_MAIN, encoding="utf-8")
        env = {**os.environ, "RAGMETER_HOME": str(Path(tmp) / "home"),
               "PYTHONHASHSEED": "0"}
        _byte_compile()
        commands = {"reference": [sys.executable, str(script), str(path)],
                    "ragmeter": [sys.executable, "-m", "ragmeter", family, "score",
                                 str(path)]}
        envs = {name: env for name in commands}
        if other_src:  # another version of ragmeter, in the same rounds (before/after)
            import compileall

            compileall.compile_dir(str(Path(other_src) / "ragmeter"), quiet=1)
            commands["other"] = commands["ragmeter"]
            envs["other"] = {**env, "PYTHONPATH": str(Path(other_src).resolve())}
        print(f"{family} score, {rows:,} rows ({path.stat().st_size / 2**20:.1f} MiB), "
              f"{rounds} interleaved rounds, whole processes (load {os.getloadavg()[0]:.1f}):")
        for name, cmd in commands.items():
            print(f"  {name:>9}: {' '.join(Path(c).name if i == 0 else c for i, c in enumerate(cmd))}")
        runs: dict[str, list[dict[str, float]]] = {k: [] for k in commands}
        if family == "trace":  # the C scanner is built once per RAGMETER_HOME: not timed
            for name in commands.keys() - {"reference"}:
                _timed([*commands[name], "--no-record"], envs[name])
        for _ in range(rounds):
            for name, cmd in commands.items():
                runs[name].append(_timed(cmd, envs[name]))
        records = len(list((Path(tmp) / "home" / "runs").glob("*.json")))
    med = {k: {m: statistics.median(r[m] for r in v) for m in ("wall", "cpu", "rss_mib")}
           for k, v in runs.items()}
    for name, m in med.items():
        print(f"  {name:>9}: {m['wall']:.2f} s wall, {m['cpu']:.2f} s CPU, "
              f"peak RSS {m['rss_mib']:.0f} MiB (medians)")
    ref, rag = med["reference"], med["ragmeter"]
    print(f"ratio reference/ragmeter: {ref['wall'] / rag['wall']:.2f}x by wall time, "
          f"{ref['cpu'] / rag['cpu']:.2f}x by CPU time (goal >= 4x); ragmeter peak RSS "
          f"{rag['rss_mib']:.0f} MiB (goal <= 200); run records written: {records}; "
          f"load after {os.getloadavg()[0]:.1f}")
    if "other" in med:
        print(f"ratio reference/other ({other_src}): {ref['cpu'] / med['other']['cpu']:.2f}x "
              f"by CPU time; other/ragmeter: {med['other']['cpu'] / rag['cpu']:.2f}x")


def trace_stages(rows: int, rounds: int) -> None:
    """Where ``trace score``'s CPU time goes, in microseconds a row, stage by stage (each
    stage alone, the best of ``rounds``; collector paused as the command pauses it), beside
    the reference's ``json.loads`` and its whole loop on the same file."""
    import gc
    import hashlib

    from ragmeter.io import jsonl_blocks
    from ragmeter.runs._columns import keep_items
    from ragmeter.runs._records import write_items
    from ragmeter.trace import _fast, _scorer

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "rows.jsonl"
        generate_trace(path, rows)
        decode = _fast._decoder().decode_lines
        scored = _scorer.ScoredRows()

        def read() -> None:
            for _ in jsonl_blocks(path):
                pass

        def decoded() -> None:
            for _, data, _ in jsonl_blocks(path):
                decode(data)

        blocks = list(_fast.iter_label_blocks(path)) if rows <= 200_000 else None

        def block_columns() -> None:
            for _ in _fast.iter_label_blocks(path):
                pass

        def typed_columns() -> None:  # without the C scanner: msgspec for every line
            from ragmeter.trace import _scan

            built = _scan.scanner
            _scan.scanner = lambda: None  # type: ignore[assignment]
            try:
                block_columns()
            finally:
                _scan.scanner = built  # type: ignore[assignment]

        def metrics() -> None:
            for b in blocks or _fast.iter_label_blocks(path):
                _scorer._block_values(b)

        def spill() -> None:
            nonlocal scored
            scored = _scorer.ScoredRows()
            for b in blocks or _fast.iter_label_blocks(path):
                ids, values = _scorer._block_values(b)
                scored.extend_scored(ids, b.numbers, values)

        def sha256() -> None:
            h = hashlib.sha256()
            with path.open("rb") as fh:
                while chunk := fh.read(1 << 20):
                    h.update(chunk)

        def ref_loads() -> None:
            with path.open(encoding="utf-8") as fh:
                for line in fh:
                    json.loads(line)

        stages = [
            ("read the file by blocks of lines", read, None),
            ("decode (msgspec, typed), read included", decoded, None),
            ("msgspec blocks: counts, key lists, decode included", typed_columns, None),
            ("C scanner blocks: counts, read and sha256 included", block_columns, None),
            ("per-row metrics (numpy)", metrics, None),
            ("metrics + spilled columns", spill, None),
            ("aggregate: mean, std, CI of 4 metrics",
             lambda: _scorer.aggregate(scored, _scorer.ScoreConfig()), spill),
            ("run record items (50,000 kept, gzip)", lambda: write_items(
                Path(tmp) / "i.jsonl.gz", keep_items(scored.item_columns(), 50_000)[0]), spill),
            ("run record: the input's sha256", sha256, None),
            ("REFERENCE: json.loads of each line", ref_loads, None),
            ("REFERENCE: its whole loop", lambda: reference_trace(str(path)), None),
        ]
        print(f"trace score stages, {rows:,} rows ({path.stat().st_size / 2**20:.0f} MiB), "
              f"CPU time of each stage alone, best of {rounds} (load "
              f"{os.getloadavg()[0]:.1f}):")
        for name, fn, before in stages:
            if before is not None:
                before()
            best = float("inf")
            for _ in range(rounds):
                gc.disable()
                start = time.process_time()
                fn()
                best = min(best, time.process_time() - start)
                gc.enable()
            print(f"  {name:<52} {best / rows * 1e6:6.2f} us/row  ({best:.2f} s)")
    print(f"load after {os.getloadavg()[0]:.1f}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rows", default=None,
                    help="rows to generate, or several sizes separated by commas [default: "
                         "200000 whole-process, 1000000 in-process]")
    ap.add_argument("--family", choices=["multilingual", "trace"], default="multilingual",
                    help="whole processes: which score to time [default: multilingual]")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--other-src", metavar="SRC",
                    help="whole processes: also time the ragmeter of this src folder (e.g. "
                         "main's: git archive main src | tar -x -C /tmp/main), interleaved")
    ap.add_argument("--in-process", action="store_true",
                    help="time the scoring functions only, imports excluded")
    ap.add_argument("--stages", action="store_true",
                    help="with --family trace: microseconds a row, stage by stage")
    ap.add_argument("--child", choices=["reference", "ragmeter"], help=argparse.SUPPRESS)
    ap.add_argument("--path", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        _child(args.child, args.path)
        return
    sizes = [int(x.replace("_", "")) for x in args.rows.split(",")] if args.rows else []
    if args.stages:
        for rows in sizes or [200_000]:
            trace_stages(rows, args.rounds)
        return
    if not args.in_process:
        for rows in sizes or [200_000]:
            whole_processes(rows, args.rounds, args.family, args.other_src)
        return
    args.rows = sizes[0] if sizes else 1_000_000
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "rows.jsonl"
        t0 = time.perf_counter()
        generate(path, args.rows)
        print(f"generated {args.rows:,} rows ({path.stat().st_size / 2**20:.0f} MiB) in "
              f"{time.perf_counter() - t0:.1f}s")
        results = {}
        for which in ("reference", "ragmeter"):
            proc = subprocess.run([sys.executable, __file__, "--child", which, "--path", str(path)],
                                  capture_output=True, text=True, check=True,
                                  env={**os.environ, "PYTHONHASHSEED": "0"})
            results[which] = json.loads(proc.stdout.strip().splitlines()[-1])
    for which, r in results.items():
        print(f"{which:>10}: {r['rows']:,} rows in {r['seconds']:.2f}s wall "
              f"({r['rows'] / r['seconds']:,.0f} rows/s), {r['cpu_seconds']:.2f}s CPU, "
              f"peak RSS {r['rss_mib']:.0f} MiB")
    rag, ref = results["ragmeter"], results["reference"]
    wall = ref["seconds"] / rag["seconds"]
    cpu = ref["cpu_seconds"] / rag["cpu_seconds"]
    print(f"ratio ragmeter/reference: {wall:.2f}x by wall time, {cpu:.2f}x by CPU time "
          f"(goal >= 3x; CPU time is steadier on a busy machine); "
          f"ragmeter peak RSS {rag['rss_mib']:.0f} MiB (goal < 1024)")


if __name__ == "__main__":
    main()
