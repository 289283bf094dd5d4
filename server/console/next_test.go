package console

import "testing"

// TestSafeNext: the page after login is /console or under it, whatever the form says.
func TestSafeNext(t *testing.T) {
	for next, want := range map[string]string{
		"/console":                       "/console",
		"/console/":                      "/console",
		"/console/responses":             "/console/responses",
		"/console/responses?model=a&b=c": "/console/responses?model=a&b=c",
		"/console?x=1":                   "/console?x=1",
		"/console/chain/resp_1#item_2":   "/console/chain/resp_1#item_2",
		"/console/./usage":               "/console/usage",
		"/console//usage":                "/console/usage",
		"/console/a/../usage":            "/console/usage",
		"/console/../api/tags":           "/console",
		"/console/..":                    "/console",
		"/console/x/../../api/tags":      "/console",
		"/consolex":                      "/console",
		"/api/tags":                      "/console",
		"":                               "/console",
		"console/responses":              "/console",
		"https://evil.example/console":   "/console",
		"//evil.example/console":         "/console",
		"///evil.example/console":        "/console",
		`/console\..\api\tags`:           "/console",
		`\\evil.example/console`:         "/console",
		"/console/%2e%2e/api/tags":       "/console",
		"/console/%2E%2E/api/tags":       "/console",
		"/console/.%2e/api/tags":         "/console",
		"/console%2f..%2fapi":            "/console",
		"/console/%5c..":                 "/console",
		"/console/\r\nSet-Cookie: a=b":   "/console",
		"/console/\x00":                  "/console",
		"/console/responses?q=%2e%2e%2f": "/console/responses?q=%2e%2e%2f",
	} {
		if got := safeNext(next); got != want {
			t.Errorf("safeNext(%q) = %q, want %q", next, got, want)
		}
	}
}
