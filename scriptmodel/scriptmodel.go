// Package scriptmodel writes deterministic "script models": tiny GGUF files the Ollama
// runtime loads like any llama model, whose next token is a pure function of the current
// one. A test can then assert exact text, exact tool calls and exact token counts from a
// real runtime.
//
// How it works: one llama layer whose attention and feed-forward output weights are zero
// passes the token embedding straight to the output head. Embeddings are one-hot, so the
// output head is a table: column i holds the logits after token i. Each script is a chain
// of unique tokens; the entry token (the last token the chat template renders) picks the
// script, every token's successor is the next piece, the last piece's successor is EOS.
// Tokens outside any chain rank a few bytes useful to JSON grammars (EOS, '"', '}', ...)
// so that generation under a `format` grammar closes quickly and predictably.
package scriptmodel

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strings"
)

// Script is what the model writes after one entry token.
type Script struct {
	// Entry is the token that selects the script: the template renders it last.
	Entry string
	// Text is what the model generates, up to EOS.
	Text string
}

// Spec describes a script model.
type Spec struct {
	// Template is the model's chat template (Go text/template, as Ollama reads it). It
	// should end in one of the entry tokens in every situation the tests use.
	Template string
	// Renderer and Parser, when set, name one of the runtime's built-in renderers and
	// output parsers (a Modelfile's RENDERER and PARSER): the runtime, and hearth, then
	// render the prompt with that family's Go renderer instead of Template, so the
	// entry tokens must be what that renderer writes last.
	Renderer, Parser string
	Scripts          []Script
	// Stop strings, as the model's `stop` parameters. EOS always ends generation.
	Stop []string
	// ContextLength is the model's trained context (default 4096).
	ContextLength int
	// Layers, Width and FFN size the model. Zero values give the smallest model: one
	// layer, width just above the vocabulary. Larger values cost real compute with the
	// same output, for benchmarks.
	Layers, Width, FFN int
	// Heads is the number of attention heads (of 64 dimensions each); zero means
	// Width/64. Attention over a long prompt costs in proportion to it, and its
	// output is zero either way, so a model for long prompts can use one.
	Heads int
	// Quantized stores the zero weights as Q4_0 (what most local users run) instead of
	// F16. Only the embedding and output head, which carry the script, stay F32.
	Quantized bool
	// Parameters are more of the model's parameters, as a Modelfile's PARAMETER
	// lines set them (num_thread for a benchmark pinned to one core).
	Parameters map[string]any
	// Architecture, when set, is the GGUF's general.architecture instead of llama (its
	// keys are then named after it). The tensors stay a llama model's, so only a name
	// the runtime does not know is of use: a model that exists but cannot be run.
	Architecture string
	// BOS is the text of the beginning-of-sequence control token (default BOS), and
	// AddBOS whether the tokenizer puts that token before every prompt itself
	// (tokenizer.ggml.add_bos_token): together they make a model whose renderer
	// writes its BOS as text, as real models of some families are.
	BOS    string
	AddBOS bool
	// ChatTemplate, when set, is the GGUF's tokenizer.chat_template: the Jinja template
	// a real model's file carries, which hearth renders from before anything else.
	ChatTemplate string
	// Vision, when set, makes a vision model (architecture mistral3) whose answer
	// after Vision.After names the colour of the images in its context.
	Vision *Vision
}

// Model is a built script model.
type Model struct {
	Spec
	vocab *vocab
	// chain maps an entry token's text to the ids it produces, in order.
	chain map[string][]int
	// next is the successor table: next[id] is the token generated after id, or -1.
	next []int
	// width is the embedding length actually used.
	width int
	// branchFrom and options: a vision model's branch point and its option tokens
	// by Colour.
	branchFrom int
	options    [4]int
}

