"""The command families of ``ragmeter``: their ``"module:attr"`` and one-line help, as data
(read by the click group in :mod:`ragmeter.cli._group` and by ``ragmeter --help``)."""

from __future__ import annotations

__all__ = ["COMMANDS"]

# name -> ("module:attr", one-line help).  Add a family here.
COMMANDS: dict[str, tuple[str, str]] = {
    "criteria": ("ragmeter.cli.criteria:group",
                 "Judges on your own criteria: a scale per criterion, QWK against human scores."),
    "app": ("ragmeter.cli.app:group",
            "Run your own RAG application on a test set; keep its answers and contexts."),
    "demo": ("ragmeter.cli.demo:demo", "Run ragmeter's main job on its built-in sample."),
    "multilingual": ("ragmeter.cli.multilingual:group",
                     "Multilingual QA (LBRAG): EM, F1, RLC, cost, CNBE, semantic score."),
    "rgb": ("ragmeter.cli.rgb:group", "RGB benchmark (AAAI 2024): build, score and run, paper-exact."),
    "trace": ("ragmeter.cli.trace:group", "TRACe (RAGBench): score, label, validate a judge."),
    "reliability": ("ragmeter.cli.reliability:group",
                    "Annotator reliability against QC: flag mismatch, Cohen's κ, matrix plot."),
    "retrieval": ("ragmeter.cli.retrieval:group",
                  "Retrieval metrics exact to trec_eval: P@k, recall, nDCG, hit rate, MRR, MAP."),
    "generate": ("ragmeter.cli.generate:generate", "Send a file of requests to a model (cached)."),
    "cache": ("ragmeter.cli.cache:group", "The store of model calls: stats and clear."),
    "models": ("ragmeter.cli.models:models", "Model backends, the default model, what to install."),
    "gate": ("ragmeter.cli.gate:gate", "Check a result file against thresholds (CI gate)."),
    "runs": ("ragmeter.cli.runs:group", "Run records: prune old ones (retention)."),
    "report": ("ragmeter.cli.report:report", "One self-contained HTML report from stored runs."),
    "rubric": ("ragmeter.cli.rubric:group", "Rubric judging (RAGaliq): 0-5 grades, weighted score, stability, RAG run."),
    "view": ("ragmeter.cli.view:view", "A local web app: browse, compare and launch runs."),
}
