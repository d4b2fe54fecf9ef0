package orbit

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"
)

// DialOptions are the options of Dial: one session, no reconnect (NewWorker does that).
type DialOptions struct {
	// URL is the gateway's base URL, http(s)://host[:port][/prefix] or ws(s)://…; the SDK appends
	// /v1/workers/connect.
	URL string
	// Token is the bearer token (scopes workers:connect and workers:consume).
	Token        string
	Registration Registration
	// KnownAttempts is what this process knows about attempts of earlier sessions, so that a resume
	// or a repeated assign that changes an attempt's key or token is refused.
	KnownAttempts map[string]KnownAttempt
	// HelloTimeout bounds the handshake and hello.ok (default 10 s).
	HelloTimeout time.Duration
	// IdleTimeout drops the session when nothing (frame or ping) arrives for this long (default
	// 45 s; the gateway pings every 15 s); negative disables.
	IdleTimeout time.Duration
	// MaxIncomingFrameBytes is the largest frame read (default 4 MiB); a larger one closes the
	// session with 1009.
	MaxIncomingFrameBytes int64
	// HTTPClient makes the handshake request (default http.DefaultClient).
	HTTPClient *http.Client

	// The session's events, called on its read goroutine in the order the gateway sent them, from
	// the first frame after hello.ok on. They must not block.
	OnAssign    func(c *Conn, f *TaskAssign)
	OnCancel    func(c *Conn, f *TaskCancel)
	OnError     func(c *Conn, f *ErrorFrame) // an error frame that answers no request
	OnGoaway    func(c *Conn, f *Goaway)
	OnViolation func(c *Conn, v *ProtocolViolation) // the gateway broke the protocol; closing with 1002
}

// Conn is one worker session (docs/worker-protocol.md): it validates every incoming frame, refuses what
// an SDK must refuse, matches replies to requests and hands the rest to the DialOptions callbacks.
type Conn struct {
	opts  DialOptions
	ws    *websocket.Conn
	hello *HelloOK
	ctx   context.Context // ends with the session
	stop  context.CancelFunc

	writeMu sync.Mutex // a request is registered and written as one step, so replies match in order
	mu      sync.Mutex
	seen    map[string]KnownAttempt
	pending map[string][]*waiter // start and result requests by attempt id
	renews  []*waiter
	drains  []*waiter
	failure error // why the session ended (a violation, a fatal error frame, an idle timeout)
	// held mirrors the gateway's count of the attempts this session holds (assigned or resumed,
	// not yet answered by result.ok, cancelled, lost or refused), and maxCapacity is the largest
	// capacity the session declared: an assign beyond it is refused (docs/worker-protocol.md,
	// "What an SDK must refuse").
	held        map[string]struct{}
	maxCapacity int
	// closeTimer forces the close a fatal error frame announced; stopped when the session ends.
	closeTimer *time.Timer
	closed     bool
	code       int
	reason     string

	lastSeen atomic.Int64 // unix nanos of the last frame or ping
	done     chan struct{}
}

type waiter struct {
	kind string // start, result, renew, drain
	ch   chan reply
}

type reply struct {
	frame GatewayFrame
	err   error
}

// Dial opens a session: handshake, hello, and hello.ok. It fails with a *GatewayError for a
// refusal (handshake status, or an error frame in answer to hello), a *ProtocolViolation for a
// bad hello.ok, a *FrameError for an invalid registration (before any I/O), and a
// *ConnectionClosedError when the gateway cannot be reached.
func Dial(ctx context.Context, opts DialOptions) (*Conn, error) {
	hello, err := helloFrame(opts.Registration)
	if err != nil {
		return nil, err
	}
	wsURL, err := connectURL(opts.URL)
	if err != nil {
		return nil, err
	}
	if opts.HelloTimeout <= 0 {
		opts.HelloTimeout = 10 * time.Second
	}
	if opts.IdleTimeout == 0 {
		opts.IdleTimeout = 45 * time.Second
	}
	if opts.MaxIncomingFrameBytes <= 0 {
		opts.MaxIncomingFrameBytes = 4 * DefaultMaxFrameBytes
	}
	hctx, cancel := context.WithTimeout(ctx, opts.HelloTimeout)
	defer cancel()
	c := &Conn{opts: opts, seen: map[string]KnownAttempt{}, pending: map[string][]*waiter{}, done: make(chan struct{}),
		held: map[string]struct{}{}, maxCapacity: opts.Registration.Capacity}
	ws, resp, err := websocket.Dial(hctx, wsURL, &websocket.DialOptions{
		HTTPClient:   opts.HTTPClient,
		HTTPHeader:   http.Header{"Authorization": {"Bearer " + opts.Token}},
		Subprotocols: []string{Subprotocol},
		OnPingReceived: func(context.Context, []byte) bool {
			c.touch() // the gateway's pings keep an idle session alive
			return true
		},
	})
	if err != nil {
		if resp != nil && resp.StatusCode != http.StatusSwitchingProtocols {
			return nil, handshakeRefusal(resp)
		}
		return nil, &ConnectionClosedError{CloseCode: 1006, Reason: err.Error()}
	}
	ws.SetReadLimit(opts.MaxIncomingFrameBytes)
	c.ws = ws
	c.ctx, c.stop = context.WithCancel(context.Background())
	for id, k := range opts.KnownAttempts {
		c.seen[id] = k
	}
	c.touch()
	if err := c.handshake(hctx, hello); err != nil {
		c.stop()
		return nil, err
	}
	go c.readLoop()
	if opts.IdleTimeout > 0 {
		go c.watchIdle()
	}
	return c, nil
}

