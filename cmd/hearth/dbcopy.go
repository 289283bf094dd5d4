package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"hearth/internal/seal"
	"hearth/storage"
	"hearth/storage/postgres"
	"hearth/storage/sqlite"
)

// dbCommand groups the commands that act on hearth's database itself.
func dbCommand() *cobra.Command {
	cmd := &cobra.Command{Use: "db", Short: "Act on hearth's database: copy an installation to another store"}
	cmd.AddCommand(dbCopyCommand())
	return cmd
}

// copySampleChains is how many chains a copy loads from both stores and compares.
const copySampleChains = 5

func dbCopyCommand() *cobra.Command {
	var from, to string
	var addTo bool
	cmd := &cobra.Command{
		Use:   "copy --from sqlite:///path/hearth.db --to postgres://...",
		Short: "Copy every record of a SQLite database (and its seal key) into PostgreSQL",
		Long: `Copy an installation from a SQLite database to PostgreSQL: every table of
records (responses and their items, checkpoints and saved prompts, event journals,
conversations, API keys, files with their bytes, vector stores with their files,
batches, ingestion state, chunks and embeddings), and the seal key of encrypted
content (seal.key beside the SQLite file). Stop hearth first.

Before it writes anything the copy compares both schemas: a table or column it does
not know how to carry (one a newer hearth added on one side only, say) stops it, and
nothing is written. The copy is atomic: one transaction writes every row, and on any
error nothing is written; run it again. A target that already holds responses,
conversations, keys, files or vector stores is refused unless --add is given (and
then a record whose id both hold fails the copy). Afterwards it checks the copy:
every table read back from both sides, its rows counted and its content hashed the
same way from both (the target's content must be what it held before plus the
source's), and a sample of chains loaded from both stores and compared link by link,
each printed. A difference fails the command.`,
		Example: `  hearth db copy --from sqlite:///var/lib/hearth/hearth.db --to postgres://hearth@db.example/hearth`,
		Args:    cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			return copyDatabase(c.Context(), c.OutOrStdout(), from, to, addTo)
		},
	}
	cmd.Flags().StringVar(&from, "from", "", "the SQLite database to copy: sqlite://PATH or a path")
	cmd.Flags().StringVar(&to, "to", "", "the PostgreSQL database to copy into: postgres://...")
	cmd.Flags().BoolVar(&addTo, "add", false, "copy into a target that already holds records")
	// Checked in RunE rather than marked required: cobra checks required flags before
	// bindEnv's hook has read $HEARTH_FROM and $HEARTH_TO.
	bindEnv(cmd)
	return cmd
}

func copyDatabase(ctx context.Context, out io.Writer, from, to string, addTo bool) error {
	if from == "" || to == "" {
		return errors.New("db copy needs --from sqlite://PATH and --to postgres://...")
	}
	src, dst := parseDatabase(from, ""), parseDatabase(to, "")
	if src.postgresURL != "" || dst.postgresURL == "" {
		return errors.New("db copy copies a SQLite database (--from sqlite://PATH) into PostgreSQL (--to postgres://...)")
	}
	if _, err := os.Stat(src.sqlitePath); err != nil {
		return fmt.Errorf("the database to copy: %w", err)
	}
	lite, err := sqlite.Open(src.sqlitePath) // packs the items of old responses, as hearth serve would
	if err != nil {
		return err
	}
	defer lite.Close()
	pg, err := postgres.Open(ctx, dst.postgresURL)
	if err != nil {
		return err
	}
	defer pg.Close()

	// What the copy moves, from both schemas: what it cannot carry stops it here,
	// before it writes anything.
	plan, err := pg.PlanCopyFrom(lite)
	if err != nil {
		return fmt.Errorf("copy: nothing copied: %w", err)
	}
	// What the target holds now, which the check adds the source's rows to.
	before := map[string]storage.Digest{}
	for _, t := range plan {
		if before[t.Name], err = storage.DigestRows(t, pg.CopyRows(t)); err != nil {
			return err
		}
	}

	// The seal key first: a target whose replicas seal with another key is refused
	// before any row moves.
	keyPath := filepath.Join(filepath.Dir(src.sqlitePath), seal.FileName)
	key, err := seal.ReadFile(keyPath)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		fmt.Fprintf(out, "seal key: no %s; the first replica makes one\n", keyPath)
	case err != nil:
		return err
	default:
		stored, _, err := pg.SharedSecret(ctx, sealSecretName, key)
		if err != nil {
			return err
		}
		if !bytes.Equal(stored, key) {
			return fmt.Errorf("the target already holds another seal key (its replicas seal with it); %s is not copied", keyPath)
		}
		fmt.Fprintf(out, "seal key: %s copied\n", keyPath)
	}

	res, err := pg.CopyFrom(ctx, lite, plan, addTo)
	if errors.Is(err, storage.ErrNotEmpty) {
		return fmt.Errorf("%s already holds records: nothing copied (--add copies into it anyway)", dst)
	}
	if err != nil {
		return fmt.Errorf("copy: nothing copied: %w", err)
	}
	fmt.Fprintf(out, "copied %s to %s in one transaction\n", src, dst)
	return verifyCopy(ctx, out, lite, pg, plan, before, res)
}

