// Package pgcluster starts a throwaway PostgreSQL server in a temporary
// directory, for the PostgreSQL store's tests and the benchmark harness.
// The server listens on a unix socket only, so any number of them can run
// side by side, and nothing outside the directory is touched.
package pgcluster

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
)

// Options says how to run the server.
type Options struct {
	// Durable keeps fsync, synchronous_commit and full_page_writes on, as a
	// production server runs, for the benchmark. Tests leave it off: a
	// throwaway cluster has nothing to lose in a crash, and syncing would
	// make it slower for nothing.
	Durable bool
}

// Cluster is one running (or paused) PostgreSQL server and its directory.
type Cluster struct {
	bin     string
	dir     string // everything below is inside it; removed by Stop
	dataDir string
	sockDir string
	logPath string
	opts    Options
	cred    *syscall.Credential // nil: run as the current user
	lock    *os.File            // held until Stop; see sweep

	mu      sync.Mutex
	running *server // nil while paused or stopped
	stopped bool
}

// server is one run of the postgres process, from start to exit.
type server struct {
	pid  int
	done chan struct{} // closed when the process has exited
	err  error         // its exit status, once done is closed
}

// port is the server's port. It only names the socket file, which lives in
// the cluster's own directory, so every cluster can use the same one; it
// is passed explicitly so that a PGPORT in the environment changes nothing.
const port = "5432"

// startTimeout bounds how long a starting server may take to accept a
// connection.
const startTimeout = 20 * time.Second

// Start creates a cluster in a new temporary directory and starts its
// server, returning once it accepts connections. The caller must Stop it.
// Should the program end without doing so, the kernel stops the server,
// and a later Start removes the directory.
//
// Run as root, the server runs as the postgres user (initdb and postgres
// refuse to run as root), which must exist: Debian's postgresql package
// creates it.
func Start(opts Options) (*Cluster, error) {
	bin, err := BinDir()
	if err != nil {
		return nil, err
	}
	var cred *syscall.Credential
	if os.Geteuid() == 0 {
		if cred, err = postgresUser(); err != nil {
			return nil, err
		}
	}
	base := baseDir(cred != nil)
	sweep(base)
	dir, err := os.MkdirTemp(base, "pgcluster-")
	if err != nil {
		return nil, fmt.Errorf("pgcluster: %w", err)
	}
	lock, err := lockDir(dir)
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	c := &Cluster{
		bin:     bin,
		dir:     dir,
		dataDir: filepath.Join(dir, "data"),
		sockDir: filepath.Join(dir, "s"),
		logPath: filepath.Join(dir, "postgres.log"),
		opts:    opts,
		cred:    cred,
		lock:    lock,
	}
	err = c.create()
	if err == nil {
		err = c.start()
	}
	if err != nil {
		os.RemoveAll(dir)
		lock.Close()
		return nil, err
	}
	return c, nil
}

// lockName marks a cluster's directory as in use: the program that made
// it holds an flock on this file until Stop, and the kernel drops the lock
// when the program exits, however it exits.
const lockName = "in-use.lock"

func lockDir(dir string) (*os.File, error) {
	// Locked before it takes its name, so that sweep never sees it
	// unlocked.
	tmp := filepath.Join(dir, lockName+".new")
	f, err := os.OpenFile(tmp, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if err == nil {
		err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			err = os.Rename(tmp, filepath.Join(dir, lockName))
		}
		if err != nil {
			f.Close()
		}
	}
	if err != nil {
		return nil, fmt.Errorf("pgcluster: locking %s: %w", dir, err)
	}
	return f, nil
}

// sweep removes the directories of clusters whose program died without
// stopping them: a test binary killed by its timeout, a panic or ^C leaves
// ~40 MB behind each time. Their servers have stopped by then (see
// Pdeathsig in start); one that has not is left alone.
func sweep(base string) {
	dirs, _ := filepath.Glob(filepath.Join(base, "pgcluster-*"))
	for _, dir := range dirs {
		f, err := os.Open(filepath.Join(dir, lockName))
		if err != nil {
			continue // not ours, not ours to remove, or still being made
		}
		if syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB) == nil && !serverAlive(dir) {
			os.RemoveAll(dir)
		}
		f.Close()
	}
}

