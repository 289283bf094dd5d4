package vectorstores

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"path"
	"time"

	"hearth"
	"hearth/internal/filetext"
	"hearth/internal/textcap"
	"hearth/internal/urlpolicy"
	"hearth/storage"
)

// Files in a request: each input_file part (by file_id, file_data, or a file_url the
// operator allows) is read into what
// the model sees before the response runs (internal/filetext), and an input_image by
// file_id gets its file's bytes. The parts are replaced in place, so what is stored
// with the response is what the model saw: an input_file keeps its file_id and
// filename and carries the text as a text/plain data URL (hearth.FileTextPart); an
// image becomes an input_image with its data URL. A chain continued later replays them
// as stored, whether or not the file still exists.

// ResolveFiles reads the files of items (the request's input, or items added to a
// conversation: path names them in errors). The files of one request together may
// hold at most Config.RequestFileBytes bytes: a file id costs a request nothing to repeat, and
// a thousand references to one large upload would otherwise each be read and kept.
func (s *Service) ResolveFiles(ctx context.Context, owner string, items []hearth.Item, path string) error {
	left := s.limit.request
	for i := range items {
		parts, field := items[i].Content, "content"
		if items[i].Output.Parts != nil {
			parts, field = items[i].Output.Parts, "output"
		}
		for j := range parts {
			at := fmt.Sprintf("%s[%d].%s[%d]", path, i, field, j)
			var err error
			switch p := parts[j]; {
			case p.Type == hearth.PartInputFile:
				if _, read := p.FileText(); read {
					continue // read before: a stored item sent back, or a replay
				}
				parts[j], err = s.readInputFile(ctx, owner, p, at, &left)
			case p.Type == hearth.PartInputImage && p.ImageURL == "" && p.FileID != "":
				parts[j], err = s.readImageFile(ctx, owner, p, at, &left)
			}
			if err != nil {
				return err
			}
		}
	}
	return nil
}

// fileBytes is readFileBytes counted against the request's files budget (left).
func (s *Service) fileBytes(ctx context.Context, owner string, p hearth.ContentPart, at string, left *int64) (string, string, []byte, error) {
	name, declared, data, err := s.readFileBytes(ctx, owner, p, at)
	if err == nil && *left >= 0 {
		if *left -= int64(len(data)); *left < 0 {
			return "", "", nil, &hearth.Error{Status: http.StatusRequestEntityTooLarge, Type: hearth.ErrTypeInvalidRequest,
				Code: "files_too_large", Param: at,
				Message: fmt.Sprintf("The files of this request hold more than %d bytes together, at '%s'; send fewer or smaller files.", s.limit.request, at)}
		}
	}
	return name, declared, data, err
}

// readFileBytes fetches a part's file: by id from the store, or its file_data (a data
// URL, or bare base64 with a filename). It returns the name and declared media type too.
func (s *Service) readFileBytes(ctx context.Context, owner string, p hearth.ContentPart, at string) (name, declared string, data []byte, err error) {
	name = p.Filename
	switch {
	case p.FileID != "":
		if s.db == nil {
			return "", "", nil, hearth.FileNotFound(at+".file_id", p.FileID)
		}
		f, err := s.db.GetFile(ctx, owner, p.FileID)
		if err == nil {
			data, err = s.db.FileContent(ctx, owner, p.FileID)
		}
		if errors.Is(err, storage.ErrFileNotFound) {
			return "", "", nil, hearth.FileNotFound(at+".file_id", p.FileID)
		}
		if err != nil {
			return "", "", nil, err
		}
		if name == "" {
			name = f.Filename
		}
		return name, "", data, nil
	case p.FileData != "":
		param := at + ".file_data"
		if max := s.limit.file; max > 0 && int64(base64.StdEncoding.DecodedLen(len(p.FileData))) > max+1024 {
			return "", "", nil, fileDataTooLarge(param, max) // refused before decoding it
		}
		mediaType, b, isURL, err := hearth.ParseDataURL(p.FileData)
		if err != nil {
			return "", "", nil, hearth.InvalidRequest(param, hearth.CodeInvalidValue, fmt.Sprintf("Invalid '%s': %v.", param, err))
		}
		if !isURL {
			if name == "" {
				return "", "", nil, hearth.InvalidRequest(at+".filename", hearth.CodeMissingRequiredParameter,
					fmt.Sprintf("Missing required parameter: '%s.filename'. file_data as bare base64 needs the file's name (or send a data URL with its media type).", at))
			}
			if b, err = base64.StdEncoding.DecodeString(p.FileData); err != nil {
				return "", "", nil, hearth.InvalidRequest(param, hearth.CodeInvalidValue,
					fmt.Sprintf("Invalid '%s': expected a base64 data URL or base64 (%v).", param, err))
			}
		}
		if max := s.limit.file; max > 0 && int64(len(b)) > max {
			return "", "", nil, fileDataTooLarge(param, max)
		}
		return name, mediaType, b, nil
	case p.FileURL != "":
		return s.fetchFile(ctx, p, at+".file_url")
	}
	return "", "", nil, hearth.InvalidRequest(at+".file_data", hearth.CodeMissingRequiredParameter, "An input_file needs a file_id or file_data.")
}

