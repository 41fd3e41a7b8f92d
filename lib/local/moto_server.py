"""moto's server with DynamoDB requests served one at a time.

moto 5.2.1 serves every connection on its own thread, and its DynamoDB backend checks a
ConditionExpression and then writes without a lock: two concurrent PutItem calls both
conditioned on `version = 0` can both succeed (measured: 2 of 100 succeed in 2 of 5 trials of
the backoff experiment; never over one connection). It also rolls back a cancelled
TransactWriteItems by putting back copies of the tables taken when the transaction started,
which discards writes that other threads made meanwhile. Real DynamoDB does neither. Every
guarantee tenang tests (idempotency claims, dedup claims, leases, fencing, order guards) rests on
conditional writes, so the local platform would judge concurrency with an emulator that breaks
the primitive itself.

This launcher runs moto exactly as `python -m moto.server` does, except that requests for
DynamoDB and DynamoDB Streams (X-Amz-Target DynamoDB_*/DynamoDBStreams_*) hold one process-wide
lock while moto handles them. Other services (SQS long polls in particular) stay concurrent.
Every response carries `x-tenang-moto: serialized-dynamodb`, so a caller can tell this server
from a stock moto it is about to reuse.

Usage: python3 moto_server.py -H 127.0.0.1 -p PORT   (the same options as moto.server)
"""

import threading

import moto.server

MARKER_HEADER = ("x-tenang-moto", "serialized-dynamodb")
_dynamodb_lock = threading.Lock()


class SerializedDynamoDBApplication(moto.server.DomainDispatcherApplication):
    def __call__(self, environ, start_response):  # type: ignore[override]
        def start_with_marker(status, headers, exc_info=None):
            return start_response(status, list(headers) + [MARKER_HEADER], exc_info)

        target = environ.get("HTTP_X_AMZ_TARGET", "")
        if target.startswith("DynamoDB"):
            with _dynamodb_lock:
                # moto builds the whole response inside the call; materialize it under the lock.
                return list(super().__call__(environ, start_with_marker))
        return super().__call__(environ, start_with_marker)


moto.server.DomainDispatcherApplication = SerializedDynamoDBApplication  # type: ignore[misc]

if __name__ == "__main__":
    moto.server.main()
