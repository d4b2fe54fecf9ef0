package client

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
)

// Client calls the Orbit HTTP API with one credential. It is safe for concurrent use.
type Client struct {
	base      string
	token     string
	http      *http.Client
	userAgent string
}

// Option configures a Client.
type Option func(*Client)

// WithHTTPClient sets the HTTP client (transport, proxy, TLS). The default is
// http.DefaultClient; deadlines come from each call's context.
func WithHTTPClient(h *http.Client) Option { return func(c *Client) { c.http = h } }

// WithUserAgent sets the User-Agent header, so that the gateway's logs name the caller.
func WithUserAgent(ua string) Option { return func(c *Client) { c.userAgent = ua } }

// New returns a client for the gateway at baseURL (e.g. "http://127.0.0.1:8080", without /v1)
// authenticating with token.
func New(baseURL, token string, opts ...Option) *Client {
	c := &Client{base: strings.TrimRight(baseURL, "/"), token: token, http: http.DefaultClient, userAgent: "orbit-go-client"}
	for _, o := range opts {
		o(c)
	}
	return c
}

// get reads path (with an optional query) into out.
func (c *Client) get(ctx context.Context, path string, q url.Values, out any) error {
	if len(q) > 0 {
		path += "?" + q.Encode()
	}
	return c.do(ctx, http.MethodGet, path, "", nil, out)
}

// command sends a receipt-bearing POST. The key is the command's identity: a retry of the same
// command must reuse it, which only the caller can do, so there is no default.
func (c *Client) command(ctx context.Context, path, idempotencyKey string, body, out any) error {
	if !validKey(idempotencyKey) {
		return &APIError{Code: CodeInvalidArgument, Details: map[string]any{"field": "Idempotency-Key"},
			Message: "an idempotency key of 1-255 visible ASCII characters (0x21-0x7E) is required for every command"}
	}
	return c.do(ctx, http.MethodPost, path, idempotencyKey, body, out)
}

// post sends a POST that is not a receipt-bearing command (batch submit, lease, ack): the API
// refuses an Idempotency-Key there.
func (c *Client) post(ctx context.Context, path string, body, out any) error {
	return c.do(ctx, http.MethodPost, path, "", body, out)
}

func (c *Client) do(ctx context.Context, method, path, idempotencyKey string, body, out any) error {
	var reader io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return fmt.Errorf("orbit: %s %s: encoding the body: %w", method, path, err)
		}
		reader = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, reader)
	if err != nil {
		return fmt.Errorf("orbit: %s %s: %w", method, path, err)
	}
	req.Header.Set("Authorization", "Bearer "+c.token)
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", c.userAgent)
	if body != nil {
		req.Header.Set("Content-Type", "application/json; charset=utf-8")
	}
	if idempotencyKey != "" {
		req.Header.Set("Idempotency-Key", idempotencyKey)
	}
	res, err := c.http.Do(req)
	if err != nil {
		// The command may or may not have been accepted: retrying with the same key is safe.
		return fmt.Errorf("orbit: %s %s: %w", method, path, err)
	}
	defer res.Body.Close()
	raw, err := io.ReadAll(res.Body)
	if err != nil {
		return fmt.Errorf("orbit: %s %s: reading the response: %w", method, path, err)
	}
	data, err := decodeResponse(res.StatusCode, res.Header.Get("X-Request-Id"), raw)
	if err != nil {
		return err
	}
	if err := decodeJSON(data, out); err != nil {
		return fmt.Errorf("orbit: %s %s: decoding the response: %w", method, path, err)
	}
	return nil
}

// validKey is the rule of the Idempotency-Key header: 1-255 characters in 0x21-0x7E.
func validKey(k string) bool {
	if len(k) == 0 || len(k) > 255 {
		return false
	}
	for i := 0; i < len(k); i++ {
		if k[i] < 0x21 || k[i] > 0x7e {
			return false
		}
	}
	return true
}

// seg escapes an id for a path segment: ids are hex, but a caller's typo must not change the path.
func seg(id string) string { return url.PathEscape(id) }

// query builds a query string from name/value pairs, leaving out empty values (the API's
// defaults apply to what is not sent).
func query(pairs ...string) url.Values {
	q := url.Values{}
	for i := 0; i+1 < len(pairs); i += 2 {
		if pairs[i+1] != "" {
			q.Set(pairs[i], pairs[i+1])
		}
	}
	return q
}

// itoa is strconv.Itoa with 0 as "not set".
func itoa(n int) string {
	if n == 0 {
		return ""
	}
	return strconv.Itoa(n)
}

// Page is how list calls are paged: Limit 1-500 (0: the server's default of 100), Cursor from
// the previous page's NextCursor ("" for the first page).
type Page struct {
	Limit  int
	Cursor string
}

// orNil returns v, or nil when err is set, so that a failed call never hands back a zero value
// that looks like an answer. Used as orNil(&out, c.get(..., &out)): the pointer is the same
// whenever it is taken, and the call fills what it points to.
func orNil[T any](v *T, err error) (*T, error) {
	if err != nil {
		return nil, err
	}
	return v, nil
}
