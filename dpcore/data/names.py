"""Names that reach the file system or the screen: dataset names, display names, file paths.

Three checks, used wherever a name typed by a user or read from a schema file is stored,
joined to a folder or shown to other users:

* :func:`check_dataset_name` — dataset and sandbox names. They name a ledger row *and* a
  folder under the data directory (the Data page stores uploads in ``data_root()/name``), so
  they follow one strict pattern, :data:`DATASET_NAME_PATTERN`: no path separators, no leading
  dot, no whitespace, nothing that the file system or a shell treats specially.
* :func:`check_display_name` — attribute names, view names and category levels. Any printable
  text is allowed, but no control characters (Unicode category Cc) and no invisible format
  characters (category Cf: the bidirectional overrides, embeddings, isolates and marks such as
  U+202E RIGHT-TO-LEFT OVERRIDE, zero-width spaces and joiners, …). Those make a name shown on
  the dataset card, in a rule or in an export read differently from what it is.
* :func:`path_inside` — a file named by a schema or an upload, joined to its folder and
  resolved; anything that ends up outside the folder (absolute paths, ``..``, symbolic links
  pointing out) is refused.

No Streamlit import: the module is used by :mod:`dpcore.privacy.ledger`, :mod:`dpcore.data.schema`,
:mod:`dpcore.data.loading` and the app alike.
"""

from __future__ import annotations

import os
import re
import unicodedata
from pathlib import Path

from dpcore.errors import DataError, ParameterError

__all__ = ["DATASET_NAME_PATTERN", "MAX_DATASET_NAME_LENGTH", "check_dataset_name",
           "check_display_name", "path_inside", "refused_characters"]

#: Longest dataset name (characters).
MAX_DATASET_NAME_LENGTH = 128

#: Every dataset (and sandbox) name matches this, in full: an ASCII letter or digit first, then
#: ASCII letters, digits, ``_``, ``-``, ``.`` and ``~`` (owner sandboxes are named
#: ``f"{name}~sandbox-{hex8}"``), at most :data:`MAX_DATASET_NAME_LENGTH` characters in all.
#: So no path separator, no leading dot (no ``..``, no hidden folder), no whitespace.
DATASET_NAME_PATTERN = re.compile(rf"[A-Za-z0-9][A-Za-z0-9_.~-]{{0,{MAX_DATASET_NAME_LENGTH - 1}}}")

_NAME_CHARS = "letters, digits, '_', '-', '.' and '~'"

#: Unicode categories refused in display names: control (Cc), format (Cf: bidi controls,
#: zero-width characters, …), surrogates (Cs, not encodable), line and paragraph separators
#: (Zl, Zp: invisible line breaks).
_REFUSED_CATEGORIES = frozenset({"Cc", "Cf", "Cs", "Zl", "Zp"})


def _u(ch: str) -> str:
    """``U+202E (RIGHT-TO-LEFT OVERRIDE)`` for a character."""
    label = unicodedata.name(ch, "")
    if not label and unicodedata.category(ch) == "Cc":
        label = "control character"
    return f"U+{ord(ch):04X}" + (f" ({label})" if label else "")


def check_dataset_name(name, what: str = "dataset name") -> str:
    """Check a dataset or sandbox name against :data:`DATASET_NAME_PATTERN`.

    Parameters
    ----------
    name : str
        The name to check (not stripped: outer whitespace is an error, not silently removed).
    what : str
        How the name is called in the error message (``"dataset name"``, ``"sandbox name"``).

    Returns
    -------
    str
        ``name`` unchanged.

    Raises
    ------
    ParameterError
        Naming the rule broken or the first offending character: not a string or empty,
        outer whitespace, a ``/`` or ``\\`` (path separator), a leading ``.``, more than
        :data:`MAX_DATASET_NAME_LENGTH` characters, a character outside the pattern, a first
        character that is not a letter or digit.

    Examples
    --------
    >>> check_dataset_name("clinic~sandbox-0a1b2c3d")
    'clinic~sandbox-0a1b2c3d'
    >>> check_dataset_name("../x")
    Traceback (most recent call last):
    ...
    dpcore.errors.ParameterError: dataset name '../x' must not contain '/' ...
    """
    if not isinstance(name, str) or not name.strip():
        raise ParameterError(f"{what} must be a non-empty string; got {name!r}")
    if DATASET_NAME_PATTERN.fullmatch(name):
        return name
    if name != name.strip():
        raise ParameterError(f"{what} {name!r} must not start or end with whitespace")
    for sep in ("/", "\\"):
        if sep in name:
            raise ParameterError(f"{what} {name!r} must not contain {sep!r} (a dataset name "
                                 f"names a folder; use only {_NAME_CHARS})")
    if name.startswith("."):
        raise ParameterError(f"{what} {name!r} must not start with '.'")
    if len(name) > MAX_DATASET_NAME_LENGTH:
        raise ParameterError(f"{what} must have at most {MAX_DATASET_NAME_LENGTH} characters; "
                             f"got {len(name)}")
    for ch in name:
        if not (ch.isascii() and (ch.isalnum() or ch in "_.~-")):
            shown = repr(ch) if ch.isprintable() and not ch.isspace() else _u(ch)
            raise ParameterError(f"{what} {name!r} must not contain {shown}; use only "
                                 f"{_NAME_CHARS}")
    raise ParameterError(f"{what} {name!r} must start with a letter or a digit")


