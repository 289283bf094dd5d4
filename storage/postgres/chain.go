package postgres

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"hearth/storage"
	"hearth/storage/record"
	"hearth/storage/sqlstore"
)

// sqlLoadChain walks a chain upwards from $1 through previous_response_id until the
// root or a checkpoint (whose context the walk takes whole), one row per link with its
// items packed, as storage/sqlite's query does. Ancestors must have owner $2: the walk
// stops at the first missing or foreign one, and the caller sees the gap as a parent on
// the deepest link. $4 false leaves out a checkpoint's context (LoadChainTail: the
// caller may hold it by stamp). Columns:
//   - per link: depth, has_parent, id, model, status, input_pack, output_pack,
//     context, stamp (the last two NULL but for the deepest link), NULL
//   - one request row: -1, NULLs, request
const sqlLoadChain = `WITH RECURSIVE chain (depth, id, previous_response_id, model, status, input_pack, output_pack, checkpoint) AS (
		SELECT 0, id, previous_response_id, model, status, input_pack, output_pack,
			EXISTS (SELECT 1 FROM contexts WHERE contexts.response_id = responses.id)
		FROM responses WHERE id = $1 AND owner = $2
		UNION ALL
		SELECT chain.depth + 1, r.id, r.previous_response_id, r.model, r.status, r.input_pack, r.output_pack,
			EXISTS (SELECT 1 FROM contexts WHERE contexts.response_id = r.id)
		FROM chain JOIN responses AS r ON r.id = chain.previous_response_id
		WHERE NOT chain.checkpoint AND r.owner = $2 AND chain.depth < $3
	)
	SELECT chain.depth, chain.previous_response_id IS NOT NULL, chain.id, chain.model, chain.status,
		chain.input_pack, chain.output_pack,
		CASE WHEN $4 THEN c.context END, c.stamp, NULL::text
	FROM chain LEFT JOIN contexts AS c ON chain.checkpoint AND c.response_id = chain.id
	UNION ALL
	SELECT -1, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, request FROM responses WHERE id = $1 AND owner = $2`

// ChainTail loads on the pool.
func (b backend) ChainTail(ctx context.Context, owner, id string, known func(string) bool) (*storage.Chain, error) {
	return sqlstore.LoadChainTail(ctx, poolChain{b.db.pool}, owner, id, known)
}

// poolChain reads a chain on the pool.
type poolChain struct{ q querier }

func (p poolChain) ChainRows(ctx context.Context, owner, id string, withContext bool) (*record.Rows, error) {
	return queryChain(ctx, p.q, owner, id, withContext)
}

func (p poolChain) StampedCheckpoint(ctx context.Context, id string, stamp []byte) ([]byte, error) {
	var b []byte
	err := p.q.QueryRow(ctx, `SELECT context FROM contexts WHERE response_id = $1 AND stamp = $2`, id, stamp).Scan(&b)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, nil
	}
	return b, err
}

type querier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

