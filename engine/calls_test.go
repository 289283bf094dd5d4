package engine

import (
	"errors"
	"testing"

	"hearth"
)

func TestCheckCallIDs(t *testing.T) {
	call := hearth.Item{Type: hearth.ItemFunctionCall, CallID: "c1", Name: "f", Arguments: "{}"}
	custom := hearth.Item{Type: hearth.ItemCustomToolCall, CallID: "c2", Name: "g"}
	out := func(id string) hearth.Item { return hearth.Item{Type: hearth.ItemFunctionCallOutput, CallID: id} }
	cout := func(id string) hearth.Item { return hearth.Item{Type: hearth.ItemCustomToolCallOutput, CallID: id} }
	user := hearth.Item{Type: hearth.ItemMessage, Role: hearth.RoleUser}
	compaction := hearth.Item{Type: hearth.ItemCompaction, EncryptedContent: "x"}
	cases := []struct {
		name           string
		history, input []hearth.Item
		param          string // "" when accepted
	}{
		{"call then output", nil, []hearth.Item{user, call, out("c1")}, ""},
		{"call in history", []hearth.Item{user, call}, []hearth.Item{out("c1")}, ""},
		{"custom call answered", nil, []hearth.Item{custom, cout("c2")}, ""},
		{"no call", nil, []hearth.Item{user, out("c1")}, "input[1].call_id"},
		{"output before call", nil, []hearth.Item{out("c1"), call}, "input[0].call_id"},
		{"second output unknown", []hearth.Item{call}, []hearth.Item{out("c1"), cout("c9")}, "input[1].call_id"},
		// A compaction item stands for the calls it replaced.
		{"after compaction", nil, []hearth.Item{compaction, user, out("c7")}, ""},
		{"after compaction in history", []hearth.Item{compaction}, []hearth.Item{out("c7")}, ""},
		{"before compaction", nil, []hearth.Item{out("c7"), compaction}, "input[0].call_id"},
		// Stored history is not judged again.
		{"orphan in history", []hearth.Item{out("c5")}, []hearth.Item{user}, ""},
	}
	for _, tc := range cases {
		err := checkCallIDs(tc.history, tc.input)
		var he *hearth.Error
		switch {
		case tc.param == "" && err != nil:
			t.Errorf("%s: %v", tc.name, err)
		case tc.param != "" && (!errors.As(err, &he) || he.Param != tc.param || he.Status != 400 || he.Code != ""):
			t.Errorf("%s: %v, want a 400 without code naming %s", tc.name, err, tc.param)
		}
	}
}
