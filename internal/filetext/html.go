package filetext

import (
	"strings"

	"golang.org/x/net/html"
)

// htmlText is the text of an HTML page as a reader sees it: the words, one block per
// line, without markup, scripts or styles.
func htmlText(page string) string {
	z := html.NewTokenizer(strings.NewReader(page))
	var b strings.Builder
	skip := 0 // inside script, style, template, noscript
	newline := func() {
		s := b.String()
		if len(s) > 0 && !strings.HasSuffix(s, "\n") {
			b.WriteByte('\n')
		}
	}
	for {
		switch z.Next() {
		case html.ErrorToken:
			return tidyLines(b.String())
		case html.StartTagToken, html.EndTagToken, html.SelfClosingTagToken:
			name, _ := z.TagName()
			tag := string(name)
			switch tag {
			case "script", "style", "template", "noscript", "head":
				if t := z.Token(); t.Type == html.StartTagToken {
					skip++
				} else if t.Type == html.EndTagToken && skip > 0 {
					skip--
				}
			}
			if blockTags[tag] {
				newline()
			}
		case html.TextToken:
			if skip == 0 {
				b.WriteString(strings.Join(strings.Fields(string(z.Text())), " "))
				b.WriteByte(' ')
			}
		}
	}
}

var blockTags = map[string]bool{}

func init() {
	for _, t := range strings.Fields(`p div br hr li ul ol dl dt dd h1 h2 h3 h4 h5 h6 tr table thead tbody section article
		header footer nav aside main blockquote pre figure figcaption title form fieldset details summary`) {
		blockTags[t] = true
	}
}

// tidyLines trims each line and drops empty ones.
func tidyLines(s string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
