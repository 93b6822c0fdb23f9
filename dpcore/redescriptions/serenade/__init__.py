"""Serenade (SerenadeES, SerenadeCS): greedy literal redescriptions under DP."""
