-- The lease of each replica (hearth process) that serves from this database: it
-- renews its row while it runs, and any replica fails the in-flight responses of a
-- replica whose lease ran out (storage.Leases). The time is the database's, so the
-- replicas' clocks need not agree.
CREATE TABLE replicas (
    name        text COLLATE "C" PRIMARY KEY,
    lease_until timestamptz NOT NULL
);
