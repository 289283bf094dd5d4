package server

import (
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"path"
	"strconv"
	"strings"

	"github.com/gin-gonic/gin"

	"hearth"
	"hearth/internal/textcap"
	"hearth/storage"
	"hearth/vectorstores"
)

// The Files API (/v1/files, OpenAI's shapes) over the vectorstores service, which
// keeps the files: this side reads the multipart upload, the query of a list, and
// frames what the service answers.

// filesAPI serves the Files and vector stores APIs (vectorstoreapi.go): it decodes
// each request, calls the service and frames its answer.
type filesAPI struct {
	s  *Server // the error envelope, the bounds of a request
	vs *vectorstores.Service
}

// routes adds the Files and vector stores APIs to the authenticated routes.
func (a *filesAPI) routes(g *gin.RouterGroup) {
	g = g.Group("", a.requireFileStore)
	g.POST("/v1/files", a.uploadFile)
	g.GET("/v1/files", a.listFiles)
	g.GET("/v1/files/:id", a.getFile)
	g.GET("/v1/files/:id/content", a.fileContent)
	g.DELETE("/v1/files/:id", a.deleteFile)
	a.vectorStoreRoutes(g)
}

// filesPath is the upload route, the one hearth route whose body is not JSON.
const filesPath = "/v1/files"

// multipartOverhead is what an upload's body may carry besides the file's bytes: the
// part headers, the boundaries and the purpose field.
const multipartOverhead = 64 << 10

// maxFilenameBytes bounds a stored file name (a file system's usual limit).
const maxFilenameBytes = 255

// uploadBodyLimit is the body bound of POST /v1/files: the largest file with its
// multipart envelope; -1 when files are not bounded.
func uploadBodyLimit(maxFileBytes int64) int64 {
	if maxFileBytes < 0 {
		return -1
	}
	return maxFileBytes + multipartOverhead
}

// requireFileStore goes before every handler of the files and vector stores APIs: a
// server without a database keeps no files, and answers so before any handler runs.
func (a *filesAPI) requireFileStore(c *gin.Context) {
	if !a.vs.Stored() {
		a.s.writeError(c, hearth.ServerError("This server keeps no database: files need one."))
		c.Abort()
	}
}

// uploadFile serves POST /v1/files: a multipart/form-data body with the fields file
// (the bytes, with a filename) and purpose. The file part is read as it arrives and
// refused with 413 as soon as it passes --max-file-bytes.
func (a *filesAPI) uploadFile(c *gin.Context) {
	mt, _, err := mime.ParseMediaType(c.GetHeader("Content-Type"))
	if err != nil || mt != "multipart/form-data" {
		a.s.writeError(c, &hearth.Error{Status: http.StatusUnsupportedMediaType, Type: hearth.ErrTypeInvalidRequest,
			Code: "unsupported_media_type", Param: "Content-Type",
			Message: "Upload a file as multipart/form-data with the fields 'file' and 'purpose' (curl: -F purpose=user_data -F file=@notes.md)."})
		return
	}
	mr, err := c.Request.MultipartReader()
	if err != nil {
		a.s.writeError(c, hearth.InvalidRequest("", "invalid_body", "Could not read the multipart body: "+err.Error()))
		return
	}
	var (
		purpose, filename string
		content           []byte
		seenFile          bool
		ignored           []string
	)
	for {
		part, err := mr.NextPart()
		if err == io.EOF {
			break
		}
		if err != nil {
			a.s.writeError(c, uploadReadError(err, ""))
			return
		}
		switch name := part.FormName(); name {
		case "purpose":
			v, err := io.ReadAll(io.LimitReader(part, 256))
			if err != nil {
				a.s.writeError(c, uploadReadError(err, "purpose"))
				return
			}
			purpose = strings.TrimSpace(string(v))
		case "file":
			if seenFile {
				a.s.writeError(c, hearth.InvalidRequest("file", hearth.CodeInvalidValue, "Send one 'file' part per upload."))
				return
			}
			seenFile = true
			filename = cleanFilename(part.FileName())
			if content, err = a.readFilePart(part); err != nil {
				a.s.writeError(c, err)
				return
			}
		default:
			// expires_after and whatever a newer SDK sends: read past, reported.
			if _, err := io.Copy(io.Discard, io.LimitReader(part, multipartOverhead)); err != nil {
				a.s.writeError(c, uploadReadError(err, name))
				return
			}
			ignored = append(ignored, name)
		}
		part.Close()
	}
	if err := hearth.CheckFilePurpose(purpose); err != nil {
		a.s.writeError(c, err)
		return
	}
	switch {
	case !seenFile:
		a.s.writeError(c, hearth.InvalidRequest("file", hearth.CodeMissingRequiredParameter, "Missing required parameter: 'file'."))
		return
	case filename == "":
		a.s.writeError(c, hearth.InvalidRequest("file", hearth.CodeInvalidValue, "The 'file' part has no filename; send it as a file (curl: -F file=@notes.md)."))
		return
	case len(content) == 0:
		a.s.writeError(c, hearth.InvalidRequest("file", "empty_file", fmt.Sprintf("The file '%s' is empty (0 bytes).", filename)))
		return
	}
	if len(ignored) > 0 {
		c.Header("x-hearth-ignored", strings.Join(boundIgnored(ignored), ", "))
	}
	f, err := a.vs.CreateFile(c.Request.Context(), owner(c), purpose, filename, content)
	if err != nil {
		a.s.writeError(c, err)
		return
	}
	c.JSON(http.StatusOK, f)
}

