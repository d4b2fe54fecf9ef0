package orbit

import (
	"encoding/json"
	"math"
	"strconv"
)

// CheckWorkerFrame reports whether the gateway accepts a worker → gateway text frame: the same
// schema rules as the checks the SDK applies to the frames it builds (outgoing.go), read from text.
// The shared vectors (protocol/vectors/worker-frames.json) hold it to the gateway's decoder; the
// error is a *FrameError (INVALID_ARGUMENT), as the SDK reports a frame it refuses to send.
func CheckWorkerFrame(text []byte) error {
	if err := checkWorkerFrame(text); err != nil {
		return &FrameError{Code: "INVALID_ARGUMENT", Message: err.Error()}
	}
	return nil
}

func checkWorkerFrame(text []byte) error {
	if !json.Valid(text) {
		return errAt("/", "frame is not valid JSON")
	}
	if jsonDepth(text) > MaxJSONDepth {
		return errAt("/", "frame is nested deeper than %d levels", MaxJSONDepth)
	}
	var head object
	if firstByte(text) != '{' || json.Unmarshal(text, &head) != nil {
		return errAt("/", "frame must be a JSON object")
	}
	typ, _, err := jsonString(head["type"], "/type")
	if head["type"] == nil || err != nil {
		return errAt("/type", "must be a string")
	}
	switch typ {
	case "hello":
		return checkHelloText(text)
	case "start":
		o, err := readObject(text, "", []string{"type", "attempt_id"})
		if err == nil {
			_, err = shortField(o, "attempt_id", "")
		}
		return err
	case "renew":
		o, err := readObject(text, "", []string{"type", "attempt_ids"})
		if err == nil {
			_, err = stringList(o["attempt_ids"], "/attempt_ids", 1, MaxIDsPerFrame, checkShort)
		}
		return err
	case "result":
		return checkResultText(text)
	case "capacity":
		o, err := readObject(text, "", []string{"type", "capacity"})
		if err == nil {
			_, err = jsonInt(o["capacity"], "/capacity", 0, MaxCapacity)
		}
		return err
	case "drain":
		_, err := readObject(text, "", []string{"type"})
		return err
	}
	return errAt("/type", "unknown frame type %s", strconv.Quote(typ))
}

func checkShort(s, p string) error {
	if s == "" || utf16Len(s) > IDFieldMax {
		return errAt(p, "must be 1-%d characters", IDFieldMax)
	}
	return nil
}

func checkHelloText(text []byte) error {
	o, err := readObject(text, "", []string{"type", "protocol", "worker_id", "queues", "capacity"}, "concurrency_keys", "handlers", "resume", "agent")
	if err != nil {
		return err
	}
	h := helloWire{Agent: "-"}
	if p, err := jsonInt(o["protocol"], "/protocol", 1, 1); err != nil || p != 1 {
		return errAt("/protocol", "must be 1")
	}
	var e [3]error
	h.WorkerID, e[0] = anyString(o, "worker_id", "")
	h.Queues, e[1] = stringList(o["queues"], "/queues", 0, math.MaxInt, nil)
	var capacity int64
	capacity, e[2] = jsonInt(o["capacity"], "/capacity", 0, MaxCapacity)
	h.Capacity = int(capacity)
	if err := firstErr(e[:]...); err != nil {
		return err
	}
	if raw, ok := o["concurrency_keys"]; ok {
		if h.ConcurrencyKeys, err = jsonBool(raw, "/concurrency_keys"); err != nil {
			return err
		}
	}
	if raw, ok := o["handlers"]; ok {
		items, err := jsonArray(raw, "/handlers", 0, math.MaxInt)
		if err != nil {
			return err
		}
		h.Handlers = make([]HandlerRegistration, len(items))
		for i, it := range items {
			p := "/handlers/" + strconv.Itoa(i)
			ho, err := readMember(it, p, []string{"handler", "versions"})
			if err != nil {
				return err
			}
			if h.Handlers[i].Handler, err = anyString(ho, "handler", p); err != nil {
				return err
			}
			if h.Handlers[i].Versions, err = stringList(ho["versions"], p+"/versions", 0, math.MaxInt, nil); err != nil {
				return err
			}
		}
	}
	if raw, ok := o["resume"]; ok {
		if h.Resume, err = stringList(raw, "/resume", 0, math.MaxInt, nil); err != nil {
			return err
		}
	}
	lone := false
	if _, ok := o["agent"]; ok {
		if h.Agent, lone, err = jsonString(o["agent"], "/agent"); err != nil {
			return err
		}
	}
	if err := checkHello(&h); err != nil {
		return err
	}
	return checkText(h.Agent, lone, "/agent", 1, AgentMax)
}

func checkResultText(text []byte) error {
	o, err := readObject(text, "", []string{"type", "attempt_id", "outcome"}, "output", "error", "retry_after_ms")
	if err != nil {
		return err
	}
	w := resultWire{}
	var e [2]error
	w.AttemptID, e[0] = anyString(o, "attempt_id", "")
	w.Outcome, e[1] = anyString(o, "outcome", "")
	if err := firstErr(e[:]...); err != nil {
		return err
	}
	w.Output = o["output"]
	var loneCode, loneMessage bool
	if raw, ok := o["error"]; ok {
		eo, err := readMember(raw, "/error", []string{"code", "message"})
		if err != nil {
			return err
		}
		w.Error = &ResultError{}
		if w.Error.Code, loneCode, err = jsonString(eo["code"], "/error/code"); err != nil {
			return err
		}
		if w.Error.Message, loneMessage, err = jsonString(eo["message"], "/error/message"); err != nil {
			return err
		}
	}
	if raw, ok := o["retry_after_ms"]; ok {
		ms, err := jsonInt(raw, "/retry_after_ms", 0, MaxBackoffMs)
		if err != nil {
			return err
		}
		w.RetryAfterMs = &ms
	}
	return checkResult(&w, loneCode, loneMessage)
}
