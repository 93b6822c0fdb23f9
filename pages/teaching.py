"""/teaching opened as a fresh server's first request: run the app (components/deep_links.py);
the page itself is pages/workbench/teaching.py."""
from components.deep_links import run_app

run_app()