func fileDataTooLarge(param string, max int64) error {
	return &hearth.Error{Status: http.StatusRequestEntityTooLarge, Type: hearth.ErrTypeInvalidRequest, Code: "file_too_large", Param: param,
		Message: fmt.Sprintf("The file in '%s' is larger than this server accepts: at most %d bytes (--max-file-bytes).", param, max)}
}

// readInputFile reads an input_file part into the part the model sees.
func (s *Service) readInputFile(ctx context.Context, owner string, p hearth.ContentPart, at string, left *int64) (hearth.ContentPart, error) {
	name, declared, data, err := s.fileBytes(ctx, owner, p, at, left)
	if err != nil {
		return p, err
	}
	res, err := filetext.ReadContext(ctx, name, declared, data)
	if err != nil {
		if ctx.Err() != nil {
			return p, ctx.Err() // the client left: nobody reads the answer
		}
		return p, unreadableFile(at, name, err)
	}
	if res.Kind == filetext.Image {
		return s.imagePart(p.FileID, res.MIME, data, at)
	}
	return hearth.FileTextPart(p.FileID, name, res.Text), nil
}

// readImageFile gives an input_image by file_id its file's bytes.
func (s *Service) readImageFile(ctx context.Context, owner string, p hearth.ContentPart, at string, left *int64) (hearth.ContentPart, error) {
	name, _, data, err := s.fileBytes(ctx, owner, hearth.ContentPart{FileID: p.FileID}, at, left)
	if err != nil {
		return p, err
	}
	res, err := filetext.ReadContext(ctx, name, "", data)
	if err != nil && ctx.Err() != nil {
		return p, ctx.Err()
	}
	if err == nil && res.Kind != filetext.Image {
		err = fmt.Errorf("%w: it is not a PNG, JPEG, GIF or WebP image", filetext.ErrUnsupported)
	}
	if err != nil {
		return p, unreadableFile(at, name, err)
	}
	part, err := s.imagePart(p.FileID, res.MIME, data, at)
	if p.Detail != "" {
		part.Detail = p.Detail
	}
	return part, err
}

func (s *Service) imagePart(fileID, mediaType string, data []byte, at string) (hearth.ContentPart, error) {
	if max := s.limit.image; max > 0 && int64(len(data)) > max {
		return hearth.ContentPart{}, &hearth.Error{Status: http.StatusRequestEntityTooLarge, Type: hearth.ErrTypeInvalidRequest,
			Code: "image_too_large", Param: at,
			Message: fmt.Sprintf("The image is %d bytes; this server accepts images of at most %d bytes (--max-image-bytes).", len(data), max)}
	}
	return hearth.ContentPart{Type: hearth.PartInputImage, FileID: fileID, Detail: "auto",
		ImageURL: "data:" + mediaType + ";base64," + base64.StdEncoding.EncodeToString(data)}, nil
}

