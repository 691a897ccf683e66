"""The msgpack client library: `Client` (asyncio) and `SyncClient` (blocking).

Every call raises `ApiError` (`.reason`, `.message`) on an error reply.
"""
from transport.client.tcp import Client, SyncClient
from transport.protocol.wire import ApiError

__all__ = ["ApiError", "Client", "SyncClient"]