// Build lays out the vocabulary and successor table of spec.
func Build(spec Spec) (*Model, error) {
	if len(spec.Scripts) == 0 {
		return nil, errors.New("scriptmodel: no scripts")
	}
	bos := spec.BOS
	if bos == "" {
		bos = BOS
	}
	m := &Model{Spec: spec, vocab: newVocab(bos), chain: map[string][]int{}}
	if m.ContextLength == 0 {
		m.ContextLength = 4096
	}
	if m.Layers == 0 {
		m.Layers = 1
	}
	// Entry tokens first, so script pieces never take their text.
	entries := map[string]int{}
	for _, s := range spec.Scripts {
		if _, dup := entries[s.Entry]; dup {
			return nil, fmt.Errorf("scriptmodel: entry %q used twice", s.Entry)
		}
		id, ok := m.vocab.claim(s.Entry)
		if !ok {
			return nil, fmt.Errorf("scriptmodel: entry %q must be at least 2 bytes and unique", s.Entry)
		}
		entries[s.Entry] = id
	}
	for _, s := range spec.Scripts {
		ids, err := m.vocab.claimPieces(splitPieces(s.Text))
		if err != nil {
			return nil, fmt.Errorf("scriptmodel: script after %q: %w", s.Entry, err)
		}
		m.chain[s.Entry] = ids
	}
	m.next = make([]int, len(m.vocab.tokens))
	for i := range m.next {
		m.next[i] = -1
	}
	for _, s := range spec.Scripts {
		prev := entries[s.Entry]
		for _, id := range m.chain[s.Entry] {
			m.next[prev] = id
			prev = id
		}
		m.next[prev] = eosID
	}
	// One-hot embeddings need a width of at least the vocabulary (and a vision
	// model's image dimensions); round up so every row is a whole number of
	// quantisation blocks and attention heads.
	m.width = roundUp(max(spec.Width, len(m.vocab.tokens)), 256)
	if spec.Vision != nil {
		// One layer and one live head carry the image (see vision.go).
		m.Layers, m.Heads = 1, 1
		m.width = roundUp(max(spec.Width, len(m.vocab.tokens)+4), 256)
		if err := m.branch(); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// Pieces returns the texts of the tokens the model generates after entry, in order; its
// length is the number of tokens the runtime reports for that generation.
func (m *Model) Pieces(entry string) []string {
	var out []string
	for _, id := range m.chain[entry] {
		out = append(out, m.vocab.tokens[id])
	}
	return out
}

// Text returns the text the model generates after entry.
func (m *Model) Text(entry string) string { return m.vocab.text(m.chain[entry]) }

// VocabSize is the number of tokens.
func (m *Model) VocabSize() int { return len(m.vocab.tokens) }

// Width is the embedding length.
func (m *Model) Width() int { return m.width }

// preferred ranks tokens a grammar may force the model onto when its script's successor
// is not allowed: ending, then closing JSON strings, objects and arrays, then digits.
// Without this the best allowed token would be arbitrary (and could loop on spaces).
var preferred = []string{EOS, `"`, "}", "]", "0", ",", ":", "{", "[", "1", "t", "r", "u", "e"}

const (
	// successorWeight dominates every other logit by a margin no sampler setting can
	// overturn: after the final norm the hidden state is sqrt(width) on one axis.
	successorWeight = 64
	// unranked is the weight of tokens neither successor nor preferred.
	unranked = -1
)

// preferenceRow is the weight of each next token when it is not the successor.
func (m *Model) preferenceRow() []float32 {
	row := make([]float32, len(m.vocab.tokens))
	for i := range row {
		row[i] = unranked
	}
	for rank, tok := range preferred {
		id := -1
		switch {
		case tok == EOS:
			id = eosID
		case len(tok) == 1:
			id = byteBase + int(tok[0])
		}
		row[id] = float32(len(preferred)-rank) / float32(len(preferred))
	}
	return row
}

func roundUp(n, to int) int { return (n + to - 1) / to * to }

// EvalCount is the number of generated tokens the runtime reports after entry: one per
// piece plus the EOS it samples last.
func (m *Model) EvalCount(entry string) int { return len(m.chain[entry]) + 1 }

// CountTokens returns how many tokens the runtime's tokenizer makes of text, mirroring
// llama.cpp (or, for a vision model, the runtime's Go tokenizer; see below): user-defined tokens are cut out first, longest first, and with no BPE merges
// every remaining byte is one token.
func (m *Model) CountTokens(text string) int { return len(m.Tokenize(text)) }

// Tokenize is the ids the runtime's tokenizer gives text: the vocabulary's pieces
// where they occur (longest first), one byte token per other byte.
func (m *Model) Tokenize(text string) []int {
	special := make([]string, 0, len(m.vocab.ids))
	for s := range m.vocab.ids {
		special = append(special, s)
	}
	slices.SortFunc(special, func(a, b string) int { return cmp.Or(len(b)-len(a), strings.Compare(a, b)) })
	if m.Vision != nil {
		// A vision model (mistral3) runs on the runtime's own engine, whose tokenizer
		// cuts special tokens out in vocabulary order instead: ", like" before
		// ", like fresh".
		slices.SortFunc(special, func(a, b string) int { return m.vocab.ids[a] - m.vocab.ids[b] })
	}
	type fragment struct {
		text    string
		special bool
	}
	frags := []fragment{{text: text}}
	for _, s := range special {
		var next []fragment
		for _, f := range frags {
			if f.special {
				next = append(next, f)
				continue
			}
			parts := strings.Split(f.text, s)
			for i, p := range parts {
				if i > 0 {
					next = append(next, fragment{text: s, special: true})
				}
				if p != "" {
					next = append(next, fragment{text: p})
				}
			}
		}
		frags = next
	}
	var ids []int
	for _, f := range frags {
		if f.special {
			ids = append(ids, m.vocab.ids[f.text])
			continue
		}
		for i := 0; i < len(f.text); i++ {
			ids = append(ids, byteBase+int(f.text[i]))
		}
	}
	return ids
}

// Embed is the vector the runtime's embed API gives text with this model. A script
// model has no pooling of its own, so the runtime answers with the final hidden state
// of the last token, which for a script model is that token's one-hot row: the vector
// is 1 at the last token's id and 0 elsewhere, in Width dimensions. Exact, and enough
// to test the path from the API to the runtime; no measure of similarity.
func (m *Model) Embed(text string) []float32 {
	v := make([]float32, m.width)
	if ids := m.Tokenize(text); len(ids) > 0 {
		v[ids[len(ids)-1]] = 1
	}
	return v
}
