"""``inner_njit``: compile a kernel that only other kernels call without its Python entry.

numba compiles every ``@njit`` function with two wrappers besides its body: a CPython
wrapper (unboxes every argument from Python objects, boxes the result) and a C-callable
wrapper. A function that only other kernels call never runs either, yet each one is lowered,
optimised and turned into machine code on every cold compile. ``inner_njit`` compiles the
body alone (numba's ``no_cpython_wrapper`` and ``no_cfunc_wrapper`` options): kernels call
it exactly as before, the same body runs, the same numbers come out, and a cold compile of
MCMCTreePair's chain costs 10–20 % less CPU (bench/README.md, issue 32).

Such a function cannot be entered from Python (numba would call a wrapper that does not
exist), yet tests and the odd diagnostic do call helpers directly. A call from Python goes
to a twin: the same Python function compiled with its wrappers, under a name of its own
(``<qualname>__from_python``) so that numba's cache keeps its machine code apart. The twin
is built on the first such call; a miner never makes one (the kernels it calls from
Python keep plain ``@njit``). Nothing here reads data or draws noise.
"""

from __future__ import annotations

import types

from numba import njit
from numba.core.registry import CPUDispatcher

__all__ = ["inner_njit", "TWIN_SUFFIX"]

#: Suffix of the qualified name of the twin compiled for calls from Python.
TWIN_SUFFIX = "__from_python"
_OPTIONS = {"cache": True, "nogil": True}


class InnerDispatcher(CPUDispatcher):
    """A dispatcher whose compiled versions have no wrappers; Python calls go to a twin."""

    def __call__(self, *args, **kwargs):
        return self.from_python(*args, **kwargs)

    @property
    def from_python(self) -> CPUDispatcher:
        """The twin with wrappers (plain ``njit`` of a copy of ``py_func``), built once."""
        twin = self.__dict__.get("_twin")
        if twin is None:
            fn = self.py_func
            copy = types.FunctionType(fn.__code__, fn.__globals__, fn.__name__,
                                      fn.__defaults__, fn.__closure__)
            copy.__kwdefaults__ = fn.__kwdefaults__
            copy.__qualname__ = fn.__qualname__ + TWIN_SUFFIX
            copy.__module__ = fn.__module__
            copy.__doc__ = fn.__doc__
            twin = njit(**_OPTIONS)(copy)
            self.__dict__["_twin"] = twin
        return twin


def inner_njit(fn):
    """``@njit(cache=True, nogil=True)`` for a function only other kernels call: compiled
    without the CPython and C wrappers (see the module docstring); a call from Python runs
    a twin compiled with them. With ``NUMBA_DISABLE_JIT=1`` it returns ``fn`` itself."""
    disp = njit(no_cpython_wrapper=True, no_cfunc_wrapper=True, **_OPTIONS)(fn)
    if isinstance(disp, CPUDispatcher):
        disp.__class__ = InnerDispatcher
    return disp
