package console

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"

	"hearth"
	"hearth/storage"
)

func (c *Console) live(w http.ResponseWriter, r *http.Request) {
	c.render(w, r, http.StatusOK, "live", pageData{Title: "Live", Data: c.cfg.Live(r.Context())})
}

// liveFragment is the live view's content alone; console.js polls it every few
// seconds and swaps it in (the HTML is escaped here, by the same template).
func (c *Console) liveFragment(w http.ResponseWriter, r *http.Request) {
	var b strings.Builder
	if err := c.pages["live"].ExecuteTemplate(&b, "live", c.cfg.Live(r.Context())); err != nil {
		c.serverError(w, r, err)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	_, _ = w.Write([]byte(b.String()))
}

// listPage is the responses view's data.
type listPage struct {
	Key, Model, Status, Since, Until string
	Keys, Models                     []string
	Statuses                         []string
	Rows                             []listRow
	Next                             string
}

type listRow struct {
	*storage.Response
	KeyName string
}

var statuses = []string{"queued", "in_progress", "completed", "incomplete", "failed", "cancelled"}

// timeLayouts are what the filter's time fields accept: what <input type=datetime-local>
// sends (minutes or seconds), RFC 3339, or a date.
var timeLayouts = []string{"2006-01-02T15:04", "2006-01-02T15:04:05", time.RFC3339, "2006-01-02"}

func parseTime(s string) (time.Time, bool) {
	for _, l := range timeLayouts {
		if t, err := time.ParseInLocation(l, s, time.UTC); err == nil {
			return t, true
		}
	}
	return time.Time{}, false
}

func (c *Console) responses(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	p := listPage{Key: q.Get("key"), Model: q.Get("model"), Status: q.Get("status"), Since: q.Get("since"), Until: q.Get("until"), Statuses: statuses}
	names, err := c.cfg.KeyNames(r.Context())
	if err != nil {
		c.serverError(w, r, err)
		return
	}
	f := storage.ConsoleFilter{Model: p.Model, Limit: 50}
	if p.Key != "" {
		for owner, n := range names {
			if n == p.Key {
				f.Owner = owner
			}
		}
		if f.Owner == "" {
			c.fail(w, r, http.StatusBadRequest, "invalid_value", "key", fmt.Sprintf("No key is named %q.", p.Key))
			return
		}
	}
	if p.Status != "" {
		if !contains(statuses, p.Status) {
			c.fail(w, r, http.StatusBadRequest, "invalid_value", "status", "status must be one of "+strings.Join(statuses, ", ")+".")
			return
		}
		f.Status = storage.Status(p.Status)
	}
	for _, t := range []struct {
		name, v string
		to      *time.Time
	}{{"since", p.Since, &f.Since}, {"until", p.Until, &f.Until}} {
		if t.v == "" {
			continue
		}
		v, ok := parseTime(t.v)
		if !ok {
			c.fail(w, r, http.StatusBadRequest, "invalid_value", t.name, t.name+" must be a time like 2026-11-23T14:05 (UTC) or RFC 3339.")
			return
		}
		*t.to = v
	}
	if a := q.Get("after"); a != "" {
		ms, id, ok := strings.Cut(a, "_")
		n, err := strconv.ParseInt(ms, 10, 64)
		if !ok || err != nil || id == "" {
			c.fail(w, r, http.StatusBadRequest, "invalid_value", "after", "after must be a cursor from the previous page's link.")
			return
		}
		f.AfterCreated, f.AfterID = time.UnixMilli(n), id
	}
	rows, more, err := c.cfg.DB.ConsoleResponses(r.Context(), f)
	if err != nil {
		c.serverError(w, r, err)
		return
	}
	for _, row := range rows {
		p.Rows = append(p.Rows, listRow{Response: row, KeyName: keyName(names, row.Owner)})
	}
	if more {
		last := rows[len(rows)-1]
		v := cloneValues(q)
		v.Set("after", strconv.FormatInt(last.CreatedAt.UnixMilli(), 10)+"_"+last.ID)
		p.Next = Prefix + "/responses?" + v.Encode()
	}
	for _, n := range names {
		p.Keys = append(p.Keys, n)
	}
	sort.Strings(p.Keys)
	if l := c.cfg.Live(r.Context()); len(l.Runtimes) > 0 {
		for _, rt := range l.Runtimes {
			for _, m := range rt.Models {
				p.Models = append(p.Models, m.Name)
			}
		}
	}
	c.render(w, r, http.StatusOK, "responses", pageData{Title: "Responses", Data: p})
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if x == y {
			return true
		}
	}
	return false
}