def refused_characters(text: str) -> list[str]:
    """The distinct characters of ``text`` that :func:`check_display_name` refuses, in order."""
    if text.isprintable():          # fast path: no Cc, Cf, Cs, Zl, Zp (nor Zs other than ' ')
        return []
    out = []
    for ch in text:
        if unicodedata.category(ch) in _REFUSED_CATEGORIES and ch not in out:
            out.append(ch)
    return out


def check_display_name(name, what: str, *, file: str | None = None,
                       column: str | None = None) -> str:
    """Refuse control and invisible format characters in a name shown to users.

    Parameters
    ----------
    name : str
        An attribute name, a view name or a category level.
    what : str
        How the name is called in the error message (``"attribute name"``, ``"category"``).
    file, column : str, optional
        Passed to the :class:`~dpcore.errors.DataError` (the schema file and attribute).

    Returns
    -------
    str
        ``name`` unchanged.

    Raises
    ------
    DataError
        If ``name`` is not a string, or contains characters of Unicode category Cc (control),
        Cf (format: U+202A–U+202E, U+2066–U+2069, U+200E, U+200F, U+061C, zero-width
        characters, …), Cs, Zl or Zp. Every refused character is named as ``U+XXXX (NAME)``.
    """
    if not isinstance(name, str):
        raise DataError(f"{what} must be a string, got {type(name).__name__}", file=file,
                        column=column)
    bad = refused_characters(name)
    if bad:
        raise DataError(f"{what} {name!r} contains invisible or control character(s) "
                        f"{', '.join(_u(ch) for ch in bad)}; remove them", file=file,
                        column=column)
    return name


def path_inside(root, relative, *, what: str = "file", error: type = DataError) -> Path:
    """Join ``relative`` to ``root``, resolve it, and refuse anything not inside ``root``.

    Parameters
    ----------
    root : str or os.PathLike
        The folder the path must stay in (resolved too, so a symbolic link *to* the folder is
        fine).
    relative : str or os.PathLike
        A path relative to ``root``: a file name from a schema or an upload, a dataset name.
    what : str
        How the path is called in the error message.
    error : type
        :class:`~dpcore.errors.DataError` (default; ``file=relative`` names the path) or
        :class:`~dpcore.errors.ParameterError`.

    Returns
    -------
    pathlib.Path
        The resolved path, strictly inside the resolved ``root`` (never ``root`` itself).

    Raises
    ------
    DataError or ParameterError
        For an empty or absolute path, a NUL character, or a path that resolves outside
        ``root`` (``..`` components, symbolic links pointing out). Nothing is created.

    Notes
    -----
    Symbolic links are followed as they are when this is called; a link created afterwards
    by someone who can write in ``root`` is not seen.
    """
    def refuse(reason: str):
        shown = os.fspath(relative) if isinstance(relative, (str, os.PathLike)) else relative
        if issubclass(error, DataError):            # the prefix names the file
            return error(f"{what} {reason}", file=shown)
        return error(f"{what} {shown!r} {reason}")

    if not isinstance(relative, (str, os.PathLike)):
        raise refuse("must be a path relative to its folder")
    text = os.fspath(relative)
    if not isinstance(text, str) or not text.strip():
        raise refuse("must be a non-empty path relative to its folder")
    if "\x00" in text:
        raise refuse("must not contain a NUL character")
    if Path(text).is_absolute() or text.startswith(("/", "\\")):
        raise refuse("must be relative to its folder, not an absolute path")
    try:
        base = Path(root).expanduser().resolve()
        target = (base / text).resolve()
    except (OSError, RuntimeError, ValueError) as exc:
        raise refuse(f"cannot be resolved: {exc}") from None
    if target == base or not target.is_relative_to(base):
        raise refuse(f"must stay inside {str(base)!r} (it resolves to {str(target)!r})")
    return target
