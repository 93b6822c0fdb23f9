"""/data opened as a fresh server's first request: run the app (components/common/deep_links.py);
the page itself is pages/workbench/data.py."""
from components.common.deep_links import run_app

run_app()
