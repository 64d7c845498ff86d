"""Alembic environment: migrations run on the connection `trainforge.storage.db` hands in.

There is no alembic.ini and no URL here. To write a new revision, open a connection to a database
at head and call, for example::

    from alembic import command
    from trainforge.storage.db import alembic_config, make_engine

    with make_engine(url).connect() as connection:
        command.revision(alembic_config(connection), "add jobs", autogenerate=True)
"""

from __future__ import annotations

from alembic import context

from trainforge.storage.tables import Base

connection = context.config.attributes.get("connection")
if connection is None:
    raise RuntimeError("trainforge migrations run only on a connection given by storage.db")

context.configure(
    connection=connection,
    target_metadata=Base.metadata,
    # SQLite cannot ALTER most things; batch mode rebuilds the table instead.
    render_as_batch=connection.dialect.name == "sqlite",
)
with context.begin_transaction():
    context.run_migrations()
