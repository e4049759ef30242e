"""Reports read results only; they never call a model or compute a metric."""
