package plugin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/taskloom/taskloom/domain"
	"log/slog"
	"strings"

	"github.com/taskloom/taskloom/prompts"
)

// Sentences the pipeline says when an action cannot answer for itself.
const (
	sorryFailed    = "Sorry — something went wrong while running %s. It has been logged; please try again."
	sorryNoCommand = "I didn't understand that. Say `help` to see what I can do."
)

// HandleMessage runs the message pipeline of docs/architecture.md for one incoming
// chat message:
//
//  1. persist it as a memory (a redelivered message stops here, so it is
//     acted on once);
//  2. decide whether to respond: DMs, mentions, replies to the bot and
//     slash commands, not other chatter;
//  3. compose state from the providers;
//  4. choose an action: the deterministic command grammar first, then —
//     with a real model — the model's pick, else the fallback action;
//  5. run it and reply through reply;
//  6. run the evaluators;
//
// emitting RUN_STARTED, MESSAGE_RECEIVED, ACTION_* and RUN_ENDED on the way.
// Action failures and panics are answered with one clear sentence and
// logged; only a failure to persist or to reply is returned.
func (rt *Runtime) HandleMessage(ctx context.Context, msg Message, reply ReplyFunc) error {
	if msg.Time.IsZero() {
		msg.Time = rt.clk.Now()
	}
	run := newRunID()
	log := rt.log.With("run", run, "platform", msg.Platform, "room", msg.Room, "author", msg.AuthorID)

	if st := rt.opts.Store; st != nil {
		saved, inserted, err := st.SaveMemory(ctx, domain.Memory{
			Platform: msg.Platform, MessageID: msg.ID, Room: msg.Room, WorkspaceID: msg.WorkspaceID,
			AuthorID: msg.AuthorID, AuthorName: msg.AuthorName, Text: msg.Text, CreatedAt: domain.UTC(msg.Time),
		})
		if err != nil {
			return fmt.Errorf("handle message %s: save memory: %w", msg.ID, err)
		}
		if !inserted {
			log.Info("message already handled; ignoring redelivery", "message", msg.ID)
			return nil
		}
		msg.MemoryID = saved.ID
	}
	rt.Emit(ctx, Event{Type: RunStarted, RunID: run, Message: &msg})
	defer rt.Emit(ctx, Event{Type: RunEnded, RunID: run, Message: &msg})
	rt.Emit(ctx, Event{Type: MessageReceived, RunID: run, Message: &msg})

	eval := &Evaluation{Runtime: rt, Message: &msg, Reply: reply}
	if !msg.Addressed() {
		rt.evaluate(ctx, eval, log)
		return nil
	}
	eval.Responded = true
	eval.State = rt.ComposeState(ctx, &msg)

	name, params, fallbackText := rt.selectAction(ctx, &msg, eval.State, log)
	var resp Response
	switch {
	case name != "":
		res, err := rt.RunAction(ctx, name, &Call{Message: &msg, Params: params, State: eval.State})
		eval.Results = append(eval.Results, ActionOutcome{Action: name, Result: res, Err: err})
		resp = responseFor(name, res, err, log)
	case fallbackText != "":
		resp = Response{Text: fallbackText}
	default:
		resp = Response{Text: sorryNoCommand}
	}
	if strings.TrimSpace(resp.Text) != "" {
		if err := reply(ctx, resp); err != nil {
			return fmt.Errorf("handle message %s: reply: %w", msg.ID, err)
		}
		eval.Responses = append(eval.Responses, resp)
		rt.remember(ctx, &msg, resp, log)
	}
	rt.evaluate(ctx, eval, log)
	return nil
}

// responseFor turns an action's outcome into what the user reads: the
// action's own text, its refusal sentence, or — for an unexpected error —
// an apology, with the detail only in the log.
func responseFor(name string, res Result, err error, log *slog.Logger) Response {
	var ae *ActionError
	switch {
	case err == nil && !res.Success && res.Error != "":
		return Response{Text: res.Error, Ephemeral: true, TaskNumber: res.TaskNumber}
	case err == nil:
		return Response{Text: res.Text, Ephemeral: res.Ephemeral, TaskNumber: res.TaskNumber}
	case errors.As(err, &ae) && ae.Refused:
		return Response{Text: sentence(ae.Err.Error()), Ephemeral: true}
	default:
		log.Error("action failed", "action", name, "err", err)
		return Response{Text: fmt.Sprintf(sorryFailed, "`"+name+"`"), Ephemeral: true}
	}
}

func sentence(s string) string {
	s = strings.TrimSpace(s)
	if s == "" {
		return s
	}
	s = strings.ToUpper(s[:1]) + s[1:]
	if !strings.ContainsAny(s[len(s)-1:], ".!?") {
		s += "."
	}
	return s
}

