"""Components of the synthetic-data family: the Synthesis page's form, launch, results and
charts, and the labelled-table upload."""
