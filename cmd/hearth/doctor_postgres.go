package main

import (
	"context"
	"fmt"
	"strings"
	"time"

	"hearth/storage/postgres"
)

// checkPostgres checks a PostgreSQL database as `hearth serve --database` would use it,
// without changing it: it reaches the server, reads its version and the schema's, says
// which migrations the next start applies, tries a write and its read-back (rolled
// back), times a round trip, and counts the keys (returned for the keys check).
func (d *doctor) checkPostgres(ctx context.Context, db databaseSpec) (keys dbKeys) {
	ctx, cancel := context.WithTimeout(ctx, postgresOpenTimeout)
	defer cancel()
	var in *postgres.Inspection
	if !d.check("database", func() (string, error) {
		var err error
		if in, err = postgres.Inspect(ctx, db.postgresURL); err != nil {
			return "", fmt.Errorf("%s: %w", db, err)
		}
		return fmt.Sprintf("%s: reachable, PostgreSQL %s, database %s as user %s", db, in.Server, in.Database, in.User), nil
	}) {
		return keys
	}
	d.check("schema", func() (string, error) {
		switch {
		case in.Schema > in.Known:
			return "", fmt.Errorf("version %d is newer than this hearth knows (%d): a newer hearth migrated it; run that version", in.Schema, in.Known)
		case in.Schema == 0:
			return fmt.Sprintf("none yet: hearth serve creates it at its first start (%d migration(s): %s)", len(in.Pending), strings.Join(in.Pending, ", ")), nil
		case len(in.Pending) > 0:
			return fmt.Sprintf("version %d of %d: %d migration(s) pending, applied at the next hearth serve: %s", in.Schema, in.Known, len(in.Pending), strings.Join(in.Pending, ", ")), nil
		}
		return fmt.Sprintf("version %d, up to date", in.Schema), nil
	})
	d.check("write", func() (string, error) {
		if in.WriteErr != nil {
			return "", in.WriteErr
		}
		return "a write and its read-back worked (rolled back)", nil
	})
	d.check("latency", func() (string, error) {
		return fmt.Sprintf("%s per round trip (median of the doctor's probes)", in.Latency.Round(time.Microsecond)), nil
	})
	if in.Schema > 0 {
		keys = dbKeys{known: true, active: in.ActiveKeys, revoked: in.RevokedKeys}
	}
	return keys
}
