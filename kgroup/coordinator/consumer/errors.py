"""The error a ConsumerGroupHeartbeat is answered with (its ErrorCode and ErrorMessage), raised by
the heartbeat's checks and by the online upgrade a joining heartbeat may start
(``migration_upgrade``)."""


class HeartbeatError(Exception):
    """``message`` None: the response carries no ErrorMessage."""

    def __init__(self, code: int, message: str | None):
        super().__init__(message)
        self.code = code
        self.message = message
