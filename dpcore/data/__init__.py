"""Two-view table data: public schemas, loading and validation, the in-memory dataset, and
the sample-data generators."""