func cloneValues(q url.Values) url.Values {
	v := url.Values{}
	for k, xs := range q {
		if k != "after" {
			v[k] = append([]string(nil), xs...)
		}
	}
	return v
}

func keyName(names map[string]string, owner string) string {
	if n, ok := names[owner]; ok {
		return n
	}
	// A key that no longer exists (a configured key removed from the flags).
	return "key " + shortID(owner)
}

// chainPage is a chain's tree.
type chainPage struct {
	ID    string
	Roots []*node
	Count int
	Cut   bool
}

type node struct {
	Turn     *storage.ConsoleTurn
	KeyName  string
	Focus    bool
	Input    []itemView
	Output   []itemView
	Reason   string // incomplete_details.reason
	ErrorMsg string
	Children []*node
}

func (c *Console) chain(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	turns, names, ok := c.chainOf(w, r, id)
	if !ok {
		return
	}
	p := chainPage{ID: id, Count: len(turns), Cut: len(turns) >= storage.MaxConsoleChain}
	byID := map[string]*node{}
	for _, t := range turns {
		n := &node{Turn: t, KeyName: keyName(names, t.Owner), Focus: t.ID == id,
			Input: c.itemViews(t.Input), Output: c.itemViews(t.Output)}
		n.Reason, n.ErrorMsg = outcome(t)
		byID[t.ID] = n
	}
	for _, t := range turns {
		n := byID[t.ID]
		if parent, ok := byID[t.PreviousResponseID]; ok && t.PreviousResponseID != "" {
			parent.Children = append(parent.Children, n)
		} else {
			p.Roots = append(p.Roots, n)
		}
	}
	c.render(w, r, http.StatusOK, "chain", pageData{Title: "Chain " + shortID(id), Nav: "responses", Data: p})
}

// chainOf reads the tree response id belongs to and the key names, or answers the
// request (404 for an unknown id) and reports false.
func (c *Console) chainOf(w http.ResponseWriter, r *http.Request, id string) ([]*storage.ConsoleTurn, map[string]string, bool) {
	turns, err := c.cfg.DB.ConsoleChain(r.Context(), id)
	if errors.Is(err, storage.ErrNotFound) {
		c.fail(w, r, http.StatusNotFound, "not_found", "id", fmt.Sprintf("No response with id %q is stored.", id))
		return nil, nil, false
	}
	if err != nil {
		c.serverError(w, r, err)
		return nil, nil, false
	}
	names, err := c.cfg.KeyNames(r.Context())
	if err != nil {
		c.serverError(w, r, err)
		return nil, nil, false
	}
	return turns, names, true
}

// outcome reads why a response stopped short, from its stored body and error.
func outcome(t *storage.ConsoleTurn) (reason, errMsg string) {
	var body struct {
		IncompleteDetails *struct {
			Reason string `json:"reason"`
		} `json:"incomplete_details"`
	}
	if len(t.Body) > 0 && json.Unmarshal(t.Body, &body) == nil && body.IncompleteDetails != nil {
		reason = body.IncompleteDetails.Reason
	}
	var e struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	}
	if len(t.Error) > 0 && json.Unmarshal(t.Error, &e) == nil {
		errMsg = strings.TrimSpace(e.Code + ": " + e.Message)
	}
	return reason, errMsg
}

// itemView is an item as people read it.
type itemView struct {
	Kind string // message, reasoning, call, output, other, or a hosted tool type (mcp, web_search, file_search)
	// Hosted marks an item of a hosted tool kind, shown as its kind says.
	Hosted bool
	Type   string
	Role   string
	Status string
	Text   string
	Name   string
	CallID string
	Args   string
	// Encrypted marks reasoning whose text only the model's server can read.
	Encrypted bool
}

func (c *Console) itemViews(items []storage.Item) []itemView {
	out := make([]itemView, 0, len(items))
	for _, it := range items {
		out = append(out, viewOf(it, c.cfg.HostedView))
	}
	return out
}

