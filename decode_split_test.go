package hearth

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"hearth/internal/jsonscan"
)

var splitCases = []string{
	`[]`, ` [ ] `, `[1]`, `[1,"a",{"b":[2,3]},[],null,true,false,-1.5e3]`, `[ "x\"]" , "y\\" ]`,
	`{}`, `{"a":1}`, `{"a":1,"a":2}`, ` { "k" : [ {"}":"{"} ] , "u\u00e9":"v" } `, `{"type":"message","content":[{"type":"input_text","text":"héllo"}]}`,
	`{"a":"\ud83d\ude00"}`, `"plain"`, `"esc\n"`, `"bad \xff"`, `"é"`, `"\ud83d\ude00 \u00e9\/\b\f\r\t\"\\"`,
	`"\ud83d"`, `"\ude00x"`, `"\ud83d\u0041"`, `"\u12"`, `"\x"`, `"a\"`,
	// Not valid JSON: the helpers must refuse, or agree with json.Unmarshal.
	`[1 2]`, `[1,]`, `{"a" 1}`, `{"a":1,}`, `[`, `{"a":[}`, `{1:2}`, `[1]x`, `"unterminated`,
}

// TestSplitMatchesUnmarshal: what splitArray, splitObject and plainString accept, they
// take apart exactly as json.Unmarshal does; what json.Unmarshal refuses, they refuse.
func TestSplitMatchesUnmarshal(t *testing.T) {
	for _, c := range splitCases {
		checkSplit(t, []byte(c))
	}
}

func FuzzSplitMatchesUnmarshal(f *testing.F) {
	for _, c := range splitCases {
		f.Add(c)
	}
	f.Fuzz(func(t *testing.T, s string) { checkSplit(t, []byte(s)) })
}

func checkSplit(t *testing.T, raw []byte) {
	t.Helper()
	var wantArr []json.RawMessage
	errArr := json.Unmarshal(raw, &wantArr)
	if got, ok := splitArray(raw); ok {
		if errArr != nil {
			if json.Valid(raw) {
				t.Errorf("splitArray(%q) took apart what json.Unmarshal refuses: %v", raw, errArr)
			}
		} else if !equalRaw(got, wantArr) {
			t.Errorf("splitArray(%q) = %q, want %q", raw, got, wantArr)
		}
	} else if errArr == nil && bytes.HasPrefix(bytes.TrimSpace(raw), []byte("[")) {
		t.Errorf("splitArray(%q) refused a valid array", raw)
	}
	var wantObj map[string]json.RawMessage
	errObj := json.Unmarshal(raw, &wantObj)
	if got, ok := splitObject(raw); ok {
		if errObj != nil {
			if json.Valid(raw) {
				t.Errorf("splitObject(%q) took apart what json.Unmarshal refuses: %v", raw, errObj)
			}
		} else if len(got) != len(wantObj) {
			t.Errorf("splitObject(%q) = %q, want %q", raw, got, wantObj)
		} else {
			for k, v := range wantObj {
				if !bytes.Equal(got[k], v) {
					t.Errorf("splitObject(%q)[%q] = %q, want %q", raw, k, got[k], v)
				}
			}
		}
	} else if errObj == nil && wantObj != nil {
		t.Errorf("splitObject(%q) refused a valid object", raw)
	}
	var wantStr string
	errStr := json.Unmarshal(raw, &wantStr)
	if got, ok := plainString(raw); ok && (errStr != nil || got != wantStr) {
		t.Errorf("plainString(%q) = %q, json.Unmarshal gives %q (%v)", raw, got, wantStr, errStr)
	}
}

func equalRaw(a, b []json.RawMessage) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !bytes.Equal(a[i], b[i]) {
			return false
		}
	}
	return reflect.TypeOf(a) == reflect.TypeOf(b)
}

var validCases = []string{
	``, ` `, `0`, `-0`, `01`, `-`, `1.`, `1.5`, `1e`, `1e+`, `1E-7`, `-12.5e10`, `1x`, `tru`, `true`, `truex`, `nul`, `null `,
	`false`, `"`, `""`, `"\u00e9"`, `"\u00g9"`, `"\q"`, "\"tab\there\"", "\"\x7f\xff\"", `"\"\\\/\b\f\n\r\t"`,
	`"12345678\"`, `"1234567\\"`, `"12345678""`, "\"1234567\x01\"", `[1,2,]`, `[,]`, `[[]]`, `[[]`, `[]]`, `{"a":}`,
	`{"a":1 "b":2}`, `{"a":{"b":[{"c":"d"}]},"e":[true,false,null,-1.5e+3]}`, `{"a" : 1 , "b" : [ ] }`, `{,}`, `{"a"}`,
	` [ 1 , { } , [ ] ] `, `[1] [2]`, `{"a":1}}`, "\t\r\n{}\n",
	strings.Repeat("[", 10000) + strings.Repeat("]", 10000), strings.Repeat("[", 10001) + strings.Repeat("]", 10001),
	strings.Repeat(`{"a":`, 10000) + "1" + strings.Repeat("}", 10000), strings.Repeat(`{"a":`, 10000) + "[]" + strings.Repeat("}", 10000),
}

// TestValidJSON: validJSON answers as json.Valid does.
func TestValidJSON(t *testing.T) {
	for _, c := range append(validCases, splitCases...) {
		if got, want := jsonscan.Valid([]byte(c)), json.Valid([]byte(c)); got != want {
			t.Errorf("jsonscan.Valid(%.80q) = %v, json.Valid says %v", c, got, want)
		}
	}
}

func FuzzValidJSON(f *testing.F) {
	for _, c := range append(validCases[:len(validCases)-4], splitCases...) {
		f.Add(c)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := jsonscan.Valid([]byte(s)), json.Valid([]byte(s)); got != want {
			t.Errorf("jsonscan.Valid(%q) = %v, json.Valid says %v", s, got, want)
		}
	})
}
