package server_test

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"hearth"
	"hearth/cmd/hearth/wire"
	"hearth/engine/ollama/testenv"
	"hearth/internal/pdftest"
	"hearth/internal/urlpolicy"
	"hearth/respond"
	"hearth/scriptmodel"
)

// testPDF writes a real one-page PDF showing lines of text in Helvetica, its content
// stream Flate-compressed, with a correct cross-reference table.
func testPDF(lines ...string) []byte {
	var content strings.Builder
	content.WriteString("BT /F1 12 Tf 72 720 Td")
	for i, l := range lines {
		if i > 0 {
			content.WriteString(" 0 -14 Td")
		}
		fmt.Fprintf(&content, " (%s) Tj", l)
	}
	content.WriteString(" ET")
	return pdftest.Pages(content.String())
}

// userWithFile is the JSON of a user message: text, then one input_file part.
func userWithFile(text string, file map[string]string) string {
	file["type"] = "input_file"
	parts := []any{map[string]string{"type": "input_text", "text": text}, file}
	b, _ := json.Marshal(map[string]any{"role": "user", "content": parts})
	return string(b)
}

// onePrompt is the script template's prompt for one user turn.
func onePrompt(user string) string {
	return "<|user|>" + user + "<|end|>\n" + scriptmodel.EntryAssistant
}

