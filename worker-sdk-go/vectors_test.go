package orbit

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"testing"
)

// The shared conformance vectors (protocol/vectors/, also read by the Node SDK's
// test/sdk-vectors.test.ts) through the Go SDK's decoder and checks.

type vectorSession struct {
	WorkerID        string `json:"worker_id"`
	ConcurrencyKeys bool   `json:"concurrency_keys"`
	Known           map[string]struct {
		Key   *string `json:"concurrency_key"`
		Token *string `json:"concurrency_token"`
	} `json:"known"`
}

type gatewayVector struct {
	Name    string        `json:"name"`
	Session vectorSession `json:"session"`
	Frame   string        `json:"frame"`
	Expect  struct {
		OK      bool    `json:"ok"`
		Type    string  `json:"type"`
		Token   *string `json:"concurrency_token"`
		Stage   string  `json:"stage"`
		Code    string  `json:"code"`
		Close   int     `json:"close"`
		Message *string `json:"message"`
	} `json:"expect"`
}

type workerVector struct {
	Name   string `json:"name"`
	Frame  string `json:"frame"`
	Expect struct {
		OK      bool   `json:"ok"`
		SDKCode string `json:"sdk_code"`
	} `json:"expect"`
}

func loadVectors[T any](t *testing.T, file string) []T {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "protocol", "vectors", file))
	if err != nil {
		t.Fatalf("read the shared vectors: %v", err)
	}
	var doc struct{ Vectors []T }
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatalf("parse %s: %v", file, err)
	}
	if len(doc.Vectors) < 20 {
		t.Fatalf("%s has only %d vectors", file, len(doc.Vectors))
	}
	return doc.Vectors
}

// gatewayOutcome is what a session does with one frame: the decoded frame, or the refusal with
// its stage (schema: DecodeGatewayFrame; check: the SDK's own checks).
func gatewayOutcome(v gatewayVector) (GatewayFrame, string, *ProtocolViolation) {
	f, err := DecodeGatewayFrame([]byte(v.Frame))
	if err != nil {
		var pv *ProtocolViolation
		if !errors.As(err, &pv) {
			panic("DecodeGatewayFrame returned a non-violation error: " + err.Error())
		}
		return nil, "schema", pv
	}
	known := map[string]KnownAttempt{}
	for id, k := range v.Session.Known {
		known[id] = KnownAttempt{ConcurrencyKey: k.Key, ConcurrencyToken: k.Token}
	}
	switch f := f.(type) {
	case *TaskAssign:
		var prev *KnownAttempt
		if k, ok := known[f.AttemptID]; ok {
			prev = &k
		}
		if p := AssignProblem(f, v.Session.ConcurrencyKeys, prev); p != "" {
			return nil, "check", &ProtocolViolation{Message: p, CloseCode: 1002}
		}
	case *HelloOK:
		if p, _ := HelloOKProblem(f, v.Session.WorkerID, known); p != "" {
			return nil, "check", &ProtocolViolation{Message: p, CloseCode: 1002}
		}
	}
	return f, "", nil
}

func TestGatewayFrameVectors(t *testing.T) {
	for _, v := range loadVectors[gatewayVector](t, "gateway-frames.json") {
		t.Run(v.Name, func(t *testing.T) {
			f, stage, pv := gatewayOutcome(v)
			if v.Expect.OK {
				if pv != nil {
					t.Fatalf("refused at %s: %s", stage, pv.Message)
				}
				if f.FrameType() != v.Expect.Type {
					t.Fatalf("type %s, want %s", f.FrameType(), v.Expect.Type)
				}
				if v.Expect.Token != nil {
					a := f.(*TaskAssign)
					tok, err := ParseToken(*a.ConcurrencyToken)
					if err != nil || strconv.FormatUint(tok, 10) != *v.Expect.Token {
						t.Fatalf("token %d (%v), want exactly %s", tok, err, *v.Expect.Token)
					}
					e := newEvent(a, "w")
					if e.ConcurrencyToken != tok || e.Task.ConcurrencyKey != *a.Task.ConcurrencyKey {
						t.Fatalf("event token %d key %q", e.ConcurrencyToken, e.Task.ConcurrencyKey)
					}
				}
				return
			}
			if pv == nil {
				t.Fatalf("accepted; want a %s refusal", v.Expect.Stage)
			}
			if stage != v.Expect.Stage || pv.Code() != v.Expect.Code || pv.CloseCode != v.Expect.Close {
				t.Fatalf("refused at %s with %s/%d (%s); want %s with %s/%d", stage, pv.Code(), pv.CloseCode, pv.Message, v.Expect.Stage, v.Expect.Code, v.Expect.Close)
			}
			if v.Expect.Message != nil && pv.Message != *v.Expect.Message {
				t.Fatalf("message %q, want %q", pv.Message, *v.Expect.Message)
			}
		})
	}
}

func TestWorkerFrameVectors(t *testing.T) {
	for _, v := range loadVectors[workerVector](t, "worker-frames.json") {
		t.Run(v.Name, func(t *testing.T) {
			err := CheckWorkerFrame([]byte(v.Frame))
			if v.Expect.OK && err != nil {
				t.Fatalf("refused: %v", err)
			}
			if !v.Expect.OK {
				var fe *FrameError
				if !errors.As(err, &fe) || fe.Code != v.Expect.SDKCode {
					t.Fatalf("got %v; want a %s refusal", err, v.Expect.SDKCode)
				}
			}
		})
	}
}

// FuzzDecodeFrame: the decoder never panics, and whatever it accepts satisfies the schema's
// invariants the rest of the SDK relies on.
func FuzzDecodeFrame(f *testing.F) {
	for _, file := range []string{"gateway-frames.json", "worker-frames.json"} {
		b, err := os.ReadFile(filepath.Join("..", "protocol", "vectors", file))
		if err != nil {
			f.Fatal(err)
		}
		var doc struct{ Vectors []struct{ Frame string } }
		if err := json.Unmarshal(b, &doc); err != nil {
			f.Fatal(err)
		}
		for _, v := range doc.Vectors {
			f.Add([]byte(v.Frame))
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		_ = CheckWorkerFrame(data)
		fr, err := DecodeGatewayFrame(data)
		if err != nil {
			var pv *ProtocolViolation
			if !errors.As(err, &pv) || pv.CloseCode != 1002 {
				t.Fatalf("error %v is not a 1002 violation", err)
			}
			return
		}
		switch fr := fr.(type) {
		case *TaskAssign:
			if !isID(fr.AttemptID) || fr.AttemptNo < 1 || fr.Task.Payload == nil {
				t.Fatalf("accepted an invalid task.assign: %+v", fr)
			}
			if AssignProblem(fr, true, nil) == "" && fr.ConcurrencyToken != nil {
				if _, err := ParseToken(*fr.ConcurrencyToken); err != nil {
					t.Fatalf("accepted token %q: %v", *fr.ConcurrencyToken, err)
				}
			}
		case *HelloOK:
			if !isID(fr.SessionID) || fr.Resumed == nil || fr.Lost == nil {
				t.Fatalf("accepted an invalid hello.ok: %+v", fr)
			}
		}
	})
}
