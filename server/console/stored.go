package console

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"hearth/internal/filetext"
	"hearth/storage"
)

// The views of one stored thing: a response, a file, a vector store; and the lists of
// files and vector stores. Everything is read across owners (the console is an
// admin's) and shown escaped by the templates.

// responsePage is one response as people read it.
type responsePage struct {
	node
	ChainLen int
	Duration time.Duration
	Total    int64
}

func (c *Console) response(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	turns, names, ok := c.chainOf(w, r, id)
	if !ok {
		return
	}
	for _, t := range turns {
		if t.ID != id {
			continue
		}
		p := responsePage{node: node{Turn: t, KeyName: keyName(names, t.Owner), Focus: true,
			Input: c.itemViews(t.Input), Output: c.itemViews(t.Output)}, ChainLen: len(turns)}
		p.Reason, p.ErrorMsg = outcome(t)
		if !t.CompletedAt.IsZero() && !t.CreatedAt.IsZero() {
			p.Duration = t.CompletedAt.Sub(t.CreatedAt)
		}
		p.Total = t.Usage.InputTokens + t.Usage.OutputTokens
		c.render(w, r, http.StatusOK, "response", pageData{Title: "Response " + shortID(id), Nav: "responses", Data: p})
		return
	}
	// The chain was cut (MaxConsoleChain) before this response: its chain page says so.
	http.Redirect(w, r, Prefix+"/chain/"+id, http.StatusSeeOther)
}

// pageSize is how many rows the files and vector stores lists show at once.
const pageSize = 50

// keyed is a stored thing with its owner's key name.
type keyed[T any] struct {
	Item    T
	KeyName string
}

// ownedPage is a page of a list across owners.
type ownedPage[T any] struct {
	Rows []keyed[T]
	Next string
}

// listOwned renders a page of a list across owners: read pages the store, each row
// gets its key's name, and the next page's link continues after the last row's id.
func listOwned[T any](c *Console, w http.ResponseWriter, r *http.Request, page, title string,
	read func(ctx context.Context, after string, limit int) ([]T, bool, error), ownerAndID func(T) (string, string)) {
	rows, more, err := read(r.Context(), r.URL.Query().Get("after"), pageSize)
	if c.listFailed(w, r, err) {
		return
	}
	names, err := c.cfg.KeyNames(r.Context())
	if err != nil {
		c.serverError(w, r, err)
		return
	}
	var p ownedPage[T]
	for _, row := range rows {
		owner, _ := ownerAndID(row)
		p.Rows = append(p.Rows, keyed[T]{Item: row, KeyName: keyName(names, owner)})
	}
	if more {
		_, last := ownerAndID(rows[len(rows)-1])
		p.Next = r.URL.Path + "?" + url.Values{"after": {last}}.Encode()
	}
	c.render(w, r, http.StatusOK, page, pageData{Title: title, Data: p})
}

func (c *Console) files(w http.ResponseWriter, r *http.Request) {
	listOwned(c, w, r, "files", "Files", c.cfg.DB.ConsoleFiles, func(f storage.File) (string, string) { return f.Owner, f.ID })
}

func (c *Console) vectorStores(w http.ResponseWriter, r *http.Request) {
	listOwned(c, w, r, "vectorstores", "Vector stores", c.cfg.DB.ConsoleVectorStores,
		func(s storage.VectorStore) (string, string) { return s.Owner, s.ID })
}

// listFailed answers a list's error: a cursor that names no row is the client's.
func (c *Console) listFailed(w http.ResponseWriter, r *http.Request, err error) bool {
	switch {
	case err == nil:
		return false
	case errors.Is(err, storage.ErrInvalidCursor):
		c.fail(w, r, http.StatusBadRequest, "invalid_value", "after", "after must be a cursor from the previous page's link.")
	default:
		c.serverError(w, r, err)
	}
	return true
}

// What a file's preview reads: the first previewLines lines of at most previewBytes
// of a text file; a PDF's text when the file is at most previewPDFBytes (its text
// needs the whole file), within previewPDFTime.
const (
	previewBytes    = 8 << 10
	previewLines    = 40
	previewPDFBytes = 16 << 20
	previewPDFTime  = 10 * time.Second
)

type filePage struct {
	File    *storage.File
	KeyName string
	Kind    string
	Pages   int
	Lines   []string
	Cut     bool
	Note    string
}

func (c *Console) file(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	head, err := c.fileHead(r.Context(), id, previewBytes)
	names, ok := c.found(w, r, err, storage.ErrFileNotFound, "file", id)
	if !ok {
		return
	}
	p := filePage{File: head.file, KeyName: keyName(names, head.file.Owner)}
	c.preview(r.Context(), &p, head.bytes)
	c.render(w, r, http.StatusOK, "file", pageData{Title: "File " + shortID(id), Nav: "files", Data: p})
}

