"""The experiment harness (owner/teaching only, NOT private): the papers' evaluation grids."""
