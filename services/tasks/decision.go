package tasks

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/taskloom/taskloom/domain"
	"github.com/taskloom/taskloom/plugin"
)

// Decision is what one iteration's model call returns: the next action and
// where the task stands.
type Decision struct {
	Thought  string          `json:"thought"`
	Action   string          `json:"action"`
	Params   json.RawMessage `json:"params"`
	Progress int             `json:"progress"`
	Status   domain.Verdict  `json:"status"`
	Summary  string          `json:"summary"`
}

// DecisionSchema is the JSON Schema the model is asked to follow
// (structured output). Params stay free-form — each tool has its own
// schema, given in the prompt — so the schema is not strict.
var DecisionSchema = &plugin.JSONSchema{
	Name: "iteration_decision",
	Schema: json.RawMessage(`{"type":"object","additionalProperties":false,` +
		`"required":["thought","action","params","progress","status","summary"],` +
		`"properties":{` +
		`"thought":{"type":"string","description":"one or two sentences of reasoning"},` +
		`"action":{"type":"string","description":"the tool to run next, or \"none\""},` +
		`"params":{"type":"object","description":"the tool's parameters"},` +
		`"progress":{"type":"integer","minimum":0,"maximum":100,"description":"estimated percent of the goal done after this action"},` +
		`"status":{"type":"string","enum":["continue","done","stuck"]},` +
		`"summary":{"type":"string","description":"when done or stuck: what was achieved, or why not"}}}`),
}

// ErrBadDecision marks a model reply that is not a usable decision.
var ErrBadDecision = errors.New("unusable decision")

// ParseDecision reads a model's reply: a JSON object as is, fenced, or
// embedded in prose. Progress is clamped to 0–100 (numbers, "40" and "40%"
// are accepted); status synonyms are normalised. It never panics; anything
// unusable is an ErrBadDecision saying why.
func ParseDecision(text string) (Decision, error) {
	var raw struct {
		Thought  string          `json:"thought"`
		Action   json.RawMessage `json:"action"`
		Params   json.RawMessage `json:"params"`
		Progress json.RawMessage `json:"progress"`
		Status   string          `json:"status"`
		Summary  string          `json:"summary"`
	}
	if err := domain.DecodeJSONObject(text, &raw); err != nil {
		return Decision{}, fmt.Errorf("%w: %v", ErrBadDecision, err)
	}
	d := Decision{Thought: strings.TrimSpace(raw.Thought), Summary: strings.TrimSpace(raw.Summary)}
	var err error
	if d.Action, err = actionName(raw.Action); err != nil {
		return Decision{}, err
	}
	if d.Params, err = params(raw.Params); err != nil {
		return Decision{}, err
	}
	if d.Progress, err = progress(raw.Progress); err != nil {
		return Decision{}, err
	}
	if d.Status, err = verdict(raw.Status); err != nil {
		return Decision{}, err
	}
	if d.Action == "" && d.Status == domain.VerdictContinue {
		return Decision{}, fmt.Errorf("%w: it names no action but does not say the task is done or stuck", ErrBadDecision)
	}
	return d, nil
}

func actionName(raw json.RawMessage) (string, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return "", nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return "", fmt.Errorf("%w: action is not a string", ErrBadDecision)
	}
	s = strings.TrimSpace(s)
	if strings.EqualFold(s, "none") {
		return "", nil
	}
	return s, nil
}

func params(raw json.RawMessage) (json.RawMessage, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return json.RawMessage(`{}`), nil
	}
	// Some models send the parameters as a JSON string.
	var s string
	if json.Unmarshal(raw, &s) == nil {
		raw = []byte(strings.TrimSpace(s))
		if len(raw) == 0 {
			return json.RawMessage(`{}`), nil
		}
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(raw, &obj); err != nil || obj == nil {
		return nil, fmt.Errorf("%w: params is not a JSON object", ErrBadDecision)
	}
	// As written: a key given twice or in another case must reach
	// Turn.Act's strict reading, not be folded away here.
	return json.RawMessage(raw), nil
}

func progress(raw json.RawMessage) (int, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return 0, fmt.Errorf("%w: it has no progress estimate", ErrBadDecision)
	}
	var f float64
	if err := json.Unmarshal(raw, &f); err != nil {
		var s string
		if json.Unmarshal(raw, &s) != nil {
			return 0, fmt.Errorf("%w: progress is not a number", ErrBadDecision)
		}
		s = strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(s), "%"))
		if f, err = strconv.ParseFloat(s, 64); err != nil {
			return 0, fmt.Errorf("%w: progress %q is not a number", ErrBadDecision, s)
		}
	}
	if math.IsNaN(f) {
		return 0, fmt.Errorf("%w: progress is not a number", ErrBadDecision)
	}
	return int(math.Round(min(max(f, 0), 100))), nil
}

func verdict(s string) (domain.Verdict, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "", "continue", "continuing", "in_progress", "running":
		return domain.VerdictContinue, nil
	case "done", "complete", "completed", "finished", "success":
		return domain.VerdictDone, nil
	case "stuck", "blocked", "failed", "fail", "give_up":
		return domain.VerdictStuck, nil
	}
	return "", fmt.Errorf("%w: status %q is not continue, done or stuck", ErrBadDecision, s)
}