// found answers a read's error (404 for missing, naming the id; 500 for another)
// and reads the key names; false when the request is answered.
func (c *Console) found(w http.ResponseWriter, r *http.Request, err, missing error, what, id string) (map[string]string, bool) {
	if errors.Is(err, missing) {
		c.fail(w, r, http.StatusNotFound, "not_found", "id", fmt.Sprintf("No %s with id %q is stored.", what, id))
		return nil, false
	}
	if err != nil {
		c.serverError(w, r, err)
		return nil, false
	}
	names, err := c.cfg.KeyNames(r.Context())
	if err != nil {
		c.serverError(w, r, err)
		return nil, false
	}
	return names, true
}

type fileHead struct {
	file  *storage.File
	bytes []byte
}

func (c *Console) fileHead(ctx context.Context, id string, n int) (fileHead, error) {
	f, b, err := c.cfg.DB.ConsoleFileHead(ctx, id, n)
	return fileHead{f, b}, err
}

// preview fills p's kind, pages and first lines from the file's first bytes (all of
// them, read again, for a PDF small enough).
func (c *Console) preview(ctx context.Context, p *filePage, head []byte) {
	f := p.File
	if len(head) == 0 {
		p.Kind, p.Note = "empty", "The file is empty."
		return
	}
	whole := int64(len(head)) >= f.Bytes
	if isPDF(f.Filename, head) {
		p.Kind = "PDF"
		if f.Bytes > previewPDFBytes {
			p.Note = fmt.Sprintf("Its text is not shown here: the preview reads PDFs of at most %s.", formatSize(previewPDFBytes))
			return
		}
		all, err := c.fileHead(ctx, f.ID, int(f.Bytes))
		if err != nil {
			p.Note = "The file could not be read again: " + err.Error()
			return
		}
		ctx, cancel := context.WithTimeout(ctx, previewPDFTime)
		defer cancel()
		res, err := filetext.ReadContext(ctx, f.Filename, "application/pdf", all.bytes)
		if err != nil {
			p.Note = "Its text cannot be read: " + err.Error()
			return
		}
		p.Pages = res.Pages
		p.Lines, p.Cut = firstLines(res.Text, previewLines, previewBytes)
		return
	}
	if !whole {
		// The cut may fall inside a character: drop its first bytes.
		for i := 0; i < utf8.UTFMax && len(head) > 0 && !utf8.Valid(head); i++ {
			head = head[:len(head)-1]
		}
	}
	res, err := filetext.ReadContext(ctx, f.Filename, "", head)
	switch {
	case err != nil:
		p.Kind, p.Note = "binary", "No preview: "+err.Error()
	case res.Kind == filetext.Image:
		p.Kind, p.Note = "image ("+res.MIME+")", "An image: a model sees it as one."
	default:
		p.Kind = res.Source
		p.Lines, p.Cut = firstLines(res.Text, previewLines, previewBytes)
		p.Cut = p.Cut || !whole
	}
}

func isPDF(name string, head []byte) bool {
	return strings.HasPrefix(string(head[:min(len(head), 5)]), "%PDF-") || strings.HasSuffix(strings.ToLower(name), ".pdf")
}

// firstLines returns at most n lines of text and at most max bytes, and whether
// anything was left out.
func firstLines(text string, n, max int) ([]string, bool) {
	cut := false
	if len(text) > max {
		text, cut = text[:max], true
		for len(text) > 0 && !utf8.ValidString(text) {
			text = text[:len(text)-1]
		}
	}
	lines := strings.Split(strings.TrimRight(text, "\n"), "\n")
	if len(lines) > n {
		lines, cut = lines[:n], true
	}
	return lines, cut
}

// storeFilesShown is how many of a store's files its page lists.
const storeFilesShown = 100

type storeFileRow struct {
	storage.VectorStoreFile
	Filename  string
	LastError string
}

type storePage struct {
	Store   *storage.VectorStore
	KeyName string
	Files   []storeFileRow
	Cut     bool
}

func (c *Console) vectorStore(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	s, files, err := c.cfg.DB.ConsoleVectorStore(r.Context(), id, storeFilesShown)
	names, ok := c.found(w, r, err, storage.ErrVectorStoreNotFound, "vector store", id)
	if !ok {
		return
	}
	p := storePage{Store: s, KeyName: keyName(names, s.Owner), Cut: s.Files.Total > len(files)}
	for _, f := range files {
		row := storeFileRow{VectorStoreFile: f}
		if h, err := c.fileHead(r.Context(), f.FileID, 0); err == nil {
			row.Filename = h.file.Filename
		}
		if f.ErrorCode != "" || f.ErrorMsg != "" {
			row.LastError = strings.TrimPrefix(f.ErrorCode+": "+f.ErrorMsg, ": ")
		}
		p.Files = append(p.Files, row)
	}
	c.render(w, r, http.StatusOK, "vectorstore", pageData{Title: "Vector store " + shortID(id), Nav: "vectorstores", Data: p})
}

// formatSize is a size in bytes as people read it.
func formatSize(n int64) string {
	if n < 1024 {
		return strconv.FormatInt(n, 10) + " B"
	}
	if n < 1<<20 {
		return strconv.FormatFloat(float64(n)/1024, 'f', 1, 64) + " KiB"
	}
	return formatBytes(n)
}
