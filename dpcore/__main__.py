"""``python -m dpcore``: the command line (see dpcore/cli.py).

Before anything imports NumPy, the process asks OpenBLAS (NumPy's and SciPy's BLAS) for one
thread unless the caller chose a number (:func:`one_blas_thread_unless_chosen`): OpenBLAS
starts its whole thread pool when the library loads, and those threads cost a warm ``mine``
about 0.1–0.2 s of CPU while the command uses BLAS for a few small products only (the
redescription miners' work is in numba kernels; MC-GEN already limits BLAS to one thread per
run). Results do not change (a product's value does not depend on the thread count here).
Set ``OPENBLAS_NUM_THREADS`` (or ``GOTO_NUM_THREADS``, ``OMP_NUM_THREADS``) to choose
another number.
"""

import os

#: The environment variables OpenBLAS reads for its thread count when it loads (the first
#: one set wins, in this order).
BLAS_THREAD_VARIABLES = ("OPENBLAS_NUM_THREADS", "GOTO_NUM_THREADS", "OMP_NUM_THREADS")


def one_blas_thread_unless_chosen(environ=os.environ) -> bool:
    """Set ``OPENBLAS_NUM_THREADS=1`` in ``environ`` unless a BLAS thread count is set.

    Only effective before NumPy is imported (OpenBLAS reads it once, when it loads).
    Child processes inherit it (Dask's local workers use one BLAS thread by default too).

    Returns
    -------
    bool
        True if it set the variable, False if the caller had chosen a count.
    """
    if any(name in environ for name in BLAS_THREAD_VARIABLES):
        return False
    environ["OPENBLAS_NUM_THREADS"] = "1"
    return True


if __name__ == "__main__":
    one_blas_thread_unless_chosen()
    from dpcore.cli import run_and_exit

    run_and_exit()
