package main

import (
	"context"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"hearth/storage/postgres"
	"hearth/storage/postgres/pgtest"
)

// doctorLines runs `hearth doctor` with args (no hearth answers at --host, so the
// command fails; the database's lines are what the test reads) and returns its output.
func doctorLines(t *testing.T, args ...string) string {
	t.Helper()
	out, _, _ := runCLI(t, append([]string{"doctor", "--host", "http://" + freeAddr(t), "--gpu=false"}, args...)...)
	return out
}

func wantLine(t *testing.T, out, pattern string) {
	t.Helper()
	if !regexp.MustCompile(`(?m)` + pattern).MatchString(out) {
		t.Errorf("hearth doctor: no line matching %q in:\n%s", pattern, out)
	}
}

// TestDoctorPostgres: `hearth doctor --database postgres://...` (and HEARTH_DATABASE)
// checks a PostgreSQL database without changing it: one hearth has never started on
// (no schema, migrations pending, may create tables), one up to date (its keys), one
// migrated by a newer hearth, one whose user may only read, and one that cannot be
// reached, each with a line that says so.
func TestDoctorPostgres(t *testing.T) {
	ctx := context.Background()
	pgURL := pgtest.NewDatabase(t)

	out := doctorLines(t, "--database", pgURL)
	wantLine(t, out, `^ok +database +postgres://.*: reachable, PostgreSQL \d+`)
	wantLine(t, out, `^ok +schema +none yet: hearth serve creates it .*0001_schema`)
	wantLine(t, out, `^ok +write +a write and its read-back worked`)
	wantLine(t, out, `^ok +latency +[0-9.]+[µm]?s per round trip`)
	wantLine(t, out, `^ok +keys +0 admin key\(s\) from --admin-key; the database has none yet`)
	// The doctor changed nothing: still no schema.
	if again := doctorLines(t, "--database", pgURL); !strings.Contains(again, "none yet") {
		t.Errorf("the doctor migrated the database it checked:\n%s", again)
	}

	db, err := postgres.Open(ctx, pgURL)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := db.CreateKey(ctx, "alice"); err != nil {
		t.Fatal(err)
	}
	db.Close()
	t.Setenv("HEARTH_DATABASE", pgURL)
	out = doctorLines(t)
	wantLine(t, out, `^ok +schema +version \d+, up to date`)
	wantLine(t, out, `^ok +keys +0 admin key\(s\) from --admin-key; in the database 1 active key\(s\), 0 revoked: requests need a key`)
	wantLine(t, out, `^ok +write `)

	// A user that may read hearth's tables but not write them.
	if err := pgtest.Exec(ctx, pgURL,
		`DROP ROLE IF EXISTS hearth_doctor_ro`, // left by an earlier run on a shared server
		`CREATE ROLE hearth_doctor_ro LOGIN`,
		`GRANT SELECT ON ALL TABLES IN SCHEMA public TO hearth_doctor_ro`); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		pgtest.Exec(ctx, pgURL, `REVOKE ALL ON ALL TABLES IN SCHEMA public FROM hearth_doctor_ro`, `DROP ROLE hearth_doctor_ro`)
	})
	ro, _ := url.Parse(pgURL)
	ro.User = url.User("hearth_doctor_ro")
	out = doctorLines(t, "--database", ro.String())
	wantLine(t, out, `^ok +schema +version \d+, up to date`)
	wantLine(t, out, `^FAIL +write +.*permission denied`)

	// A newer hearth migrated it.
	if err := pgtest.Exec(ctx, pgURL, `INSERT INTO schema_migrations (version, name, applied_at) VALUES (99, '0099_future', 0)`); err != nil {
		t.Fatal(err)
	}
	out = doctorLines(t, "--database", pgURL)
	wantLine(t, out, `^FAIL +schema +version 99 is newer than this hearth knows \(\d+\)`)

	// Nothing listens there.
	gone, _ := url.Parse(pgURL)
	gone.Host = freeAddr(t)
	out = doctorLines(t, "--database", gone.String())
	wantLine(t, out, `^FAIL +database +postgres://.*storage unavailable`)
}
