"""The labelled table dataset kind (synthesised by :mod:`dpcore.synthesis`): its public
schema (:mod:`~dpcore.data.table.schema`) and the in-memory encoded table with its loaders
(:mod:`~dpcore.data.table.table`)."""
