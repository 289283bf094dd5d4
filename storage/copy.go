package storage

import (
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"iter"
	"slices"
	"sort"
	"strings"
)

// CopyTable is one table as `hearth db copy` moves it from one store to another: its
// name, the columns both stores' schemas have (in the source's order), and each
// column's type in the target. The source hands over rows of these columns as Go
// values (string, int64, []byte, nil for NULL), and the target converts what its own
// types want (an INTEGER 0 or 1 into a boolean).
type CopyTable struct {
	Name    string
	Columns []string
	Types   []string
}

// CopyColumn is a column of a store's schema: its name and its declared type, lower
// case ("text", "integer", "blob" in SQLite; "text", "bigint", "bytea" ... in
// PostgreSQL).
type CopyColumn struct{ Name, Type string }

// CopySchema is a store's tables and their columns, read from the store itself, so a
// plan sees a column or table a later migration adds.
type CopySchema map[string][]CopyColumn

// CopyTables lists the tables a copy moves, parents before children. Every other
// table of either schema must be in CopyExcluded: PlanCopy refuses a table that is in
// neither, so a migration that adds a table makes the copy refuse until someone says
// which it is. Columns are not listed: they are read from both schemas (PlanCopy).
var CopyTables = []string{
	"responses", "items", "contexts", "events", "journals",
	"conversations", "conversation_items",
	"api_keys",
	"files", "file_contents",
	"vector_stores", "vector_store_batches", "vector_store_files", "vector_store_chunks",
}

// CopyExcluded are the tables a copy does not move, and why.
var CopyExcluded = map[string]string{
	"schema_migrations": "each store's own record of its migrations",
	"chain_epoch":       "PostgreSQL's count of chain changes, which the copy moves on the target",
	"replicas":          "the leases of the PostgreSQL replicas running now",
	"shared_secrets":    "the seal key, which the copy takes from seal.key beside the SQLite file before any row",
}

// CopyOwnColumns are the columns a store fills itself, which a copy neither reads nor
// writes: any other column must be in both schemas, with types PlanCopy knows how to
// carry.
var CopyOwnColumns = map[string]string{
	"seq":     "the order of a table's rows, which each store numbers itself; the copy writes rows in the source's order",
	"replica": "the PostgreSQL replica that created a response, for its recovery; copied responses are settled",
}

// carries says whether a value of the source's type src can go into the target's dst
// unchanged in meaning.
func carries(src, dst string) bool {
	switch src {
	case "text":
		return dst == "text"
	case "integer":
		return dst == "bigint" || dst == "integer" || dst == "boolean"
	case "blob":
		return dst == "bytea"
	}
	return false
}

// PlanCopy says what a copy from a store of schema src into one of schema dst moves,
// table by table, or why it cannot: a table of either schema that is neither in
// CopyTables nor in CopyExcluded, a table or column one side lacks, or a column whose
// types it does not know how to carry. A copy plans before it writes anything, so
// whatever it cannot carry, it refuses whole.
func PlanCopy(src, dst CopySchema) ([]CopyTable, error) {
	var problems []string
	for _, side := range []struct {
		name   string
		schema CopySchema
	}{{"source", src}, {"target", dst}} {
		for _, name := range sortedTables(side.schema) {
			if !slices.Contains(CopyTables, name) && CopyExcluded[name] == "" {
				problems = append(problems, fmt.Sprintf("the %s has table %s, which the copy neither moves nor leaves out on purpose", side.name, name))
			}
		}
	}
	var plan []CopyTable
	for _, name := range CopyTables {
		s, inSrc := src[name]
		d, inDst := dst[name]
		if !inSrc || !inDst {
			problems = append(problems, fmt.Sprintf("table %s is missing in the %s", name, map[bool]string{true: "target", false: "source"}[inSrc]))
			continue
		}
		t := CopyTable{Name: name}
		for _, c := range s {
			if CopyOwnColumns[c.Name] != "" {
				continue
			}
			i := slices.IndexFunc(d, func(x CopyColumn) bool { return x.Name == c.Name })
			if i < 0 {
				problems = append(problems, fmt.Sprintf("column %s.%s is missing in the target", name, c.Name))
				continue
			}
			if !carries(c.Type, d[i].Type) {
				problems = append(problems, fmt.Sprintf("column %s.%s is %s in the source and %s in the target", name, c.Name, c.Type, d[i].Type))
				continue
			}
			t.Columns, t.Types = append(t.Columns, c.Name), append(t.Types, d[i].Type)
		}
		for _, c := range d {
			if CopyOwnColumns[c.Name] == "" && !slices.ContainsFunc(s, func(x CopyColumn) bool { return x.Name == c.Name }) {
				problems = append(problems, fmt.Sprintf("column %s.%s is missing in the source", name, c.Name))
			}
		}
		plan = append(plan, t)
	}
	if len(problems) > 0 {
		return nil, fmt.Errorf("%w: %s", ErrCannotCopy, strings.Join(problems, "; "))
	}
	return plan, nil
}

