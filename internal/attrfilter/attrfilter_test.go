package attrfilter

import (
	"encoding/json"
	"errors"
	"testing"
)

func TestMatch(t *testing.T) {
	attrs := map[string]any{"lang": "en", "year": 2024.0, "draft": false}
	for _, c := range []struct {
		filter string
		want   bool
	}{
		{`{"type":"eq","key":"lang","value":"en"}`, true},
		{`{"type":"eq","key":"lang","value":"fr"}`, false},
		{`{"type":"eq","key":"year","value":2024.0}`, true},
		{`{"type":"eq","key":"year","value":"2024"}`, false},
		{`{"type":"eq","key":"draft","value":false}`, true},
		{`{"type":"ne","key":"lang","value":"fr"}`, true},
		{`{"type":"ne","key":"missing","value":"x"}`, true},
		{`{"type":"eq","key":"missing","value":"x"}`, false},
		{`{"type":"gt","key":"year","value":2023}`, true},
		{`{"type":"gte","key":"year","value":2024}`, true},
		{`{"type":"lt","key":"year","value":2024}`, false},
		{`{"type":"lte","key":"year","value":2024}`, true},
		{`{"type":"gt","key":"lang","value":"de"}`, true},
		{`{"type":"gt","key":"lang","value":1}`, false},
		{`{"type":"gt","key":"draft","value":true}`, false},
		{`{"type":"in","key":"lang","value":["fr","en"]}`, true},
		{`{"type":"in","key":"year","value":[2023,2024]}`, true},
		{`{"type":"nin","key":"lang","value":["fr","de"]}`, true},
		{`{"type":"nin","key":"missing","value":["x"]}`, true},
		{`{"type":"and","filters":[{"type":"eq","key":"lang","value":"en"},{"type":"gte","key":"year","value":2025}]}`, false},
		{`{"type":"or","filters":[{"type":"eq","key":"lang","value":"fr"},{"type":"gte","key":"year","value":2024}]}`, true},
		{`{"type":"and","filters":[{"type":"or","filters":[{"type":"eq","key":"lang","value":"fr"},{"type":"eq","key":"draft","value":false}]},{"type":"lt","key":"year","value":3000}]}`, true},
	} {
		f, err := Parse(json.RawMessage(c.filter), "filters")
		if err != nil {
			t.Errorf("%s: %v", c.filter, err)
			continue
		}
		if got := f.Match(attrs); got != c.want {
			t.Errorf("%s: %v, want %v", c.filter, got, c.want)
		}
	}
}

func TestParseErrors(t *testing.T) {
	for _, c := range []struct{ filter, param string }{
		{`[]`, "filters"},
		{`{}`, "filters.type"},
		{`{"type":"like","key":"a","value":"b"}`, "filters.type"},
		{`{"type":"eq","value":"b"}`, "filters.key"},
		{`{"type":"eq","key":"a"}`, "filters.value"},
		{`{"type":"eq","key":"a","value":{"x":1}}`, "filters.value"},
		{`{"type":"in","key":"a","value":"b"}`, "filters.value"},
		{`{"type":"in","key":"a","value":[[1]]}`, "filters.value"},
		{`{"type":"eq","key":"a","value":"b","extra":1}`, "filters"},
		{`{"type":"and","filters":[]}`, "filters.filters"},
		{`{"type":"or","filters":[{"type":"eq","key":"a","value":1},{"type":"eq","key":"a"}]}`, "filters.filters[1].value"},
		{`{"type":"and","key":"a","filters":[{"type":"eq","key":"a","value":1}]}`, "filters"},
	} {
		_, err := Parse(json.RawMessage(c.filter), "filters")
		var fe *Error
		if !errors.As(err, &fe) || fe.Param != c.param {
			t.Errorf("%s: %v, want an error at %s", c.filter, err, c.param)
		}
	}
	deep := `{"type":"eq","key":"a","value":1}`
	for range 20 {
		deep = `{"type":"and","filters":[` + deep + `]}`
	}
	if _, err := Parse(json.RawMessage(deep), "filters"); err == nil {
		t.Error("20 deep: no error")
	}
}