// TestInputFileE2E: files reach the model as their text, marked with their name, by
// file_id (an upload) and by file_data (a data URL, or bare base64 with a filename);
// the input tokens are exactly those of that text, so the model saw it. The stored
// input keeps the file's id and name, a chain continued by a restarted hearth after
// the file was deleted replays the text as it was, and every bad file is a clear 400
// naming the part.
func TestInputFileE2E(t *testing.T) {
	srv, _, db := lanHearth(t, wire.Config{MaxBodyBytes: 256 << 10, Limits: respond.Limits{MaxFileBytes: 64 << 10}})
	m := testenv.Model(t, plain)
	reply := m.Text(scriptmodel.EntryAssistant)
	const question = "What ships on Tuesday?"
	notes := "# Release notes\n\nThe kettle ships on Tuesday.\n"
	f := uploadFile(t, srv, "", "notes.md", "user_data", []byte(notes))
	fileBlock := "<file name=\"notes.md\">\n# Release notes\n\nThe kettle ships on Tuesday.\n</file>"

	first := createJSON(t, srv, reqBody(plain, false, `"input":[`+userWithFile(question, map[string]string{"file_id": f.ID})+`]`))
	if first.Status != hearth.StatusCompleted || answerText(first) != reply {
		t.Fatalf("by file_id: %s %q %+v", first.Status, answerText(first), first.Error)
	}
	if want := m.CountTokens(onePrompt(question + "\n\n" + fileBlock)); first.Usage.InputTokens != want {
		t.Errorf("by file_id: %d input tokens, want %d (the question and the file's text)", first.Usage.InputTokens, want)
	}
	// The stored input names the file and keeps the text the model saw.
	var page itemPage
	convDo(t, srv, "", "GET", "/v1/responses/"+first.ID+"/input_items", "", &page)
	stored := page.items(t)
	if len(stored) != 1 || len(stored[0].Content) != 2 {
		t.Fatalf("stored input %s", page.Data)
	}
	if p := stored[0].Content[1]; p.Type != "input_file" || p.FileID != f.ID || p.Filename != "notes.md" {
		t.Errorf("stored part %+v", p)
	} else if text, ok := p.FileText(); !ok || text != notes {
		t.Errorf("stored text %q %v", text, ok)
	}

	// The same text by other routes: a PDF as a data URL, a CSV as bare base64, streamed.
	pdf := "data:application/pdf;base64," + base64.StdEncoding.EncodeToString(testPDF("The kettle ships on Tuesday.", "Price: 42"))
	r := createJSON(t, srv, reqBody(plain, false, `"input":[`+userWithFile(question, map[string]string{"file_data": pdf, "filename": "plan.pdf"})+`]`))
	if want := m.CountTokens(onePrompt(question + "\n\n<file name=\"plan.pdf\">\nThe kettle ships on Tuesday.\nPrice: 42\n</file>")); r.Usage == nil || r.Usage.InputTokens != want {
		t.Errorf("pdf by file_data: usage %+v, want %d input tokens (%+v)", r.Usage, want, r.Error)
	}
	csv := base64.StdEncoding.EncodeToString([]byte("item,day\nkettle,Tuesday\n"))
	_, sr := createSSE(t, srv, reqBody(plain, true, `"input":[`+userWithFile(question, map[string]string{"file_data": csv, "filename": "ship.csv"})+`]`))
	if want := m.CountTokens(onePrompt(question + "\n\n<file name=\"ship.csv\">\nitem,day\nkettle,Tuesday\n</file>")); sr.Usage == nil || sr.Usage.InputTokens != want || answerText(sr) != reply {
		t.Errorf("csv by bare base64 (sse): usage %+v, want %d input tokens", sr.Usage, want)
	}

	// A chain through the file, continued by a restarted hearth (nothing hot) after the
	// file was deleted: the stored text is replayed; the same turns sent as plain text
	// give the same prompt, token for token.
	convDo(t, srv, "", "DELETE", "/v1/files/"+f.ID, "", nil)
	srv2 := httptest.NewServer(wire.New(wire.Config{Runtime: testenv.Runtime(t), Database: db}))
	t.Cleanup(srv2.Close)
	second := createJSON(t, srv2, reqBody(plain, false, `"input":"And the price?","previous_response_id":"`+first.ID+`"`))
	textTurn, _ := json.Marshal(question + "\n\n" + fileBlock)
	c1 := createJSON(t, srv2, reqBody(plain, false, `"input":`+string(textTurn)))
	c2 := createJSON(t, srv2, reqBody(plain, false, `"input":"And the price?","previous_response_id":"`+c1.ID+`"`))
	if second.Status != hearth.StatusCompleted || second.Usage.InputTokens != c2.Usage.InputTokens || c1.Usage.InputTokens != first.Usage.InputTokens {
		t.Errorf("replayed chain: %s, %d input tokens; as plain text %d (first turns %d and %d)",
			second.Status, second.Usage.InputTokens, c2.Usage.InputTokens, first.Usage.InputTokens, c1.Usage.InputTokens)
	}

	// Bad files: each a clear error naming the part, and nothing runs.
	for _, tc := range []struct {
		name        string
		file        map[string]string
		status      int
		code, param string
	}{
		{"deleted file", map[string]string{"file_id": f.ID}, 404, "file_not_found", "input[0].content[1].file_id"},
		{"unknown file", map[string]string{"file_id": "file_nope"}, 404, "file_not_found", "input[0].content[1].file_id"},
		{"zero bytes", map[string]string{"file_data": "data:text/plain;base64,", "filename": "empty.txt"}, 400, "empty_file", "input[0].content[1]"},
		{"binary posing as text", map[string]string{"file_data": base64.StdEncoding.EncodeToString([]byte("a\x00\x01\x02b")), "filename": "notes.txt"}, 400, "unsupported_file", "input[0].content[1]"},
		{"corrupt pdf", map[string]string{"file_data": "data:application/pdf;base64," + base64.StdEncoding.EncodeToString([]byte("%PDF-1.7\ngarbage")), "filename": "bad.pdf"}, 400, "invalid_file", "input[0].content[1]"},
		{"bare base64 without a name", map[string]string{"file_data": csv}, 400, "missing_required_parameter", "input[0].content[1].filename"},
		{"malformed base64", map[string]string{"file_data": "data:text/plain;base64,%%%"}, 400, "invalid_value", "input[0].content[1].file_data"},
		{"larger than --max-file-bytes", map[string]string{"file_data": base64.StdEncoding.EncodeToString(bytes.Repeat([]byte("a"), 65<<10)), "filename": "big.txt"}, 413, "file_too_large", "input[0].content[1].file_data"},
		{"file_url with no --file-allow-url", map[string]string{"file_url": "https://example.com/a.pdf"}, 400, "file_url_not_allowed", "input[0].content[1].file_url"},
	} {
		code, _, b := call(t, nil, "POST", srv.URL+"/v1/responses", "", reqBody(plain, false, `"input":[`+userWithFile(question, tc.file)+`]`))
		gotCode, gotParam := errCode(b)
		if code != tc.status || gotCode != tc.code || gotParam != tc.param {
			t.Errorf("%s: %d %s, want %d %s on %q", tc.name, code, b, tc.status, tc.code, tc.param)
		}
	}

	// A file too long for the model's window is named as the part that does not fit.
	long := uploadFile(t, srv, "", "long.txt", "user_data", bytes.Repeat([]byte("kettle "), 9000))
	code, _, b := call(t, nil, "POST", srv.URL+"/v1/responses", "", reqBody(plain, false, `"input":[`+userWithFile(question, map[string]string{"file_id": long.ID})+`]`))
	if gotCode, gotParam := errCode(b); code != http.StatusBadRequest || gotCode != hearth.CodeContextLengthExceeded ||
		gotParam != "input[0].content[1]" || !strings.Contains(string(b), "long.txt") {
		t.Errorf("file too long for the window: %d %s", code, b)
	}

	// One upload referenced again and again: the files of one request are bounded
	// together (here by --max-body-bytes, 256 KiB), the part that passes it named.
	many := `{"role":"user","content":[`
	for k := range 5 {
		if k > 0 {
			many += ","
		}
		many += `{"type":"input_file","file_id":"` + long.ID + `"}`
	}
	code, _, b = call(t, nil, "POST", srv.URL+"/v1/responses", "", reqBody(plain, false, `"input":[`+many+`]}]`))
	if gotCode, gotParam := errCode(b); code != http.StatusRequestEntityTooLarge || gotCode != "files_too_large" || gotParam != "input[0].content[4]" {
		t.Errorf("one file five times: %d %s", code, b)
	}
}

