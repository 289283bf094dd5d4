// Package pgtest gives tests a real PostgreSQL: a throwaway cluster started from the
// PostgreSQL binaries on the machine (initdb into a temporary directory, the server on
// a loopback port), or the server HEARTH_TEST_POSTGRES names. It is a harness: any test
// that needs PostgreSQL (the store's conformance tests, server and command tests over
// several replicas) imports it.
//
// A package's TestMain calls Main, which stops the cluster after the tests; each test
// asks for a new, empty database with NewDatabase. Where no PostgreSQL can be had, the
// test is skipped with the reason, unless HEARTH_TEST_POSTGRES_REQUIRED is set (make
// test sets it), which makes it fail; HEARTH_SKIP_POSTGRES=1 skips without looking.
//
// The binaries are looked up on PATH (initdb), then under /usr/lib/postgresql/*/bin
// (Debian's layout). When none are there and the process runs as root with apt-get, it
// installs Debian's postgresql package, as scripts/cgo-headers.sh installs the build's
// C headers; otherwise it says what to install. initdb refuses to run as root, so as
// root the cluster runs as the unprivileged user nobody, owning its directory.
package pgtest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// Env names the variables the harness reads.
const (
	// EnvURL points the tests at an existing server (postgres://user@host/db); each
	// test then gets a database created on it, and dropped after.
	EnvURL = "HEARTH_TEST_POSTGRES"
	// EnvRequired makes a test fail, not skip, when no PostgreSQL can be had.
	EnvRequired = "HEARTH_TEST_POSTGRES_REQUIRED"
	// EnvSkip (=1) skips the tests that need PostgreSQL without looking for it.
	EnvSkip = "HEARTH_SKIP_POSTGRES"
)

// Cluster is a PostgreSQL server the tests of one package share.
type Cluster struct {
	// admin is a URL of the maintenance database, to create and drop test databases.
	admin   *url.URL
	owned   bool // started here: stopped and removed by Close
	dir     string
	args    []string // the postmaster's command line
	server  *exec.Cmd
	exited  chan struct{}
	created atomic.Int64
}

var (
	shared     *Cluster
	sharedErr  error
	sharedOnce sync.Once
)

// Main runs the package's tests and then stops the cluster they started, if any:
//
//	func TestMain(m *testing.M) { pgtest.Main(m) }
func Main(m *testing.M) {
	code := m.Run()
	Stop()
	os.Exit(code)
}

// Stop stops the cluster Shared started, if any: for a TestMain that does more than
// Main.
func Stop() {
	if shared != nil {
		if err := shared.Close(); err != nil {
			fmt.Fprintln(os.Stderr, "pgtest:", err)
		}
	}
}

// Shared returns the package's cluster, starting it on first use. Where none can be
// had, t is skipped (or failed under HEARTH_TEST_POSTGRES_REQUIRED) with the reason.
func Shared(t testing.TB) *Cluster {
	t.Helper()
	if os.Getenv(EnvSkip) == "1" {
		t.Skipf("%s=1: skipping a test that needs PostgreSQL", EnvSkip)
	}
	sharedOnce.Do(func() { shared, sharedErr = Start() })
	if sharedErr != nil {
		if os.Getenv(EnvRequired) != "" {
			t.Fatalf("PostgreSQL for tests: %v", sharedErr)
		}
		t.Skipf("no PostgreSQL for tests (%v); set %s to a server, or %s=1 to fail instead of skipping",
			sharedErr, EnvURL, EnvRequired)
	}
	return shared
}

// Own starts a cluster for test t alone, stopped when t ends, for a test that takes its
// database down (Cluster.Down) or measures without other tests' load. Like Shared, it
// skips t (or fails it) where no PostgreSQL can be had. Under HEARTH_TEST_POSTGRES it
// returns that server, which Down refuses.
func Own(t testing.TB) *Cluster {
	t.Helper()
	return own(t, false)
}

// OwnDurable is Own with PostgreSQL's durable defaults (fsync, synchronous commit and
// full-page writes on), for a benchmark that weighs PostgreSQL's writes against
// SQLite's, which wait for an fsync at every commit.
func OwnDurable(t testing.TB) *Cluster {
	t.Helper()
	return own(t, true)
}