func viewOf(s storage.Item, hosted func(hearth.Item) (HostedItem, bool)) itemView {
	var it hearth.Item
	if err := json.Unmarshal(s.JSON, &it); err != nil {
		return itemView{Kind: "other", Type: s.Type, Text: string(s.JSON)}
	}
	v := itemView{Type: it.Type, Role: it.Role, Status: it.Status, Name: it.Name, CallID: it.CallID}
	if hosted != nil {
		if h, ok := hosted(it); ok {
			// An item of a hosted tool kind (an MCP call): shown as its kind says.
			v.Kind, v.Name, v.Args, v.Text, v.Hosted = h.Kind, h.Name, prettyJSON(h.Args), prettyJSON(h.Text), true
			return v
		}
	}
	switch it.Type {
	case hearth.ItemMessage:
		v.Kind, v.Text = "message", partsText(it.Content)
	case hearth.ItemReasoning:
		v.Kind = "reasoning"
		v.Text = partsText(it.Content)
		if v.Text == "" {
			v.Text = partsText(it.Summary)
		}
		v.Encrypted = v.Text == "" && it.EncryptedContent != ""
	case hearth.ItemFunctionCall:
		v.Kind, v.Args = "call", prettyJSON(it.Arguments)
		if it.Namespace != "" {
			v.Name = it.Namespace + "." + it.Name
		}
	case hearth.ItemCustomToolCall:
		v.Kind, v.Args = "call", it.Input
	case hearth.ItemFunctionCallOutput, hearth.ItemCustomToolCallOutput:
		v.Kind = "output"
		v.Text = it.Output.Text
		if it.Output.Parts != nil {
			v.Text = partsText(it.Output.Parts)
		}
		v.Text = prettyJSON(v.Text)
	default:
		v.Kind, v.Text = "other", prettyJSON(string(s.JSON))
	}
	return v
}

func partsText(parts []hearth.ContentPart) string {
	var b strings.Builder
	for i, p := range parts {
		if i > 0 {
			b.WriteString("\n")
		}
		switch {
		case p.Text != "":
			b.WriteString(p.Text)
		case p.Refusal != "":
			b.WriteString("[refusal] " + p.Refusal)
		case p.Type == "input_image":
			b.WriteString("[image]")
		case p.Type == "input_file":
			b.WriteString("[file " + p.Filename + "]")
		}
	}
	return b.String()
}

// prettyJSON indents JSON text for reading; anything else stays as it is.
func prettyJSON(s string) string {
	t := strings.TrimSpace(s)
	if !strings.HasPrefix(t, "{") && !strings.HasPrefix(t, "[") {
		return s
	}
	var b bytes.Buffer
	if json.Indent(&b, []byte(t), "", "  ") != nil {
		return s
	}
	return b.String()
}

// usageRanges are the usage view's windows and their bucket widths.
var usageRanges = []struct {
	Name         string
	Span, Bucket time.Duration
}{
	{"1h", time.Hour, time.Minute},
	{"24h", 24 * time.Hour, time.Hour},
	{"7d", 7 * 24 * time.Hour, 6 * time.Hour},
	{"30d", 30 * 24 * time.Hour, 24 * time.Hour},
}

// usageData is the usage view's data, also served as JSON for the charts.
type usageData struct {
	Range  string        `json:"range"`
	Ranges []string      `json:"-"`
	By     string        `json:"by"`
	Starts []int64       `json:"starts"` // unix seconds of each bucket
	Series []usageSeries `json:"series"`
}

type usageSeries struct {
	Label     string  `json:"label"`
	Input     []int64 `json:"input"`
	Cached    []int64 `json:"cached"`
	Output    []int64 `json:"output"`
	Responses int64   `json:"responses"`
	// Totals over the range, for the table.
	TotalIn     int64 `json:"total_input"`
	TotalCached int64 `json:"total_cached"`
	TotalOut    int64 `json:"total_output"`
}