// TestInputImageFileE2E: an image uploaded to the Files API and sent by file_id, as
// an input_image or an input_file, reaches the vision model as pixels.
func TestInputImageFileE2E(t *testing.T) {
	srv, _, _ := lanHearth(t, wire.Config{})
	m := testenv.Model(t, scriptmodel.VisionModel)
	img := testImage{32, 32, scriptmodel.Red, false}
	_, data, _, err := hearth.ParseDataURL(img.dataURL(t))
	if err != nil {
		t.Fatal(err)
	}
	f := uploadFile(t, srv, "", "red.png", "vision", data)
	text, _ := m.Answer(scriptmodel.Red)
	for _, part := range []string{
		`{"type":"input_image","file_id":"` + f.ID + `"}`,
		`{"type":"input_file","file_id":"` + f.ID + `"}`,
	} {
		r := createJSON(t, srv, reqBody(scriptmodel.VisionModel, false, `"input":[{"role":"user","content":[`+part+`,{"type":"input_text","text":"Which colour is this?"}]}]`))
		if r.Status != hearth.StatusCompleted || answerText(r) != text {
			t.Errorf("%s: %s %q, want %q (%+v)", part, r.Status, answerText(r), text, r.Error)
		}
	}
	// A text file is no image.
	txt := uploadFile(t, srv, "", "notes.txt", "user_data", []byte("hello"))
	code, _, b := call(t, nil, "POST", srv.URL+"/v1/responses", "", reqBody(scriptmodel.VisionModel, false,
		`"input":[{"role":"user","content":[{"type":"input_image","file_id":"`+txt.ID+`"}]}]`))
	if gotCode, gotParam := errCode(b); code != 400 || gotCode != "unsupported_file" || gotParam != "input[0].content[0]" {
		t.Errorf("text file as an image: %d %s", code, b)
	}
}

// answerText is the text of a response's messages.
func answerText(r *hearth.Response) string {
	var s string
	for _, it := range r.Output {
		if it.Type == hearth.ItemMessage {
			s += it.Text()
		}
	}
	return s
}

// TestInputFileURLE2E: a file_url is fetched only where --file-allow-url allows it,
// with the rules of MCP server URLs: a loopback host only when a pattern names it, no
// redirects, at most --max-file-bytes.
func TestInputFileURLE2E(t *testing.T) {
	files := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/docs/notes.md":
			w.Write([]byte("The kettle ships on Tuesday.\n"))
		case "/docs/moved.md":
			http.Redirect(w, r, "/docs/notes.md", http.StatusFound)
		case "/docs/big.txt":
			w.Write(bytes.Repeat([]byte("a"), 5000))
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(files.Close)
	named, err := urlpolicy.New("--file-allow-url", []string{files.URL + "/docs/*"})
	if err != nil {
		t.Fatal(err)
	}
	srv, _, _ := lanHearth(t, wire.Config{FileURLs: named, Limits: respond.Limits{MaxFileBytes: 4096}})
	m := testenv.Model(t, plain)
	const question = "What ships on Tuesday?"
	r := createJSON(t, srv, reqBody(plain, false, `"input":[`+userWithFile(question, map[string]string{"file_url": files.URL + "/docs/notes.md"})+`]`))
	if want := m.CountTokens(onePrompt(question + "\n\n<file name=\"notes.md\">\nThe kettle ships on Tuesday.\n</file>")); r.Usage == nil || r.Usage.InputTokens != want {
		t.Errorf("file_url: usage %+v, want %d input tokens (%+v)", r.Usage, want, r.Error)
	}

	wildcard, _ := urlpolicy.New("--file-allow-url", []string{"http://*/docs/*"})
	srvWild, _, _ := lanHearth(t, wire.Config{FileURLs: wildcard})
	for _, tc := range []struct {
		name, url string
		srv       *httptest.Server
		status    int
		code      string
	}{
		{"a redirect", files.URL + "/docs/moved.md", srv, 400, "file_url_unreachable"},
		{"not found", files.URL + "/docs/none.md", srv, 400, "file_url_unreachable"},
		{"outside the pattern", files.URL + "/secret.md", srv, 400, "file_url_not_allowed"},
		{"larger than --max-file-bytes", files.URL + "/docs/big.txt", srv, 413, "file_too_large"},
		{"not http", "file:///etc/passwd", srv, 400, "file_url_not_allowed"},
		{"a loopback host under a wildcard", files.URL + "/docs/notes.md", srvWild, 400, "file_url_not_allowed"},
	} {
		code, _, b := call(t, nil, "POST", tc.srv.URL+"/v1/responses", "", reqBody(plain, false, `"input":[`+userWithFile(question, map[string]string{"file_url": tc.url})+`]`))
		gotCode, gotParam := errCode(b)
		if code != tc.status || gotCode != tc.code || gotParam != "input[0].content[1].file_url" {
			t.Errorf("%s: %d %s, want %d %s", tc.name, code, b, tc.status, tc.code)
		}
	}
}
