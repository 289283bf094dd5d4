package engine

import (
	"strings"
	"testing"

	"hearth"
	"hearth/internal/seal"
)

func TestCutAtCompaction(t *testing.T) {
	msg := func(role, text string) hearth.Item {
		return hearth.Item{Type: hearth.ItemMessage, Role: role, ID: text}
	}
	sys, dev := msg(hearth.RoleSystem, "sys"), msg(hearth.RoleDeveloper, "dev")
	u1, a1, u2, a2, u3 := msg(hearth.RoleUser, "u1"), msg(hearth.RoleAssistant, "a1"), msg(hearth.RoleUser, "u2"), msg(hearth.RoleAssistant, "a2"), msg(hearth.RoleUser, "u3")
	call := hearth.Item{Type: hearth.ItemFunctionCall, ID: "call"}
	out := hearth.Item{Type: hearth.ItemFunctionCallOutput, ID: "out"}
	cmp := hearth.Item{Type: hearth.ItemCompaction, ID: "cmp"}
	cmp2 := hearth.Item{Type: hearth.ItemCompaction, ID: "cmp2"}
	ids := func(items []hearth.Item) string {
		var s []string
		for _, it := range items {
			s = append(s, it.ID)
		}
		return strings.Join(s, ",")
	}
	for _, tc := range []struct {
		name           string
		history, input []hearth.Item
		wantH, wantIn  string
		cut            bool
	}{
		{"no compaction", []hearth.Item{u1, a1}, []hearth.Item{u2}, "u1,a1", "u2", false},
		{"a compact window: nothing before it to cut", nil, []hearth.Item{dev, u2, cmp, u3}, "", "dev,u2,cmp,u3", false},
		{"a chain that compacted itself", []hearth.Item{dev, u1, a1, call, out, u2, cmp, a2}, []hearth.Item{u3}, "dev,u2,cmp,a2", "u3", true},
		{"resent items", nil, []hearth.Item{sys, u1, a1, u2, cmp, a2, u3}, "", "sys,u2,cmp,a2,u3", true},
		{"the last compaction counts", []hearth.Item{u1, a1, cmp, a2, u2, call, out, cmp2}, []hearth.Item{u3}, "u2,cmp2", "u3", true},
		{"compaction in the input cuts history", []hearth.Item{dev, u1, a1}, []hearth.Item{u2, cmp, u3}, "dev", "u2,cmp,u3", true},
		{"no user before it", []hearth.Item{a1, call, out, cmp}, nil, "cmp", "", true},
	} {
		h, in, cut := (&Engine{}).cutAtCompaction(tc.history, tc.input)
		if ids(h) != tc.wantH || ids(in) != tc.wantIn || cut != tc.cut {
			t.Errorf("%s: history %q input %q cut %v; want %q %q %v", tc.name, ids(h), ids(in), cut, tc.wantH, tc.wantIn, tc.cut)
		}
	}

	// A server-side compaction's item carries what it kept: whatever comes before it
	// (everything, nothing, or something else) is replaced by those.
	e := &Engine{Seal: seal.NewKey()}
	whole := hearth.Item{Type: hearth.ItemCompaction, ID: "whole",
		EncryptedContent: e.sealCompaction(sealedCompaction{Summary: "s", Whole: true, Kept: []hearth.Item{dev, u2}})}
	for _, tc := range []struct {
		name           string
		history, input []hearth.Item
		wantH, wantIn  string
	}{
		{"the chain", []hearth.Item{dev, u1, a1, u2, whole, a2}, []hearth.Item{u3}, "dev,u2,whole,a2", "u3"},
		{"resent whole", nil, []hearth.Item{dev, u1, a1, u2, whole, a2, u3}, "dev,u2", "whole,a2,u3"},
		{"pruned before it", nil, []hearth.Item{whole, a2, u3}, "dev,u2", "whole,a2,u3"},
		{"other items before it", []hearth.Item{sys, u1}, []hearth.Item{whole, a2, u3}, "dev,u2", "whole,a2,u3"},
	} {
		h, in, cut := e.cutAtCompaction(tc.history, tc.input)
		if ids(h) != tc.wantH || ids(in) != tc.wantIn || !cut {
			t.Errorf("%s: history %q input %q cut %v; want %q %q", tc.name, ids(h), ids(in), cut, tc.wantH, tc.wantIn)
		}
	}
}
