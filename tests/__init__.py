"""The test suite, in folders that mirror the code: the test of ``dpcore/a/b.py`` is
``tests/dpcore/a/test_b.py`` (tests/repo/test_layout.py checks it).

Every folder is a package (an ``__init__.py``), so test modules of the same name in
different folders (``tests/dpcore/sequences/test_miner.py``,
``tests/dpcore/synthesis/test_miner.py``) import as distinct modules
(``tests.dpcore.sequences.test_miner``...) under pytest's default import mode, and tests
import shared helpers as ``tests.support.<module>``.
"""