// selectAction picks the action for an addressed message; fallbackText is
// a model's chat reply when it picked none.
func (rt *Runtime) selectAction(ctx context.Context, msg *Message, state *State, log *slog.Logger) (name string, params json.RawMessage, fallbackText string) {
	if msg.Action != "" {
		if _, ok := rt.Action(msg.Action); ok {
			return msg.Action, msg.Params, ""
		}
		log.Warn("the message names an action nobody registered; reading its text instead", "action", msg.Action)
	}
	for _, a := range rt.Actions() {
		m, ok := a.(CommandMatcher)
		if !ok {
			continue
		}
		if p, ok := m.MatchCommand(msg); ok {
			return a.Info().Name, p, ""
		}
	}
	if model, ok := rt.Model(ModelText); ok && !IsDemo(model) {
		name, params, text, err := rt.modelSelect(ctx, msg, state)
		if err == nil && (name != "" || text != "") {
			return name, params, text
		}
		if err != nil {
			log.Warn("model could not choose an action", "err", err)
		}
	}
	if _, ok := rt.Action(rt.opts.FallbackAction); ok {
		return rt.opts.FallbackAction, json.RawMessage(`{}`), ""
	}
	return "", nil, ""
}

var selectionSchema = json.RawMessage(`{"type":"object","additionalProperties":false,"required":["action","params","reply"],"properties":{"action":{"type":"string"},"params":{"type":"object"},"reply":{"type":"string"}}}`)

type selection struct {
	Action string          `json:"action"`
	Params json.RawMessage `json:"params"`
	Reply  string          `json:"reply"`
}

// modelSelect asks the model which registered action fits free text.
func (rt *Runtime) modelSelect(ctx context.Context, msg *Message, state *State) (string, json.RawMessage, string, error) {
	type actionDoc struct {
		Name, Description string
		Parameters        string
	}
	var docs []actionDoc
	for _, a := range rt.Actions() {
		info := a.Info()
		p := string(info.Parameters)
		if p == "" {
			p = "{}"
		}
		docs = append(docs, actionDoc{Name: info.Name, Description: info.Description, Parameters: p})
	}
	sys, err := prompts.Render("select_action.tmpl", map[string]any{
		"System": rt.opts.Character.SystemPrompt(), "Actions": docs, "State": state.Text,
	})
	if err != nil {
		return "", nil, "", err
	}
	resp, err := rt.UseModel(ctx, ModelText, ModelRequest{
		Messages: []ChatMessage{{Role: RoleSystem, Content: sys}, {Role: RoleUser, Content: msg.Text}},
		Schema:   &JSONSchema{Name: "action_choice", Schema: selectionSchema, Strict: false},
	})
	if err != nil {
		return "", nil, "", err
	}
	var sel selection
	if err := domain.DecodeJSONObject(resp.Text, &sel); err != nil {
		return "", nil, "", fmt.Errorf("model's action choice: %w", err)
	}
	name := strings.TrimSpace(sel.Action)
	if name == "" || strings.EqualFold(name, "none") {
		return "", nil, strings.TrimSpace(sel.Reply), nil
	}
	if _, ok := rt.Action(name); !ok {
		return "", nil, "", fmt.Errorf("model chose %q: %w", name, ErrUnknownAction)
	}
	if len(sel.Params) == 0 || string(sel.Params) == "null" {
		sel.Params = json.RawMessage(`{}`)
	}
	return name, sel.Params, "", nil
}

func (rt *Runtime) remember(ctx context.Context, msg *Message, resp Response, log *slog.Logger) {
	st := rt.opts.Store
	if st == nil {
		return
	}
	_, _, err := st.SaveMemory(ctx, domain.Memory{
		Platform: msg.Platform, Room: msg.Room, WorkspaceID: msg.WorkspaceID,
		AuthorID: "bot", AuthorName: rt.opts.Character.Name, Text: resp.Text, FromBot: true,
		CreatedAt: domain.UTC(rt.clk.Now()), InReplyTo: msg.MemoryID,
	})
	if err != nil {
		log.Warn("could not remember the reply", "err", err)
	}
}

// evaluate runs the evaluators that apply: always-run ones on every
// message, the others after a response when their Validate agrees.
func (rt *Runtime) evaluate(ctx context.Context, ev *Evaluation, log *slog.Logger) {
	rt.mu.RLock()
	evs := append([]Evaluator(nil), rt.evaluators...)
	rt.mu.RUnlock()
	for _, e := range evs {
		info := e.Info()
		if !info.AlwaysRun && !ev.Responded {
			continue
		}
		func() {
			defer func() {
				if r := recover(); r != nil {
					log.Error("evaluator panicked", "evaluator", info.Name, "panic", r)
				}
			}()
			if v, ok := e.(EvaluatorValidator); ok && !v.Validate(ctx, ev) {
				return
			}
			if err := e.Evaluate(ctx, ev); err != nil {
				log.Error("evaluator failed", "evaluator", info.Name, "err", err)
			}
		}()
	}
}
