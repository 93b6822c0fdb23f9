"""Frequent sequence mining under differential privacy: PFS2 (Xu, Su, Cheng, Li & Xiong 2015).

A sequence dataset is a multiset of records; each record (one individual) is an ordered
list of items from a public, declared alphabet. A k-sequence S is contained in a record T
when its items appear in T in order, gaps allowed; its support is the number of records
that contain it (each record counts once). The privacy unit is one record: neighbouring
datasets differ by one record added or removed.

Modules, lowest first:

* :mod:`~dpcore.data.sequences.schema` — the public schema (name, alphabet, l1, public_demo);
* :mod:`~dpcore.data.sequences.dataset` — :class:`SequenceDataset`, the CSR layout;
* :mod:`~dpcore.data.sequences.loading` — record-per-line files and event tables → datasets;
* :mod:`~dpcore.sequences.kernels` — numba kernels: containment, support counting,
  shrinking, prefix-projected search (nothing there is private by itself);
* :mod:`~dpcore.sequences.candidates` — candidate generation and the candidate trie;
* :mod:`~dpcore.sequences.shrinking` — sequence shrinking of a sample database;
* :mod:`~dpcore.sequences.relaxation` — the relaxed pruning threshold;
* :mod:`~dpcore.sequences.params` — parameters, help texts and the budget plan;
* :mod:`~dpcore.sequences.results` — the released result and owner-only diagnostics;
* :mod:`~dpcore.sequences.miner` — PFS2 (strict and faithful) and the straightforward
  baseline;
* :mod:`~dpcore.sequences.evaluate` — exact mining, F-score, relative error (NOT private);
* :mod:`~dpcore.sequences.samples` — synthetic sample data and benchmark shapes.
"""

from dpcore.sequences.contract import FAMILY

__all__ = ["FAMILY"]
