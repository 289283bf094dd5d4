package server

import (
	"fmt"
	"net/netip"
	"strings"

	"github.com/gin-gonic/gin"
)

// The client's address is what a rate limit without keys is kept by (admission's
// fairness key) and what the request log names. It is the connection's peer, unless
// the peer is a reverse proxy the operator named in Config.TrustedProxies: then it is
// the address that proxy put in X-Forwarded-For (the rightmost one not itself a
// trusted proxy) or X-Real-IP. Gin trusts every peer's headers unless told otherwise,
// which let any client pick a new address, and so a new rate bucket, per request.
// Everything in hearth that needs the client's address asks clientAddr.

// CheckTrustedProxies reports whether each entry is an IP address or a CIDR range,
// naming the first that is not.
func CheckTrustedProxies(list []string) error {
	for _, p := range list {
		p = strings.TrimSpace(p)
		var err error
		if strings.Contains(p, "/") {
			_, err = netip.ParsePrefix(p)
		} else {
			_, err = netip.ParseAddr(p)
		}
		if err != nil {
			return fmt.Errorf("%q is not an IP address or a CIDR range (such as 10.0.0.0/8)", p)
		}
	}
	return nil
}

// trustProxies configures r to believe forwarding headers from list alone; none when
// list is empty or does not parse (cmd/hearth refuses such a list before it gets here).
func (s *Server) trustProxies(r *gin.Engine, list []string) {
	var trusted []string
	for _, p := range list {
		if p = strings.TrimSpace(p); p != "" {
			trusted = append(trusted, p)
		}
	}
	if err := CheckTrustedProxies(trusted); err != nil {
		s.log.Error("trusted proxies ignored: forwarding headers are believed from no one", "error", err)
		trusted = nil
	}
	if len(trusted) == 0 {
		trusted = nil // gin: nil trusts no one
	}
	if err := r.SetTrustedProxies(trusted); err != nil {
		s.log.Error("trusted proxies ignored: forwarding headers are believed from no one", "error", err)
		r.SetTrustedProxies(nil)
	}
	r.ForwardedByClientIP = true
	r.RemoteIPHeaders = []string{"X-Forwarded-For", "X-Real-IP"}
	r.TrustedPlatform = ""
}

// clientAddr is the client's address, as the trusted proxies let it be known.
func clientAddr(c *gin.Context) string { return c.ClientIP() }