// readFilePart reads the file's bytes, refusing them with 413 once they pass the limit.
func (a *filesAPI) readFilePart(part io.Reader) ([]byte, error) {
	max := a.s.limits.MaxFileBytes
	r := part
	if max >= 0 {
		r = io.LimitReader(part, max+1)
	}
	content, err := io.ReadAll(r)
	if err != nil {
		return nil, uploadReadError(err, "file")
	}
	if max >= 0 && int64(len(content)) > max {
		return nil, fileTooLarge(max)
	}
	return content, nil
}

func fileTooLarge(max int64) error {
	return &hearth.Error{Status: http.StatusRequestEntityTooLarge, Type: hearth.ErrTypeInvalidRequest, Code: "file_too_large", Param: "file",
		Message: fmt.Sprintf("The file is larger than this server accepts: at most %d bytes (--max-file-bytes).", max)}
}

// uploadReadError words a failure to read the multipart body: the body bound and the
// bodies' budget as readBody words them, a malformed body as a 400.
func uploadReadError(err error, param string) error {
	var tooLarge *http.MaxBytesError
	if errors.As(err, &tooLarge) {
		return fileTooLarge(tooLarge.Limit - multipartOverhead)
	}
	var he *hearth.Error
	if errors.As(err, &he) || errors.Is(err, errBodyTimeout) {
		return bodyError(err)
	}
	return hearth.InvalidRequest(param, "invalid_body", "Could not read the multipart body: "+err.Error())
}

// cleanFilename keeps the last element of a client's file name (a browser or SDK may
// send a path) and bounds it.
func cleanFilename(name string) string {
	name = strings.ReplaceAll(name, `\`, "/")
	name = path.Base(strings.TrimSpace(name))
	if name == "." || name == "/" {
		return ""
	}
	name = strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return -1
		}
		return r
	}, name)
	return textcap.Cut(name, maxFilenameBytes)
}

// listFiles serves GET /v1/files (purpose, limit, order, after).
func (a *filesAPI) listFiles(c *gin.Context) {
	q := storage.FileQuery{Purpose: c.Query("purpose"), After: c.Query("after"), Order: storage.Desc}
	if v := c.Query("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > storage.MaxFileListLimit {
			a.s.writeError(c, hearth.InvalidRequest("limit", hearth.CodeInvalidValue,
				fmt.Sprintf("limit must be an integer from 1 to %d.", storage.MaxFileListLimit)))
			return
		}
		q.Limit = n
	}
	switch v := c.Query("order"); v {
	case "", "desc":
	case "asc":
		q.Order = storage.Asc
	default:
		a.s.writeError(c, hearth.InvalidRequest("order", hearth.CodeInvalidValue, "order must be 'asc' or 'desc'."))
		return
	}
	data, more, err := a.vs.ListFiles(c.Request.Context(), owner(c), q)
	if err != nil {
		a.s.writeError(c, err)
		return
	}
	listPage(c, data, func(f hearth.File) string { return f.ID }, more)
}

// getFile serves GET /v1/files/{id}.
func (a *filesAPI) getFile(c *gin.Context) {
	f, err := a.vs.GetFile(c.Request.Context(), owner(c), c.Param("id"))
	if err != nil {
		a.s.writeError(c, err)
		return
	}
	c.JSON(http.StatusOK, f)
}

// fileContent serves GET /v1/files/{id}/content: the bytes as uploaded. They are sent
// as an attachment of type application/octet-stream whatever the file is, so an
// uploaded HTML page never runs as a page of hearth's origin (the console's).
func (a *filesAPI) fileContent(c *gin.Context) {
	f, content, err := a.vs.FileContent(c.Request.Context(), owner(c), c.Param("id"))
	if err != nil {
		a.s.writeError(c, err)
		return
	}
	c.Header("X-Content-Type-Options", "nosniff")
	c.Header("Content-Disposition", mime.FormatMediaType("attachment", map[string]string{"filename": f.Filename}))
	c.Data(http.StatusOK, "application/octet-stream", content)
}

// deleteFile serves DELETE /v1/files/{id}.
func (a *filesAPI) deleteFile(c *gin.Context) {
	id := c.Param("id")
	if err := a.vs.DeleteFile(c.Request.Context(), owner(c), id); err != nil {
		a.s.writeError(c, err)
		return
	}
	c.JSON(http.StatusOK, hearth.FileDeleted{ID: id, Object: hearth.ObjectFile, Deleted: true})
}
