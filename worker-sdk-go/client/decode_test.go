package client

// Pure tests of what the package decodes and encodes, from raw bytes: no gateway needed.

import (
	"encoding/json"
	"errors"
	"math"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestErrorEnvelope(t *testing.T) {
	raw := []byte(`{"request_id":"r1","error":{"code":"RESOURCE_BUSY","message":"queue has 1 unfinished task",` +
		`"details":{"blockers":[{"reason":"tasks","count":18446744073709551615}]}}}`)
	_, err := decodeResponse(409, "from-header", raw)
	var e *APIError
	if !errors.As(err, &e) || e.Code != CodeResourceBusy || e.Status != 409 || e.RequestID != "r1" || e.Retryable() {
		t.Fatalf("decoded %#v", err)
	}
	// Untyped details keep their numbers exact.
	count := e.Details["blockers"].([]any)[0].(map[string]any)["count"]
	if count != json.Number("18446744073709551615") {
		t.Fatalf("count %#v", count)
	}
	if CodeOf(err) != CodeResourceBusy || CodeOf(errors.New("x")) != "" {
		t.Fatal("CodeOf")
	}
	if !strings.Contains(e.Error(), "RESOURCE_BUSY (HTTP 409): queue has 1 unfinished task [request r1]") {
		t.Fatalf("message %q", e.Error())
	}
}

func TestErrorNotAnEnvelope(t *testing.T) {
	for _, c := range []struct {
		status int
		body   string
		code   string
	}{
		{502, "<html>bad gateway</html>", CodeUnavailable},
		{401, "", CodeUnauthenticated},
		{500, `{"oops":true}`, CodeInternal},
		{200, `{"request_id":"x"}`, CodeInternal}, // a success without data is not a success
		{418, "teapot", CodeInvalidArgument},
	} {
		_, err := decodeResponse(c.status, "hdr", []byte(c.body))
		var e *APIError
		if !errors.As(err, &e) || e.Code != c.code || e.Status != c.status || e.RequestID == "" {
			t.Errorf("%d %q: %#v", c.status, c.body, err)
		}
	}
	// A code newer than this package is kept as sent.
	_, err := decodeResponse(409, "", []byte(`{"request_id":"r","error":{"code":"SOMETHING_NEW","message":"m"}}`))
	if CodeOf(err) != "SOMETHING_NEW" {
		t.Fatalf("new code: %v", err)
	}
	if data, err := decodeResponse(201, "", []byte(`{"request_id":"r","data":{"a":1}}`)); err != nil || string(data) != `{"a":1}` {
		t.Fatalf("success: %s %v", data, err)
	}
}

// The constants are the codes of protocol/errors.ts, no more and no fewer, and Retryable says
// what its table says.
func TestCodesMatchProtocol(t *testing.T) {
	src, err := os.ReadFile("../../protocol/errors.ts")
	if err != nil {
		t.Fatalf("protocol/errors.ts: %v", err)
	}
	table := string(src)[strings.Index(string(src), "export const ERROR_CODES"):]
	table = table[:strings.Index(table, "} as const;")]
	var want []string
	for _, m := range regexp.MustCompile(`(?m)^  ([A-Z_]+): \{[^}]*retryable: (true|false)`).FindAllStringSubmatch(table, -1) {
		want = append(want, m[1])
		if (&APIError{Code: m[1]}).Retryable() != (m[2] == "true") {
			t.Errorf("%s: Retryable() is not %s", m[1], m[2])
		}
	}
	got := []string{CodeInvalidArgument, CodeProtocolError, CodeUnauthenticated, CodePermissionDenied, CodeNotFound,
		CodeMethodNotAllowed, CodeIdempotencyConflict, CodeStateConflict, CodeResourceBusy, CodeResourceRetired,
		CodeLeaseLost, CodeEventHistoryExpired, CodeRequestTimeout, CodePayloadTooLarge, CodeQuotaExceeded,
		CodeInternal, CodeUnavailable}
	slices.Sort(want)
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Fatalf("constants %v\nprotocol/errors.ts %v", got, want)
	}
}

