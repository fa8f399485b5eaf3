"""``serve --workers N``'s parent process: uvicorn's supervisor, and a second SIGTERM or SIGINT
reaches the workers (issue 72, item 1).

uvicorn's supervisor sends each worker one SIGTERM when it is asked to stop, then waits for
them; a signal it receives while it waits is queued and never read. A worker's first SIGTERM
drains it (``api.drain``: the run in flight finishes, up to ``--drain-seconds``), so a second
signal to the parent, which docs/operations.md says stops the server at once, waited for the
run (18 s; 74 s during a 60 s drain). Here the parent passes each further SIGTERM or SIGINT
on to its workers as a SIGTERM, their own second one: they stop at once."""

from __future__ import annotations

import logging
import os
import signal
from typing import Any

from uvicorn.supervisors.multiprocess import Multiprocess

log = logging.getLogger("pinbench.api.drain")
JOIN_POLL_S = 0.2
"""How often the parent, waiting for its workers, looks for a further signal."""


class Supervisor(Multiprocess):
    def join_all(self) -> None:
        for process in self.processes:
            while process.process.is_alive():
                process.process.join(JOIN_POLL_S)
                stops = [s for s in self.signal_queue if s in (signal.SIGTERM, signal.SIGINT)]
                self.signal_queue.clear()
                if stops:
                    log.warning("a further stop signal: stopping the workers now")
                    for each in self.processes:
                        if each.process.is_alive() and each.process.pid is not None:
                            os.kill(each.process.pid, signal.SIGTERM)


def run(app: str, **options: Any) -> None:
    """``uvicorn.run(app, factory=True, workers=N, ...)`` with ``Supervisor`` as the parent
    (N > 1; one worker runs in this process, as uvicorn runs it)."""
    import uvicorn

    config = uvicorn.Config(app, **options)
    if config.workers <= 1:
        uvicorn.run(app, **options)
        return
    from pinbench.api.parent_death import name_parent

    name_parent()  # its workers end with it, however it ends (``parent_death``)
    sock = config.bind_socket()
    try:
        Supervisor(config, sockets=[sock]).run()
    except KeyboardInterrupt:
        pass
    finally:
        sock.close()
