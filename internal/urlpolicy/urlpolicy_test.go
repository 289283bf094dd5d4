package urlpolicy

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestCheck(t *testing.T) {
	p, err := New("--x-allow-url", []string{"https://docs.example.com/*", "http://127.0.0.1:8000/*", "http://*/public/*"})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		url, refusal string // "" allowed
	}{
		{"https://docs.example.com/a.pdf", ""},
		{"http://127.0.0.1:8000/notes.md", ""},
		{"http://files.example.org/public/x", ""},
		{"http://10.0.0.5/public/x", "loopback or private"}, // only a wildcard names it
		{"http://localhost/public/x", "loopback or private"},
		{"https://evil.example.com/a.pdf", "matches no --x-allow-url pattern"},
		{"ftp://docs.example.com/a", "not an http(s) URL"},
		{"/relative", "not an http(s) URL"},
	} {
		err := p.Check(tc.url, "file_url")
		if tc.refusal == "" && err != nil || tc.refusal != "" && (err == nil || !strings.Contains(err.Error(), tc.refusal)) {
			t.Errorf("%s: %v, want %q", tc.url, err, tc.refusal)
		}
	}
	var none *Policy
	if err := none.Check("https://a.example/", "file_url"); !errors.Is(err, ErrNoneAllowed) {
		t.Errorf("no policy: %v", err)
	}
	if _, err := New("--x", []string{""}); err == nil {
		t.Error("empty pattern accepted")
	}
}

func TestClientRefusesLocalAndRedirects(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/redirect" {
			http.Redirect(w, r, "/", http.StatusFound)
			return
		}
		w.Write([]byte("ok"))
	}))
	defer srv.Close()
	if _, err := Client(false, "--x").Get(srv.URL); !errors.Is(err, ErrAddress) {
		t.Errorf("loopback without an explicit allow: %v", err)
	}
	resp, err := Client(true, "--x").Get(srv.URL)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("allowed loopback: %v", err)
	}
	resp.Body.Close()
	if _, err := Client(true, "--x").Get(srv.URL + "/redirect"); !errors.Is(err, ErrAddress) {
		t.Errorf("redirect: %v", err)
	}
}
