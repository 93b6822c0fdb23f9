"""Two-view table data: public schemas, loading and validation, the in-memory dataset, sample-data generators."""
