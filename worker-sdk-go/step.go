package orbit

import (
	"encoding/json"
	"fmt"
)

// StepPayload is the payload of a workflow step's task (docs/workflows.md): the run's input, the
// step's params, the output of each succeeded parent by step key, and for a for_each element its
// item and index. The parts stay JSON for the handler to decode into its own types.
type StepPayload struct {
	Input   json.RawMessage            `json:"input"`
	Params  json.RawMessage            `json:"params"`
	Parents map[string]json.RawMessage `json:"parents"`
	// Item and Index are set on a for_each element's task.
	Item  json.RawMessage `json:"item,omitempty"`
	Index *int64          `json:"index,omitempty"`
}

// Step decodes the task's payload as a workflow step's. A task that is not a workflow step's is a
// *PermanentError (it was routed to the wrong handler), as in the Node SDK's stepHandler.
func (e *Event) Step() (*StepPayload, error) {
	if e.Task.Workflow == nil {
		return nil, &PermanentError{Code: "NOT_A_WORKFLOW_STEP", Err: fmt.Errorf("task %s is not a workflow step's task", e.Task.ID)}
	}
	var p StepPayload
	if err := json.Unmarshal(e.Task.Payload, &p); err != nil {
		return nil, &PermanentError{Code: "BAD_STEP_PAYLOAD", Err: err}
	}
	if p.Index == nil {
		p.Index = e.Task.Workflow.Index
	}
	return &p, nil
}