func own(t testing.TB, durable bool) *Cluster {
	t.Helper()
	if os.Getenv(EnvSkip) == "1" {
		t.Skipf("%s=1: skipping a test that needs PostgreSQL", EnvSkip)
	}
	c, err := start(durable)
	if err != nil {
		if os.Getenv(EnvRequired) != "" {
			t.Fatalf("PostgreSQL for tests: %v", err)
		}
		t.Skipf("no PostgreSQL for tests (%v); set %s to a server, or %s=1 to fail instead of skipping",
			err, EnvURL, EnvRequired)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// NewDatabase creates a new, empty database on the package's cluster for test t and
// returns its URL; the database is dropped when t ends (with a cluster started here
// it goes with the cluster).
func NewDatabase(t testing.TB) string {
	t.Helper()
	c := Shared(t)
	u, err := c.CreateDatabase(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if !c.owned {
		t.Cleanup(func() {
			if err := c.DropDatabase(context.Background(), u); err != nil {
				t.Logf("pgtest: %v", err)
			}
		})
	}
	return u
}

// Start starts a throwaway cluster, or connects to HEARTH_TEST_POSTGRES when set.
func Start() (*Cluster, error) { return start(false) }

func start(durable bool) (*Cluster, error) {
	if s := os.Getenv(EnvURL); s != "" {
		u, err := url.Parse(s)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", EnvURL, err)
		}
		c := &Cluster{admin: u}
		if err := c.ping(context.Background()); err != nil {
			return nil, fmt.Errorf("%s: %w", EnvURL, err)
		}
		return c, nil
	}
	bin, err := findBinaries()
	if err != nil {
		return nil, err
	}
	return startCluster(bin, durable)
}

// findBinaries returns the directory of initdb and postgres, installing Debian's
// package when it can.
func findBinaries() (string, error) {
	if p, err := exec.LookPath("initdb"); err == nil {
		return filepath.Dir(p), nil
	}
	look := func() string {
		dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
		sort.Slice(dirs, func(i, j int) bool { return version(dirs[i]) > version(dirs[j]) })
		for _, d := range dirs {
			if _, err := os.Stat(filepath.Join(d, "initdb")); err == nil {
				return d
			}
		}
		return ""
	}
	if d := look(); d != "" {
		return d, nil
	}
	if os.Geteuid() == 0 {
		if _, err := exec.LookPath("apt-get"); err == nil {
			fmt.Fprintln(os.Stderr, "pgtest: installing postgresql with apt-get")
			cmd := exec.Command("sh", "-c", "apt-get update -qq && apt-get install -y -qq postgresql")
			cmd.Env = append(os.Environ(), "DEBIAN_FRONTEND=noninteractive")
			if out, err := cmd.CombinedOutput(); err != nil {
				return "", fmt.Errorf("apt-get install postgresql: %v\n%s", err, out)
			}
			if d := look(); d != "" {
				return d, nil
			}
		}
	}
	return "", errors.New("no PostgreSQL binaries (initdb) on PATH or under /usr/lib/postgresql; install them (Debian: apt-get install postgresql)")
}

// version is the major version in a /usr/lib/postgresql/N/bin path.
func version(dir string) int {
	n, _ := strconv.Atoi(filepath.Base(filepath.Dir(dir)))
	return n
}

// fastSettings trade durability for speed in a test cluster, whose data outlives no
// test; a durable cluster keeps PostgreSQL's defaults.
var fastSettings = []string{"fsync=off", "synchronous_commit=off", "full_page_writes=off"}

func startCluster(bin string, durable bool) (c *Cluster, err error) {
	dir, err := os.MkdirTemp("", "hearth-pg-")
	if err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			os.RemoveAll(dir)
		}
	}()
	if err := ownForServer(dir); err != nil {
		return nil, err
	}
	data := filepath.Join(dir, "data")
	initdb := exec.Command(filepath.Join(bin, "initdb"), "-D", data, "-U", "postgres", "--auth=trust",
		"--no-sync", "--locale=C", "--encoding=UTF8")
	runAsServer(initdb)
	if out, err := initdb.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("initdb: %v\n%s", err, out)
	}
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	args := []string{filepath.Join(bin, "postgres"), "-D", data, "-p", strconv.Itoa(port),
		"-k", dir, "-c", "listen_addresses=127.0.0.1", "-c", "max_connections=200"}
	if !durable {
		for _, s := range fastSettings {
			args = append(args, "-c", s)
		}
	}
	c = &Cluster{owned: true, dir: dir, args: args,
		admin: &url.URL{Scheme: "postgres", User: url.User("postgres"), Host: "127.0.0.1:" + strconv.Itoa(port),
			Path: "/postgres", RawQuery: "sslmode=disable"}}
	if err := c.startServer(); err != nil {
		return nil, err
	}
	return c, nil
}

