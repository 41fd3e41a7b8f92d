"""moto's server with DynamoDB requests served one at a time, and DynamoDB Streams' reader limit.

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

It also enforces DynamoDB Streams' reader limit, which moto does not: see StreamReaderLimit.
TENANG_STREAM_READER_LIMIT=off in its environment switches that off (debugging only).

And a TransactWriteItems snapshots only the items it touches (see ItemSnapshot): moto's own
rollback deep-copies every table the transaction names before it starts, so a transaction costs
O(table size) and slows down as the tables grow (the benches write thousands of items).

And it makes two of moto's pure helpers remember their answers (see _memoize_moto_helpers): they
were half the CPU of a request (measured: GetQueueAttributes 2.3 ms -> about 1 ms in process), and
an idle local platform sends moto some 1500 requests a minute.

And it keeps connections open between requests (see KeepAliveRequestHandler): Werkzeug's server
answers every request with `Connection: close`, so each of those requests paid a new TCP
connection (and, for the platform's `localhost` endpoint, a name lookup) on both sides.

Usage: python3 moto_server.py -H 127.0.0.1 -p PORT   (the same options as moto.server)
"""

import copy
import functools
import gc
import io
import json
import os
import re
import sys
import threading
import time
import uuid

import werkzeug.serving
from werkzeug.wsgi import LimitedStream

import moto.backends
import moto.core.utils
import moto.server
from moto.dynamodb import models as dynamodb_models
from moto.dynamodb.models.dynamo_type import DynamoType
from moto.dynamodb.models.table import Table

import moto_sns

MARKER_HEADER = ("x-tenang-moto", "serialized-dynamodb")
_dynamodb_lock = threading.Lock()

_STREAMS = "DynamoDBStreams_20120810."
# Set by the local platform's stream pollers (lib/local/stream-event-source.ts,
# STREAM_READER_HEADER): which event source mapping reads. Nothing else sets it.
_READER_HEADER = "HTTP_X_TENANG_STREAM_READER"
_CREDENTIAL = re.compile(r"Credential=([^/,\s]+)")


class StreamReaderLimit:
    """DynamoDB Streams' limit of two readers per shard, which moto does not enforce.

    AWS: "No more than two processes at most should be reading from the same streams shard at the
    same time. Having more than two readers per shard can result in throttling." (DynamoDB
    developer guide, DynamoDB Streams); GetRecords' LimitExceededException: "More than 2 processes
    are reading from the same streams shard at the same time. Exceeding this limit may result in
    request throttling." (DynamoDB Streams API reference). AWS names neither the window nor who is
    throttled; the model here:

    - A reader is a process polling: an event source mapping (the platform's pollers say which
      with the X-Tenang-Stream-Reader header), otherwise the caller's access key and User-Agent
      (the CLI, a test, a script: each one reader, however many iterators it opens).
    - A reader counts on a shard while it has asked that shard for records (GetRecords) within
      the last WINDOW_SECONDS. The shard is the one its iterator came from (GetShardIterator's
      ShardId, carried along NextShardIterator).
    - With at most two readers nothing is ever throttled: the platform's two mappings never are.
    - With more, the shard serves the two readers that have waited longest since they were last
      served and answers the others LimitExceededException (HTTP 400, as AWS does): each reader
      gets its turn, and a reader that asks again at once after being served waits for the
      others. A third reader is therefore throttled at once when it reads twice in a row, and the
      mappings only when it has waited longer than they have: their throttling, and the iterator
      age it costs them, is milder here than AWS may make it.

    What it cannot reproduce: AWS's real rates and windows (unpublished), throttling of two
    readers that poll fast, two processes with the same credentials and User-Agent (one reader
    here), and a moto this launcher did not start (no limit at all).
    """

    WINDOW_SECONDS = 1.0
    MAX_READERS = 2
    # AWS: "A shard iterator expires 15 minutes after it is retrieved".
    ITERATOR_SECONDS = 15 * 60

    def __init__(self):
        self._shard_of = {}  # iterator -> (shard key, when it was handed out)
        self._readers = {}  # shard key -> {reader: [last asked, last served]}
        self._pruned_at = 0.0

    def remember(self, iterator, shard, now):
        if isinstance(iterator, str):
            self._shard_of[iterator] = (shard, now)
        if now - self._pruned_at > 60:
            self._pruned_at = now
            old = [i for i, (_, at) in self._shard_of.items() if now - at > self.ITERATOR_SECONDS]
            for i in old:
                del self._shard_of[i]

    def shard(self, iterator):
        known = self._shard_of.get(iterator) if isinstance(iterator, str) else None
        return None if known is None else known[0]

    def admit(self, shard, reader, now):
        """True when `reader` may read `shard` now; records the request either way."""
        readers = self._readers.setdefault(shard, {})
        for other in [r for r, (asked, _) in readers.items() if now - asked > self.WINDOW_SECONDS]:
            del readers[other]
        state = readers.setdefault(reader, [now, float("-inf")])
        state[0] = now
        if len(readers) > self.MAX_READERS:
            longest_waiting = sorted(readers, key=lambda r: readers[r][1])[: self.MAX_READERS]
            if reader not in longest_waiting:
                return False
        state[1] = now
        return True


