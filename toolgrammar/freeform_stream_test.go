package toolgrammar

import (
	"errors"
	"testing"
)

func TestInputStreamAtEveryCut(t *testing.T) {
	cases := []struct{ args, input string }{
		{`{"input":"*** Begin Patch\n+\"hi\"\\\t\u00e9\ud83d\ude00 x"}`, "*** Begin Patch\n+\"hi\"\\\té😀 x"},
		{`{"note":"the input is","nested":{"input":"not this"},"list":["input",{"input":"no"}],"input":"yes"}`, "yes"},
		{`{"input":""}`, ""},
		{`{"n":5,"t":true,"input":"a/\/b","after":"z"}`, "a//b"},
		{`{"input":"é😀 raw"}`, "é😀 raw"},
	}
	for _, tc := range cases {
		for cut := 0; cut <= len(tc.args); cut++ {
			var s InputStream
			got := s.Feed(tc.args[:cut]) + s.Feed(tc.args[cut:])
			in, rest, err := s.Finish(tc.args)
			if err != nil || got != tc.input || rest != "" || in != tc.input {
				t.Fatalf("%s cut at %d: streamed %q, rest %q, input %q, err %v; want %q", tc.args, cut, got, rest, in, err, tc.input)
			}
		}
		var s InputStream
		var got string
		for i := 0; i < len(tc.args); i++ {
			got += s.Feed(tc.args[i : i+1])
		}
		if got != tc.input {
			t.Errorf("%s byte by byte: %q, want %q", tc.args, got, tc.input)
		}
	}
}

func TestInputStreamFinish(t *testing.T) {
	var s InputStream
	if got := s.Feed(`{"input":"ab`); got != "ab" {
		t.Fatalf("streamed %q", got)
	}
	// The parser's canonical arguments complete what was streamed.
	if in, rest, err := s.Finish(`{"input":"abc"}`); err != nil || in != "abc" || rest != "c" {
		t.Errorf("Finish = %q, %q, %v", in, rest, err)
	}
	var dup InputStream
	dup.Feed(`{"input":"first","input":"second"}`)
	if _, _, err := dup.Finish(`{"input":"first","input":"second"}`); !errors.Is(err, ErrInputDiverged) {
		t.Errorf("two inputs: %v, want ErrInputDiverged", err)
	}
	for _, args := range []string{`{"input":5}`, `{"text":"x"}`, `["input"]`} {
		var s InputStream
		if got := s.Feed(args); got != "" {
			t.Errorf("%s streamed %q", args, got)
		}
		if _, _, err := s.Finish(args); err == nil {
			t.Errorf("%s: Finish accepted it", args)
		}
	}
}
