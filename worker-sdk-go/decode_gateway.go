package orbit

import (
	"encoding/json"
	"math"
	"strconv"
)

// DecodeGatewayFrame parses and validates one text frame from the gateway against its schema
// (protocol/frames.ts, strict: unknown fields refused). The error is a *ProtocolViolation: the
// caller closes the session with its CloseCode (1002). The SDK's own checks on a valid frame
// (AssignProblem, HelloOKProblem) come after this.
func DecodeGatewayFrame(text []byte) (GatewayFrame, error) {
	// One parse of the frame: a map of its fields, each field's text decoded by its reader. An
	// object that does not parse is invalid JSON; anything else is judged by json.Valid only on
	// this error path.
	if firstByte(text) != '{' {
		if !json.Valid(text) {
			return nil, violation("frame is not valid JSON")
		}
		return nil, violation("frame must be a JSON object")
	}
	var head object
	if err := json.Unmarshal(text, &head); err != nil {
		return nil, violation("frame is not valid JSON")
	}
	typ, _, err := jsonString(head["type"], "/type")
	if head["type"] == nil || err != nil {
		return nil, violation(`frame has no string "type"`)
	}
	decode, ok := gatewayDecoders[typ]
	if !ok {
		q := strconv.Quote(typ)
		if len(q) > 80 {
			q = q[:80]
		}
		return nil, violation("unknown frame type " + q)
	}
	f, err := decode(head)
	if err != nil {
		return nil, violation(typ + ": " + err.Error())
	}
	return f, nil
}

func violation(msg string) *ProtocolViolation {
	return &ProtocolViolation{Message: msg, CloseCode: 1002}
}

var gatewayDecoders = map[string]func(object) (GatewayFrame, error){
	"hello.ok":    decodeHelloOK,
	"task.assign": decodeTaskAssign,
	"start.ok":    decodeStartOK,
	"renew.ok":    decodeRenewOK,
	"result.ok":   decodeResultOK,
	"task.cancel": decodeTaskCancel,
	"error":       decodeErrorFrame,
	"drain.ok":    decodeDrainOK,
	"goaway":      decodeGoaway,
}

var noMax = math.Inf(1)

// firstErr returns the first non-nil error.
func firstErr(errs ...error) error {
	for _, e := range errs {
		if e != nil {
			return e
		}
	}
	return nil
}

func decodeHelloOK(o object) (GatewayFrame, error) {
	err := checkKeys(o, "", []string{"type", "session_id", "worker_id", "lease_ms", "renew_ms", "max_frame_bytes", "resumed", "lost"})
	if err != nil {
		return nil, err
	}
	f := &HelloOK{}
	var e [6]error
	f.SessionID, e[0] = idField(o, "session_id", "")
	f.WorkerID, e[1] = nameField(o, "worker_id", "", WorkerIDMax)
	f.LeaseMs, e[2] = jsonInt(o["lease_ms"], "/lease_ms", 0, noMax)
	f.RenewMs, e[3] = jsonInt(o["renew_ms"], "/renew_ms", 0, noMax)
	f.MaxFrameBytes, e[4] = jsonInt(o["max_frame_bytes"], "/max_frame_bytes", 1, noMax)
	f.Lost, e[5] = stringList(o["lost"], "/lost", 0, math.MaxInt, nil)
	if err := firstErr(e[:]...); err != nil {
		return nil, err
	}
	items, err := jsonArray(o["resumed"], "/resumed", 0, math.MaxInt)
	if err != nil {
		return nil, err
	}
	f.Resumed = make([]ResumedAttempt, len(items))
	for i, it := range items {
		p := "/resumed/" + strconv.Itoa(i)
		r, err := readMember(it, p, []string{"attempt_id", "state", "lease_expires_at"}, "concurrency_token")
		if err != nil {
			return nil, err
		}
		ra := &f.Resumed[i]
		var e [3]error
		ra.AttemptID, e[0] = idField(r, "attempt_id", p)
		ra.State, e[1] = anyString(r, "state", p)
		if e[1] == nil && ra.State != "LEASED" && ra.State != "RUNNING" {
			e[1] = errAt(p+"/state", "must be LEASED or RUNNING")
		}
		ra.LeaseExpiresAt, e[2] = anyString(r, "lease_expires_at", p)
		if err := firstErr(e[:]...); err != nil {
			return nil, err
		}
		if _, ok := r["concurrency_token"]; ok {
			tok, err := anyString(r, "concurrency_token", p)
			if err == nil && !uint64RE.MatchString(tok) {
				err = errAt(p+"/concurrency_token", "must be a uint64 decimal string")
			}
			if err != nil {
				return nil, err
			}
			ra.ConcurrencyToken = &tok
		}
	}
	return f, nil
}

