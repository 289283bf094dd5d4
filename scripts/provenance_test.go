package scripts

import (
	"bufio"
	"bytes"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// Every file of hearth's tree is hearth's own: nothing carries another project's
// copyright or licence. These are the marks such a file has: a copyright line, an SPDX
// tag, a licence grant, the text of a common licence, or the preserved banner a
// minified library keeps. The phrases are assembled from parts so that this file does
// not carry them itself.
var provenanceMarks = []struct {
	what string
	re   *regexp.Regexp
}{
	{"a copyright line", regexp.MustCompile(`(?m)^[\s/*#;!<>{}'"-]*C` + "opy" + `right\b|(?i)\b` + "copy" + `right\s*(\(c\)|©|\d{4}|\[yyyy\])|©\s*\d{4}`)},
	{"an SPDX licence tag", regexp.MustCompile(`(?im)` + "SPDX" + `-License-Identifier`)},
	{"a licence grant", regexp.MustCompile(`(?im)\b` + "licensed" + ` under\b`)},
	{"the MIT licence", regexp.MustCompile(`(?im)` + "permission is hereby" + ` granted|` + "the software is provided" + ` "as is"`)},
	{"the Apache licence", regexp.MustCompile(`(?im)` + "apache license" + `,? version 2|` + "apache.org/" + `licenses`)},
	{"a BSD licence", regexp.MustCompile(`(?im)` + "redistribution and use" + ` in source and binary forms`)},
	{"a GNU or Mozilla licence", regexp.MustCompile(`(?im)` + "gnu (lesser |affero )?general" + ` public license|` + "mozilla public" + ` license`)},
	{"an all-rights-reserved notice", regexp.MustCompile(`(?im)` + "all rights" + ` reserved`)},
	{"a preserved library banner", regexp.MustCompile(`(?m)^\s*/\*` + "!")},
}

// licenceFile matches the names of licence and notice files. hearth's own licence, when
// it has one, is LICENSE at the root; any other such file is another project's.
var licenceFile = regexp.MustCompile(`^(LICEN[CS]E|COPYING|NOTICE|UNLICENSE)([._-].*)?$|(?i)[._-]licen[cs]e(\.(txt|md))?$`)

// keptThirdParty are other projects' files the tree keeps on purpose, each with its
// licence and notice beside it; their marks are printed on every run, file and line, so
// none is silent. The Open Responses specification's OpenAPI document (Apache 2.0) is
// the standard hearth serves, not code: the schema tests validate hearth's output
// against the published document itself, and a rewritten copy would test nothing.
var keptThirdParty = []string{
	"internal/schematest/testdata/openresponses/",
}

// TestNoOtherProjectsFiles fails when a file of the tree (git's tracked and untracked,
// not ignored files) carries another project's copyright or licence, naming the file
// and the line.
func TestNoOtherProjectsFiles(t *testing.T) {
	root, files := treeFiles(t)
	findings := 0
	for _, rel := range files {
		exempt := exemptionOf(rel)
		report := func(format string, args ...any) {
			if exempt != "" {
				t.Logf("%s (%s): "+format, append([]any{rel, exempt}, args...)...)
				return
			}
			findings++
			t.Errorf("%s: "+format, append([]any{rel}, args...)...)
		}
		if name := path.Base(rel); licenceFile.MatchString(name) && rel != "LICENSE" {
			report("a licence or notice file: hearth carries no other project's files")
		}
		for _, f := range scanMarks(t, filepath.Join(root, filepath.FromSlash(rel))) {
			report("%s", f)
		}
	}
	if findings > 0 {
		t.Logf("%d findings: remove the files, or rewrite them as hearth's own (facts carry over, text does not)", findings)
	}
}

// exemptionOf says which list of kept files holds rel, or "".
func exemptionOf(rel string) string {
	for _, p := range keptThirdParty {
		if strings.HasPrefix(rel, p) {
			return "keptThirdParty"
		}
	}
	return ""
}

// scanMarks returns "line N: <mark>: <text>" for each line of a text file that carries
// a mark; binary files (a NUL byte in the first 8 KiB) have no lines to read.
func scanMarks(t *testing.T, file string) []string {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		if os.IsNotExist(err) {
			return nil // deleted in the work tree, not yet in the index
		}
		t.Fatal(err)
	}
	if bytes.IndexByte(data[:min(len(data), 8192)], 0) >= 0 {
		return nil
	}
	// Most files carry no mark: one pass over the whole file decides whether its lines
	// are read one by one.
	marked := false
	for _, m := range provenanceMarks {
		if m.re.Match(data) {
			marked = true
			break
		}
	}
	if !marked {
		return nil
	}
	var out []string
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 64*1024), len(data)+1)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		for _, m := range provenanceMarks {
			if m.re.MatchString(line) {
				text := strings.TrimSpace(line)
				if len(text) > 100 {
					text = text[:100] + "..."
				}
				out = append(out, "line "+strconv.Itoa(n)+": "+m.what+": "+text)
				break
			}
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	return out
}