def _reader_of(environ):
    marked = environ.get(_READER_HEADER)
    if marked:
        return "mapping " + marked
    key = _CREDENTIAL.search(environ.get("HTTP_AUTHORIZATION", ""))
    return "client {} {}".format(key.group(1) if key else "?", environ.get("HTTP_USER_AGENT", ""))


def _limit_exceeded(start_response):
    body = json.dumps(
        {
            "__type": "com.amazonaws.dynamodb.v20120810#LimitExceededException",
            "message": "More than 2 processes are reading from the same streams shard at the same time"
            " (local platform: lib/local/moto_server.py)",
        }
    ).encode()
    start_response(
        "400 Bad Request",
        [
            ("Content-Type", "application/x-amz-json-1.0"),
            ("Content-Length", str(len(body))),
            ("x-amzn-RequestId", str(uuid.uuid4())),
            ("x-amzn-ErrorType", "LimitExceededException"),
            MARKER_HEADER,
        ],
    )
    return [body]


_reader_limit = (
    None if os.environ.get("TENANG_STREAM_READER_LIMIT", "").lower() == "off" else StreamReaderLimit()
)


def _memoize_moto_helpers():
    """Two pure functions of moto 5.2.1 that every request calls, made to remember their answers.

    - moto.backends.list_of_moto_modules lists moto's package directory and stats each entry on
      every call; the dispatcher calls it twice per request (about 180 stat calls a request). The
      installed package does not change while the server runs, so one listing serves them all.
    - moto.core.utils.camelcase_to_underscores converts one name character by character; SQS's
      GetQueueAttributes alone calls it some 85 times (each attribute name of the queue, for each
      attribute asked). A name always converts the same way; the cache is bounded.

    Same answers, so the same behaviour: only the CPU a request costs changes. Modules that
    imported camelcase_to_underscores by name before this ran get the remembered one too; those
    moto imports later (backends load on their first request) import it from moto.core.utils.
    """
    modules = tuple(moto.backends.list_of_moto_modules())
    moto.backends.list_of_moto_modules = lambda: modules

    original = moto.core.utils.camelcase_to_underscores
    cached = functools.lru_cache(maxsize=8192)(original)

    def camelcase_to_underscores(argument):
        try:
            return cached(argument)
        except TypeError:  # not hashable: convert it as moto does
            return original(argument)

    for name, module in list(sys.modules.items()):
        if (name == "moto" or name.startswith("moto.")) and getattr(
            module, "camelcase_to_underscores", None
        ) is original:
            module.camelcase_to_underscores = camelcase_to_underscores


_memoize_moto_helpers()


class SerializedDynamoDBApplication(moto.server.DomainDispatcherApplication):
    def __call__(self, environ, start_response):  # type: ignore[override]
        status = []

        def start_with_marker(code, headers, exc_info=None):
            status.append(code)
            return start_response(code, list(headers) + [MARKER_HEADER], exc_info)

        target = environ.get("HTTP_X_AMZ_TARGET", "")
        if not target.startswith("DynamoDB"):
            return super().__call__(environ, start_with_marker)
        operation = target[len(_STREAMS):] if target.startswith(_STREAMS) else None
        limited = _reader_limit is not None and operation in ("GetShardIterator", "GetRecords")
        request = {}
        if limited:
            body = environ["wsgi.input"].read(int(environ.get("CONTENT_LENGTH") or 0))
            environ["wsgi.input"] = io.BytesIO(body)
            try:
                request = json.loads(body or b"{}")
            except ValueError:
                request = {}
        with _dynamodb_lock:
            now = time.monotonic()
            shard = None
            if limited and operation == "GetRecords":
                shard = _reader_limit.shard(request.get("ShardIterator"))
                if shard is not None and not _reader_limit.admit(shard, _reader_of(environ), now):
                    return _limit_exceeded(start_response)
            elif limited:
                shard = (request.get("StreamArn"), request.get("ShardId"))
            # moto builds the whole response inside the call; materialize it under the lock.
            response = list(super().__call__(environ, start_with_marker))
            if shard is not None and status and status[0].startswith("200"):
                try:
                    answer = json.loads(b"".join(response) or b"{}")
                except ValueError:
                    answer = {}
                iterator = answer.get("ShardIterator" if operation == "GetShardIterator" else "NextShardIterator")
                _reader_limit.remember(iterator, shard, now)
            return response


