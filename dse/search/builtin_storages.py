"""The built-in storage backends, registered under ``dse.storages`` as anyone's would be
(:mod:`dse.search.storage_plugin`); their URL checks live in :func:`dse.search.storage.
storage_problem`, which also keeps journals inside the studies folder."""

from __future__ import annotations

from dse.search.storage import open_journal, open_rdb
from dse.search.storage_plugin import StorageBackend

#: ``journal:PATH``: Optuna's journal file, with torn-write repair and a claim lock.
JOURNAL = StorageBackend(open=open_journal)
#: SQLAlchemy URLs: PostgreSQL and SQLite batched (dse.search.rdb_storage), others as Optuna's.
RDB = StorageBackend(open=open_rdb)
