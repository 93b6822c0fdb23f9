"""Charged runs: the only way the app and the command line mine a ledgered dataset.

Order of operations, each step before the next:

1. validate parameters and the budget plan (bad input: nothing charged);
2. charge the plan's total in the ledger (one ``BEGIN IMMEDIATE`` transaction;
   a run id charges once, so a double click or a second tab replays it);
3. mine with an accountant capped at exactly that charge (noise drawn here);
4. store the result in the ledger; only then return it.

A run that fails after its charge is marked ``failed``; the charge stays
(spent budget is never refunded: the noise may already have been drawn).
"""

from __future__ import annotations

import json
import uuid
from dataclasses import asdict

import numpy as np

from .accountant import PrivacyAccountant
from .dataset import TwoViewDataset
from .errors import DpcoreError
from .ledger import Ledger
from .mining import Progress, mine
from .params import MiningParams, plan_budget
from .results import OwnerDiagnostics, RunResult


class RunInProgressError(DpcoreError):
    """The run id is charged but its result is not stored yet (another tab is mining it)."""


def new_run_id() -> str:
    return uuid.uuid4().hex


def run_cost(params: MiningParams) -> int:
    """What launching ``params`` will charge, in nano-ε (validates the parameters)."""
    return sum(s.epsilon_nano for s in plan_budget(params))


def charge_and_mine(ledger: Ledger, dataset_name: str, dataset: TwoViewDataset,
                    params: MiningParams, *, run_id: str | None = None, actor: str = "analyst",
                    seed: int | None = None, progress: Progress | None = None) -> RunResult:
    """Charge, mine, store, return — see the module docstring.

    Parameters
    ----------
    seed : int, optional
        Tests and labelled demos only; real releases use fresh OS entropy.

    Raises
    ------
    BudgetExceededError
        The run does not fit the remaining budget; nothing charged.
    ParameterError
        Bad parameters; nothing charged.
    RunInProgressError
        ``run_id`` was charged before and has no stored result yet.
    """
    run_id = run_id or new_run_id()
    params.validate()
    parts = [s.epsilon_nano for s in plan_budget(params)]
    charge = ledger.charge(run_id, dataset_name, params.algorithm, parts,
                           {**params.to_dict(), "seed": seed}, actor=actor)
    if charge.replayed:
        stored = ledger.get_result(run_id)
        if stored is None:
            raise RunInProgressError(f"run {run_id} is already charged and still running "
                                     "(or failed); its budget is spent")
        return RunResult.from_json(stored[0])
    rng = np.random.default_rng(seed)
    try:
        result = mine(dataset, params, rng=rng, accountant=PrivacyAccountant(sum(parts)),
                      run_id=run_id, seed=seed, progress=progress)
        result.dataset = dataset_name
        ledger.store_result(run_id, result.to_json(),
                            json.dumps(asdict(result.diagnostics)))
    except BaseException as exc:
        ledger.mark_failed(run_id, f"{type(exc).__name__}: {exc}")
        raise
    return result


def load_result(ledger: Ledger, run_id: str, *, include_diagnostics: bool = False) -> RunResult:
    """A stored result; owner diagnostics only when asked for (owners only)."""
    stored = ledger.get_result(run_id)
    if stored is None:
        raise DpcoreError(f"run {run_id} has no stored result")
    result = RunResult.from_json(stored[0])
    if include_diagnostics and stored[1]:
        result.diagnostics = OwnerDiagnostics(**json.loads(stored[1]))
    return result