func queryChain(ctx context.Context, q querier, owner, id string, withContext bool) (*record.Rows, error) {
	rows, err := q.Query(ctx, sqlLoadChain, id, owner, sqlstore.MaxChainDepth, withContext)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var cr record.Rows
	for rows.Next() {
		var (
			depth                   int
			hasParent               *bool
			lid, model, status, req *string
			in, out, context, stamp []byte
		)
		if err := rows.Scan(&depth, &hasParent, &lid, &model, &status, &in, &out, &context, &stamp, &req); err != nil {
			return nil, err
		}
		if depth == -1 {
			if req != nil {
				cr.Request = []byte(*req)
			}
			continue
		}
		if depth < 0 || depth > sqlstore.MaxChainDepth || lid == nil || model == nil || status == nil || hasParent == nil {
			return nil, fmt.Errorf("chain query returned a bad link row at depth %d", depth)
		}
		if in == nil {
			return nil, fmt.Errorf("response %s has no input pack", *lid)
		}
		cr.Put(depth, record.Link{HasParent: *hasParent,
			Link:  storage.Link{ID: *lid, Model: *model, Status: storage.Status(*status)},
			Packs: [2][]byte{in, out}, Checkpoint: context, Stamp: stamp})
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	if err := cr.Done(); err != nil {
		return nil, err
	}
	return &cr, nil
}

// checkpoint runs in the transaction that completes response id: when id is
// CheckpointInterval(depth) links or more below the nearest checkpoint (or the root),
// it materialises id's context and drops the older checkpoint, so a linear chain keeps
// one. hint is Final.Distance.
func checkpoint(ctx context.Context, tx dbtx, id string, savedPrompt func() []byte, hint, depth int) error {
	every := storage.CheckpointInterval(depth)
	if hint > 0 && hint < every {
		return nil
	}
	var distance int
	var older *string
	if err := tx.QueryRow(ctx, `WITH RECURSIVE chain (depth, id, previous_response_id, checkpoint) AS (
		SELECT 0, id, previous_response_id, EXISTS (SELECT 1 FROM contexts WHERE response_id = responses.id)
		FROM responses WHERE id = $1
		UNION ALL
		SELECT chain.depth + 1, r.id, r.previous_response_id, EXISTS (SELECT 1 FROM contexts WHERE response_id = r.id)
		FROM chain JOIN responses AS r ON r.id = chain.previous_response_id
		WHERE NOT chain.checkpoint AND chain.depth < $2
	)
	SELECT max(depth), (SELECT id FROM chain WHERE checkpoint LIMIT 1) FROM chain`, id, every).Scan(&distance, &older); err != nil {
		return err
	}
	if distance < every {
		return nil
	}
	// The walk must not read a chain a concurrent change is about to alter (see
	// chainLock); the lock is taken before the walk's statement, which then sees every
	// change that committed before it.
	if err := lockChainsShared(ctx, tx); err != nil {
		return err
	}
	var owner string
	if err := tx.QueryRow(ctx, `SELECT owner FROM responses WHERE id = $1`, id).Scan(&owner); err != nil {
		return err
	}
	cr, err := queryChain(ctx, tx, owner, id, true)
	var c *storage.Chain
	if err == nil {
		c, err = cr.Assemble(false)
	}
	if errors.Is(err, storage.ErrNotFound) {
		return nil // a broken chain: nothing to materialise; LoadChain says not found
	}
	if err != nil {
		return err
	}
	var prompt []byte
	if savedPrompt != nil {
		prompt = savedPrompt()
	}
	if err := queue(ctx, tx, `INSERT INTO contexts (response_id, context, stamp, prompt) VALUES ($1, $2, $3, $4)
		ON CONFLICT (response_id) DO UPDATE SET context = excluded.context, stamp = excluded.stamp, prompt = excluded.prompt`,
		id, record.EncodeChain(c), newStamp(), prompt); err != nil {
		return err
	}
	if older != nil {
		return queue(ctx, tx, `DELETE FROM contexts WHERE response_id = $1`, *older)
	}
	return nil
}

// CheckpointPrompt returns the prompt saved with checkpoint id if it still has stamp.
func (db *DB) CheckpointPrompt(ctx context.Context, id, stamp string) ([]byte, error) {
	var p []byte
	err := db.pool.QueryRow(ctx, `SELECT prompt FROM contexts WHERE response_id = $1 AND stamp = $2`, id, []byte(stamp)).Scan(&p)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("storage: saved prompt of %s: %w", id, err)
	}
	return p, nil
}

// newStamp is a new checkpoint's stamp: random, so that it differs from every stamp a
// process ever read, across restarts, replicas and copies of the database.
func newStamp() []byte {
	b := make([]byte, 16)
	rand.Read(b)
	return b
}

// dropDescendantContexts removes the checkpoints of every response below id: they hold
// id's state as it was, and id is changing or going away.
func dropDescendantContexts(ctx context.Context, tx dbtx, id string) error {
	return queue(ctx, tx, sqlstore.SQLDropBelow.Postgres(), id)
}
