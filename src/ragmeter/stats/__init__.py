"""Pure statistics: mean/std, bootstrap and paired tests, AUROC/RMSE, kappa/Wilson,
repeat stability, ordinal agreement (QWK, Spearman).  No I/O, no model, no globals."""

from __future__ import annotations

from ragmeter.stats._agreement import (
    Agreement,
    ordinal_agreement,
    quadratic_weighted_kappa,
    spearman,
)
from ragmeter.stats._core import (
    DEFAULT_RESAMPLES,
    DEFAULT_SEED,
    PairedTest,
    auroc,
    bootstrap_ci,
    bootstrap_ci_counts,
    cohen_kappa,
    cohen_kappa_ci,
    mean,
    mean_std,
    mean_std_chunks,
    normal_cdf,
    normal_ppf,
    paired_bootstrap,
    paired_permutation,
    percentile_interval,
    rankdata,
    rmse,
    sample_std,
    wilson_interval,
)
from ragmeter.stats._metric import (
    ALL_GROUP,
    Headline,
    Metric,
    MetricTable,
)
from ragmeter.stats._stability import (
    fleiss_kappa,
    item_agreement,
    repeat_agreement,
)

__all__ = [
    "Agreement",
    "ALL_GROUP",
    "Headline",
    "Metric",
    "MetricTable",
    "DEFAULT_RESAMPLES",
    "DEFAULT_SEED",
    "PairedTest",
    "auroc",
    "bootstrap_ci",
    "bootstrap_ci_counts",
    "cohen_kappa",
    "cohen_kappa_ci",
    "fleiss_kappa",
    "item_agreement",
    "mean",
    "mean_std",
    "mean_std_chunks",
    "normal_cdf",
    "normal_ppf",
    "ordinal_agreement",
    "paired_bootstrap",
    "paired_permutation",
    "percentile_interval",
    "quadratic_weighted_kappa",
    "rankdata",
    "repeat_agreement",
    "rmse",
    "sample_std",
    "spearman",
    "wilson_interval",
]