func decodeTaskAssign(o object) (GatewayFrame, error) {
	err := checkKeys(o, "", []string{"type", "attempt_id", "attempt_no", "lease_expires_at", "task"}, "concurrency_token")
	if err != nil {
		return nil, err
	}
	f := &TaskAssign{}
	var e [3]error
	f.AttemptID, e[0] = idField(o, "attempt_id", "")
	f.AttemptNo, e[1] = jsonInt(o["attempt_no"], "/attempt_no", 1, noMax)
	f.LeaseExpiresAt, e[2] = anyString(o, "lease_expires_at", "")
	if err := firstErr(e[:]...); err != nil {
		return nil, err
	}
	// A plain string here: a malformed token is the SDK's own refusal (AssignProblem), as in Node.
	if _, ok := o["concurrency_token"]; ok {
		tok, err := anyString(o, "concurrency_token", "")
		if err != nil {
			return nil, err
		}
		f.ConcurrencyToken = &tok
	}
	t, err := readMember(o["task"], "/task",
		[]string{"id", "queue_id", "handler", "handler_version", "payload_version", "payload", "priority", "deadline_at"},
		"business_key", "concurrency_key", "workflow")
	if err != nil {
		return nil, err
	}
	task := &f.Task
	var te [7]error
	task.ID, te[0] = idField(t, "id", "/task")
	task.QueueID, te[1] = idField(t, "queue_id", "/task")
	task.Handler, te[2] = nameField(t, "handler", "/task", HandlerMax)
	task.HandlerVersion, te[3] = nameField(t, "handler_version", "/task", VersionMax)
	task.PayloadVersion, te[4] = nameField(t, "payload_version", "/task", VersionMax)
	var prio int64
	prio, te[5] = jsonInt(t["priority"], "/task/priority", 0, PriorityMax)
	task.Priority = int(prio)
	task.DeadlineAt, te[6] = anyString(t, "deadline_at", "/task")
	if err := firstErr(te[:]...); err != nil {
		return nil, err
	}
	task.Payload = t["payload"]
	for _, k := range []string{"business_key", "concurrency_key"} {
		if _, ok := t[k]; !ok {
			continue
		}
		s, err := anyString(t, k, "/task")
		if err != nil {
			return nil, err
		}
		if k == "business_key" {
			task.BusinessKey = &s
		} else {
			task.ConcurrencyKey = &s
			// Go's decoder turned the surrogate into U+FFFD; AssignProblem refuses such a key.
			task.keyNotWellFormed = hasLoneSurrogate(t[k])
		}
	}
	if raw, ok := t["workflow"]; ok {
		w, err := readMember(raw, "/task/workflow", []string{"run_id", "step"}, "index")
		if err != nil {
			return nil, err
		}
		ref := &WorkflowRef{}
		var we [2]error
		ref.RunID, we[0] = idField(w, "run_id", "/task/workflow")
		ref.Step, we[1] = anyString(w, "step", "/task/workflow")
		if we[1] == nil && (ref.Step == "" || utf16Len(ref.Step) > StepKeyMax) {
			we[1] = errAt("/task/workflow/step", "must be 1-%d characters", StepKeyMax)
		}
		if err := firstErr(we[:]...); err != nil {
			return nil, err
		}
		if _, ok := w["index"]; ok {
			i, err := jsonInt(w["index"], "/task/workflow/index", 0, noMax)
			if err != nil {
				return nil, err
			}
			ref.Index = &i
		}
		task.Workflow = ref
	}
	return f, nil
}

