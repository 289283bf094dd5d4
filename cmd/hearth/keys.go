package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"hearth/storage"
)

// keysCommand manages API keys in the database of --data. It works on the file
// directly, next to a running hearth (SQLite's locking makes that safe), which sees the
// change on its next request.
func keysCommand() *cobra.Command {
	var dataDir, database string
	cmd := &cobra.Command{
		Use:   "keys",
		Short: "Create, list, update and revoke API keys",
		Long: `Manage the API keys clients send as 'Authorization: Bearer <key>'.

Keys live in hearth's database in --data, stored as hashes: a key is printed once, when
it is created. A running hearth checks the database on every request, so a new key
works and a revoked one fails at once, without a restart (an open WebSocket too, at its
next response.create). Once any key exists (even a revoked one) hearth requires a key
on every route but /healthz. Keys given to hearth serve with --admin-key or
HEARTH_ADMIN_KEY work next to these, as admin keys (HEARTH_API_KEY is the key the CLI
sends; serve ignores it).

Roles: a user key (the default) generates, reads the model list and uses its own
responses. An admin key (--admin) also manages the runtime's models (/api/pull, push,
create, copy, delete, blobs) and reads /metrics.

Cache groups: the runtime's KV cache is shared by all keys, and a response's
usage.input_tokens_details.cached_tokens counts only a prompt prefix left there by the
same key or by a key of its cache group. By default each key is a group of its own, so
no key learns from cached_tokens what another key sent; keys of one team may share
(--cache-group team1). See docs/security.md, "What keys share".`,
		Example: `  hearth keys create --name alice
  hearth keys create --name ops --admin
  hearth keys create --name bob --cache-group team1
  hearth keys update alice --cache-group team1
  hearth keys list
  hearth keys revoke alice
  hearth keys adopt alice`,
	}

	open := func() (storage.Store, error) {
		spec := parseDatabase(database, dataDir)
		if spec.postgresURL != "" {
			db, err := openStore(spec.postgresURL)
			if err != nil {
				return nil, fmt.Errorf("database %s: %w", spec, err)
			}
			return db, nil
		}
		// A lost database must not be replaced by a new one holding only this key.
		if filepath.Clean(spec.sqlitePath) == filepath.Join(dataDir, databaseFile) {
			if err := checkDatabaseNotLost(dataDir); err != nil {
				return nil, err
			}
		}
		db, err := openStore(spec.sqlitePath)
		if err != nil {
			return nil, fmt.Errorf("database %s: %w", spec, err)
		}
		return db, nil
	}

	var (
		name       string
		admin      bool
		cacheGroup string
		adopt      bool
	)
	create := &cobra.Command{
		Use:     "create --name NAME",
		Short:   "Create a key and print it (once)",
		Example: "  hearth keys create --name alice\n  hearth keys create --name ops --admin\n  hearth keys create --name bob --cache-group team1",
		Args:    cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			if name == "" {
				return errors.New("--name is required: it names the key in logs, metrics and `hearth keys list`")
			}
			db, err := open()
			if err != nil {
				return err
			}
			defer db.Close()
			role := storage.RoleUser
			if admin {
				role = storage.RoleAdmin
			}
			k, secret, err := db.CreateKeyWith(c.Context(), name, storage.KeyOptions{Role: role, CacheGroup: cacheGroup})
			if err != nil {
				return err
			}
			fmt.Fprintln(c.OutOrStdout(), secret)
			fmt.Fprintf(c.ErrOrStderr(), "Created %s key %s (%s). It is shown only now; hearth keeps only its hash.\n", k.Role, k.Name, k.ID)
			if adopt {
				return adoptKeyless(c.Context(), c.ErrOrStderr(), db, k.ID) // stdout holds the key alone
			}
			return nil
		},
	}
	create.Flags().StringVar(&name, "name", "", "who or what the key is for (unique)")
	create.Flags().BoolVar(&admin, "admin", false, "an admin key: may also manage models (pull, push, create, copy, delete) and read /metrics")
	create.Flags().StringVar(&cacheGroup, "cache-group", "", "share cached_tokens (the runtime's KV cache) with the keys of this group; none: the key alone")
	create.Flags().BoolVar(&adopt, "adopt", false, "give the new key what was made while hearth required no key (as hearth keys adopt)")

	adoptCmd := &cobra.Command{
		Use:   "adopt NAME|ID",
		Short: "Give a key the responses, conversations, files and vector stores made while hearth required no key",
		Long: `Give a key everything made while hearth required no key: responses (with their
items and journals), conversations, files and vector stores. Once a key exists, no
request reaches them any more but an admin key's, by id; after adopt they are the key's,
as if it had made them. Running it again gives nothing more (unless hearth served
without keys again meanwhile). A hearth serving from the database may keep running.`,
		Example: "  hearth keys adopt alice\n  hearth keys create --name alice --adopt",
		Args:    cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			db, err := open()
			if err != nil {
				return err
			}
			defer db.Close()
			return adoptKeyless(c.Context(), c.OutOrStdout(), db, args[0])
		},
	}
	update := &cobra.Command{
		Use:     "update NAME|ID --cache-group GROUP",
		Short:   "Change a key's cache group (--cache-group '' leaves it alone)",
		Example: "  hearth keys update alice --cache-group team1\n  hearth keys update alice --cache-group ''",
		Args:    cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			if !c.Flags().Changed("cache-group") {
				return errors.New("--cache-group is required: the group the key joins ('' for a group of its own)")
			}
			db, err := open()
			if err != nil {
				return err
			}
			defer db.Close()
			k, err := db.SetKeyCacheGroup(c.Context(), args[0], cacheGroup)
			if err != nil {
				return err
			}
			if k.CacheGroup == "" {
				fmt.Fprintf(c.OutOrStdout(), "Key %s (%s) shares its cache with no other key.\n", k.Name, k.ID)
			} else {
				fmt.Fprintf(c.OutOrStdout(), "Key %s (%s) is in cache group %s.\n", k.Name, k.ID, k.CacheGroup)
			}
			return nil
		},
	}
	update.Flags().StringVar(&cacheGroup, "cache-group", "", "the cache group the key joins; '' for a group of its own")

	list := &cobra.Command{
		Use:     "list",
		Short:   "List keys: id, name, role, cache group, prefix, created, revoked",
		Example: "  hearth keys list",
		Args:    cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			db, err := open()
			if err != nil {
				return err
			}
			defer db.Close()
			keys, err := db.ListKeys(c.Context())
			if err != nil {
				return err
			}
			if len(keys) == 0 {
				fmt.Fprintln(c.ErrOrStderr(), "No keys. Create one with: hearth keys create --name NAME")
				return nil
			}
			w := tabwriter.NewWriter(c.OutOrStdout(), 0, 4, 2, ' ', 0)
			fmt.Fprintln(w, "ID\tNAME\tROLE\tCACHE GROUP\tKEY\tCREATED\tREVOKED")
			for _, k := range keys {
				revoked := "-"
				if !k.Active() {
					revoked = k.RevokedAt.Local().Format(time.DateTime)
				}
				group := k.CacheGroup
				if group == "" {
					group = "-"
				}
				fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s…\t%s\t%s\n", k.ID, k.Name, k.Role, group, k.Prefix, k.CreatedAt.Local().Format(time.DateTime), revoked)
			}
			return w.Flush()
		},
	}

	revoke := &cobra.Command{
		Use:     "revoke NAME|ID",
		Short:   "Revoke a key: requests with it fail with 401 at once",
		Example: "  hearth keys revoke alice\n  hearth keys revoke key_3f9a1c0d2b7e4a65",
		Args:    cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			db, err := open()
			if err != nil {
				return err
			}
			defer db.Close()
			k, err := db.RevokeKey(c.Context(), args[0])
			if err != nil {
				return err
			}
			fmt.Fprintf(c.OutOrStdout(), "Revoked key %s (%s).\n", k.Name, k.ID)
			return nil
		},
	}
	for _, sub := range []*cobra.Command{create, list, update, revoke, adoptCmd} {
		sub.Flags().StringVar(&dataDir, "data", defaultDataDir(), "directory of hearth's database")
		sub.Flags().StringVar(&database, "database", "", "hearth's database, as hearth serve's --database: a PostgreSQL URL or a SQLite file (default: hearth.db in --data)")
		cmd.AddCommand(sub)
		bindEnv(sub)
	}
	return cmd
}

// adoptKeyless gives key idOrName what was made without keys and says how much.
func adoptKeyless(ctx context.Context, out io.Writer, db storage.Store, idOrName string) error {
	k, n, err := db.AdoptKeyless(ctx, idOrName)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "Key %s (%s) adopted %d responses, %d conversations, %d files and %d vector stores made without a key.\n",
		k.Name, k.ID, n.Responses, n.Conversations, n.Files, n.VectorStores)
	return nil
}
