"""Checks of the repository as a whole: layout, complexity budget, privacy notes."""
