package respond

import (
	"errors"
	"net/http"
	"strings"
	"testing"

	"hearth"
)

// TestLimitsRefuseModelNames: a name no runtime could hold is model_not_found before
// any runtime is asked, with the name cut short in the message; a well-formed name,
// with or without tag, namespace or host, passes.
func TestLimitsRefuseModelNames(t *testing.T) {
	for _, tc := range []struct {
		name string
		ok   bool
	}{
		{"qwen3", true}, {"qwen3:8b", true}, {"org/model:q4", true}, {"hf.co/org/model:Q4_K_M", true},
		{strings.Repeat("m", 81), false}, {"m:", false}, {"ns.dot/m", false}, {"a b", false},
		{strings.Repeat("m", 100<<10), false},
	} {
		err := Limits{}.WithDefaults().Check(&hearth.CreateResponseRequest{Model: tc.name})
		var he *hearth.Error
		switch {
		case tc.ok && err != nil:
			t.Errorf("%.20q: %v, want accepted", tc.name, err)
		case !tc.ok && (!errors.As(err, &he) || he.Status != http.StatusNotFound):
			t.Errorf("%.20q: %v, want model_not_found", tc.name, err)
		case !tc.ok && len(he.Message) > 1024:
			t.Errorf("%.20q: the message holds the whole name (%d bytes)", tc.name, len(he.Message))
		}
	}
}
