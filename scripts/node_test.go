// Package scripts holds the build's shell scripts; its tests run them with fake tools.
package scripts

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// runNodeScript runs node.sh with PATH holding only the given fake tools (shell scripts)
// and the few real ones it needs, and returns its exit status, its output and what the
// fake apt-get was asked to do.
func runNodeScript(t *testing.T, fakes map[string]string, env ...string) (int, string, string) {
	t.Helper()
	aptLog := filepath.Join(t.TempDir(), "apt-get.log")
	tools := map[string]string{}
	for name, body := range fakes {
		tools[name] = strings.ReplaceAll(body, "$APTLOG", aptLog)
	}
	code, out := runWithFakes(t, []string{"bash", "sed", "env"}, tools, env, "node.sh")
	apt, _ := os.ReadFile(aptLog)
	return code, out, strings.TrimSpace(string(apt))
}

// runWithFakes runs a script of this directory with bash and PATH holding only the
// real tools named (linked) and the fake ones (shell scripts, by name), and returns
// its exit status and output.
func runWithFakes(t *testing.T, real []string, fakes map[string]string, env []string, args ...string) (int, string) {
	t.Helper()
	bin := t.TempDir()
	for _, name := range real {
		p, err := exec.LookPath(name)
		if err != nil {
			t.Skipf("no %s: %v", name, err)
		}
		if err := os.Symlink(p, filepath.Join(bin, name)); err != nil {
			t.Fatal(err)
		}
	}
	for name, body := range fakes {
		if err := os.WriteFile(filepath.Join(bin, name), []byte("#!"+filepath.Join(bin, "bash")+"\n"+body+"\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command(filepath.Join(bin, "bash"), args...)
	cmd.Env = append([]string{"PATH=" + bin}, env...)
	out, err := cmd.CombinedOutput()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return code, string(out)
}

func fakeNode(major string) string {
	return `case "$1" in -p) echo ` + major + `;; *) echo v` + major + `.1.0;; esac`
}

func aptPolicy(major string) string {
	return `echo "nodejs:"; echo "  Installed: (none)"; echo "  Candidate: ` + major + `.20.4+dfsg-1~deb12u3"`
}

const (
	asRoot    = `echo 0`
	asUser    = `echo 1000`
	recordApt = `echo "$@" >> $APTLOG`
)

func TestNodeScript(t *testing.T) {
	for _, tc := range []struct {
		name    string
		fakes   map[string]string
		env     []string
		code    int
		apt     string // the apt-get calls, joined by newlines
		sayings []string
	}{
		{name: "node and npm present", code: 0,
			fakes: map[string]string{"node": fakeNode("22"), "npm": ``, "id": asUser}},
		{name: "skipped on request", code: 0, env: []string{"HEARTH_SKIP_NODE=1"},
			fakes:   map[string]string{"id": asUser},
			sayings: []string{"skipped"}},
		{name: "root installs Debian's packages", code: 0,
			fakes: map[string]string{"id": asRoot, "apt-cache": aptPolicy("20"), "apt-get": recordApt},
			apt:   "update -qq\ninstall -y -qq nodejs npm"},
		{name: "root installs only npm beside a new enough node", code: 0,
			fakes: map[string]string{"id": asRoot, "node": fakeNode("20"), "apt-cache": aptPolicy("18"), "apt-get": recordApt},
			apt:   "update -qq\ninstall -y -qq npm"},
		{name: "Debian's node too old: no install, says where to get one", code: 1,
			fakes:   map[string]string{"id": asRoot, "apt-cache": aptPolicy("18"), "apt-get": recordApt},
			sayings: []string{"Node.js 20 or newer", "nodejs.org", "offers Node.js 18", "HEARTH_SKIP_NODE=1"}},
		{name: "not allowed to install: prints the command", code: 1,
			fakes:   map[string]string{"id": asUser, "apt-cache": aptPolicy("20"), "apt-get": recordApt},
			sayings: []string{"sudo apt-get install -y nodejs npm", "HEARTH_SKIP_NODE=1"}},
		{name: "node on PATH too old", code: 1,
			fakes:   map[string]string{"id": asUser, "node": fakeNode("18"), "npm": ``},
			sayings: []string{"v18.1.0, too old", "need 20", "openai 7.55.0", "HEARTH_SKIP_NODE=1"}},
		{name: "node older than some packages declare: runs, and says so", code: 0,
			fakes:   map[string]string{"id": asUser, "node": fakeNode("20"), "npm": ``},
			sayings: []string{"v20.1.0 runs the tests", "declare Node.js 22", "EBADENGINE"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out, apt := runNodeScript(t, tc.fakes, tc.env...)
			if code != tc.code || apt != tc.apt {
				t.Errorf("exit %d, apt-get %q; want %d, %q; output:\n%s", code, apt, tc.code, tc.apt, out)
			}
			for _, s := range tc.sayings {
				if !strings.Contains(out, s) {
					t.Errorf("output lacks %q:\n%s", s, out)
				}
			}
		})
	}
}

// declaredMajor is the oldest Node.js major an engines.node range allows (the least of its
// alternatives' first version), 0 when it names none.
func declaredMajor(r string) int {
	least := 0
	for _, alt := range strings.Split(r, "||") {
		m := regexp.MustCompile(`\d+`).FindString(alt)
		if n, err := strconv.Atoi(m); err == nil && (least == 0 || n < least) {
			least = n
		}
	}
	return least
}

// TestNodeDeclaredVersions: node.sh's min_major, declared_major and declared_by say what
// the pinned JavaScript packages of testdata/ declare: every package (not optional) that
// declares more than min_major is named with its version in declared_by, and
// declared_major is the most any declares. A package bumped to one that declares more
// fails here, so the set-up's message stays true.
func TestNodeDeclaredVersions(t *testing.T) {
	script, err := os.ReadFile("node.sh")
	if err != nil {
		t.Fatal(err)
	}
	setting := func(name string) string {
		m := regexp.MustCompile(`(?m)^` + name + `=("?)(.*)$`).FindStringSubmatch(string(script))
		if m == nil {
			t.Fatalf("node.sh sets no %s", name)
		}
		return strings.TrimSuffix(m[2], m[1])
	}
	minMajor, _ := strconv.Atoi(setting("min_major"))
	declared, _ := strconv.Atoi(setting("declared_major"))
	declaredBy := setting("declared_by")
	locks, err := filepath.Glob("../testdata/*/package-lock.json")
	if err != nil || len(locks) < 5 {
		t.Fatalf("lock files %v: %v", locks, err)
	}
	most := minMajor
	for _, lock := range locks {
		b, err := os.ReadFile(lock)
		if err != nil {
			t.Fatal(err)
		}
		var l struct {
			Packages map[string]struct {
				Version  string          `json:"version"`
				Optional bool            `json:"optional"`
				Dev      bool            `json:"dev"`
				Engines  json.RawMessage `json:"engines"`
			} `json:"packages"`
		}
		if err := json.Unmarshal(b, &l); err != nil {
			t.Fatalf("%s: %v", lock, err)
		}
		project := filepath.Base(filepath.Dir(lock))
		for path, p := range l.Packages {
			var engines struct {
				Node string `json:"node"`
			}
			if path == "" || p.Optional || p.Dev || json.Unmarshal(p.Engines, &engines) != nil {
				continue
			}
			n := declaredMajor(engines.Node)
			if n <= minMajor {
				continue
			}
			most = max(most, n)
			name := strings.TrimPrefix(path[strings.LastIndex(path, "node_modules/"):], "node_modules/")
			if !strings.Contains(declaredBy, name+" "+p.Version) || !strings.Contains(declaredBy, "testdata/"+project) {
				t.Errorf("%s: %s %s declares node %s; node.sh's declared_by does not name it (with testdata/%s)", lock, name, p.Version, engines.Node, project)
			}
		}
	}
	// The client tests refuse an older Node.js with the same bound.
	if b, err := os.ReadFile("../server/openai_sdk_e2e_test.go"); err != nil || !strings.Contains(string(b), "const minNodeMajor = "+strconv.Itoa(minMajor)+"\n") {
		t.Errorf("server's minNodeMajor is not node.sh's min_major %d (%v)", minMajor, err)
	}
	if declared != most {
		t.Errorf("node.sh's declared_major is %d; the packages declare at most %d", declared, most)
	}
}