class ItemSnapshot:
    """The items one TransactWriteItems touches, as they were before it: what a rollback restores.

    moto 5.2.1's transact_write_items (moto/dynamodb/models/__init__.py) deep-copies every table
    the transaction names, applies the items one by one, and on a cancellation puts the copies
    back. Here moto's function runs unchanged (its conditions, cancellation reasons and ALL_OLD
    items stay its own) except that its table copy is the table itself (see _TableCopyShim), and
    a failure restores what this snapshot took instead: a copy of each touched item (or its
    absence) and the length of the table's stream shard, whose records the transaction added are
    dropped, as moto's copied shard dropped them. The table and its shard stay the same objects,
    so a stream iterator into the shard still sees later records (moto's rollback replaced the
    shard). A table whose key an item does not name as the table defines it is deep-copied whole,
    as moto does. Any exception restores the snapshot: moto leaves the items before a second
    operation in one TransactItems entry (TransactWriteSingleOpException) applied; AWS validates
    the request first and writes nothing.
    """

    def __init__(self, backend, transact_items):
        self._items = {}  # (table name, hash, range) -> (table, had hash bucket, item copy or None)
        self._tables = {}  # table name -> whole deep copy
        self._streams = {}  # table name -> (shard, its length)
        for entry in transact_items:
            for op_type, op in entry.items() if isinstance(entry, dict) else ():
                self._take(backend, op_type, op)

    def _take(self, backend, op_type, op):
        name = op.get("TableName") if isinstance(op, dict) else None
        table = backend.tables.get(name) if name else None
        if table is None or name in self._tables:
            return
        if table.stream_shard is not None and name not in self._streams:
            self._streams[name] = (table.stream_shard, len(table.stream_shard.items))
        key = op.get("Item" if op_type == "Put" else "Key") or {}
        try:
            hash_value = DynamoType(key[table.hash_key_attr])
            range_value = DynamoType(key[table.range_key_attr]) if table.range_key_attr else None
        except (KeyError, TypeError, AttributeError):
            self._tables[name] = _deepcopy(table)
            return
        at = (name, hash_value, range_value)
        if at in self._items:
            return
        if range_value is None:
            current = table.items.get(hash_value)
            had_bucket = current is not None
        else:
            bucket = table.items.get(hash_value)
            had_bucket = bucket is not None
            current = None if bucket is None else bucket.get(range_value)
        self._items[at] = (table, had_bucket, None if current is None else _deepcopy(current))

    def restore(self, backend):
        for (_, hash_value, range_value), (table, had_bucket, before) in self._items.items():
            if range_value is None:
                if before is None:
                    table.items.pop(hash_value, None)
                else:
                    table.items[hash_value] = before
                continue
            if before is not None:
                table.items[hash_value][range_value] = before
                continue
            bucket = table.items.get(hash_value)
            if bucket is not None:
                bucket.pop(range_value, None)
                if not had_bucket and not bucket:
                    del table.items[hash_value]
        for name, (shard, length) in self._streams.items():
            if name not in self._tables and len(shard.items) >= length:
                del shard.items[length:]
        for name, table in self._tables.items():
            backend.tables[name] = table


_deepcopy = copy.deepcopy
_snapshotting = threading.local()


class _TableCopyShim:
    """moto's `copy` module for dynamodb/models/__init__.py: a Table is not copied while an
    ItemSnapshot guards the transaction; everything else is copied as before."""

    copy = staticmethod(copy.copy)

    @staticmethod
    def deepcopy(value, memo=None):
        if isinstance(value, Table) and getattr(_snapshotting, "active", False):
            return value
        return _deepcopy(value, memo)


