"""Real-browser tests (Playwright driving Debian's chromium), marked ``browser``."""
