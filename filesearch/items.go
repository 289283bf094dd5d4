package filesearch

import (
	"strconv"
	"strings"

	"hearth"
	"hearth/engine"
)

// Reemit reports a stored file_search_call as the live stream did.
func (k *Kind) Reemit(b *hearth.Builder, it hearth.Item) { ReemitCall(b, it) }

// View is how the console shows a file_search_call: the queries, and the files found
// with their scores when the request included the results.
func (k *Kind) View(it hearth.Item) engine.HostedView {
	v := engine.HostedView{Name: FunctionName, Text: it.Status}
	if fs := CallOf(it); fs != nil {
		v.Args = strings.Join(fs.Queries, "\n")
		if len(fs.Results) > 0 {
			lines := make([]string, len(fs.Results))
			for i, r := range fs.Results {
				lines[i] = r.Filename + " (" + r.FileID + ", score " + strconv.FormatFloat(r.Score, 'f', 3, 64) + ")"
			}
			v.Text = strings.Join(lines, "\n")
		}
	}
	return v
}