func TestUint64Fields(t *testing.T) {
	var a Attempt
	if err := decodeJSON([]byte(`{"id":"a","concurrency_token":"18446744073709551615","leased_at":"2026-11-30T01:02:03.456Z"}`), &a); err != nil {
		t.Fatal(err)
	}
	if a.ConcurrencyToken == nil || *a.ConcurrencyToken != math.MaxUint64 || !a.LeasedAt.Equal(time.Date(2026, 11, 30, 1, 2, 3, 456e6, time.UTC)) {
		t.Fatalf("attempt %+v", a)
	}
	var unkeyed Attempt
	if err := decodeJSON([]byte(`{"id":"b","started_at":null}`), &unkeyed); err != nil || unkeyed.ConcurrencyToken != nil {
		t.Fatalf("unkeyed %+v %v", unkeyed, err)
	}
	var s Subscription
	if err := decodeJSON([]byte(`{"cursor":"9007199254740993","revision":"3","retired_sequence":"9007199254740993"}`), &s); err != nil ||
		s.Cursor != 9007199254740993 || s.Revision != 3 || *s.RetiredSequence != 9007199254740993 {
		t.Fatalf("subscription %+v %v", s, err)
	}
	// The wire's uint64 is a string: a JSON number is a broken server, not a value to round.
	if err := decodeJSON([]byte(`{"revision":3}`), &Queue{}); err == nil {
		t.Fatal("a JSON number was accepted as a revision")
	}
	for _, bad := range []string{`"-1"`, `"18446744073709551616"`, `"1.5"`} {
		if err := decodeJSON([]byte(`{"sequence":`+bad+`}`), &ResultEvent{}); err == nil {
			t.Errorf("sequence %s accepted", bad)
		}
	}
}

func TestRequestBodies(t *testing.T) {
	b, _ := json.Marshal(RetireResourceRequest{ExpectedRevision: math.MaxUint64, Reason: "r"})
	if string(b) != `{"expected_revision":"18446744073709551615","reason":"r"}` {
		t.Fatalf("retire %s", b)
	}
	// Zero values are left out, so the API's defaults apply; the payload is sent as given.
	b, _ = json.Marshal(BatchItem{IdempotencyKey: "k", SubmitTaskRequest: SubmitTaskRequest{QueueID: "q", Handler: "h",
		HandlerVersion: "v1", PayloadVersion: "v1", Payload: json.RawMessage(`{"n":18446744073709551615}`)}})
	want := `{"idempotency_key":"k","queue_id":"q","handler":"h","handler_version":"v1","payload_version":"v1","payload":{"n":18446744073709551615}}`
	if string(b) != want {
		t.Fatalf("batch item\n%s\nwant\n%s", b, want)
	}
	var r []BatchResult
	if err := decodeJSON([]byte(`[{"status":201,"data":{"task":{"id":"t"},"deduplicated":false}},{"status":413,"error":{"code":"PAYLOAD_TOO_LARGE","message":"m"}}]`), &r); err != nil {
		t.Fatal(err)
	}
	if r[0].Receipt.Task.ID != "t" || r[0].Err != nil || r[1].Err.Code != CodePayloadTooLarge || r[1].Err.Status != 413 || r[1].Receipt != nil {
		t.Fatalf("batch results %+v", r)
	}
	if validKey("") || validKey(strings.Repeat("k", 256)) || validKey("a b") || !validKey(strings.Repeat("~", 255)) {
		t.Fatal("validKey")
	}
}

func TestLoadCredentials(t *testing.T) {
	dir := t.TempDir()
	file := dir + "/dev.credentials.json"
	// The fields `npm start` writes.
	body := `{"url":"http://127.0.0.1:8080","token":"orb_x","application_id":"a","namespace_id":"n","environment":"dev",` +
		`"queue_id":"q1","queues":{"initial":"q1"},"scopes":["tasks:submit"],"mysql_dsn":"mysql://orbit:pw@127.0.0.1:3306/orbit"}`
	if err := os.WriteFile(file, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := LoadCredentials(file)
	if err != nil || c.Token != "orb_x" || c.QueueID != "q1" || c.Queues["initial"] != "q1" || c.MySQLDSN == "" || c.URL == "" {
		t.Fatalf("%+v %v", c, err)
	}
	if cl := c.NewClient(); cl.base != c.URL || cl.token != c.Token {
		t.Fatalf("NewClient: %+v", cl)
	}
	_ = os.WriteFile(file, []byte(`{"url":"http://x"}`), 0o600)
	if _, err := LoadCredentials(file); err == nil || !strings.Contains(err.Error(), "no token") {
		t.Fatalf("no token: %v", err)
	}
	if _, err := LoadCredentials(dir + "/missing.json"); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("missing file: %v", err)
	}
}
