"""Datasets of every kind, below the privacy layer: the public schemas, loading and
validation, the in-memory data, and the kind objects the ledger reads them through
(:mod:`dpcore.data.kinds`). A two-view table lives at the top of the package
(:mod:`~dpcore.data.schema`, :mod:`~dpcore.data.dataset`, :mod:`~dpcore.data.loading`), a
sequence dataset in :mod:`dpcore.data.sequences`, a labelled table in :mod:`dpcore.data.table`;
the sample-data generators of the two-view table in :mod:`dpcore.data.samples`."""
