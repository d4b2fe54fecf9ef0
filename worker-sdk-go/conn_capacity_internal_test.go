package orbit

// Internal: an assign beyond the capacity the session declared is refused as a protocol
// violation (close 1002) before any handler could run it. A real gateway never sends one, so the
// flooding assign is fed to the session's frame dispatch (the path every frame read takes) while
// a real session holds a real attempt; the real result.ok then frees the slot.

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"os"
	"testing"
	"time"

	"github.com/orbit-tasks/orbit/worker-sdk-go/client"
)

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

func TestAssignBeyondDeclaredCapacityIsRefused(t *testing.T) {
	url, token := os.Getenv("ORBIT_TEST_URL"), os.Getenv("ORBIT_TEST_TOKEN")
	if url == "" || token == "" {
		t.Fatal("ORBIT_TEST_URL and ORBIT_TEST_TOKEN must be set (test/go-sdk.test.ts)")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	api := client.New(url, token)
	id := randomHex(4)
	q, err := api.CreateQueue(ctx, "cap-q-"+id, client.CreateQueueRequest{Name: "cap-q-" + id, LeaseSeconds: 30})
	if err != nil {
		t.Fatal(err)
	}
	assigned := make(chan *TaskAssign, 4)
	c, err := Dial(ctx, DialOptions{URL: url, Token: token,
		Registration: Registration{WorkerID: "cap-" + id, Queues: []string{q.Queue.ID}, Capacity: 1},
		OnAssign:     func(_ *Conn, f *TaskAssign) { assigned <- f }})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = c.Close(1000, "done") }()
	if _, err := api.SubmitTask(ctx, "cap-t-"+id, client.SubmitTaskRequest{QueueID: q.Queue.ID, Handler: "h", HandlerVersion: "v1", PayloadVersion: "v1", Payload: []byte(`{}`)}); err != nil {
		t.Fatal(err)
	}
	var real *TaskAssign
	select {
	case real = <-assigned:
	case <-ctx.Done():
		t.Fatal("no task.assign")
	}
	flood := func() *ProtocolViolation {
		f, err := DecodeGatewayFrame([]byte(`{"type":"task.assign","attempt_id":"` + randomHex(16) + `","attempt_no":1,"lease_expires_at":"2026-01-02T03:04:05.678Z","task":{"id":"` + randomHex(16) + `","queue_id":"` + q.Queue.ID + `","handler":"h","handler_version":"v1","payload_version":"v1","payload":{},"priority":0,"deadline_at":"2026-01-02T03:04:05.678Z"}}`))
		if err != nil {
			t.Fatal(err)
		}
		return c.dispatch(f)
	}
	// The session holds one attempt at capacity 1: a second is refused, and not handed on.
	v := flood()
	if v == nil {
		t.Fatal("an assign beyond the declared capacity was accepted")
	}
	if v.CloseCode != 1002 || v.Message != "task.assign beyond the declared capacity: 1 attempts held, capacity 1" {
		t.Fatalf("violation %d %q", v.CloseCode, v.Message)
	}
	if len(assigned) != 0 {
		t.Fatal("the refused assign was handed to OnAssign")
	}
	// A repeat of the held attempt's own assign is not a new attempt.
	if v := c.dispatch(real); v != nil {
		t.Fatalf("a repeated assign of the held attempt was refused: %v", v)
	}
	<-assigned
	// The real result.ok frees the slot: the next assign fits.
	if _, err := c.Start(ctx, real.AttemptID); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Result(ctx, ResultInput{AttemptID: real.AttemptID, Outcome: "succeeded"}); err != nil {
		t.Fatal(err)
	}
	if v := flood(); v != nil {
		t.Fatalf("an assign within capacity after result.ok was refused: %v", v)
	}
	// A raised capacity raises the bound at once.
	if err := c.SetCapacity(3); err != nil {
		t.Fatal(err)
	}
	if v := flood(); v != nil {
		t.Fatalf("an assign within the raised capacity was refused: %v", v)
	}
	var pv *ProtocolViolation
	if v := flood(); v != nil || errors.As(c.Err(), &pv) {
		t.Fatalf("third assign at capacity 3: %v / %v", v, c.Err())
	}
	if v := flood(); v == nil {
		t.Fatal("a fourth assign at capacity 3 was accepted")
	}
}