func (c *Conn) handshake(ctx context.Context, hello []byte) error {
	fail := func(err error, code websocket.StatusCode, reason string) error {
		_ = c.ws.Close(code, reason)
		return err
	}
	if err := c.ws.Write(ctx, websocket.MessageText, hello); err != nil {
		_ = c.ws.CloseNow()
		return &ConnectionClosedError{CloseCode: 1006, Reason: err.Error()}
	}
	typ, data, err := c.ws.Read(ctx)
	if err != nil {
		_ = c.ws.CloseNow()
		if ctx.Err() != nil {
			return &GatewayError{Code: "UNAVAILABLE", Message: "no hello.ok in time", Fatal: true}
		}
		return &ConnectionClosedError{CloseCode: closeCodeOf(err), Reason: closeReasonOf(err)}
	}
	if typ != websocket.MessageText {
		return fail(&ProtocolViolation{Message: "binary frame", CloseCode: 1003}, websocket.StatusUnsupportedData, "binary frame")
	}
	f, err := DecodeGatewayFrame(data)
	if err != nil {
		return fail(err, websocket.StatusProtocolError, truncateReason(err.(*ProtocolViolation).Message))
	}
	switch f := f.(type) {
	case *ErrorFrame:
		_ = c.ws.Close(websocket.StatusProtocolError, "error before hello.ok")
		return &GatewayError{Code: f.Code, Message: f.Message, Fatal: f.Fatal}
	case *HelloOK:
		if p, id := HelloOKProblem(f, c.opts.Registration.WorkerID, c.seen); p != "" {
			return fail(&ProtocolViolation{Message: p, CloseCode: 1002, AttemptID: id}, websocket.StatusProtocolError, truncateReason(p))
		}
		c.hello = f
		for _, r := range f.Resumed {
			c.held[r.AttemptID] = struct{}{}
		}
		return nil
	default:
		msg := f.FrameType() + " before hello.ok"
		return fail(&ProtocolViolation{Message: msg, CloseCode: 1002}, websocket.StatusProtocolError, msg)
	}
}

// Hello is the session's hello.ok.
func (c *Conn) Hello() *HelloOK { return c.hello }

// Done is closed once the session is closed (whoever closed it).
func (c *Conn) Done() <-chan struct{} { return c.done }

// CloseCode is the WebSocket close code once Done is closed (1006: dropped).
func (c *Conn) CloseCode() (int, string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.code, c.reason
}

// Err is why the session ended: a *ProtocolViolation, a fatal *GatewayError, or a
// *ConnectionClosedError; nil while it is open.
func (c *Conn) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.closed {
		return nil
	}
	return c.closedErrLocked()
}

func (c *Conn) closedErrLocked() error {
	var pv *ProtocolViolation
	var ge *GatewayError
	if errors.As(c.failure, &pv) || errors.As(c.failure, &ge) {
		return c.failure
	}
	code, reason := c.code, c.reason
	if code == 0 {
		code = 1006
	}
	if reason == "" && c.failure != nil {
		reason = c.failure.Error()
	}
	return &ConnectionClosedError{CloseCode: code, Reason: reason}
}

// Start confirms the right to execute (handler code must not run before it returns). A
// *LeaseLostError when the attempt was cancelled, expired or belongs to another worker.
func (c *Conn) Start(ctx context.Context, attemptID string) (*StartOK, error) {
	b, err := startFrame(attemptID)
	if err != nil {
		return nil, err
	}
	f, err := c.request(ctx, "start", attemptID, b)
	if err != nil {
		return nil, err
	}
	return f.(*StartOK), nil
}

// Result sends a result: result.ok (Deduplicated on a re-send), a *LeaseLostError, a
// *GatewayError (STATE_CONFLICT for a different earlier result) or a *FrameError (not sent).
func (c *Conn) Result(ctx context.Context, r ResultInput) (*ResultOK, error) {
	limit := DefaultMaxFrameBytes
	if c.hello != nil {
		limit = int(c.hello.MaxFrameBytes)
	}
	b, err := resultFrame(r, limit)
	if err != nil {
		return nil, err
	}
	f, err := c.request(ctx, "result", r.AttemptID, b)
	if err != nil {
		return nil, err
	}
	return f.(*ResultOK), nil
}

