"""The PyTerrier estimators."""
