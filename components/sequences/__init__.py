"""Components of the frequent-sequence family: the Sequences page's form, launch and results,
and the sequence upload."""
