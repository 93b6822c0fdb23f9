"""Typed errors raised by dpcore.

Every error names what is wrong in words a user can act on: the file, column
and row for bad data; the parameter and its allowed range for bad settings;
requested and remaining ε for budget refusals.
"""

from __future__ import annotations

import math


class DpcoreError(Exception):
    """Base class of all errors raised on purpose by dpcore."""


class DataError(DpcoreError, ValueError):
    """Bad input data or schema.

    Parameters
    ----------
    message : str
        What is wrong.
    file, column : str, optional
        Where it is wrong.
    row : int, optional
        1-based data row (the header is row 0) where it is wrong.
    line : int, optional
        1-based line of a text file as an editor shows it (the header is line 1); when
        given, the message says ``line N of file F`` instead of ``row N``.
    """

    def __init__(self, message: str, *, file: str | None = None,
                 column: str | None = None, row: int | None = None,
                 line: int | None = None):
        self.file, self.column, self.row, self.line = file, column, row, line
        where = []
        if line is not None:
            where.append(f"line {line} of file {file!r}" if file is not None else f"line {line}")
        elif file is not None:
            where.append(f"file {file!r}")
        if column is not None:
            where.append(f"column {column!r}")
        if row is not None and line is None:
            where.append(f"row {row}")
        prefix = (", ".join(where) + ": ") if where else ""
        super().__init__(prefix + message)
        self.message = message


class ParameterError(DpcoreError, ValueError):
    """A mining or budget parameter outside its allowed range (ε ≤ 0, ω ∉ [0, 1], ...)."""


class BudgetExceededError(DpcoreError):
    """A spend that would push the total above the cap; nothing was charged.

    Attributes
    ----------
    requested, remaining : float
        In ε units.
    """

    def __init__(self, requested: float, remaining: float, what: str = "run"):
        self.requested, self.remaining = requested, remaining
        super().__init__(
            f"privacy budget exceeded: the {what} needs ε = {requested:.6g} "
            f"but only ε = {remaining:.6g} remains; nothing was charged")


class OwnerLoginThrottled(DpcoreError):
    """A sign-in attempt refused, unchecked, during the back-off after failed sign-ins.

    The password was not checked and the refusal was recorded in the ledger's login
    log (see :func:`dpcore.privacy.accounts.sign_in`).

    Attributes
    ----------
    retry_after : float
        Seconds to wait before the next attempt will be checked (> 0).
    wait : str
        The same wait in words, rounded up to the second (``"8 s"``, ``"2 min 5 s"``).
    failures : int
        Consecutive failed logins that caused the back-off.
    """

    def __init__(self, retry_after: float, failures: int):
        self.retry_after, self.failures = float(retry_after), int(failures)
        minutes, seconds = divmod(max(1, math.ceil(self.retry_after)), 60)
        self.wait = (f"{minutes} min" + (f" {seconds} s" if seconds else "")) if minutes \
            else f"{seconds} s"
        super().__init__(
            f"too many failed sign-ins ({self.failures} in a row): wait {self.wait} "
            "before trying again (this attempt was refused without checking the password)")


class WorkspaceConflict(ParameterError):
    """A workspace save refused because the stored one changed since it was read.

    Saved workspaces carry a revision; a save names the revision it was based on and is
    refused, writing nothing, when another tab or session saved (or deleted) the
    workspace meanwhile (:meth:`dpcore.privacy.ledger.Ledger.save_workspace`).

    Attributes
    ----------
    name : str
        The workspace's name.
    expected : int
        The revision the refused save was based on (0: none existed when it was read).
    revision : int or None
        The stored revision now; None when the workspace was deleted meanwhile.
    updated_at : str or None
        When the stored one was last saved (ISO 8601 UTC); None when deleted.
    """

    def __init__(self, name: str, expected: int, revision: int | None,
                 updated_at: str | None):
        self.name, self.expected = name, int(expected)
        self.revision, self.updated_at = revision, updated_at
        what = (f"was changed elsewhere (another tab or session) at {updated_at}"
                if revision is not None else "was deleted elsewhere")
        super().__init__(f"workspace {name!r} {what} since this copy was read; nothing was "
                         "saved: reload it to see that change, or overwrite it explicitly")


class SignInError(DpcoreError):
    """A sign-in refused: unknown account, wrong password, or a disabled account.

    One message for all three, so the answer never tells a guesser which names exist.
    The attempt is recorded in the ledger's login log.
    """

    def __init__(self, message: str = "wrong account name or password (or the account is "
                                      "disabled)"):
        super().__init__(message)


class CountingInterrupted(DpcoreError):
    """A charged run could not obtain one of its counts (a partition counted on a cluster
    that failed, or a partition that no longer matches its digest).

    Raised before the noise of the count it interrupts is drawn, and no part of the attempt
    left the run: the run is left charged without a result (not failed), so finishing it
    under the same run id counts again and releases once for its one charge.
    """
