"""The sequence dataset kind (mined by :mod:`dpcore.sequences`): its public schema
(:mod:`~dpcore.data.sequences.schema`), the in-memory records
(:mod:`~dpcore.data.sequences.dataset`) and loading (:mod:`~dpcore.data.sequences.loading`)."""
