"""Snakemake's pending scheduler wake-up timers, cancelled when the run has ended.

Snakemake 9's job-rate limiter (``--max-jobs-per-timespan``) starts a
:class:`threading.Timer` after every scheduling round that found jobs ready; when it
fires, the scheduler runs another round, which starts another timer. A timer is an
ordinary (non-daemon) thread, so the interpreter waits for the last one before it exits:
up to one timespan after the last job. The workflow cancels them in its ``onsuccess`` and
``onerror`` hooks, when the scheduler has returned and no round can follow, so the run's
profile can choose a long timespan (fewer rounds while jobs wait) without delaying the
exit (``docs/scaling.md``, "Snakemake's own scheduling cost").
"""

from __future__ import annotations

import threading

__all__ = ["SNAKEMAKE_SCHEDULER_MODULE", "cancel_scheduler_timers"]

#: The module whose functions Snakemake's scheduler timers call (``JobScheduler``).
SNAKEMAKE_SCHEDULER_MODULE = "snakemake.scheduling.job_scheduler"


def cancel_scheduler_timers(module: str = SNAKEMAKE_SCHEDULER_MODULE) -> int:
    """Cancel every pending :class:`threading.Timer` whose function ``module`` defined.

    Parameters
    ----------
    module : str
        The ``__module__`` of the timers' function; other timers are left alone.

    Returns
    -------
    int
        How many timers were cancelled. A cancelled timer's thread ends at once without
        calling its function; a timer that already fired is unaffected.

    Examples
    --------
    >>> import threading
    >>> timer = threading.Timer(60.0, print)
    >>> timer.start()
    >>> cancel_scheduler_timers(module=print.__module__)
    1
    >>> timer.join(5.0); timer.is_alive()
    False
    """
    cancelled = 0
    for thread in threading.enumerate():
        if (
            isinstance(thread, threading.Timer)
            and getattr(thread.function, "__module__", None) == module
        ):
            thread.cancel()
            cancelled += 1
    return cancelled