// serverAlive reports whether the server of a cluster directory may still
// be running: postgres removes postmaster.pid when it stops.
func serverAlive(dir string) bool {
	raw, err := os.ReadFile(filepath.Join(dir, "data", "postmaster.pid"))
	if err != nil {
		return !errors.Is(err, os.ErrNotExist)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(strings.SplitN(string(raw), "\n", 2)[0]))
	if err != nil {
		return true
	}
	err = syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

func postgresUser() (*syscall.Credential, error) {
	u, err := user.Lookup("postgres")
	if err != nil {
		return nil, fmt.Errorf("pgcluster: running as root, which initdb and postgres refuse, and there is no postgres user to run them as (apt-get install postgresql creates it): %w", err)
	}
	uid, err1 := strconv.ParseUint(u.Uid, 10, 32)
	gid, err2 := strconv.ParseUint(u.Gid, 10, 32)
	if err1 != nil || err2 != nil {
		return nil, fmt.Errorf("pgcluster: postgres user has uid %q, gid %q", u.Uid, u.Gid)
	}
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}, nil
}

// maxSocketDir leaves room for "/s/.s.PGSQL.5432" and the random part of
// the directory's name in a unix socket path, at most 107 bytes on Linux.
const maxSocketDir = 107 - len("/pgcluster-1234567890/s/.s.PGSQL.5432")

// baseDir is where the cluster's directory goes: the usual temporary
// directory, unless its path would make the socket's too long for a unix
// socket, or, when the server runs as the postgres user, that user could
// not reach it (a TMPDIR under /root, say). /tmp has neither problem.
func baseDir(otherUser bool) string {
	base := os.TempDir()
	if len(base) > maxSocketDir || otherUser && !traversableByAll(base) {
		return "/tmp"
	}
	return base
}

func traversableByAll(dir string) bool {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return false
	}
	for {
		fi, err := os.Stat(dir)
		if err != nil || fi.Mode().Perm()&0o001 == 0 {
			return false
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return true
		}
		dir = parent
	}
}

// create runs initdb.
func (c *Cluster) create() error {
	if err := os.Mkdir(c.sockDir, 0o700); err != nil {
		return fmt.Errorf("pgcluster: %w", err)
	}
	if c.cred != nil {
		// MkdirTemp's directory is root's and 0700: the postgres user
		// needs to create the data directory in it and the socket in s.
		for _, d := range []string{c.dir, c.sockDir} {
			if err := os.Chown(d, int(c.cred.Uid), int(c.cred.Gid)); err != nil {
				return fmt.Errorf("pgcluster: %w", err)
			}
		}
	}
	// trust: only processes that can reach the socket directory can
	// connect, and that is this program (and root). --no-sync: the
	// directory is thrown away, and a crash mid-initdb just fails Start.
	cmd := exec.Command(filepath.Join(c.bin, "initdb"),
		"-D", c.dataDir, "-A", "trust", "-U", "postgres",
		"-E", "UTF8", "--locale=C", "--no-sync")
	c.prepare(cmd)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("pgcluster: initdb: %w\n%s", err, tail(out))
	}
	return nil
}

// prepare runs cmd as the cluster's user, in its directory: postgres warns
// when it cannot read the directory it starts in (root's home, say).
func (c *Cluster) prepare(cmd *exec.Cmd) {
	cmd.Dir = c.dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: c.cred}
}

