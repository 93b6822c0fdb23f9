"""``python -m dpcore.data.samples --write sample_data``: (re)write the shipped samples."""

from dpcore.data.samples.write import main

raise SystemExit(main())
