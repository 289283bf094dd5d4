// Package scrub takes out of an error's text what a client of the API has no use for
// and should not learn of the host that wrote it: the addresses a runtime listens on
// (URLs, IP addresses with or without ports, host:port pairs, unix sockets) and the
// directories of file paths. What the text says happened stays, so that a client can
// still tell a refused connection from a reset one; the log keeps the whole text.
package scrub

import (
	"regexp"
	"strings"
)

// Address stands in the text for an address taken out.
const Address = "[address]"

var (
	// url is any URL: scheme://... up to a space, a quote, an angle bracket or a parenthesis
	// (an IPv6 host is in square brackets).
	url = regexp.MustCompile(`(?i)\b[a-z][a-z0-9+.\-]*://[^\s"'<>(){}]*`)
	// netAddr is the address after a network's name in a Go network error ("dial tcp
	// 127.0.0.1:5: ...", "read tcp a->b: ...", "dial unix /run/x.sock: ...") or the
	// host of a name lookup ("lookup runner.internal on 127.0.0.53:53: ...").
	netAddr = regexp.MustCompile(`\b(tcp[46]?|udp[46]?|unix|unixgram|unixpacket|lookup) ([^\s"']+)`)
	// unixPath is a unix socket named as such ("unix:/run/x.sock", "unix:@abstract").
	unixPath = regexp.MustCompile(`\bunix:@?[^\s"']+`)
	// ipv4 is a dotted IPv4 address with its port, if any.
	ipv4 = regexp.MustCompile(`\b(?:\d{1,3}\.){3}\d{1,3}(?::\d{1,5})?\b`)
	// ipv6Bracketed is "[v6]" with its port, if any ("[::1]:11434", "[fe80::1%eth0]").
	ipv6Bracketed = regexp.MustCompile(`(?i)\[[0-9a-f:.]*:[0-9a-f:.]*(?:%[0-9a-z._\-]+)?\](?::\d{1,5})?`)
	// ipv6Bare is an unbracketed IPv6 address written with "::" or in full (eight
	// groups); a time of day ("12:30:45") is neither.
	ipv6Bare = regexp.MustCompile(`(?i)(?:^|[^0-9a-z:])((?:[0-9a-f]{1,4}(?::[0-9a-f]{1,4}){0,6})?::(?:[0-9a-f]{1,4}(?::[0-9a-f]{1,4}){0,6})?(?:%[0-9a-z._\-]+)?|[0-9a-f]{1,4}(?::[0-9a-f]{1,4}){7})(?:[^0-9a-z:]|$)`)
	// hostPort is a named host with a port: localhost, or a dotted name whose last
	// label is not a source file's extension ("ggml.c:1234" is a line of code).
	hostPort = regexp.MustCompile(`(?i)\b(?:localhost|[a-z0-9](?:[a-z0-9\-]*[a-z0-9])?(?:\.[a-z0-9](?:[a-z0-9\-]*[a-z0-9])?)*\.(?:[a-z][a-z0-9\-]*))(:\d{1,5})\b`)
	// sourceExt are the extensions of source files whose name:line hostPort must keep.
	sourceExt = regexp.MustCompile(`(?i)\.(?:c|cc|cpp|cxx|h|hh|hpp|cu|cuh|m|mm|go|py|rs|metal|s)(:\d+)$`)
	// hostDirectory matches the directory part of an absolute path (POSIX or Windows)
	// that starts a word: after the start, a space, a quote, a bracket, '=' or ','.
	hostDirectory = regexp.MustCompile(`(^|[\s"'(\[=,])((?:/[^/\s"'()\[\],;]+)+/|[A-Za-z]:\\(?:[^\\\s"'()\[\],;]+\\)+)`)
)

// HostDetails is s with the addresses in it replaced by Address and the directories of
// its absolute paths left out (a file's own name, such as a model blob's digest, stays).
func HostDetails(s string) string {
	s = url.ReplaceAllString(s, Address)
	s = netAddr.ReplaceAllStringFunc(s, func(m string) string {
		sub := netAddr.FindStringSubmatch(m)
		addr, colon := strings.CutSuffix(sub[2], ":")
		// "a tcp connection" names no address: an address has a digit, a colon, a
		// slash or an '@' (an abstract socket); a lookup's host is a name.
		if sub[1] != "lookup" && !strings.ContainsAny(addr, "0123456789:/@[") {
			return m
		}
		if colon {
			return sub[1] + " " + Address + ":"
		}
		return sub[1] + " " + Address
	})
	s = unixPath.ReplaceAllString(s, "unix:"+Address)
	s = ipv6Bracketed.ReplaceAllString(s, Address)
	s = ipv4.ReplaceAllString(s, Address)
	s = ipv6Bare.ReplaceAllStringFunc(s, func(m string) string {
		sub := ipv6Bare.FindStringSubmatchIndex(m)
		if !strings.ContainsAny(m[sub[2]:sub[3]], "0123456789abcdefABCDEF") {
			return m // a bare "::" is no address
		}
		return m[:sub[2]] + Address + m[sub[3]:]
	})
	s = hostPort.ReplaceAllStringFunc(s, func(m string) string {
		if sourceExt.MatchString(m) {
			return m
		}
		return Address
	})
	return hostDirectory.ReplaceAllString(s, "$1")
}