// treeFiles lists the repository's files, tracked and untracked but not ignored, as
// slash paths relative to its root (build outputs, caches and fetched tools are not the
// tree).
func treeFiles(t *testing.T) (string, []string) {
	t.Helper()
	out, err := exec.Command("git", "rev-parse", "--show-toplevel").Output()
	if err != nil {
		t.Fatalf("the tree's files are listed by git, which could not find the repository: %v", err)
	}
	root := strings.TrimSpace(string(out))
	cmd := exec.Command("git", "ls-files", "-z", "--cached", "--others", "--exclude-standard")
	cmd.Dir = root
	out, err = cmd.Output()
	if err != nil {
		t.Fatalf("git ls-files: %v", err)
	}
	var files []string
	for _, f := range strings.Split(string(out), "\x00") {
		if f != "" {
			files = append(files, f)
		}
	}
	if len(files) == 0 {
		t.Fatal("git ls-files listed no files")
	}
	return root, files
}

// TestProvenanceMarks: the marks of other projects' headers are found, and hearth's own
// lines that speak of licences are not.
func TestProvenanceMarks(t *testing.T) {
	c := "Copy" + "right"
	for _, tc := range []struct {
		line   string
		marked bool
	}{
		{"// " + c + " 2024 The Ollama Authors. All rights" + " reserved.", true},
		{c + " (c) 2022 Someone", true},
		{"# " + c + " its authors", true},
		{"// SPDX" + "-License-Identifier: MIT", true},
		{"# Licensed" + " under the Apache" + " License, Version 2.0 (the \"License\");", true},
		{" * Permission is hereby" + " granted, free of charge, to any person", true},
		{"Redistribution and use" + " in source and binary forms, with or without", true},
		{"/*! some-lib v1.2.3 | MIT */", true},
		{"Released under the GNU General" + " Public License v3", true},
		{"// The copies keep the other project's licence text out of the tree.", false},
		{"hearth carries no other project's files: a " + strings.ToLower(c) + " line fails this test", false},
		{"/* a comment */", false},
	} {
		f := filepath.Join(t.TempDir(), "f.go")
		if err := os.WriteFile(f, []byte("package x\n"+tc.line+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		got := scanMarks(t, f)
		if (len(got) > 0) != tc.marked {
			t.Errorf("%q: found %q, want marked=%v", tc.line, got, tc.marked)
		}
		if tc.marked && len(got) > 0 && !strings.HasPrefix(got[0], "line 2: ") {
			t.Errorf("%q: %q does not name line 2", tc.line, got[0])
		}
	}
	for name, want := range map[string]bool{"LICENSE.ollama": true, "LICENSE-MIT": true, "uplot.LICENSE": true, "NOTICE": true, "COPYING": true,
		"third-party-license.txt": true, "license.go": false, "licensed.go": false, "license_test.go": false, "notices.md": false} {
		if got := licenceFile.MatchString(name); got != want {
			t.Errorf("licence file %q: %v, want %v", name, got, want)
		}
	}
}