def _install_item_snapshots():
    original = dynamodb_models.DynamoDBBackend.transact_write_items

    def transact_write_items(self, transact_items):
        snapshot = ItemSnapshot(self, transact_items)
        _snapshotting.active = True
        try:
            return original(self, transact_items)
        except BaseException:
            snapshot.restore(self)
            raise
        finally:
            _snapshotting.active = False

    dynamodb_models.copy = _TableCopyShim
    dynamodb_models.DynamoDBBackend.transact_write_items = transact_write_items


class KeepAliveRequestHandler(werkzeug.serving.WSGIRequestHandler):
    """Werkzeug's request handler with HTTP/1.1 keep-alive.

    Werkzeug sends `Connection: close` on every response because Python's http.server cannot
    tell where an unread request body ends, and after the response it reads whatever is left on
    the socket for up to 10 ms (that would swallow the next request on a kept connection). Here
    the body is bounded by its Content-Length (or its chunked framing), what the application
    left unread of it is read after the response, and the connection stays open for the next
    request. A request whose body cannot be bounded, or one that asked to close, closes as before.
    """

    protocol_version = "HTTP/1.1"
    # Headers and body go out in two writes; with Nagle's algorithm the body would wait for the
    # client's delayed ACK of the headers (about 40 ms) on a kept connection.
    disable_nagle_algorithm = True

    def make_environ(self):
        environ = super().make_environ()
        if not environ.get("wsgi.input_terminated"):
            try:
                length = int(environ.get("CONTENT_LENGTH") or 0)
            except ValueError:
                length = -1
            if length < 0:
                # No way to find the next request line: answer this one and close.
                self.close_connection = True
                length = 0
            environ["wsgi.input"] = LimitedStream(self.rfile, length)
        self._body = environ["wsgi.input"]
        return environ

    def run_wsgi(self):
        self._body = None
        super().run_wsgi()
        body = self._body
        if body is None or self.close_connection:
            return
        try:
            if isinstance(body, LimitedStream):
                body.exhaust()
            else:
                while body.read(65536):
                    pass
        except Exception:
            self.close_connection = True

    def send_header(self, keyword, value):
        if keyword.lower() == "connection" and value.lower() == "close" and not self.close_connection:
            return
        super().send_header(keyword, value)


class _NoDrainSelector:
    """Stands in for the selector of Werkzeug's after-response drain, which finds nothing to
    read: KeepAliveRequestHandler has read the body, and what follows is the next request."""

    def register(self, *args, **kwargs):
        return None

    def select(self, timeout=None):
        return []

    def close(self):
        return None


class _SelectorsShim:
    EVENT_READ = 1
    DefaultSelector = _NoDrainSelector


def _install_keep_alive():
    werkzeug.serving.WSGIRequestHandler = KeepAliveRequestHandler
    werkzeug.serving.selectors = _SelectorsShim


def _install_gc_freeze():
    """Keeps the cyclic garbage collector's full collections short as moto's heap grows.

    CPython runs a full (generation 2) collection whenever the objects that survived into the
    oldest generation have grown by a quarter, and a full collection visits every tracked object.
    moto keeps every item, message and alarm as Python objects, so as a bench or a long session
    writes its tens of thousands of items the pauses grow with the heap: measured in one
    handler-time run, 20 full collections of 200 to 960 ms each (at 390 000 to 1.6 million objects),
    every request of every client stalled meanwhile. A stall that long is no behaviour of
    DynamoDB's, and it landed at random on whichever handler was being timed (its p99).

    After each full collection what survived is frozen (gc.freeze: moved to a generation the
    collector no longer visits), so the next one visits only what was made since. What is frozen
    survived a full collection, so nothing collectable is kept; an object frozen that later becomes
    part of a reference cycle is never collected, which for moto's stored data (freed by
    reference counting when deleted) is a small cost beside the pauses.
    """

    def after_collection(phase, info):
        if phase == "stop" and info["generation"] == 2:
            gc.freeze()

    gc.freeze()  # the imports' objects
    gc.callbacks.append(after_collection)


moto.server.DomainDispatcherApplication = SerializedDynamoDBApplication  # type: ignore[misc]
_install_gc_freeze()
_install_item_snapshots()
_install_keep_alive()
# SNS subscriptions wait for their endpoint to confirm them, as on AWS: see moto_sns.py.
moto_sns.install(moto.server)

if __name__ == "__main__":
    moto.server.main()
