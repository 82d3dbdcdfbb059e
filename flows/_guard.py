"""The guard of one run, a process of its own: `python flows/_guard.py LEASE TOKEN [RUN_ID]`
(run as a script: it imports nothing heavy until it acts), started by the run
(`flows._run.guarded`) with its stdin a pipe that the run holds.

The run writes `released` when it ends. A pipe that closes unsaid while the lease is still
the run's means the run's process died without unwinding: a SIGKILL (a process worker that
kills its flow-run process on stop, or `kill -9`). The guard then gives the home's lease back
and marks the run Crashed at once (unless it is being cancelled), where `.lease` was left
behind and the run stayed Running until its missed heartbeats marked it. A run stopped by
SIGTERM (a cancellation, a supervisor's stop) gives its lease back itself; the guard then
does nothing: a cancelled run is not a crash for the rerun automation to rerun.
"""

from __future__ import annotations

import signal
import sys

MESSAGE = (
    "its process was killed without unwinding (SIGKILL: a process worker that was stopped,"
    " or kill -9); the home's lease was given back"
)


def main(argv: list[str]) -> int:
    lease, token, run_id = argv[0], argv[1], (argv[2] if len(argv) > 2 else "")
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):  # a stop sent to the whole
        signal.signal(sig, signal.SIG_IGN)  # group (systemd's) is the run's to answer
    if sys.stdin.read().strip() == "released":
        return 0
    from sparseeval.pipeline.lease import give_back

    # A run that stopped on a signal gave its lease back itself and ended as the signal
    # says (a cancellation is Cancelled, not a crash to rerun): nothing more to do here.
    if give_back(lease, token) and run_id:
        _mark_crashed(run_id)
    return 0


def _mark_crashed(run_id: str) -> None:
    """The run Crashed, unless it ended or is being cancelled (a stop that someone asked
    for is not a crash: the rerun automation reruns crashes)."""
    from uuid import UUID

    from prefect.client.orchestration import get_client
    from prefect.states import Crashed

    with get_client(sync_client=True) as client:
        run = client.read_flow_run(UUID(run_id))
        if run.state is None or not (run.state.is_final() or run.state.is_cancelling()):
            client.set_flow_run_state(run.id, Crashed(message=MESSAGE), force=True)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
