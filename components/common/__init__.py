"""Components every page and every family shares: session and sidebar, budget meter,
background jobs, warm-up, the Data and Runs pages' parts, the uploads' shared last step."""