func (c *Console) usageOf(r *http.Request) (usageData, string, error) {
	q := r.URL.Query()
	d := usageData{Range: q.Get("range"), By: q.Get("by")}
	if d.Range == "" {
		d.Range = "24h"
	}
	if d.By == "" {
		d.By = "key"
	}
	if d.By != "key" && d.By != "model" {
		return d, "by", nil
	}
	span, bucket := time.Duration(0), time.Duration(0)
	for _, u := range usageRanges {
		d.Ranges = append(d.Ranges, u.Name)
		if u.Name == d.Range {
			span, bucket = u.Span, u.Bucket
		}
	}
	if span == 0 {
		return d, "range", nil
	}
	now := c.cfg.Now()
	first := now.Add(-span).Truncate(bucket)
	rows, err := c.cfg.DB.ConsoleUsage(r.Context(), first, bucket)
	if err != nil {
		return d, "", err
	}
	names, err := c.cfg.KeyNames(r.Context())
	if err != nil {
		return d, "", err
	}
	n := int(now.Sub(first)/bucket) + 1
	for i := 0; i < n; i++ {
		d.Starts = append(d.Starts, first.Add(time.Duration(i)*bucket).Unix())
	}
	index := map[string]int{}
	for _, row := range rows {
		label := row.Model
		if d.By == "key" {
			label = keyName(names, row.Owner)
		}
		i, ok := index[label]
		if !ok {
			i = len(d.Series)
			index[label] = i
			d.Series = append(d.Series, usageSeries{Label: label,
				Input: make([]int64, n), Cached: make([]int64, n), Output: make([]int64, n)})
		}
		b := int(row.Start.Sub(first) / bucket)
		if b < 0 || b >= n {
			continue
		}
		s := &d.Series[i]
		s.Input[b] += row.InputTokens
		s.Cached[b] += row.CachedTokens
		s.Output[b] += row.OutputTokens
		s.Responses += row.Responses
		s.TotalIn += row.InputTokens
		s.TotalCached += row.CachedTokens
		s.TotalOut += row.OutputTokens
	}
	sort.Slice(d.Series, func(i, j int) bool { return d.Series[i].Label < d.Series[j].Label })
	return d, "", nil
}

func (c *Console) usage(w http.ResponseWriter, r *http.Request) {
	d, bad, err := c.usageOf(r)
	if c.usageFailed(w, r, bad, err) {
		return
	}
	c.render(w, r, http.StatusOK, "usage", pageData{Title: "Usage", Data: d})
}

func (c *Console) usageJSON(w http.ResponseWriter, r *http.Request) {
	d, bad, err := c.usageOf(r)
	if c.usageFailed(w, r, bad, err) {
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	_ = json.NewEncoder(w).Encode(d)
}

func (c *Console) usageFailed(w http.ResponseWriter, r *http.Request, bad string, err error) bool {
	switch {
	case err != nil:
		c.serverError(w, r, err)
	case bad == "by":
		c.fail(w, r, http.StatusBadRequest, "invalid_value", "by", "by must be key or model.")
	case bad == "range":
		c.fail(w, r, http.StatusBadRequest, "invalid_value", "range", "range must be one of 1h, 24h, 7d, 30d.")
	default:
		return false
	}
	return true
}

func formatMillis(d time.Duration) string {
	if d == 0 {
		return "–"
	}
	if d < 10*time.Second {
		return strconv.FormatInt(d.Milliseconds(), 10) + " ms"
	}
	return strconv.FormatFloat(d.Seconds(), 'f', 1, 64) + " s"
}

func formatTime(t time.Time) string {
	if t.IsZero() {
		return "–"
	}
	return t.UTC().Format("2006-01-02 15:04:05Z")
}

// formatExpiry shows when a loaded model unloads; a keep_alive of "forever" (a
// negative one) comes from the runtime as a date centuries ahead.
func formatExpiry(t time.Time) string {
	if t.After(time.Now().AddDate(50, 0, 0)) {
		return "kept loaded"
	}
	return formatTime(t)
}

func formatBytes(n int64) string {
	switch {
	case n >= 1<<30:
		return strconv.FormatFloat(float64(n)/(1<<30), 'f', 1, 64) + " GiB"
	case n >= 1<<20:
		return strconv.FormatFloat(float64(n)/(1<<20), 'f', 1, 64) + " MiB"
	}
	return strconv.FormatInt(n/1024, 10) + " KiB"
}

func formatFloat(f float64) string {
	if f == 0 {
		return "–"
	}
	return strconv.FormatFloat(f, 'f', 1, 64)
}

func shortID(id string) string {
	if len(id) > 14 {
		return id[:14] + "…"
	}
	return id
}

// filterURL links the responses view filtered by one field.
func filterURL(field, value string) string {
	return Prefix + "/responses?" + url.Values{field: {value}}.Encode()
}
