// Package urlpolicy decides which URLs a request may make hearth reach, and reaches
// them safely: the operator's allow patterns (a "*" matches any run of characters), a
// loopback or private host only when a pattern names that host literally, and an HTTP
// client that checks the address again on every connection (a name may resolve, or be
// rebound, to a private address), follows no redirects and uses no proxy from the
// environment. MCP server URLs (package mcp) and input_file's file_url (the server)
// share it.
package urlpolicy

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"syscall"
	"time"
)

// Policy is a list of allow patterns and the flag an operator sets them with, which the
// refusals name.
type Policy struct {
	flag     string
	patterns []string
	res      []*regexp.Regexp
}

// New compiles patterns; flag (e.g. "--mcp-allow-url") is named in refusals.
func New(flag string, patterns []string) (*Policy, error) {
	p := &Policy{flag: flag, patterns: patterns}
	for _, pat := range patterns {
		if pat == "" {
			return nil, fmt.Errorf("empty %s pattern", flag)
		}
		parts := strings.Split(pat, "*")
		for i, s := range parts {
			parts[i] = regexp.QuoteMeta(s)
		}
		re, err := regexp.Compile("^" + strings.Join(parts, ".*") + "$")
		if err != nil {
			return nil, err
		}
		p.res = append(p.res, re)
	}
	return p, nil
}

// Empty reports whether the policy allows nothing.
func (p *Policy) Empty() bool { return p == nil || len(p.res) == 0 }

// ErrNoneAllowed is Check's error, after the URL's form, when the policy has no
// patterns: the caller may word it for its own feature.
var ErrNoneAllowed = errors.New("urlpolicy: no URL allowed")

// Check says why raw may not be reached, or nil. A nil error on a loopback or private
// host means a pattern named it: the caller's Client then lets it through (IsLocal).
func (p *Policy) Check(raw, what string) error {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("%q is not an http(s) URL", raw)
	}
	if p.Empty() {
		return fmt.Errorf("%w: hearth allows no %s (%s)", ErrNoneAllowed, what, p.flagName())
	}
	local := IsLocal(u.Hostname())
	for i, re := range p.res {
		if !re.MatchString(raw) {
			continue
		}
		if local && !explicitHost(p.patterns[i], u.Hostname()) {
			continue
		}
		return nil
	}
	if local {
		return fmt.Errorf("%q is a loopback or private address, which needs a %s pattern naming that host", u.Hostname(), p.flagName())
	}
	return fmt.Errorf("%q matches no %s pattern", raw, p.flagName())
}

func (p *Policy) flagName() string {
	if p == nil {
		return "no allow list"
	}
	return p.flag
}

// explicitHost reports whether pattern names host literally (no wildcard in its host
// part): the explicit allow a loopback or private address needs.
func explicitHost(pattern, host string) bool {
	rest := pattern
	if i := strings.Index(rest, "://"); i >= 0 {
		rest = rest[i+3:]
	}
	if i := strings.IndexAny(rest, "/?#"); i >= 0 {
		rest = rest[:i]
	}
	if strings.Contains(rest, "*") {
		return false
	}
	h := rest
	if hh, _, err := net.SplitHostPort(rest); err == nil {
		h = hh
	}
	return strings.EqualFold(strings.Trim(h, "[]"), host)
}

// IsLocal reports whether host is a loopback, private or link-local address, or a name
// that is one ("localhost"). Names are not resolved: a name that resolves to a private
// address is the operator's pattern to allow or not, and Client checks the address
// it connects to.
func IsLocal(host string) bool {
	if strings.EqualFold(host, "localhost") || strings.HasSuffix(strings.ToLower(host), ".localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && (ip.IsLoopback() || ip.IsPrivate() || ip.IsLinkLocalUnicast() || ip.IsUnspecified())
}

// ErrAddress is the error of a connection Client refused: the host resolved to a
// loopback or private address it was not allowed, or a redirect.
var ErrAddress = errors.New("urlpolicy: refused")

// Client is the HTTP client for a URL Check passed. localAllowed (the URL's host is
// local, so a pattern named it) lets loopback and private addresses through; otherwise
// every connection to one fails with ErrAddress, wherever the name resolves then.
// Redirects are refused (the target was not checked); no proxy is used.
func Client(localAllowed bool, flag string) *http.Client {
	dialer := &net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second,
		Control: func(_, address string, _ syscall.RawConn) error {
			host, _, err := net.SplitHostPort(address)
			if err != nil {
				return err
			}
			if !localAllowed && IsLocal(host) {
				return fmt.Errorf("%w: the URL's host resolves to %s, a loopback or private address, which needs a %s pattern naming that host", ErrAddress, host, flag)
			}
			return nil
		}}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.Proxy = nil
	tr.DialContext = dialer.DialContext
	return &http.Client{Transport: tr,
		CheckRedirect: func(*http.Request, []*http.Request) error {
			return fmt.Errorf("%w: a URL named by a request may not redirect", ErrAddress)
		},
	}
}