// startServer starts the postmaster of a cluster started here and waits until it
// answers.
func (c *Cluster) startServer() error {
	logFile, err := os.OpenFile(filepath.Join(c.dir, "server.log"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	defer logFile.Close()
	server := exec.Command(c.args[0], c.args[1:]...)
	server.Stdout, server.Stderr = logFile, logFile
	runAsServer(server)
	if err := server.Start(); err != nil {
		return fmt.Errorf("start postgres: %w", err)
	}
	c.server, c.exited = server, make(chan struct{})
	exited := c.exited
	go func() { server.Wait(); close(exited) }()
	deadline := time.Now().Add(30 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		err := c.ping(ctx)
		cancel()
		if err == nil {
			return nil
		}
		select {
		case <-exited:
			log, _ := os.ReadFile(filepath.Join(c.dir, "server.log"))
			return fmt.Errorf("postgres exited: %s", log)
		default:
		}
		if time.Now().After(deadline) {
			c.stopServer()
			return fmt.Errorf("postgres did not answer within 30s: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func (c *Cluster) ping(ctx context.Context) error {
	conn, err := pgx.Connect(ctx, c.admin.String())
	if err != nil {
		return err
	}
	return conn.Close(ctx)
}

// URL returns the URL of the cluster's maintenance database.
func (c *Cluster) URL() string { return c.admin.String() }

// CreateDatabase creates a new, empty database and returns its URL.
func (c *Cluster) CreateDatabase(ctx context.Context) (string, error) {
	name := fmt.Sprintf("hearth_test_%d_%d", os.Getpid(), c.created.Add(1))
	conn, err := pgx.Connect(ctx, c.admin.String())
	if err != nil {
		return "", err
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+name); err != nil {
		return "", fmt.Errorf("create database %s: %w", name, err)
	}
	u := *c.admin
	u.Path = "/" + name
	return u.String(), nil
}

// DropDatabase drops a database CreateDatabase made, closing its connections.
func (c *Cluster) DropDatabase(ctx context.Context, dbURL string) error {
	u, err := url.Parse(dbURL)
	if err != nil {
		return err
	}
	name := strings.TrimPrefix(u.Path, "/")
	if !strings.HasPrefix(name, "hearth_test_") {
		return fmt.Errorf("refusing to drop %q: not a test database", name)
	}
	conn, err := pgx.Connect(ctx, c.admin.String())
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	_, err = conn.Exec(ctx, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)")
	return err
}

// Close stops a cluster started here and removes its directory.
func (c *Cluster) Close() error {
	if !c.owned {
		return nil
	}
	c.stopServer()
	return os.RemoveAll(c.dir)
}

// Owned reports whether the cluster was started here (and so can be taken Down), not
// the server HEARTH_TEST_POSTGRES names.
func (c *Cluster) Owned() bool { return c.owned }

// Down stops the server of a cluster started here (a fast shutdown: its clients'
// connections break) and returns a function that starts it again on the same port,
// with its data, and waits until it answers: for tests of a database that restarts or
// goes away. A test that takes a cluster down starts its own (Start), so that it does
// not disturb other tests.
func (c *Cluster) Down() (up func() error, err error) {
	if !c.owned {
		return nil, errors.New("pgtest: only a cluster started here can be taken down")
	}
	c.stopServer()
	return c.startServer, nil
}

func (c *Cluster) stopServer() {
	signalStop(c.server)
	select {
	case <-c.exited:
	case <-time.After(15 * time.Second):
		c.server.Process.Kill()
		<-c.exited
	}
}

// Exec runs SQL statements on the database at dbURL, one after another, for a test that
// arranges a database's state (roles, rows) without importing the driver itself.
func Exec(ctx context.Context, dbURL string, statements ...string) error {
	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	for _, q := range statements {
		if _, err := conn.Exec(ctx, q); err != nil {
			return fmt.Errorf("%s: %w", q, err)
		}
	}
	return nil
}

// ServerPID is the process id of a cluster's postmaster (0 for a server not started
// here): a benchmark adds up the CPU time of it and its children, PostgreSQL's own work.
func (c *Cluster) ServerPID() int {
	if !c.owned || c.server == nil || c.server.Process == nil {
		return 0
	}
	return c.server.Process.Pid
}

// QueryInt runs a query that returns one integer on the database at dbURL, for a test
// or benchmark that reads the server's statistics without importing the driver.
func QueryInt(ctx context.Context, dbURL, query string) (int64, error) {
	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		return 0, err
	}
	defer conn.Close(ctx)
	var n int64
	err = conn.QueryRow(ctx, query).Scan(&n)
	return n, err
}