// unreadableFile is the 400 for a file the model cannot be shown, with why.
func unreadableFile(at, name string, err error) error {
	code := "unsupported_file"
	switch {
	case errors.Is(err, filetext.ErrEmpty):
		code = "empty_file"
	case errors.Is(err, filetext.ErrCorrupt), errors.Is(err, filetext.ErrTooComplex):
		code = "invalid_file"
	}
	if name == "" {
		name = "(unnamed)"
	}
	if errors.Is(err, filetext.ErrTooLarge) {
		// A file within the upload bound that unpacks past what hearth reads: the
		// file is too large for the server, as its bytes would be.
		return &hearth.Error{Status: http.StatusRequestEntityTooLarge, Type: hearth.ErrTypeInvalidRequest, Code: "file_too_large", Param: at,
			Message: fmt.Sprintf("The file '%s' in '%s' cannot be read: %v.", textcap.Cut(name, 200), at, err)}
	}
	return hearth.InvalidRequest(at, code, fmt.Sprintf("The file '%s' in '%s' cannot be read: %v.", textcap.Cut(name, 200), at, err))
}

// TooLong rewords the window's 400 for a request whose new input carries files: the
// largest file is named as the part that does not fit (respond.Files).
func (*Service) TooLong(err error, input []hearth.Item) error {
	var he *hearth.Error
	if !errors.As(err, &he) || he.Code != hearth.CodeContextLengthExceeded {
		return err
	}
	best, bestLen, name := "", 0, ""
	for i, it := range input {
		parts, field := it.Content, "content"
		if it.Output.Parts != nil {
			parts, field = it.Output.Parts, "output"
		}
		for j, p := range parts {
			if text, ok := p.FileText(); ok && len(text) > bestLen {
				best, bestLen, name = fmt.Sprintf("input[%d].%s[%d]", i, field, j), len(text), p.Filename
			}
		}
	}
	if best == "" {
		return err
	}
	out := *he
	out.Param = best
	out.Message = fmt.Sprintf("The file '%s' in '%s' (%d bytes of text) does not fit the model's context window. %s",
		textcap.Cut(name, 200), best, bestLen, he.Message)
	return &out
}

// fileURLTimeout bounds the fetch of one file_url.
const fileURLTimeout = 60 * time.Second

// fetchFile fetches a file_url the operator allows (--file-allow-url, with the rules of
// MCP server URLs: internal/urlpolicy), bounded by --max-file-bytes.
func (s *Service) fetchFile(ctx context.Context, p hearth.ContentPart, param string) (name, declared string, data []byte, err error) {
	if err := s.fileURLs.Check(p.FileURL, "file_url"); err != nil {
		msg := err.Error()
		if errors.Is(err, urlpolicy.ErrNoneAllowed) {
			msg = "hearth fetches no file_url unless its operator allows it (--file-allow-url); upload the file (POST /v1/files) and send its file_id, or send its bytes in file_data"
		}
		return "", "", nil, hearth.InvalidRequest(param, "file_url_not_allowed", fmt.Sprintf("Invalid '%s': %s.", param, msg))
	}
	u, _ := url.Parse(p.FileURL) // Check parsed it
	client := urlpolicy.Client(urlpolicy.IsLocal(u.Hostname()), "--file-allow-url")
	ctx, cancel := context.WithTimeout(ctx, fileURLTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, p.FileURL, nil)
	if err != nil {
		return "", "", nil, hearth.InvalidRequest(param, hearth.CodeInvalidValue, fmt.Sprintf("Invalid '%s': %v.", param, err))
	}
	resp, err := client.Do(req)
	if err != nil {
		return "", "", nil, hearth.InvalidRequest(param, "file_url_unreachable", fmt.Sprintf("Could not fetch '%s': %v.", param, err))
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return "", "", nil, hearth.InvalidRequest(param, "file_url_unreachable", fmt.Sprintf("Could not fetch '%s': the server answered %s.", param, resp.Status))
	}
	r := io.Reader(resp.Body)
	max := s.limit.file
	if max >= 0 {
		r = io.LimitReader(resp.Body, max+1)
	}
	if data, err = io.ReadAll(r); err != nil {
		return "", "", nil, hearth.InvalidRequest(param, "file_url_unreachable", fmt.Sprintf("Could not fetch '%s': %v.", param, err))
	}
	if max >= 0 && int64(len(data)) > max {
		return "", "", nil, fileDataTooLarge(param, max)
	}
	name = p.Filename
	if name == "" {
		name = path.Base(u.Path)
	}
	return name, resp.Header.Get("Content-Type"), data, nil
}
