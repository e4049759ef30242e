"""Pure statistics: mean/std, bootstrap and paired tests, AUROC/RMSE, kappa/Wilson,
repeat stability.  No I/O, no model, no globals."""

from __future__ import annotations

from ragmeter.stats._core import (
    DEFAULT_RESAMPLES,
    DEFAULT_SEED,
    PairedTest,
    auroc,
    bootstrap_ci,
    cohen_kappa,
    cohen_kappa_ci,
    mean,
    mean_std,
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
    "ALL_GROUP",
    "Headline",
    "Metric",
    "MetricTable",
    "DEFAULT_RESAMPLES",
    "DEFAULT_SEED",
    "PairedTest",
    "auroc",
    "bootstrap_ci",
    "cohen_kappa",
    "cohen_kappa_ci",
    "fleiss_kappa",
    "item_agreement",
    "mean",
    "mean_std",
    "normal_cdf",
    "normal_ppf",
    "paired_bootstrap",
    "paired_permutation",
    "percentile_interval",
    "rankdata",
    "repeat_agreement",
    "rmse",
    "sample_std",
    "wilson_interval",
]