// Renew extends the leases of the given attempts (1 to 1024 ids).
func (c *Conn) Renew(ctx context.Context, attemptIDs []string) (*RenewOK, error) {
	b, err := renewFrame(attemptIDs)
	if err != nil {
		return nil, err
	}
	f, err := c.request(ctx, "renew", "", b)
	if err != nil {
		return nil, err
	}
	return f.(*RenewOK), nil
}

// Drain asks the gateway to assign nothing more; it returns on drain.ok.
func (c *Conn) Drain(ctx context.Context) error {
	_, err := c.request(ctx, "drain", "", []byte(`{"type":"drain"}`))
	return err
}

// SetCapacity changes intake (0 pauses it). There is no reply.
func (c *Conn) SetCapacity(n int) error {
	b, err := capacityFrame(n)
	if err != nil {
		return err
	}
	c.writeMu.Lock()
	defer c.writeMu.Unlock()
	// Raised before it is sent: the gateway may assign up to n as soon as it reads it. A lower
	// capacity does not lower the bound: assigns granted before the gateway read it may follow.
	c.mu.Lock()
	c.maxCapacity = max(c.maxCapacity, n)
	c.mu.Unlock()
	return c.write(b)
}

// Close closes the session with code (1000 normally) and waits until it is closed.
func (c *Conn) Close(code int, reason string) error {
	c.mu.Lock()
	if c.failure == nil {
		c.failure = &ConnectionClosedError{CloseCode: code, Reason: reason}
	}
	c.mu.Unlock()
	// The close handshake waits for the gateway's close frame (at most 5 s each way); the read
	// loop ends with it.
	_ = c.ws.Close(websocket.StatusCode(code), truncateReason(reason))
	<-c.done
	return nil
}

func (c *Conn) request(ctx context.Context, kind, attemptID string, b []byte) (GatewayFrame, error) {
	w := &waiter{kind: kind, ch: make(chan reply, 1)}
	c.writeMu.Lock()
	c.mu.Lock()
	if c.closed {
		err := c.closedErrLocked()
		c.mu.Unlock()
		c.writeMu.Unlock()
		return nil, err
	}
	switch kind {
	case "renew":
		c.renews = append(c.renews, w)
	case "drain":
		c.drains = append(c.drains, w)
	default:
		c.pending[attemptID] = append(c.pending[attemptID], w)
	}
	c.mu.Unlock()
	err := c.write(b)
	c.writeMu.Unlock()
	if err != nil {
		return nil, err // the session is closing: onClosed answers the waiter too
	}
	select {
	case r := <-w.ch:
		return r.frame, r.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (c *Conn) write(b []byte) error {
	if err := c.ws.Write(c.ctx, websocket.MessageText, b); err != nil {
		c.mu.Lock()
		defer c.mu.Unlock()
		if c.closed {
			return c.closedErrLocked()
		}
		return &ConnectionClosedError{CloseCode: 1006, Reason: err.Error()}
	}
	return nil
}

// connectURL: http(s)://host[/prefix] → ws(s)://host[/prefix]/v1/workers/connect.
func connectURL(base string) (string, error) {
	u, err := url.Parse(base)
	if err != nil {
		return "", &FrameError{Code: "INVALID_ARGUMENT", Message: "gateway URL: " + err.Error()}
	}
	switch u.Scheme {
	case "http":
		u.Scheme = "ws"
	case "https":
		u.Scheme = "wss"
	case "ws", "wss":
	default:
		return "", &FrameError{Code: "INVALID_ARGUMENT", Message: fmt.Sprintf("unsupported URL scheme %q", u.Scheme)}
	}
	u.Path = strings.TrimRight(u.Path, "/") + "/v1/workers/connect"
	u.RawQuery = ""
	return u.String(), nil
}

// handshakeRefusal reads the gateway's error envelope of a refused handshake into its code.
func handshakeRefusal(resp *http.Response) error {
	code := "INVALID_ARGUMENT"
	switch {
	case resp.StatusCode == 401:
		code = "UNAUTHENTICATED"
	case resp.StatusCode == 403:
		code = "PERMISSION_DENIED"
	case resp.StatusCode >= 500:
		code = "UNAVAILABLE"
	}
	msg := fmt.Sprintf("handshake refused with HTTP %d", resp.StatusCode)
	if resp.Body != nil {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 65536))
		var env struct {
			Error struct{ Code, Message string }
		}
		if json.Unmarshal(body, &env) == nil && env.Error.Code != "" {
			code = env.Error.Code
			msg += ": " + env.Error.Message
		}
	}
	return &GatewayError{Code: code, Message: msg, Fatal: true, Status: resp.StatusCode}
}
