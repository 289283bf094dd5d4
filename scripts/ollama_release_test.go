package scripts

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// runReleaseScript runs ollama-release.sh for a release that needs Debian's llama.cpp
// tools, with fake go (it writes the binary), apt-cache (it prints policy) and apt-get
// (it saves the sources list apt was given and stops the script there), and returns the
// exit status, the output and that sources list.
func runReleaseScript(t *testing.T, policy string, env ...string) (int, string, string) {
	t.Helper()
	saved := filepath.Join(t.TempDir(), "sources.list")
	policyFile := filepath.Join(t.TempDir(), "policy")
	if err := os.WriteFile(policyFile, []byte(policy), 0o644); err != nil {
		t.Fatal(err)
	}
	fakes := map[string]string{
		"go":        `mkdir -p "$GOBIN" && : >"$GOBIN/ollama"`,
		"apt-cache": `[ "$1" = policy ] && cat ` + policyFile,
		// apt-get update: keep the sources list it was pointed at, then fail so that
		// the script stops before downloading anything.
		"apt-get": `for a in "$@"; do case "$a" in Dir::Etc::SourceList=*) cat "${a#Dir::Etc::SourceList=}" >` + saved + `;; esac; done; exit 7`,
	}
	code, out := runWithFakes(t, []string{"bash", "sed", "awk", "mkdir", "cat", "dirname"}, fakes, env, "ollama-release.sh", "0.32.15", t.TempDir())
	list, _ := os.ReadFile(saved)
	return code, out, strings.TrimSpace(string(list))
}

// A system's apt policy: a security archive first, then a Debian archive, then a
// third-party one.
const debianPolicy = `Package files:
 100 /var/lib/dpkg/status
     release a=now
 500 https://mirror.example.org/debian-security bookworm-security/main amd64 Packages
     release v=12,o=Debian,a=oldstable-security,n=bookworm-security,l=Debian-Security,c=main,b=amd64
     origin mirror.example.org
 500 https://mirror.example.org/debian bookworm/main amd64 Packages
     release v=12.15,o=Debian,a=oldstable,n=bookworm,l=Debian,c=main,b=amd64
     origin mirror.example.org
 500 https://deb.example.com/node nodistro/main amd64 Packages
     release o=node,a=nodistro,n=nodistro,l=node,c=main,b=amd64
     origin deb.example.com
Pinned packages:
`

// TestOllamaReleaseDebianArchive: the script takes its Debian archive from the system's
// apt sources, or from DEBIAN_ARCHIVE, and names no archive of its own.
func TestOllamaReleaseDebianArchive(t *testing.T) {
	const keyring = "/usr/share/keyrings/debian-archive-keyring.gpg"
	code, out, list := runReleaseScript(t, debianPolicy)
	if code != 7 || list != "deb [signed-by="+keyring+"] https://mirror.example.org/debian sid main" {
		t.Errorf("from the system's sources: exit %d, sources %q; output:\n%s", code, list, out)
	}

	code, out, list = runReleaseScript(t, debianPolicy, "DEBIAN_ARCHIVE=http://proxy.lan:3142/debian", "DEBIAN_SUITE=unstable", "DEBIAN_KEYRING=/k.gpg")
	if code != 7 || list != "deb [signed-by=/k.gpg] http://proxy.lan:3142/debian unstable main" {
		t.Errorf("DEBIAN_ARCHIVE set: exit %d, sources %q; output:\n%s", code, list, out)
	}

	// A system whose apt knows no Debian archive (Ubuntu, or no package lists yet).
	code, out, list = runReleaseScript(t, strings.ReplaceAll(strings.ReplaceAll(debianPolicy, "o=Debian", "o=Ubuntu"), "l=Debian", "l=Ubuntu"))
	if code != 1 || list != "" || !strings.Contains(out, "set DEBIAN_ARCHIVE") {
		t.Errorf("no Debian archive: exit %d, sources %q; output:\n%s", code, list, out)
	}

	script, err := os.ReadFile("ollama-release.sh")
	if err != nil {
		t.Fatal(err)
	}
	for _, host := range []string{"deb.debian.org", "ftp.debian.org", "snapshot.debian.org"} {
		if strings.Contains(string(script), host) {
			t.Errorf("ollama-release.sh names the archive %s", host)
		}
	}
}
