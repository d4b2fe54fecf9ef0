// Package examplekit is what the Go examples share (the Go twin of examples/example-kit.ts): the
// credentials file that `npm start` writes, overridden by ORBIT_URL / ORBIT_TOKEN, the database
// of the example's resource, and the way an example ends: a problem is one clear line on stderr
// and exit status 1, within a deadline.
package examplekit

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/orbit-tasks/orbit/worker-sdk-go/client"
)

// Failure is an expected problem, reported as its message alone.
type Failure struct{ Msg string }

func (f *Failure) Error() string { return f.Msg }

// Failf returns a Failure.
func Failf(format string, args ...any) error { return &Failure{Msg: fmt.Sprintf(format, args...)} }

// Settings are the gateway, token and credentials file an example runs with, a client for them,
// and this run's id (base-36 time and random hex): the names and idempotency keys of one run are
// unique, so running an example twice replays nothing.
type Settings struct {
	URL   string
	Token string
	Creds *client.Credentials
	API   *client.Client
	RunID string
}

// Load reads ORBIT_CREDENTIALS_FILE (default ../.orbit/dev.credentials.json: the examples run
// from worker-sdk-go/, `npm start` runs from the repository root), then ORBIT_URL and ORBIT_TOKEN.
func Load() (*Settings, error) {
	file := os.Getenv("ORBIT_CREDENTIALS_FILE")
	if file == "" {
		home := os.Getenv("ORBIT_HOME")
		if home == "" {
			home = filepath.Join("..", ".orbit")
		}
		file = filepath.Join(home, "dev.credentials.json")
	}
	abs, _ := filepath.Abs(file)
	c, err := client.LoadCredentials(file)
	if err != nil {
		return nil, Failf("cannot read ORBIT_CREDENTIALS_FILE %s: %v (run `npm start` in the repository root, or `orbit-admin bootstrap --worker-access --output FILE`)", abs, err)
	}
	s := &Settings{URL: c.URL, Token: c.Token, Creds: c}
	if v := os.Getenv("ORBIT_URL"); v != "" {
		s.URL = v
	}
	if v := os.Getenv("ORBIT_TOKEN"); v != "" {
		s.Token = v
	}
	if s.URL == "" {
		return nil, Failf("ORBIT_URL is not set and the credentials file has no \"url\"")
	}
	s.API = client.New(s.URL, s.Token)
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	s.RunID = strconv.FormatInt(time.Now().UnixMilli(), 36) + "-" + hex.EncodeToString(b)
	return s, nil
}

// MySQLDSN is the database of an example's resource in go-sql-driver form: ORBIT_EXAMPLE_MYSQL_DSN,
// else the credentials file's mysql_dsn, else ORBIT_MYSQL_DSN, else the embedded database of
// `npm start` (found through ORBIT_HOME/mysql/mysqld.pid). Each may be a mysql:// URL or already
// in go-sql-driver form (user:pass@tcp(host:port)/db).
func (s *Settings) MySQLDSN() (string, error) {
	for _, d := range []string{os.Getenv("ORBIT_EXAMPLE_MYSQL_DSN"), s.Creds.MySQLDSN, os.Getenv("ORBIT_MYSQL_DSN"), embeddedDSN()} {
		if d != "" {
			return goDSN(d)
		}
	}
	return "", Failf("no MySQL database for the fenced resource: set ORBIT_EXAMPLE_MYSQL_DSN=mysql://user:pass@host:port/db")
}

func goDSN(d string) (string, error) {
	if !strings.HasPrefix(d, "mysql://") {
		return d, nil
	}
	u, err := url.Parse(d)
	if err != nil {
		return "", Failf("ORBIT_EXAMPLE_MYSQL_DSN must be mysql://user:pass@host:port/db")
	}
	pass, _ := u.User.Password()
	host := u.Host
	if u.Port() == "" {
		host += ":3306"
	}
	return fmt.Sprintf("%s:%s@tcp(%s)/%s", u.User.Username(), pass, host, strings.TrimPrefix(u.Path, "/")), nil
}

// embeddedDSN is the database of `npm start`: its port is on the server's command line.
func embeddedDSN() string {
	home := os.Getenv("ORBIT_HOME")
	if home == "" {
		home = filepath.Join("..", ".orbit")
	}
	pid, err := os.ReadFile(filepath.Join(home, "mysql", "mysqld.pid"))
	if err != nil {
		return ""
	}
	cmd, err := os.ReadFile("/proc/" + strings.TrimSpace(string(pid)) + "/cmdline")
	if err != nil {
		return ""
	}
	for _, a := range strings.Split(string(cmd), "\x00") {
		if p, ok := strings.CutPrefix(a, "--port="); ok {
			return "orbit:orbit-local@tcp(127.0.0.1:" + p + ")/orbit"
		}
	}
	return ""
}

// RunMain runs main under a deadline: exit 0 when it returns nil, 1 with one line `<name>: <reason>`
// on stderr when it returns an error or the deadline passes.
func RunMain(name string, deadline time.Duration, main func(ctx context.Context) error) {
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	timer := time.AfterFunc(deadline, func() {
		fmt.Fprintf(os.Stderr, "%s: not finished within %v\n", name, deadline)
		os.Exit(1)
	})
	err := main(ctx)
	timer.Stop()
	cancel()
	if err != nil {
		var f *Failure
		if errors.As(err, &f) {
			fmt.Fprintf(os.Stderr, "%s: %s\n", name, f.Msg)
		} else {
			fmt.Fprintf(os.Stderr, "%s: %v\n", name, err)
		}
		os.Exit(1)
	}
}