// start starts the server and waits until it accepts a connection.
func (c *Cluster) start() error {
	onOff := "off"
	if c.opts.Durable {
		onOff = "on"
	}
	cmd := exec.Command(filepath.Join(c.bin, "postgres"),
		"-D", c.dataDir,
		"-k", c.sockDir,
		"-p", port,
		"-c", "listen_addresses=",
		"-c", "fsync="+onOff,
		"-c", "synchronous_commit="+onOff,
		"-c", "full_page_writes="+onOff,
		// Tests open several pools at once, in parallel packages' worth.
		"-c", "max_connections=300",
		"-c", "shared_buffers=64MB",
	)
	c.prepare(cmd)
	// If this program dies without stopping the server (a test timeout, a
	// panic, a kill), the kernel stops it: SIGINT is a fast, clean
	// shutdown.
	cmd.SysProcAttr.Pdeathsig = syscall.SIGINT
	logf, err := os.OpenFile(c.logPath, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return fmt.Errorf("pgcluster: %w", err)
	}
	cmd.Stdout, cmd.Stderr = logf, logf

	s := &server{done: make(chan struct{})}
	started := make(chan error, 1)
	go func() {
		// The kernel sends Pdeathsig when the thread that started the
		// process exits, not the program, and Go ends threads whose
		// goroutine exits while locked to them. Holding this thread for
		// exactly the server's lifetime means it cannot go early.
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		err := cmd.Start()
		logf.Close()
		if err != nil {
			started <- err
			return
		}
		s.pid = cmd.Process.Pid
		started <- nil
		s.err = cmd.Wait()
		close(s.done)
	}()
	if err := <-started; err != nil {
		return fmt.Errorf("pgcluster: starting postgres: %w", err)
	}

	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	var lastErr error
	for {
		conn, err := pgx.Connect(ctx, c.DSN("postgres"))
		if err == nil {
			conn.Close(ctx)
			c.running = s
			return nil
		}
		lastErr = err
		select {
		case <-s.done:
			return fmt.Errorf("pgcluster: postgres exited at start (%v); its log ends:\n%s", s.err, c.logTail())
		case <-ctx.Done():
			c.shutdown(s)
			return fmt.Errorf("pgcluster: postgres accepted no connection in %v (%v); its log ends:\n%s", startTimeout, lastErr, c.logTail())
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// shutdown stops a server, fast (SIGINT: sessions are ended, no
// checkpoint wait beyond the shutdown one), harder if it hangs.
func (c *Cluster) shutdown(s *server) error {
	steps := []struct {
		sig  syscall.Signal
		wait time.Duration
	}{
		{syscall.SIGINT, 30 * time.Second},
		{syscall.SIGQUIT, 5 * time.Second},
		{syscall.SIGKILL, 5 * time.Second},
	}
	for _, step := range steps {
		if err := syscall.Kill(s.pid, step.sig); err != nil && !errors.Is(err, syscall.ESRCH) {
			return fmt.Errorf("pgcluster: signalling postgres: %w", err)
		}
		select {
		case <-s.done:
			return nil
		case <-time.After(step.wait):
		}
	}
	return fmt.Errorf("pgcluster: postgres (pid %d) did not stop", s.pid)
}

// DSN is the keyword/value connection string of database db on the
// cluster, for pgx and libpq alike.
func (c *Cluster) DSN(db string) string {
	return "host=" + quote(c.sockDir) + " port=" + port + " user=postgres dbname=" + quote(db) + " sslmode=disable"
}

// quote makes v one value of a keyword/value connection string.
func quote(v string) string {
	if v != "" && !strings.ContainsAny(v, " \t\n\r\v\f'\\") {
		return v
	}
	return "'" + strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(v) + "'"
}

// CreateDatabase creates an empty database and returns its DSN.
func (c *Cluster) CreateDatabase(ctx context.Context, name string) (string, error) {
	conn, err := pgx.Connect(ctx, c.DSN("postgres"))
	if err != nil {
		return "", fmt.Errorf("pgcluster: %w", err)
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize()); err != nil {
		return "", fmt.Errorf("pgcluster: creating database %s: %w", name, err)
	}
	return c.DSN(name), nil
}

// Pause stops the server and keeps its data: connections fail until
// Resume, as when a production database goes away under load. Open
// sessions are ended.
func (c *Cluster) Pause() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.stopped {
		return errors.New("pgcluster: Pause after Stop")
	}
	if c.running == nil {
		return nil
	}
	s := c.running
	c.running = nil
	return c.shutdown(s)
}

// Resume starts a paused server again, on the same socket with the same
// data, returning once it accepts connections.
func (c *Cluster) Resume() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.stopped {
		return errors.New("pgcluster: Resume after Stop")
	}
	if c.running != nil {
		return nil
	}
	return c.start()
}

// Stop stops the server and removes its directory. Calling it again does
// nothing.
func (c *Cluster) Stop() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.stopped {
		return nil
	}
	c.stopped = true
	var err error
	if c.running != nil {
		err = c.shutdown(c.running)
		c.running = nil
	}
	if rmErr := os.RemoveAll(c.dir); rmErr != nil && err == nil {
		err = fmt.Errorf("pgcluster: %w", rmErr)
	}
	c.lock.Close()
	return err
}

func (c *Cluster) logTail() string {
	b, err := os.ReadFile(c.logPath)
	if err != nil {
		return err.Error()
	}
	return tail(b)
}

// tail is the last lines of a process's output, enough to show why it
// failed.
func tail(b []byte) string {
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > 20 {
		lines = lines[len(lines)-20:]
	}
	return strings.Join(lines, "\n")
}
