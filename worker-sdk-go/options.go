package orbit

import (
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"regexp"
	"time"
)

// Options are the options of NewWorker.
type Options struct {
	// URL is the gateway's base URL, http(s)://host[:port][/prefix].
	URL string
	// Token is the bearer token: a credential with workers:connect and workers:consume.
	Token string
	// CredentialsFile is a credentials file as `npm start` and `orbit-admin bootstrap
	// --worker-access --output FILE` write it: its url, token and queue_id fill URL, Token and
	// Queues where those are empty.
	CredentialsFile string
	// Queues are the queue ids to take tasks from (1 to 64).
	Queues []string
	// Capacity is how many attempts the worker runs at once at most (0 to 1024; 0 connects paused).
	Capacity int
	// Prefetch is how many attempts the worker holds beyond Capacity, leased and waiting (oldest
	// first) for a handler to finish: the session asks the gateway for Capacity + Prefetch, so a
	// freed handler starts the next task without waiting for a grant. A waiting attempt's lease is
	// renewed; it is started only when it is taken for running. At least 0, with Capacity +
	// Prefetch at most 1024 (docs/worker-protocol.md, "Prefetch"). Default 0.
	Prefetch int
	// Handlers run the tasks; only their names and versions are assigned to this worker.
	Handlers []Handler
	// WorkerID is this process's identity (default hostname-pid-random). It must not be reused by
	// another process: the concurrency_keys capability is frozen per worker id.
	WorkerID string
	// Agent is shown in GET /v1/workers (default Agent).
	Agent string
	// Logger receives the worker's records (default slog.Default()).
	Logger *slog.Logger
	// Reconnect is the backoff between connection attempts and when to give up.
	Reconnect ReconnectPolicy
	// DrainTimeout bounds how long Run waits, once its ctx is cancelled, for running handlers and
	// their results (default 30 s). Then the waiting attempts are dropped unstarted, the running
	// handlers' ctx is cancelled, and for up to 2 s more the results of the handlers that return
	// (and those already in flight) are sent and answered before the session closes; what is
	// still unfinished then is left to its lease's expiry (OnResult's Err is ErrResultNotSent for a
	// result that could not be sent).
	DrainTimeout time.Duration
	// HelloTimeout and IdleTimeout are those of each session (DialOptions).
	HelloTimeout time.Duration
	IdleTimeout  time.Duration
	// OnResult is told of every result the gateway answered (or refused, or that could not be sent:
	// Err set). Optional.
	OnResult func(ResultReport)
}

// ResultReport is what happened to one attempt's result.
type ResultReport struct {
	AttemptID    string
	Outcome      string
	TaskState    string
	Deduplicated bool
	// Err is the refusal (a *LeaseLostError, a *GatewayError) when the gateway did not take it,
	// or ErrResultNotSent when the worker stopped before it could be sent.
	Err error
}

// ErrResultNotSent is a ResultReport's Err when the worker stopped (a drain that timed out with no
// session open, a fatal error) before the result could be sent: the lease of the attempt, RUNNING
// since its start, runs out and the task goes to NEEDS_REVIEW (the effect's fate is unknown).
var ErrResultNotSent = errors.New("orbit: the worker stopped before the result was sent; the attempt's lease will run out")

// credentialsFile holds the fields of a credentials file the worker reads.
type credentialsFile struct {
	URL     string `json:"url"`
	Token   string `json:"token"`
	QueueID string `json:"queue_id"`
}

// resolve fills URL, Token and Queues from CredentialsFile and checks what cannot be sent.
func (o *Options) resolve() error {
	if o.CredentialsFile != "" && (o.URL == "" || o.Token == "" || len(o.Queues) == 0) {
		b, err := os.ReadFile(o.CredentialsFile)
		if err != nil {
			return fmt.Errorf("orbit: read the credentials file: %w", err)
		}
		var c credentialsFile
		if err := json.Unmarshal(b, &c); err != nil {
			return fmt.Errorf("orbit: credentials file %s: %w", o.CredentialsFile, err)
		}
		if o.URL == "" {
			o.URL = c.URL
		}
		if o.Token == "" {
			o.Token = c.Token
		}
		if len(o.Queues) == 0 && c.QueueID != "" {
			o.Queues = []string{c.QueueID}
		}
	}
	switch {
	case o.URL == "":
		return errors.New("orbit: Options.URL (or a credentials file with a url) is required")
	case o.Token == "":
		return errors.New("orbit: Options.Token (or a credentials file with a token) is required")
	case len(o.Handlers) == 0:
		return errors.New("orbit: at least one handler is required")
	}
	if o.WorkerID == "" {
		o.WorkerID = defaultWorkerID()
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.DrainTimeout <= 0 {
		o.DrainTimeout = 30 * time.Second
	}
	return nil
}

// prefetchProblem is the message of a Prefetch below 0 or with Capacity + Prefetch over the
// protocol's maximum; the Node SDK reports the same.
var prefetchProblem = fmt.Sprintf("invalid prefetch: must be an integer >= 0 with capacity + prefetch at most %d", MaxCapacity)

// checkPrefetch is INVALID_ARGUMENT unless prefetch fits beside capacity (itself checked by hello's).
func checkPrefetch(capacity, prefetch int) error {
	if prefetch < 0 || capacity+prefetch > MaxCapacity {
		return &FrameError{Code: "INVALID_ARGUMENT", Message: prefetchProblem}
	}
	return nil
}

// handlerTable maps handler name and version to its function, and gives hello's filter.
func handlerTable(hs []Handler) (map[string]map[string]HandlerFunc, []HandlerRegistration, error) {
	table := map[string]map[string]HandlerFunc{}
	var order []string
	for _, h := range hs {
		if h.Func == nil {
			return nil, nil, fmt.Errorf("orbit: handler %q has no Func", h.Name)
		}
		versions := h.Versions
		if len(versions) == 0 {
			versions = []string{"v1"}
		}
		if table[h.Name] == nil {
			table[h.Name] = map[string]HandlerFunc{}
			order = append(order, h.Name)
		}
		for _, v := range versions {
			if table[h.Name][v] != nil {
				return nil, nil, fmt.Errorf("orbit: handler %s@%s is registered twice", h.Name, v)
			}
			table[h.Name][v] = h.Func
		}
	}
	filter := make([]HandlerRegistration, 0, len(order))
	for _, name := range order {
		reg := HandlerRegistration{Handler: name}
		for _, h := range hs { // versions in registration order
			if h.Name != name {
				continue
			}
			if len(h.Versions) == 0 {
				reg.Versions = append(reg.Versions, "v1")
			}
			reg.Versions = append(reg.Versions, h.Versions...)
		}
		filter = append(filter, reg)
	}
	return table, filter, nil
}

var unsafeName = regexp.MustCompile(`[^A-Za-z0-9._:-]`)

// defaultWorkerID is a fresh identity per process: hostname-pid-random, within the protocol's
// 1-64 of [A-Za-z0-9._:-].
func defaultWorkerID() string {
	host, _ := os.Hostname()
	host = unsafeName.ReplaceAllString(host, "-")
	if len(host) > 32 {
		host = host[:32]
	}
	if host == "" {
		host = "worker"
	}
	return fmt.Sprintf("%s-%d-%s", host, os.Getpid(), rand.Text()[:12])
}
