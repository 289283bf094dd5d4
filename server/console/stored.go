package console

import (
	"context"
	"errors"
	"fmt"
	"net/http"
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
	turns, err := c.cfg.DB.ConsoleChain(r.Context(), id)
	if errors.Is(err, storage.ErrNotFound) {
		c.fail(w, r, http.StatusNotFound, "not_found", "id", fmt.Sprintf("No response with id %q is stored.", id))
		return
	}
	if err != nil {
		c.serverError(w, r, err)
		return
	}
	names, err := c.cfg.KeyNames(r.Context())
	if err != nil {
		c.serverError(w, r, err)
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

type fileRow struct {
	storage.File
	KeyName string
}

type filesPage struct {
	Files []fileRow
	Next  string
}

func (c *Console) files(w http.ResponseWriter, r *http.Request) {
	after := r.URL.Query().Get("after")
	files, more, err := c.cfg.DB.ConsoleFiles(r.Context(), after, pageSize)
	if c.listFailed(w, r, err) {
		return
	}
	names, err := c.cfg.KeyNames(r.Context())
	if err != nil {
		c.serverError(w, r, err)
		return
	}
	var p filesPage
	for _, f := range files {
		p.Files = append(p.Files, fileRow{File: f, KeyName: keyName(names, f.Owner)})
	}
	if more {
		p.Next = Prefix + "/files?after=" + files[len(files)-1].ID
	}
	c.render(w, r, http.StatusOK, "files", pageData{Title: "Files", Data: p})
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
	if errors.Is(err, storage.ErrFileNotFound) {
		c.fail(w, r, http.StatusNotFound, "not_found", "id", fmt.Sprintf("No file with id %q is stored.", id))
		return
	}
	if err != nil {
		c.serverError(w, r, err)
		return
	}
	names, err := c.cfg.KeyNames(r.Context())
	if err != nil {
		c.serverError(w, r, err)
		return
	}
	p := filePage{File: head.file, KeyName: keyName(names, head.file.Owner)}
	c.preview(r.Context(), &p, head.bytes)
	c.render(w, r, http.StatusOK, "file", pageData{Title: "File " + shortID(id), Nav: "files", Data: p})
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

type storeRow struct {
	storage.VectorStore
	KeyName string
}

type storesPage struct {
	Stores []storeRow
	Next   string
}

func (c *Console) vectorStores(w http.ResponseWriter, r *http.Request) {
	after := r.URL.Query().Get("after")
	stores, more, err := c.cfg.DB.ConsoleVectorStores(r.Context(), after, pageSize)
	if c.listFailed(w, r, err) {
		return
	}
	names, err := c.cfg.KeyNames(r.Context())
	if err != nil {
		c.serverError(w, r, err)
		return
	}
	var p storesPage
	for _, s := range stores {
		p.Stores = append(p.Stores, storeRow{VectorStore: s, KeyName: keyName(names, s.Owner)})
	}
	if more {
		p.Next = Prefix + "/vector-stores?after=" + stores[len(stores)-1].ID
	}
	c.render(w, r, http.StatusOK, "vectorstores", pageData{Title: "Vector stores", Data: p})
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
	if errors.Is(err, storage.ErrVectorStoreNotFound) {
		c.fail(w, r, http.StatusNotFound, "not_found", "id", fmt.Sprintf("No vector store with id %q is stored.", id))
		return
	}
	if err != nil {
		c.serverError(w, r, err)
		return
	}
	names, err := c.cfg.KeyNames(r.Context())
	if err != nil {
		c.serverError(w, r, err)
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
