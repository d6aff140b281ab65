package plugin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/taskloom/taskloom/domain"

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
//     acted on once), waiting for a store that cannot be reached, or
//     answering that nothing was done (saveIncoming) — Receive, which a
//     platform that acknowledges a message only once it is stored calls
//     itself; the steps below are Received.Handle;
//  2. decide whether to respond: DMs, mentions, replies to the bot and
//     slash commands, not other chatter;
//  3. compose state from the providers;
//  4. choose an action: the deterministic command grammar first, then —
//     with a real model — the model's pick (never a person's decision:
//     see selectAction), else the fallback action;
//  5. run it and reply through reply; a reply whose send fails goes to
//     the outbox, to be retried (queueReply);
//  6. run the evaluators;
//
// emitting RUN_STARTED, MESSAGE_RECEIVED, ACTION_* and RUN_ENDED on the way.
// Action failures and panics are answered with one clear sentence and
// logged; only a failure to persist or to reply (or queue the reply) is
// returned.
func (rt *Runtime) HandleMessage(ctx context.Context, msg Message, reply ReplyFunc) error {
	r, err := rt.Receive(ctx, msg, ReceiveOptions{})
	if r == nil {
		return err
	}
	return r.Handle(ctx, reply)
}

// ReceiveOptions says how long Receive waits for a store that cannot be
// reached, and what giving up means.
type ReceiveOptions struct {
	// Wait bounds the wait: Options.StoreOutageWait when 0.
	Wait time.Duration
	// Redelivered says the platform will deliver the message again when
	// it is not acknowledged (Slack's Events API, before its last retry):
	// giving up is then not final — nothing is answered, and a
	// redelivery to this process is handled, not ignored.
	Redelivered bool
}

// Received is a message Receive took: persisted by this receipt (Handle
// acts on it), a redelivery of one persisted or being persisted already
// (Handle does nothing), or one the store did not take in time.
type Received struct {
	rt  *Runtime
	msg Message
	run string
	log *slog.Logger
	// act: this receipt persisted it; refused: the store did not take it
	// and giving up was final, so Handle says nothing was done.
	act, refused bool
}

// ErrNotStored is Receive's error when the store did not take the message
// within the wait.
var ErrNotStored = errStoreDown

// Receive is the first step of HandleMessage: it persists msg (see
// saveIncoming) and returns what to handle. It returns ErrNotStored, with
// a Received whose Handle answers that nothing was done (unless
// o.Redelivered), when the store did not take it in time; a Received and
// no error when it was persisted, or is a redelivery (Stored says which);
// nil and the error when persisting it failed otherwise.
//
// A platform that acknowledges a message only once Receive returns (Slack's
// Events API) keeps it until it is durable: a process killed after that
// leaves it stored, and one killed before leaves it to the platform's
// redelivery.
func (rt *Runtime) Receive(ctx context.Context, msg Message, o ReceiveOptions) (*Received, error) {
	if msg.Time.IsZero() {
		msg.Time = rt.clk.Now()
	}
	run := newRunID()
	log := rt.log.With("run", run, "platform", msg.Platform, "room", msg.Room, "author", msg.AuthorID)
	r := &Received{rt: rt, msg: msg, run: run, log: log, act: true}
	if rt.opts.Store == nil {
		return r, nil
	}
	wait := o.Wait
	if wait <= 0 {
		wait = rt.opts.StoreOutageWait
	}
	saved, inserted, err := rt.saveIncoming(ctx, &r.msg, domain.Memory{
		Platform: msg.Platform, MessageID: msg.ID, Room: msg.Room, WorkspaceID: msg.WorkspaceID,
		AuthorID: msg.AuthorID, AuthorName: msg.AuthorName, Text: msg.Text, CreatedAt: domain.UTC(msg.Time),
	}, wait, !o.Redelivered, log)
	switch {
	case errors.Is(err, errInFlight):
		log.Info("message is being handled already, or was answered that nothing was done; ignoring redelivery", "message", msg.ID)
		r.act = false
		return r, nil
	case errors.Is(err, errStoreDown):
		r.act = false
		if o.Redelivered {
			log.Warn("the store did not take the message in time; it is left to the platform's redelivery", "message", msg.ID, "err", err)
			return r, err
		}
		log.Error("the message was not handled: the store could not be reached", "message", msg.ID, "err", err)
		r.refused = true
		return r, err
	case err != nil:
		return nil, fmt.Errorf("handle message %s: save memory: %w", msg.ID, err)
	}
	if !inserted {
		log.Info("message already handled; ignoring redelivery", "message", msg.ID)
		r.act = false
		return r, nil
	}
	r.msg.MemoryID = saved.ID
	return r, nil
}