// verifyCopy reads every table of plan back from both stores and compares their
// digests (rows and content, storage.DigestRows): the target must hold what it held
// before the copy plus the source's rows. It then compares a sample of chains loaded
// from both.
func verifyCopy(ctx context.Context, out io.Writer, src *sqlite.DB, dst *postgres.DB, plan []storage.CopyTable, before map[string]storage.Digest, res *postgres.CopyResult) error {
	bad := 0
	for _, t := range plan {
		ds, err := storage.DigestRows(t, src.CopyRows(t))
		if err != nil {
			return err
		}
		dd, err := storage.DigestRows(t, dst.CopyRows(t))
		if err != nil {
			return err
		}
		want := before[t.Name].Plus(ds)
		ok := res.Rows[t.Name] == ds.Rows && dd == want
		mark := "ok  "
		if !ok {
			mark, bad = "FAIL", bad+1
		}
		line := fmt.Sprintf("%s %-19s source %d, copied %d, target %d", mark, t.Name, ds.Rows+res.Skipped[t.Name], res.Rows[t.Name], dd.Rows)
		if dd.Sum == want.Sum {
			line += ", content " + dd.String() + " on both sides"
		} else {
			line += fmt.Sprintf(", content differs: %s expected, %s in the target", want, dd)
		}
		if s := res.Skipped[t.Name]; s > 0 {
			line += fmt.Sprintf(" (%d left out: checkpoints from before stamps, which loads walk past)", s)
		}
		fmt.Fprintln(out, line)
	}
	// The newest responses that continue a chain, loaded from both stores.
	latest, _, err := src.ConsoleResponses(ctx, storage.ConsoleFilter{Limit: 200})
	if err != nil {
		return err
	}
	sampled := 0
	for _, r := range latest {
		if r.PreviousResponseID == "" || !r.Status.Settled() || sampled == copySampleChains {
			continue
		}
		sampled++
		a, errA := src.LoadChain(ctx, r.Owner, r.ID)
		b, errB := dst.LoadChain(ctx, r.Owner, r.ID)
		if errA != nil || errB != nil {
			fmt.Fprintf(out, "FAIL chain %s: source %v, target %v\n", r.ID, errA, errB)
			bad++
			continue
		}
		if diff := chainDiff(a, b); diff != "" {
			fmt.Fprintf(out, "FAIL chain %s: %s\n", r.ID, diff)
			bad++
			continue
		}
		fmt.Fprintf(out, "ok   chain %s: %d links, %d items, the same in both\n", r.ID, len(a.Links), len(a.Items))
	}
	if sampled == 0 {
		fmt.Fprintln(out, "no chain to compare (no response continues another)")
	}
	if bad > 0 {
		return fmt.Errorf("%d check(s) of the copy failed", bad)
	}
	fmt.Fprintln(out, "The copy checks out.")
	return nil
}

// chainDiff says how two loads of one chain differ ("" when they do not): the links'
// ids and statuses, and every item's id, type and body.
func chainDiff(a, b *storage.Chain) string {
	if len(a.Links) != len(b.Links) || len(a.Items) != len(b.Items) {
		return fmt.Sprintf("%d links and %d items in the source, %d and %d in the target", len(a.Links), len(a.Items), len(b.Links), len(b.Items))
	}
	for i := range a.Links {
		if a.Links[i].ID != b.Links[i].ID || a.Links[i].Status != b.Links[i].Status {
			return fmt.Sprintf("link %d is %s (%s) in the source, %s (%s) in the target", i, a.Links[i].ID, a.Links[i].Status, b.Links[i].ID, b.Links[i].Status)
		}
	}
	for i := range a.Items {
		x, y := a.Items[i], b.Items[i]
		if x.ID != y.ID || x.Type != y.Type || !bytes.Equal(x.JSON, y.JSON) {
			return fmt.Sprintf("item %d is %s in the source, %s in the target", i, x.ID, y.ID)
		}
	}
	return ""
}
