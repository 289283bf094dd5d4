package engine

import (
	"testing"

	"hearth"
)

// TestChoosesClientTools: a tool_choice stands after a turn of hosted calls only when
// it names tools of the client's; allowed_tools of hosted tools alone was met by the
// hosted call (left standing it would force a search every turn).
func TestChoosesClientTools(t *testing.T) {
	// A hosted kind's tool type (package filesearch's), which the engine knows by
	// nothing but its name.
	const fileSearch = "file_search"
	for _, tc := range []struct {
		c    hearth.ToolChoice
		want bool
	}{
		{hearth.ToolChoice{Type: hearth.ToolFunction, Name: "get_weather"}, true},
		{hearth.ToolChoice{Type: hearth.ToolCustom, Name: "apply_patch"}, true},
		{hearth.ToolChoice{Type: "allowed_tools", Mode: hearth.ToolChoiceRequired, Allowed: []hearth.ToolRef{{Type: hearth.ToolFunction, Name: "get_weather"}}}, true},
		{hearth.ToolChoice{Type: "allowed_tools", Mode: hearth.ToolChoiceRequired, Allowed: []hearth.ToolRef{{Type: fileSearch}, {Type: hearth.ToolCustom, Name: "apply_patch"}}}, true},
		{hearth.ToolChoice{Type: "allowed_tools", Mode: hearth.ToolChoiceRequired, Allowed: []hearth.ToolRef{{Type: fileSearch}}}, false},
		{hearth.ToolChoice{Type: fileSearch}, false},
		{hearth.ToolChoice{Mode: hearth.ToolChoiceRequired}, false},
	} {
		if got := choosesClientTools(tc.c); got != tc.want {
			t.Errorf("choosesClientTools(%+v) = %v, want %v", tc.c, got, tc.want)
		}
	}
}