func decodeStartOK(o object) (GatewayFrame, error) {
	err := checkKeys(o, "", []string{"type", "attempt_id", "lease_expires_at"})
	if err != nil {
		return nil, err
	}
	f := &StartOK{}
	var e [2]error
	f.AttemptID, e[0] = idField(o, "attempt_id", "")
	f.LeaseExpiresAt, e[1] = anyString(o, "lease_expires_at", "")
	return f, firstErr(e[:]...)
}

func decodeRenewOK(o object) (GatewayFrame, error) {
	err := checkKeys(o, "", []string{"type", "leases", "lost"})
	if err != nil {
		return nil, err
	}
	f := &RenewOK{}
	if f.Lost, err = stringList(o["lost"], "/lost", 0, math.MaxInt, nil); err != nil {
		return nil, err
	}
	items, err := jsonArray(o["leases"], "/leases", 0, math.MaxInt)
	if err != nil {
		return nil, err
	}
	f.Leases = make([]Lease, len(items))
	for i, it := range items {
		p := "/leases/" + strconv.Itoa(i)
		l, err := readMember(it, p, []string{"attempt_id", "lease_expires_at"})
		if err != nil {
			return nil, err
		}
		var e [2]error
		f.Leases[i].AttemptID, e[0] = idField(l, "attempt_id", p)
		f.Leases[i].LeaseExpiresAt, e[1] = anyString(l, "lease_expires_at", p)
		if err := firstErr(e[:]...); err != nil {
			return nil, err
		}
	}
	return f, nil
}

func decodeResultOK(o object) (GatewayFrame, error) {
	err := checkKeys(o, "", []string{"type", "attempt_id", "deduplicated", "task_state"})
	if err != nil {
		return nil, err
	}
	f := &ResultOK{}
	var e [3]error
	f.AttemptID, e[0] = idField(o, "attempt_id", "")
	f.Deduplicated, e[1] = jsonBool(o["deduplicated"], "/deduplicated")
	f.TaskState, e[2] = anyString(o, "task_state", "")
	if e[2] == nil && !contains(TaskStates, f.TaskState) {
		e[2] = errAt("/task_state", "must be a task state")
	}
	return f, firstErr(e[:]...)
}

func decodeTaskCancel(o object) (GatewayFrame, error) {
	err := checkKeys(o, "", []string{"type", "attempt_id", "reason"})
	if err != nil {
		return nil, err
	}
	f := &TaskCancel{}
	var e [2]error
	f.AttemptID, e[0] = idField(o, "attempt_id", "")
	f.Reason, e[1] = anyString(o, "reason", "")
	if e[1] == nil && !contains([]string{"CANCELLED", "LEASE_EXPIRED", "DEADLINE_EXCEEDED"}, f.Reason) {
		e[1] = errAt("/reason", "must be CANCELLED, LEASE_EXPIRED or DEADLINE_EXCEEDED")
	}
	return f, firstErr(e[:]...)
}

func decodeErrorFrame(o object) (GatewayFrame, error) {
	err := checkKeys(o, "", []string{"type", "code", "message", "fatal"}, "attempt_id")
	if err != nil {
		return nil, err
	}
	f := &ErrorFrame{}
	var e [3]error
	f.Code, e[0] = anyString(o, "code", "")
	f.Message, e[1] = anyString(o, "message", "")
	f.Fatal, e[2] = jsonBool(o["fatal"], "/fatal")
	if err := firstErr(e[:]...); err != nil {
		return nil, err
	}
	if _, ok := o["attempt_id"]; ok {
		id, err := anyString(o, "attempt_id", "")
		if err != nil {
			return nil, err
		}
		f.AttemptID = &id
	}
	return f, nil
}

func decodeDrainOK(o object) (GatewayFrame, error) {
	err := checkKeys(o, "", []string{"type"})
	if err != nil {
		return nil, err
	}
	return &DrainOK{}, nil
}

func decodeGoaway(o object) (GatewayFrame, error) {
	err := checkKeys(o, "", []string{"type", "reason"})
	if err != nil {
		return nil, err
	}
	f := &Goaway{}
	f.Reason, err = anyString(o, "reason", "")
	return f, err
}