// Stored says whether this receipt persisted the message, so that Handle
// acts on it.
func (r *Received) Stored() bool { return r.act }

// Message is the message received, which the platform may complete
// before Handle (who its author is, when that was not known in time).
func (r *Received) Message() *Message { return &r.msg }

// Handle runs the rest of the pipeline (steps 2–6 of HandleMessage) on a
// message Receive persisted; on a redelivery it does nothing, and on a
// message the store did not take it answers that nothing was done.
func (r *Received) Handle(ctx context.Context, reply ReplyFunc) error {
	rt, msg, run, log := r.rt, r.msg, r.run, r.log
	if r.refused {
		// Nothing was done; the answer says so and needs no store.
		if !msg.Addressed() {
			return nil
		}
		if err := reply(ctx, Response{Text: sorryNoStore, Ephemeral: true}); err != nil {
			return fmt.Errorf("handle message %s: say that nothing was done: %w", msg.ID, err)
		}
		return nil
	}
	if !r.act {
		return nil
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

	name, params, said := rt.selectAction(ctx, &msg, eval.State, log)
	var resp Response
	switch {
	case name != "":
		res, err := rt.RunAction(ctx, name, &Call{Message: &msg, Params: params, State: eval.State})
		eval.Results = append(eval.Results, ActionOutcome{Action: name, Result: res, Err: err})
		resp = responseFor(name, res, err, log)
	case said.Text != "":
		resp = said
	default:
		resp = Response{Text: sorryNoCommand}
	}
	if strings.TrimSpace(resp.Text) != "" {
		resp.Key = ReplyKey(&msg)
		at := rt.clk.Now()
		// In the outbox before it is sent (holdReply): a replica killed
		// while the send is in flight leaves the reply to the others.
		held := rt.holdReply(ctx, &msg, resp, at, log)
		if err := reply(ctx, resp); err != nil {
			queued, qerr := held.failed(ctx, err)
			if held == nil {
				queued, qerr = rt.queueReply(ctx, &msg, resp, at, err, log)
			}
			if !queued {
				return fmt.Errorf("handle message %s: reply: %w", msg.ID, errors.Join(err, qerr))
			}
		} else {
			held.sent(ctx)
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

// selectAction picks the action for an addressed message; said is what
// to answer instead when none runs: a model's chat reply when it picked
// none, or the refusal of a person's decision it picked.
//
// A person's decision (ActionInfo.Decision) runs only from what the
// person did: the platform's parse of their slash command or button
// (msg.Action) or the fixed grammar of the words they typed
// (MatchCommand). Everything after that is a model's reading of the
// message — and of other people's words and recalled memory in its
// prompt — so the model is not offered decisions and a pick of one is
// refused here, the one place that enforces it: the action does not run
// and nothing it would change changes.
func (rt *Runtime) selectAction(ctx context.Context, msg *Message, state *State, log *slog.Logger) (name string, params json.RawMessage, said Response) {
	if msg.Action != "" {
		if _, ok := rt.Action(msg.Action); ok {
			return msg.Action, msg.Params, Response{}
		}
		log.Warn("the message names an action nobody registered; reading its text instead", "action", msg.Action)
	}
	for _, a := range rt.Actions() {
		m, ok := a.(CommandMatcher)
		if !ok {
			continue
		}
		if p, ok := m.MatchCommand(msg); ok {
			return a.Info().Name, p, Response{}
		}
	}
	if model, ok := rt.Model(ModelText); ok {
		name, params, text, err := rt.modelSelect(ctx, msg, state)
		if IsDemo(model) {
			// The demo model answers free text from memory by a rule
			// (docs/chat.md); it cannot read a request, so it runs nothing.
			name, params = "", nil
		}
		if a, ok := rt.Action(name); ok && err == nil && a.Info().Decision {
			log.Warn("the model picked a person's decision; refused", "action", name)
			return "", nil, Response{Text: decisionRefusal(a.Info(), params), Ephemeral: true}
		}
		if err == nil && (name != "" || text != "") {
			return name, params, Response{Text: text}
		}
		if err != nil {
			log.Warn("model could not choose an action", "err", err)
		}
	}
	if _, ok := rt.Action(rt.opts.FallbackAction); ok {
		return rt.opts.FallbackAction, json.RawMessage(`{}`), Response{}
	}
	return "", nil, Response{}
}

// exampleNumber is the "#2" of a command's example.
var exampleNumber = regexp.MustCompile(`#[0-9]+`)

// decisionRefusal is the sentence a model's pick of a person's decision
// gets: what the person may type to decide it themselves — the action's
// first example, with the number the model named when it named one.
func decisionRefusal(info ActionInfo, params json.RawMessage) string {
	say := info.Name
	if len(info.Examples) > 0 {
		say = info.Examples[0]
	}
	var p struct {
		Number int64 `json:"number"`
	}
	n := "#N"
	if json.Unmarshal(params, &p) == nil && p.Number > 0 {
		n = "#" + strconv.FormatInt(p.Number, 10)
	}
	say = exampleNumber.ReplaceAllLiteralString(say, n)
	return fmt.Sprintf("That is a decision for you to make, not me: to make it, say `%s` yourself.", say)
}

var selectionSchema = json.RawMessage(`{"type":"object","additionalProperties":false,"required":["action","params","reply"],"properties":{"action":{"type":"string"},"params":{"type":"object"},"reply":{"type":"string"}}}`)

type selection struct {
	Action string          `json:"action"`
	Params json.RawMessage `json:"params"`
	Reply  string          `json:"reply"`
}

// modelSelect asks the model which registered action fits free text. A
// person's decision is not among the actions offered; the prompt lists
// them apart, as what the person may type.
func (rt *Runtime) modelSelect(ctx context.Context, msg *Message, state *State) (string, json.RawMessage, string, error) {
	type actionDoc struct {
		Name, Description string
		Parameters        string
	}
	var docs []actionDoc
	var decisions []string
	for _, a := range rt.Actions() {
		info := a.Info()
		if info.Decision {
			if len(info.Examples) > 0 {
				decisions = append(decisions, info.Examples[0])
			}
			continue
		}
		if info.TaskOnly {
			continue // a task's tool: it refuses a call from chat
		}
		p := string(info.Parameters)
		if p == "" {
			p = "{}"
		}
		docs = append(docs, actionDoc{Name: info.Name, Description: info.Description, Parameters: p})
	}
	sys, err := prompts.Render("select_action.tmpl", map[string]any{
		"System": rt.opts.Character.SystemPrompt(), "Actions": docs, "Decisions": decisions, "State": state.Text,
		"QuoteBegin": QuoteBegin, "QuoteEnd": QuoteEnd,
	})
	if err != nil {
		return "", nil, "", err
	}
	resp, err := rt.UseModel(ctx, ModelText, ModelRequest{
		Messages: []ChatMessage{{Role: RoleSystem, Content: sys}, {Role: RoleUser, Content: msg.Text}},
		Schema:   &JSONSchema{Name: ActionChoiceSchemaName, Schema: selectionSchema, Strict: false},
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

// remember keeps the bot's reply as a memory of the room, in reply to
// msg. A reply only its author is shown (Ephemeral: the help, a refusal,
// an apology) is not kept: it was not said to the room, and kept it would
// fill the room's memory and the chat model's conversation with the same
// command list and refusals again and again (docs/memory.md).
func (rt *Runtime) remember(ctx context.Context, msg *Message, resp Response, log *slog.Logger) {
	st := rt.opts.Store
	if st == nil || resp.Ephemeral {
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