func sortedTables(s CopySchema) []string {
	names := make([]string, 0, len(s))
	for n := range s {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// CopySkips reports whether a copy leaves row of t out on purpose: checkpoints
// written before checkpoints had stamps, which PostgreSQL's schema requires and a
// chain load does without (it walks past them). The copy and its check both ask it.
func CopySkips(t CopyTable, row []any) bool {
	if t.Name != "contexts" {
		return false
	}
	i := slices.Index(t.Columns, "stamp")
	return i >= 0 && row[i] == nil
}

// CopySource is a store a copy reads from: its schema, and each table's rows in the
// order it stored them. A copy's target reads its rows the same way for the check.
type CopySource interface {
	CopySchema() (CopySchema, error)
	CopyRows(t CopyTable) iter.Seq2[[]any, error]
}

// Digest is what a copy's check compares of one table on both sides: the rows, and
// the sum of a SHA-256 of each row's values (the four 64-bit words of each hash added
// word by word). A sum does not depend on the order rows are read in, so each store
// reads in its own, and the digest of two sets of rows together is the sum of their
// digests: a copy into a target that held rows already checks that the target now
// holds what it held plus what the source has.
type Digest struct {
	Rows int64
	Sum  [4]uint64
}

// Plus is the digest of the rows of d and o together.
func (d Digest) Plus(o Digest) Digest {
	d.Rows += o.Rows
	for i := range d.Sum {
		d.Sum[i] += o.Sum[i]
	}
	return d
}

// String is the sum's first 8 bytes in hex, to print.
func (d Digest) String() string { return fmt.Sprintf("%016x", d.Sum[0]) }

// DigestRows is the digest of t's rows, except those CopySkips leaves out. Values are
// hashed as what they mean, not as the store's Go types: NULL; an integer (a boolean
// as 0 or 1; any width); text and bytes as their bytes. So a row reads the same from
// SQLite and from PostgreSQL, and any changed value, a row missing or one too many
// changes the digest.
func DigestRows(t CopyTable, rows iter.Seq2[[]any, error]) (Digest, error) {
	var d Digest
	var buf []byte
	for row, err := range rows {
		if err != nil {
			return Digest{}, err
		}
		if CopySkips(t, row) {
			continue
		}
		buf = buf[:0]
		for i, v := range row {
			switch v := v.(type) {
			case nil:
				buf = append(buf, 0)
			case int64:
				buf = binary.LittleEndian.AppendUint64(append(buf, 1), uint64(v))
			case int32:
				buf = binary.LittleEndian.AppendUint64(append(buf, 1), uint64(int64(v)))
			case int16:
				buf = binary.LittleEndian.AppendUint64(append(buf, 1), uint64(int64(v)))
			case bool:
				n := uint64(0)
				if v {
					n = 1
				}
				buf = binary.LittleEndian.AppendUint64(append(buf, 1), n)
			case string:
				buf = append(binary.LittleEndian.AppendUint64(append(buf, 2), uint64(len(v))), v...)
			case []byte:
				buf = append(binary.LittleEndian.AppendUint64(append(buf, 2), uint64(len(v))), v...)
			default:
				return Digest{}, fmt.Errorf("%w: %s.%s holds a %T, which the check cannot compare", ErrCannotCopy, t.Name, t.Columns[i], v)
			}
		}
		sum := sha256.Sum256(buf)
		d.Rows++
		for i := range d.Sum {
			d.Sum[i] += binary.LittleEndian.Uint64(sum[8*i:])
		}
	}
	return d, nil
}

// ErrNotEmpty: a copy's target already holds records and the copy was not told to add
// to them.
var ErrNotEmpty = errors.New("storage: the target database already holds records")

// ErrCannotCopy: a copy cannot carry something of the source (PlanCopy says what), and
// writes nothing.
var ErrCannotCopy = errors.New("storage: the copy cannot carry the source whole")
