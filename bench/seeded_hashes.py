"""SHA-256 of every miner's seeded release, through the public run path.

A refactoring of the run path must not change what a seeded run releases. This script
registers the public sample datasets (``sample_data/``) in a throw-away SQLite ledger, runs
every registered algorithm in every mode it has with fixed seeds through
:func:`dpcore.runs.charge_and_mine` (public demo data: seeds are accepted), and prints one
line per run: ``algorithm mode dataset seed sha256`` of the stored release JSON (what
analysts receive; diagnostics and timings are not part of it), without its ``created_at``
time stamp. Compare the output before and after a change with ``diff``.

Usage::

    python -m bench.seeded_hashes [--seeds 1,2] > before.txt
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import itertools
import json
import secrets
import sys
import tempfile
from pathlib import Path

from dpcore.data.samples.sites import SITES_RULES
from dpcore.privacy.accounts import sign_in
from dpcore.privacy.ledger import Ledger
from dpcore.privacy.policy import Requester
from dpcore.privacy.registration import register_folder
from dpcore.privacy.roles import OWNER, hash_password
from dpcore.registry import (
    ALGORITHM_SPECS,
    CUSTOM_QUERY,
    KIND_SEQUENCES,
    KIND_TABLE,
    KIND_TWO_VIEW,
    REGION_MAP,
)
from dpcore.runs import charge_and_mine

SAMPLES = Path(__file__).resolve().parent.parent / "sample_data"

#: Sample dataset per kind; the noisy map needs the declared location grid of ``sites``.
DATASETS = {KIND_TWO_VIEW: ("clinic", "cms_small"), KIND_SEQUENCES: ("house_power",),
            KIND_TABLE: ("pima_like",)}
#: Small settings so the whole grid runs in about a minute (fields a type lacks are skipped).
SMALL = {"in_tr": 2, "rm_iter": 1, "mc_iter": 300, "init_pairs": 6, "es_rounds": 8,
         "cs_rounds": 2, "k": 20}
QUERIES = {CUSTOM_QUERY: ("[DX_CHF] ∨ [DX_CKD]", "[LAB_BNP > 400]"),
           REGION_MAP: SITES_RULES[0]}


def _params(spec, mode: str):
    params_type = spec.resolve("params_type")
    names = {f.name for f in dataclasses.fields(params_type)}
    values = {k: v for k, v in SMALL.items() if k in names and k in spec.parameters[mode]}
    if spec.key in QUERIES:
        values["left_query"], values["right_query"] = QUERIES[spec.key]
    return params_type(algorithm=spec.key, mode=mode, epsilon=1.0, **values).validate()


def seeded_hashes(seeds: tuple[int, ...]) -> list[str]:
    """One line ``algorithm mode dataset seed sha256`` per seeded run."""
    lines = []
    with tempfile.TemporaryDirectory(prefix="dprm-hashes-") as tmp:
        ledger = Ledger(Path(tmp) / "ledger.sqlite")
        for folder in sorted({d for names in DATASETS.values() for d in names} | {"sites"}):
            register_folder(ledger, SAMPLES / folder, cap=1e6, actor="bench")
        # The owner role is an owner account signed in on this ledger (issue 29): a
        # throw-away one, with a throw-away password.
        password = secrets.token_urlsafe(16)
        ledger.add_account("bench", OWNER, actor="bench", password_hash=hash_password(password))
        owner = Requester.signed_in(sign_in(ledger, "bench", password, client="bench",
                                            entry="api"))
        for spec in ALGORITHM_SPECS.values():
            datasets = ("sites",) if spec.key == REGION_MAP else \
                DATASETS[spec.dataset_kind][:1] if spec.key in QUERIES else \
                DATASETS[spec.dataset_kind]
            for mode, dataset, seed in itertools.product(spec.modes, datasets, seeds):
                run_id = f"{spec.key}-{mode}-{dataset}-{seed}"
                charge_and_mine(ledger, dataset, _params(spec, mode), requester=owner,
                                seed=seed, run_id=run_id)
                release = json.loads(ledger.get_result(run_id)[0])
                release.pop("created_at")  # the wall clock, the one field a seed does not fix
                text = json.dumps(release, sort_keys=True, ensure_ascii=False)
                digest = hashlib.sha256(text.encode("utf-8")).hexdigest()
                lines.append(f"{spec.key} {mode} {dataset} {seed} {digest}")
                print(lines[-1], flush=True)
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", default="1,2", help="comma-separated seeds (default 1,2)")
    args = parser.parse_args(argv)
    seeds = tuple(int(s) for s in args.seeds.split(","))
    seeded_hashes(seeds)
    return 0


if __name__ == "__main__":
    sys.exit(main())
